"""Measure first-audio latency and real-time factor of the local server (onnx engine) on this machine.

Starts the real server, then over the WebSocket protocol times a short sentence, a long sentence and a
paragraph, first on one connection, then with two connections synthesizing at once. Prints a Markdown table
(the README keeps the figures it printed) plus load time and memory.

    make measure                      # defaults: KOKORO_WORKERS=1, one onnxruntime thread per core
    .venv/bin/python measure.py --workers 2 --intra-threads 1 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import websockets

from kokoro_server.localrun import Outcome, ServerProcess, collect, send_requests

TEXTS = {
    "short sentence": "The meeting starts at ten tomorrow morning.",
    "long sentence": (
        "When the agent finally answers, the gateway releases the first complete sentence to the speech "
        "engine at once, and the listener hears the beginning of the reply while the rest of it is still "
        "being written, which is the whole point of streaming."
    ),
    "paragraph (4 sentences)": (
        "Speech starts as soon as the first sentence is ready. The second sentence follows while the first "
        "one plays. A third sentence keeps the stream going. The fourth sentence closes this paragraph."
    ),
}


@dataclass
class Figures:
    first_audio: float  # client: request sent -> first audio frame received
    total: float  # client: request sent -> end received
    audio: float  # seconds of audio produced

    @property
    def rtf(self) -> float:
        return self.total / self.audio


async def one_request(url: str, rid: str, text: str) -> Figures:
    async with websockets.connect(url, max_size=None) as ws:
        outcomes = await send_requests(ws, [(rid, text, {})])
        await collect(ws, outcomes)
    return figures(outcomes[rid])


def figures(outcome: Outcome) -> Figures:
    end = outcome.terminal
    assert end is not None and end["type"] == "end", outcome.messages
    assert outcome.end_time is not None
    return Figures(outcome.frame_times[0], outcome.end_time, end["audio_seconds"])


async def measure(url: str, repeat: int) -> list[tuple[str, str, Figures, Figures | None]]:
    rows: list[tuple[str, str, Figures, Figures | None]] = []
    for label, text in TEXTS.items():
        alone = [await one_request(url, f"a{i}", text) for i in range(repeat)]
        pairs = [await asyncio.gather(*(one_request(url, f"p{i}{c}", text) for c in "xy")) for i in range(repeat)]
        rows.append((label, "1 connection", median(alone), None))
        both = [f for pair in pairs for f in pair]
        slower = [max(pair, key=lambda f: f.total) for pair in pairs]
        rows.append((label, "2 connections at once", median(both), median(slower)))
    return rows


def median(values: list[Figures]) -> Figures:
    return Figures(
        statistics.median(v.first_audio for v in values),
        statistics.median(v.total for v in values),
        statistics.median(v.audio for v in values),
    )


def rss_mib(pid: int) -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=int(os.environ.get("KOKORO_WORKERS", "1")))
    parser.add_argument("--intra-threads", type=int, default=int(os.environ.get("KOKORO_ORT_INTRA_THREADS", "0")))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    env = {"KOKORO_WORKERS": str(args.workers), "KOKORO_ORT_INTRA_THREADS": str(args.intra_threads)}
    server = ServerProcess(env)
    spawned = time.perf_counter()
    server.start()
    try:
        server.wait_ready()
        ready = time.perf_counter() - spawned
        with urllib.request.urlopen(f"{server.http_url}/ping") as response:
            load_seconds = json.load(response)["load_seconds"]
        load_avg = os.getloadavg()[0]
        rows = asyncio.run(measure(server.ws_url, args.repeat))
        assert server.process is not None
        rss, peak = rss_mib(server.process.pid)
    finally:
        server.stop()

    threads = args.intra_threads or os.cpu_count()
    print(
        f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"load average {load_avg:.2f} before the run"
    )
    print(
        f"server: onnx engine, KOKORO_WORKERS={args.workers}, onnxruntime intra-op threads={threads}; "
        f"median of {args.repeat} runs"
    )
    print(
        f"start: port up at once, /ping 200 after {ready:.1f} s (model load {load_seconds:.2f} s); "
        f"memory RSS {rss:.0f} MiB, peak {peak:.0f} MiB\n"
    )
    print(
        "| text | connections | audio s | first audio s | total s | real-time factor "
        "| slower of the two: first audio / RTF |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, mode, f, slow in rows:
        extra = f"{slow.first_audio:.2f} / {slow.rtf:.2f}" if slow else ""
        print(f"| {label} | {mode} | {f.audio:.2f} | {f.first_audio:.2f} | {f.total:.2f} | {f.rtf:.2f} | {extra} |")
    print(
        "\nfirst audio: request sent -> first audio frame received (client side); total: sent -> `end` "
        "received; real-time factor = total / audio seconds (below 1 is faster than real time)."
    )


if __name__ == "__main__":
    main()
