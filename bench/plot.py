"""Draws the figures of a benchmark run from its ``results.json``: release timing, distance from the
floor, gaps, load and the peer comparison. ``make bench`` runs it after ``earshot-bench``; it only reads the results, so it
can be run again on an old run: ``python bench/plot.py bench/results``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = {"incremental": "#1f77b4", "buffered": "#d62728"}


def values(trials, shape, config, release, key):
    return [t[key] for t in trials if t["shape"] == shape and t["config"] == config and t["release"] == release and t.get(key) is not None]


def pct(sorted_values, p):
    """The p-th percentile, interpolated between the nearest ranks as the report's figures are (numpy's
    default; earshot_core::stats)."""
    if not sorted_values:
        return float("nan")
    rank = min(max(p, 0.0), 100.0) / 100.0 * (len(sorted_values) - 1)
    low, high = int(rank // 1), min(int(-(-rank // 1)), len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


def median(sorted_values):
    if not sorted_values:
        return float("nan")
    mid = len(sorted_values) // 2
    return sorted_values[mid] if len(sorted_values) % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2


def release_plot(rel, out: Path) -> None:
    shapes = rel["settings"]["shapes"]
    metrics = [("server_ttfa_ms", "first audio\n(server)"), ("client_ttfa_ms", "first audio\n(client)"),
               ("server_substantive_ms", "first substantive\nsentence"), ("client_total_ms", "total")]
    fig, axes = plt.subplots(1, len(shapes), figsize=(5 * len(shapes), 4.5), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        positions, data, colors = [], [], []
        for i, (key, _) in enumerate(metrics):
            for j, mode in enumerate(MODES):
                positions.append(i * 3 + j)
                data.append([v / 1000 for v in values(rel["trials"], shape, "default", mode, key)] or [float("nan")])
                colors.append(MODES[mode])
        box = ax.boxplot(data, positions=positions, widths=0.8, patch_artist=True, showfliers=True)
        for patch, color in zip(box["boxes"], colors):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        ax.set_xticks([i * 3 + 0.5 for i in range(len(metrics))], [label for _, label in metrics], fontsize=8)
        ax.set_title(f"shape: {shape}")
        ax.set_ylabel("seconds")
        ax.grid(axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.6) for c in MODES.values()]
    fig.legend(handles, list(MODES), loc="upper right")
    fig.suptitle("Incremental vs buffered release, local Kokoro (onnx, CPU), scripted agent")
    fig.tight_layout()
    fig.savefig(out / "release.png", dpi=110)
    plt.close(fig)


def floor_plot(rel, out: Path) -> None:
    configs = [("default", "idle release on"), ("idle-off", "idle release off"), ("fast-first", "fast first fragment")]
    floors = rel["floors"]
    if not floors:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.25
    for k, (config, label) in enumerate(configs):
        medians, errors = [], []
        for f in floors:
            d = sorted(t - f["floor_ms"] for t in values(rel["trials"], f["shape"], config, "incremental", "client_ttfa_ms"))
            med = median(d)
            medians.append(med)
            errors.append(max(0.0, pct(d, 90) - med) if d else 0.0)
        xs = [i + (k - 1) * width for i in range(len(floors))]
        ax.bar(xs, medians, width, yerr=[[0] * len(errors), errors], capsize=3, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(floors)), [f"{f['shape']}\n(floor {f['floor_ms'] / 1000:.2f} s)" for f in floors])
    ax.set_ylabel("time to first audio minus floor (ms)\nmedian, bar to p90")
    ax.set_title("Distance from the floor (first sentence complete + synthesized alone)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "floor.png", dpi=110)
    plt.close(fig)


def gaps_plot(rel, out: Path) -> None:
    shapes = rel["settings"]["shapes"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for j, mode in enumerate(MODES):
        for i, shape in enumerate(shapes):
            trials = [t for t in rel["trials"] if t["shape"] == shape and t["config"] == "default" and t["release"] == mode]
            lengths = [g for t in trials for g in t["gaps_ms"] if g > 5]  # earshot_core's UNDERRUN_TOLERANCE_MS
            xs = [i * 3 + j] * len(lengths)
            ax.scatter(xs, lengths, color=MODES[mode], alpha=0.5, label=mode if i == 0 else None)
            ax.annotate(f"{len(lengths)} in {len(trials)}", (i * 3 + j, 0), textcoords="offset points", xytext=(0, -24), ha="center", fontsize=7)
    ax.set_xticks([i * 3 + 0.5 for i in range(len(shapes))], shapes)
    ax.set_ylabel("underrun length (ms)")
    ax.set_title("Underruns between sentences at real-time playback (count in conversations)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "gaps.png", dpi=110)
    plt.close(fig)


def load_plot(levels, out: Path) -> None:
    ns = [level["conversations"] for level in levels]
    med, p99, kb, cores = [], [], [], []
    for level in levels:
        added = sorted(level["added_ttfa_ms"])
        med.append(pct(added, 50))
        p99.append(pct(added, 99))
        kb.append(level["kb_per_conversation"])
        cores.append(level["server_cores"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.plot(ns, med, "o-", label="median")
    left.plot(ns, p99, "s-", label="p99")
    left.axhline(20, color="grey", linestyle="--", linewidth=0.8, label="p99 target (20 ms)")
    left.set_xscale("log")
    left.set_xlabel("concurrent conversations")
    left.set_ylabel("added time to first audio over N = 1 (ms)")
    left.legend()
    left.grid(alpha=0.3)
    right.plot(ns, kb, "o-", color="#2ca02c", label="KB per conversation")
    right.axhline(256, color="grey", linestyle="--", linewidth=0.8, label="target (256 KB)")
    right.set_xscale("log")
    right.set_xlabel("concurrent conversations")
    right.set_ylabel("KB per conversation")
    twin = right.twinx()
    twin.plot(ns, cores, "^-", color="#9467bd", label="server CPU (cores)")
    twin.set_ylabel("server CPU (cores)")
    right.legend(loc="upper left")
    twin.legend(loc="upper right")
    right.grid(alpha=0.3)
    fig.suptitle("Load with the SYNTHETIC voice (real-time tone after 200 ms): earshot itself, not a model")
    fig.tight_layout()
    fig.savefig(out / "load.png", dpi=110)
    plt.close(fig)


def peer_plot(peer, out: Path) -> None:
    """Each trial's first audio per answer and system, with each cell's median, and the floor (earshot's
    release plus the direct kokoro-onnx call's median) as a line."""
    trials = peer["trials"]
    answers = [a for a, _ in peer["first_sentences"]]
    variants = sorted({t["variant"] for t in trials if t.get("variant")})
    cells = [("pipecat", None, "pipecat 1.14 (KokoroTTSService)", "#ff7f0e"), ("earshot", None, "earshot", "#1f77b4")]
    cells += [("variant", v, f"earshot, {v}", "#9ecae1") for v in variants]
    cells.append(("direct", None, "kokoro-onnx alone (first sentence)", "#7f7f7f"))
    fig, axes = plt.subplots(1, len(answers), figsize=(5.5 * len(answers), 4.5), squeeze=False)
    for ax, answer in zip(axes[0], answers):
        for k, (system, variant, label, color) in enumerate(cells):
            v = sorted(t["first_audio_ms"] for t in trials if t["answer"] == answer and t["system"] == system and t.get("variant") == variant)
            ax.scatter([k] * len(v), v, color=color, alpha=0.6, s=18)
            ax.hlines(median(v), k - 0.3, k + 0.3, color=color, linewidth=2.5, label=label)
        released = sorted(t["released_ms"] for t in trials if t["answer"] == answer and t["system"] == "earshot" and t.get("variant") is None)
        direct = sorted(t["first_audio_ms"] for t in trials if t["answer"] == answer and t["system"] == "direct")
        floor = median(released) + median(direct)
        ax.axhline(floor, color="black", linestyle="--", linewidth=0.8, label="floor: release + direct call")
        sentence = dict(peer["first_sentences"])[answer]
        ax.set_title(f"answer {answer}: first sentence \"{sentence}\"", fontsize=10)
        ax.set_xticks([])
        ax.set_ylabel("first audio from the first piece (ms)")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3)
    fig.suptitle("Same model, voice, text and pace: first audio per trial, medians as bars")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out / "peer.png", dpi=110)
    plt.close(fig)


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
    results = json.loads((out / "results.json").read_text())
    drawn = []
    if results.get("release"):
        release_plot(results["release"], out)
        floor_plot(results["release"], out)
        gaps_plot(results["release"], out)
        drawn += ["release.png", "floor.png", "gaps.png"]
    if results.get("load"):
        load_plot(results["load"], out)
        drawn.append("load.png")
    if results.get("peer"):
        peer_plot(results["peer"], out)
        drawn.append("peer.png")
    print(f"plot: drew {', '.join(drawn) or 'nothing'} in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
