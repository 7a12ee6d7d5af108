"""The capacity measurement's arithmetic: a listener's silences, the percentile, and where the knee is.

The measurement itself runs the real server (``make measure-capacity``); these hold the judgements it makes
from what it receives, with arrival times chosen so that the answer is known, and run its ramp over real
sockets against a stand-in container whose capacity is known.
"""

from __future__ import annotations

import asyncio
import json
import statistics

import numpy as np
import pytest
import websockets

from kokoro_server import protocol
from kokoro_server.localrun import Outcome
from kokoro_server.protocol import AudioFrame
from measure_capacity import (
    SAMPLE_RATE,
    Level,
    answers_an_hour,
    holds,
    idle_first_audio,
    knee,
    percentile,
    playback_gaps,
    ramp,
)


def outcome(sent_at: float, frames: list[tuple[float, float]]) -> Outcome:
    """A request sent at ``sent_at`` whose frames (arrival after sending, seconds of audio) came as given."""
    o = Outcome("r", sent_at)
    for i, (at, seconds) in enumerate(frames):
        o.frames.append(AudioFrame("r", i, b"\0\0" * round(seconds * SAMPLE_RATE)))
        o.frame_times.append(at)
    return o


def test_audio_arriving_before_the_last_frame_played_out_is_no_silence() -> None:
    # 1 s frames, each arriving 0.9 s after the one before: playback never runs dry.
    assert playback_gaps([outcome(10.0, [(0.2, 1.0), (1.1, 1.0), (2.0, 1.0)])], started=10.0) == []


def test_a_frame_late_for_its_turn_is_a_silence_of_its_lateness() -> None:
    gaps = playback_gaps([outcome(0.0, [(0.2, 1.0), (1.5, 1.0)])], started=0.0)  # played until 1.2, came at 1.5
    assert gaps == pytest.approx([0.3])


def test_sentences_of_one_conversation_share_one_clock() -> None:
    # The second sentence was sent 0.5 s after the first; its first frame (0.9 s after its sending, 1.4 s on the
    # conversation's clock) comes 0.2 s after the first sentence (from 0.2 s to 1.2 s) played out.
    first = outcome(100.0, [(0.2, 1.0)])
    second = outcome(100.5, [(0.9, 0.5)])
    assert playback_gaps([first, second], started=100.0) == pytest.approx([0.2])


def test_the_percentile_interpolates_as_numpy_does() -> None:
    values = [431.0, 12.5, 88.0, 240.0, 97.0, 3.0, 150.0]
    for q in (50, 90, 95, 99):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert percentile([7.0], 95) == 7.0


def level(k: int, holds: bool) -> Level:
    return Level(k, 100.0, 150.0, 0, 0.0, float(k), 10.0, holds)


def test_a_level_holds_within_its_budget_and_without_a_gap() -> None:
    assert holds(stalled=0, p95_ms=400.0, budget_ms=400.0)
    assert not holds(stalled=0, p95_ms=400.5, budget_ms=400.0)
    assert not holds(stalled=1, p95_ms=100.0, budget_ms=400.0)  # one listener hearing a gap is enough


def test_the_knee_is_the_last_level_of_the_unbroken_run_that_holds() -> None:
    assert knee([level(1, True), level(2, True), level(4, True), level(8, False), level(16, False)]) == (4, True)
    # A level holding again past a failing one is noise, not capacity.
    assert knee([level(1, True), level(2, False), level(4, True)]) == (1, True)
    assert knee([level(1, False), level(2, True)]) == (0, True)
    # Every level held: the knee is at least the last one tried, not bounded by a failure.
    assert knee([level(1, True), level(2, True)]) == (2, False)


def test_answers_an_hour_repeat_the_knee_back_to_back() -> None:
    assert answers_an_hour(4, 10.8) == 1333  # 4 answers every 10.8 s
    assert answers_an_hour(0, 10.8) == 0


class SlotsContainer:
    """A stand-in container that holds exactly ``slots`` conversations: a connection takes a slot when it opens
    and frees it when it closes, the ones beyond wait for a slot, and each sentence renders as one second of silence
    in the real protocol's frames: the first in ``render_s``, the others in ``later_render_s`` (still well ahead of
    playback). Its knee is known: ``slots`` conversations at once. The later sentences' longer render keeps a
    conversation that waits for a slot (about 0.95 s to first audio) far past the budget of twice the idle first
    audio (about 0.2 s, under 0.6 s however loaded the machine), so the knee does not move with the load."""

    def __init__(self, slots: int, render_s: float = 0.1, later_render_s: float = 0.25) -> None:
        self.slots = asyncio.Semaphore(slots)
        self.render_s = render_s
        self.later_render_s = later_render_s

    async def handle(self, ws) -> None:
        async with self.slots:
            rendered = 0
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] != "synthesize":
                    continue
                rid = message["request_id"]
                render_s = self.render_s if rendered == 0 else self.later_render_s
                await asyncio.sleep(render_s)
                rendered += 1
                await ws.send(protocol.start_message(rid, sample_rate=SAMPLE_RATE, voice="test"))
                await ws.send(protocol.encode_audio_frame(rid, 0, b"\0\0" * SAMPLE_RATE))
                await ws.send(
                    protocol.end_message(
                        rid, samples=SAMPLE_RATE, sample_rate=SAMPLE_RATE, synthesis_seconds=render_s,
                        first_audio_seconds=render_s, chunks=1,
                    )
                )


@pytest.mark.parametrize("slots", [2, 3])
def test_the_ramp_finds_the_knee_of_a_container_that_holds_a_known_number_of_conversations(slots: int) -> None:
    async def scenario() -> tuple[float, list[Level]]:
        container = SlotsContainer(slots)
        async with websockets.serve(container.handle, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            url = f"ws://127.0.0.1:{port}"
            runs = await idle_first_audio(url, runs=3)
            assert len(runs) == 3, runs  # every run kept, in order
            idle = statistics.median(runs)
            return idle, await ramp(url, [1, 2, 3, 4, 5], spread=0.0, stop_after=2, budget_ms=2 * idle)

    idle, levels = asyncio.run(scenario())
    assert 100 <= idle < 300, idle  # one sentence's render and the trip over a local socket
    assert knee(levels) == (slots, True), [(lv.conversations, lv.first_audio_ms_p95, lv.holds) for lv in levels]
    assert all(lv.stalled == 0 for lv in levels)  # a second of audio per 0.1 s render never runs dry
