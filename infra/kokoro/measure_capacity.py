"""How many conversations one Kokoro container holds: first audio per sentence, then a rising load to its knee.

Why: the container's admission limit (``KOKORO_MAX_SESSIONS``), its inference workers and the endpoint's
autoscaling target, and the volume at which self-hosted Kokoro is cheaper than Polly, all turn on this one
figure, and a guess at it either turns conversations away or lets first audio grow. The container is judged as
a listener hears it. Two parts, both against the real server over its WebSocket:

1. **First audio per sentence, alone**: each test sentence on its own connection, repeated; the time from
   sending it to its first audio frame, and the render's real-time factor.
2. **The knee**: k conversations at once (k = 1, 2, 4, ...), their starts spread over a second as arrivals
   are; each sends a four-sentence answer as the gateway does (every sentence at once, the server queueing
   them) and plays it from its first frame at real time. A conversation *stalls* when a frame arrives after
   everything before it has been played (a gap longer than 50 ms, inside a sentence or between two). A level
   holds when its p95 first audio is within the budget and no conversation stalled. The budget is twice the
   median first audio of one conversation alone (several, one after another), measured by the first setting of
   the run and applied to every setting, or ``--budget-ms``. The knee is the last level of the unbroken run of
   holding levels ("at least k" when no level failed), with the answers an hour it stands for if answers kept
   arriving k at a time (an upper bound: a steady arrival rate is not measured).

Which engine, device and model the server runs is the environment's (``KOKORO_DEVICE``, ``KOKORO_MODEL_DIR``,
...), so the same script measures this machine's CPU and a GPU. It prints Markdown and writes the figures as
JSON (``--json``).

    make -C infra/kokoro measure-capacity                  # this machine, the CPU image's settings
    KOKORO_DEVICE=cuda KOKORO_MODEL_DIR=... python measure_capacity.py --workers 1,4 --levels 1,2,4,8,16,32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import websockets

from kokoro_server.localrun import Outcome, ServerProcess, collect, send_requests

SAMPLE_RATE = 24_000
STALL_SECONDS = 0.05

ANSWER_FIRST = "Speech starts as soon as the first sentence is ready."

SENTENCES = {
    # The four-sentence answer's first sentence: a conversation alone is held to it (the same text, first).
    "the answer's first": ANSWER_FIRST,
    "two words": "Hello there.",
    "short": "The meeting starts at ten tomorrow morning.",
    "medium": "Your order shipped this morning and should reach you by Thursday afternoon.",
    "with a number": "The total comes to forty-two dollars and fifty cents, including tax.",
    "long": (
        "When the agent finally answers, the gateway releases the first complete sentence to the speech "
        "engine at once, and the listener hears the beginning of the reply while the rest is still written."
    ),
}

ANSWER = [
    ANSWER_FIRST,
    "The second sentence follows while the first one plays.",
    "A third sentence keeps the stream going without a gap.",
    "The fourth sentence closes this answer.",
]


@dataclass
class Alone:
    sentence: str
    chars: int
    audio_s: float
    first_audio_ms_median: float
    first_audio_ms_p95: float
    first_audio_ms_runs: list[float]  # every run, in order (the first of a new length is the slow one)
    rtf_median: float
    frames: int  # audio frames the server sent
    held_ms_median: float  # audio the server held back so the sentence plays through (the paced plan)


@dataclass
class Level:
    conversations: int
    first_audio_ms_median: float
    first_audio_ms_p95: float
    stalled: int
    worst_gap_ms: float
    audio_s_per_wall_s: float  # how many real-time streams the container rendered during the level
    answer_audio_s: float  # one answer's length, median
    holds: bool


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), as earshot_core::stats computes it."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def playback_gaps(outcomes: list[Outcome], started: float) -> list[float]:
    """Silences a listener hears: each frame that arrives after everything before it has played.

    ``started`` is when the conversation sent its first sentence; frame times are relative to each request's
    own sending, so they are moved onto one clock first.
    """
    arrivals: list[tuple[float, float]] = []
    for outcome in outcomes:
        offset = outcome.sent_at - started
        for frame, at in zip(outcome.frames, outcome.frame_times):
            arrivals.append((offset + at, len(frame.pcm) / 2 / SAMPLE_RATE))
    gaps: list[float] = []
    played_until: float | None = None
    for at, seconds in arrivals:  # arrival order: one connection keeps its sentences in order
        if played_until is not None and at > played_until:
            gaps.append(at - played_until)
        played_until = max(played_until or at, at) + seconds
    return gaps


async def alone(url: str, text: str, repeat: int) -> list[tuple[float, float, float, int, float]]:
    runs = []
    for i in range(repeat):
        async with websockets.connect(url, max_size=None) as ws:
            outcomes = await send_requests(ws, [(f"s{i}", text, {})])
            await collect(ws, outcomes)
        outcome = outcomes[f"s{i}"]
        end = outcome.terminal
        assert end is not None and end["type"] == "end", outcome.messages
        assert outcome.end_time is not None
        runs.append(
            (
                outcome.frame_times[0],
                outcome.end_time,
                float(end["audio_seconds"]),
                int(end["chunks"]),
                float(end.get("held_seconds", 0.0)),
            )
        )
    return runs


async def conversation(url: str, delay: float, tag: str) -> tuple[float, list[float], float]:
    await asyncio.sleep(delay)
    async with websockets.connect(url, max_size=None) as ws:
        started = time.perf_counter()
        outcomes = await send_requests(ws, [(f"{tag}-{i}", text, {}) for i, text in enumerate(ANSWER)])
        await collect(ws, outcomes, timeout=600)
    ordered = list(outcomes.values())
    for outcome in ordered:
        assert outcome.terminal is not None and outcome.terminal["type"] == "end", outcome.messages
    audio = sum(len(o.pcm) / 2 / SAMPLE_RATE for o in ordered)
    return ordered[0].frame_times[0], playback_gaps(ordered, started), audio


def holds(stalled: int, p95_ms: float, budget_ms: float) -> bool:
    """A level holds when no listener heard a gap and its p95 first audio is within the budget."""
    return stalled == 0 and p95_ms <= budget_ms


def answers_an_hour(conversations: int, answer_s: float) -> int:
    """Answers an hour if ``conversations`` answers of ``answer_s`` seconds kept arriving together, each group as
    the last finished playing: the knee's load repeated back to back (an upper bound of a steady rate)."""
    return round(conversations * 3600 / answer_s) if conversations else 0


async def idle_first_audio(url: str, runs: int) -> list[float]:
    """First audio (ms) of one conversation alone, ``runs`` one after another, in order."""
    return [(await conversation(url, 0.0, f"idle-{i}"))[0] * 1000 for i in range(runs)]


async def level(url: str, k: int, spread: float, budget_ms: float) -> Level:
    rng = random.Random(k)
    began = time.perf_counter()
    results = await asyncio.gather(*(conversation(url, rng.uniform(0, spread), f"c{k}-{i}") for i in range(k)))
    wall = time.perf_counter() - began
    firsts = [r[0] * 1000 for r in results]
    gaps = [g for r in results for g in r[1]]
    stalled = sum(1 for r in results if any(g > STALL_SECONDS for g in r[1]))
    p95 = percentile(firsts, 95)
    return Level(
        conversations=k,
        first_audio_ms_median=statistics.median(firsts),
        first_audio_ms_p95=p95,
        stalled=stalled,
        worst_gap_ms=max(gaps, default=0.0) * 1000,
        audio_s_per_wall_s=sum(r[2] for r in results) / wall,
        answer_audio_s=statistics.median(r[2] for r in results),
        holds=holds(stalled, p95, budget_ms),
    )


async def ramp(url: str, levels: list[int], spread: float, stop_after: int, budget_ms: float) -> list[Level]:
    measured: list[Level] = []
    failing = 0
    for k in levels:
        result = await level(url, k, spread, budget_ms)
        measured.append(result)
        print(
            f"  {k:4d} at once: first audio median {result.first_audio_ms_median:7.1f} ms, "
            f"p95 {result.first_audio_ms_p95:7.1f} ms, stalled {result.stalled}, "
            f"{result.audio_s_per_wall_s:6.1f} s of audio a second, {'holds' if result.holds else 'past the knee'}",
            file=sys.stderr,
        )
        failing = 0 if result.holds else failing + 1
        if failing >= stop_after:
            break
    return measured


def knee(levels: list[Level]) -> tuple[int, bool]:
    """Conversations at once of the last level in the unbroken run of holding levels from the first (0: none
    held), and whether a failing level bounds it (if none failed, the knee is at least that). A level that holds
    again after one that did not is noise past the knee, not capacity."""
    k = 0
    for lv in levels:
        if not lv.holds:
            return k, True
        k = lv.conversations
    return k, False


def gpu_line() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.used,memory.total", "--format=csv,noheader"]
    return subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip() or None


def run_setting(workers: int, plan: str, args: argparse.Namespace, log_dir: Path) -> dict[str, object]:
    """One server with these settings: sentences alone, one conversation alone, then the ramp. The first setting
    of a run sets ``args.budget_ms`` (twice its idle median) when none was given."""
    env = {
        "KOKORO_WORKERS": str(workers),
        "KOKORO_PIECE_PLAN": plan,
        "KOKORO_MAX_SESSIONS": "10000",
        "KOKORO_QUEUE_SIZE": "64",
    }
    server = ServerProcess(env, log_dir / f"server-workers{workers}-{plan}.log")
    spawned = time.perf_counter()
    server.start()
    try:
        server.wait_ready(timeout=600)
        ready = time.perf_counter() - spawned
        with urllib.request.urlopen(f"{server.http_url}/ping") as response:
            load_seconds = json.load(response)["load_seconds"]
        print(
            f"workers {workers}, {plan} plan: ready after {ready:.1f} s (model load {load_seconds:.2f} s)",
            file=sys.stderr,
        )
        asyncio.run(alone(server.ws_url, ANSWER[0], 2))  # warm-up: the first shapes a device sees
        sentences = []
        for label, text in SENTENCES.items():
            runs = asyncio.run(alone(server.ws_url, text, args.repeat))
            firsts = [r[0] * 1000 for r in runs]
            sentences.append(
                Alone(
                    sentence=label,
                    chars=len(text),
                    audio_s=statistics.median(r[2] for r in runs),
                    first_audio_ms_median=statistics.median(firsts),
                    first_audio_ms_p95=percentile(firsts, 95),
                    first_audio_ms_runs=[round(f, 1) for f in firsts],
                    rtf_median=statistics.median(r[1] / r[2] for r in runs),
                    frames=int(statistics.median(r[3] for r in runs)),
                    held_ms_median=statistics.median(r[4] for r in runs) * 1000,
                )
            )
            print(f"  {label}: first audio {sentences[-1].first_audio_ms_median:.1f} ms", file=sys.stderr)
        idle_runs = asyncio.run(idle_first_audio(server.ws_url, args.repeat))
        idle_ms = statistics.median(idle_runs)
        if args.budget_ms is None:
            args.budget_ms = 2 * idle_ms
        print(f"  one conversation alone: first audio {idle_ms:.1f} ms; budget {args.budget_ms:.0f} ms", file=sys.stderr)
        levels = asyncio.run(ramp(server.ws_url, args.levels, args.spread, args.stop_after, args.budget_ms))
        gpu = gpu_line()
    finally:
        server.stop()
    knee_k, bounded = knee(levels)
    return {
        "workers": workers,
        "plan": plan,
        "ready_s": round(ready, 2),
        "load_s": load_seconds,
        "gpu": gpu,
        "sentences": [asdict(s) for s in sentences],
        "idle_conversation_first_audio_ms": round(idle_ms, 1),
        # Every run, in order, beside its first sentence alone ("the answer's first"): the conversation's cost.
        "idle_conversation_first_audio_ms_runs": [round(r, 1) for r in idle_runs],
        "budget_ms": round(args.budget_ms, 1),
        "levels": [asdict(lv) for lv in levels],
        "knee_conversations": knee_k,
        "knee_bounded": bounded,
        "knee_answers_an_hour": answers_an_hour(knee_k, levels[0].answer_audio_s),
    }


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    """A Markdown table and the blank line after it."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows] + [""]


def report(settings: list[dict[str, object]], args: argparse.Namespace) -> str:
    device = os.environ.get("KOKORO_DEVICE") or "cpu"
    lines = [
        f"machine: {os.cpu_count()} cores, {platform.machine()}; device {device}"
        + (f" ({settings[0]['gpu']})" if settings and settings[0].get("gpu") else ""),
        f"model: {os.environ.get('KOKORO_MODEL_DIR') or 'the PyPI int8 model'}; "
        f"{args.repeat} runs a sentence; levels {args.levels}",
        "",
    ]
    for s in settings:
        lines += [
            f"### KOKORO_WORKERS={s['workers']}, KOKORO_PIECE_PLAN={s['plan']} "
            f"(ready after {s['ready_s']} s, model load {s['load_s']:.2f} s)",
            "",
        ]
        lines += table(
            ["sentence", "characters", "audio s", "first audio ms, median", "p95", "real-time factor", "frames",
             "held ms"],
            [
                [r["sentence"], r["chars"], f"{r['audio_s']:.2f}", f"{r['first_audio_ms_median']:.1f}",
                 f"{r['first_audio_ms_p95']:.1f}", f"{r['rtf_median']:.3f}", r["frames"], f"{r['held_ms_median']:.0f}"]
                for r in s["sentences"]  # type: ignore[union-attr]
            ],
        )
        lines += table(
            ["conversations at once", "first audio ms, median", "p95", "stalled", "worst gap ms",
             "seconds of audio a second", "holds"],
            [
                [lv["conversations"], f"{lv['first_audio_ms_median']:.1f}", f"{lv['first_audio_ms_p95']:.1f}",
                 lv["stalled"], f"{lv['worst_gap_ms']:.0f}", f"{lv['audio_s_per_wall_s']:.1f}",
                 "yes" if lv["holds"] else "no"]
                for lv in s["levels"]  # type: ignore[union-attr]
            ],
        )
        lines += [
            f"one conversation alone: first audio {s['idle_conversation_first_audio_ms']} ms, median of "
            f"{args.repeat}; budget for p95 first audio: {s['budget_ms']:.0f} ms",
            f"knee: {'' if s['knee_bounded'] else 'at least '}{s['knee_conversations']} conversations at once; "
            f"{s['knee_answers_an_hour']} answers an hour if answers of "
            f"{s['levels'][0]['answer_audio_s']:.1f} s kept arriving that many at a time "  # type: ignore[index]
            "(an upper bound: a steady rate is not measured)",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default=os.environ.get("KOKORO_WORKERS", "1"), help="comma-separated")
    parser.add_argument("--plans", default="paced", help="KOKORO_PIECE_PLAN values, comma-separated")
    parser.add_argument("--levels", default="1,2,4,8", help="conversations at once, comma-separated, rising")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--spread", type=float, default=1.0, help="seconds over which a level's starts spread")
    parser.add_argument("--stop-after", type=int, default=2, help="levels past the knee before stopping")
    parser.add_argument("--budget-ms", type=float, help="p95 first-audio budget (default: twice the idle median)")
    parser.add_argument("--json", type=Path, help="write the figures here (after each setting)")
    parser.add_argument("--markdown", type=Path, help="write the report here (after each setting)")
    parser.add_argument("--logs", type=Path, default=Path("/tmp"), help="folder for the server's log")
    args = parser.parse_args()
    args.levels = [int(v) for v in args.levels.split(",")]
    args.logs.mkdir(parents=True, exist_ok=True)
    settings: list[dict[str, object]] = []
    for w in args.workers.split(","):
        for plan in args.plans.split(","):
            settings.append(run_setting(int(w), plan, args, args.logs))
            # Written after each setting, so that a run stopped by its time limit keeps what it measured.
            if args.json:
                device = os.environ.get("KOKORO_DEVICE") or "cpu"
                args.json.write_text(json.dumps({"device": device, "settings": settings}, indent=1))
            if args.markdown:
                args.markdown.write_text(report(settings, args) + "\n")
    print(report(settings, args))


if __name__ == "__main__":
    main()
