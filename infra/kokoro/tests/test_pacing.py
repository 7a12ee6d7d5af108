"""The piece plan: pieces sized by the audio queued ahead of the listener, audio held rather than stalled.

The first tests are the plan's rules on phoneme strings; the last run the real server with the real model made
slower than real time (``KOKORO_SLOWDOWN``), where the fixed plan stops mid-sentence for seconds and the paced
plan must not (beyond a hiccup of the machine's), as the container's own ``end`` message and the audio's arrival
times at a real client both show.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import websockets
from conftest import run

from kokoro_server.localrun import Outcome, ServerProcess, collect, send_requests
from kokoro_server.pacing import MIN_WORD_PIECE, FixedPlan, Pacer, PacedPlan, Plan, Playout, Speed

CLAUSE = "lˈɔŋ klˈɔz wɪð mˈɛni wˈɜːdz"  # 27 phonemes
SENTENCE = ", ".join([CLAUSE] * 6) + "."  # six clauses, 173 phonemes


def speed(render_per_phoneme: float = 0.01, audio_per_phoneme: float = 0.06) -> Speed:
    # No deviation: the plan's rules read in round figures (the margin has a test of its own).
    return Speed(render_per_phoneme=render_per_phoneme, audio_per_phoneme=audio_per_phoneme, overhead=10, deviation=0.0)


def test_the_listeners_clock_counts_the_audio_ahead_and_the_silence_before_a_late_chunk() -> None:
    clock = Playout()
    assert clock.lead(5.0) == 0.0
    clock.sent(2.0, now=10.0)  # plays 10..12
    clock.sent(1.0, now=10.5)  # queued behind it: plays 12..13
    assert clock.lead(11.0) == pytest.approx(2.0)
    assert clock.silence_before(12.5) == 0.0
    assert clock.silence_before(13.4) == pytest.approx(0.4)
    clock.sent(1.0, now=13.4)  # played late: 13.4..14.4
    assert clock.lead(14.0) == pytest.approx(0.4)


def test_the_speed_estimate_learns_a_slowdown_at_once_and_a_speedup_slowly() -> None:
    s = speed()
    s.observe(30, render_seconds=0.8, audio_seconds=1.8)  # the first observation replaces the guess
    assert s.render_per_phoneme == pytest.approx(0.02)
    assert s.audio_per_phoneme == pytest.approx(0.06)
    s.observe(30, render_seconds=1.6, audio_seconds=1.8)  # twice as slow: half-way there in one piece
    assert s.render_per_phoneme == pytest.approx(0.03)
    s.observe(30, render_seconds=0.4, audio_seconds=1.8)  # faster: a fifth of the way
    assert s.render_per_phoneme == pytest.approx(0.03 - 0.2 * 0.02)
    assert s.phonemes_within(s.render_seconds(50)) == 50
    # Audio at speed 2 is half as long per phoneme: learned per phoneme at speed 1.
    s.observe(30, render_seconds=0.8, audio_seconds=0.9, speed=2.0)
    assert s.audio_per_phoneme == pytest.approx(0.06)


def test_a_plan_allows_for_as_much_render_time_as_the_predictions_have_been_wrong() -> None:
    s = Speed(render_per_phoneme=0.01, overhead=10)
    assert s.margin == pytest.approx(1.3)  # before any error is known: the prior
    s.observe(40, render_seconds=0.5, audio_seconds=2.4)  # the first replaces the guess: 10 ms a phoneme
    assert s.render_seconds(40) == pytest.approx(0.5 * 1.3)
    for _ in range(20):  # renders that come in exactly as predicted: the margin shrinks towards none
        s.observe(40, render_seconds=s.render_per_phoneme * 50, audio_seconds=2.4)
    assert s.margin < 1.01
    steady = s.render_seconds(100)
    # A long piece costs a quarter more per phoneme than the short ones taught: the margin grows at once, and
    # shrinks only as predictions come true again.
    s.observe(100, render_seconds=s.render_per_phoneme * 110 * 1.25, audio_seconds=6.0)
    assert s.margin == pytest.approx(1 + 3 * 0.25 * 0.25, rel=0.05)
    assert s.render_seconds(100) > 1.1 * steady
    assert s.phonemes_within(s.render_seconds(60)) == 60
    # However wrong, the margin is bounded.
    for _ in range(20):
        s.observe(40, render_seconds=s.render_per_phoneme * 50 * 5, audio_seconds=2.4)
    assert s.margin == 2.5


def test_a_plan_gives_clauses_never_crosses_a_sentence_and_cuts_words_only_when_asked() -> None:
    plan = Plan.of(f"ʃˈɔːɹt. {SENTENCE} ˈɛnd.", sentence_pause=0.25, clause_pause=0.1)
    first = plan.take(100, words=False)
    assert (first.piece.phonemes, first.piece.pause_after, first.starts_sentence, first.ends_sentence) == (
        "ʃˈɔːɹt.",
        0.25,
        True,
        True,
    )
    two = plan.take(60)  # two clauses and the comma between them fit in 60
    assert two.piece.phonemes == f"{CLAUSE}, {CLAUSE}," and two.piece.pause_after == 0.1
    assert two.starts_sentence and not two.ends_sentence
    words = plan.take(12)  # less than a clause: cut at words, no pause after a word
    assert words.piece.phonemes == "lˈɔŋ klˈɔz" and words.piece.pause_after == 0.0
    rest = plan.take(500)  # the rest of the sentence, not the next one
    assert rest.piece.phonemes.startswith("wɪð mˈɛni") and rest.piece.phonemes.endswith("wˈɜːdz.")
    assert rest.ends_sentence and rest.piece.pause_after == 0.25
    last = plan.take(500)
    assert last.piece.phonemes == "ˈɛnd." and last.piece.pause_after == 0.0 and plan.done()


def test_a_first_clause_longer_than_asked_is_given_whole_at_a_sentence_start() -> None:
    plan = Plan.of(SENTENCE, 0.25, 0.1)
    assert plan.take(10, words=False).piece.phonemes == f"{CLAUSE},"
    # Mid-sentence, never shorter than the shortest word piece.
    assert plan.take(5).piece.phonemes == "lˈɔŋ klˈɔz"
    assert MIN_WORD_PIECE == 12


def test_waiting_listeners_get_the_fixed_plans_first_piece_and_pieces_grow_with_the_lead() -> None:
    phonemes = SENTENCE
    fixed = FixedPlan(phonemes, 150, 60, 0.25, 0.1)
    paced = PacedPlan(Plan.of(phonemes, 0.25, 0.1), Pacer(speed(), first_piece=60, most=150))
    assert paced.next_piece(lead=0.0).piece == fixed.next_piece(lead=0.0).piece  # same time to first audio
    # 1 s queued ahead at 10 ms a phoneme: 0.75 s of rendering = 65 phonemes, two clauses.
    assert paced.next_piece(lead=1.0).piece.phonemes == f"{CLAUSE}, {CLAUSE},"
    # 0.3 s ahead: not even a clause fits (12 phonemes): words.
    assert paced.next_piece(lead=0.3).piece.phonemes == "lˈɔŋ klˈɔz"
    # Plenty ahead: the rest, bounded by the longest piece.
    assert paced.next_piece(lead=30.0).ends_sentence and paced.done()


def test_the_rest_of_a_sentence_keeps_up_on_a_fast_engine_and_not_on_one_slower_than_real_time() -> None:
    fast = PacedPlan(Plan.of(SENTENCE, 0.25, 0.1), Pacer(speed(render_per_phoneme=0.01), 60, 150))
    fast.next_piece(0.0)
    assert fast.keeps_up(lead=1.5)
    assert not fast.keeps_up(lead=0.05)  # nothing can be rendered in 50 ms
    slow = PacedPlan(Plan.of(SENTENCE, 0.25, 0.1), Pacer(speed(render_per_phoneme=0.09), 60, 150))
    slow.next_piece(0.0)
    assert not slow.keeps_up(lead=1.5)  # 90 ms to render 60 ms of audio: the lead runs out
    assert slow.keeps_up(lead=20.0)  # unless enough is held to carry the rest
    # A sentence that has ended leaves nothing to wait for.
    one = PacedPlan(Plan.of("ʃˈɔːɹt.", 0.25, 0.1), Pacer(speed(render_per_phoneme=1.0), 60, 150))
    one.next_piece(0.0)
    assert one.keeps_up(lead=0.0)


# ----------------------------------------------------------------------------- the real server, slowed down

SPOKEN = "I found your order, and it shipped yesterday afternoon from our warehouse in Ohio, so it should arrive by Thursday."


# The most silence inside the sentence the paced plan may leave on a busy machine: under a third of the least the
# fixed plan leaves (0.5 s), and under what a listener takes for a breath.
HICCUP = 0.15


def client_stalls(outcome: Outcome) -> list[float]:
    """Silences a listener who plays each frame as it arrives hears inside the request (one sentence)."""
    end, stalls = None, []
    for arrived, frame in zip(outcome.frame_times, outcome.frames, strict=True):
        if end is not None and arrived > end + 0.02:
            stalls.append(arrived - end)
        end = max(end if end is not None else arrived, arrived) + len(frame.pcm) / 2 / 24000
    return stalls


@pytest.fixture(scope="module")
def slowed_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A server for each plan whose renders take four times as long: the model a little faster than real time.

    Both load at once: each loads the model and warms it up four times slower (about 11 s), and nothing is
    measured before both are ready. The one not under test waits idle. Each picks its port once the one
    before listens on its own (a free port is only free until someone binds it)."""
    processes: dict[str, ServerProcess] = {}
    try:
        for plan in ("fixed", "paced"):
            log = tmp_path_factory.mktemp(f"slowed-{plan}") / "server.log"
            env = {"KOKORO_PIECE_PLAN": plan, "KOKORO_SLOWDOWN": "4", "KOKORO_WORKERS": "1"}
            processes[plan] = ServerProcess(env, log).start()
            processes[plan].wait_listening()
        for process in processes.values():
            process.wait_ready()
        yield {plan: process.ws_url for plan, process in processes.items()}
    finally:
        for process in processes.values():
            process.stop()


@pytest.fixture(params=["fixed", "paced"])
def slowed(request: pytest.FixtureRequest, slowed_servers: dict[str, str]) -> tuple[str, str]:
    """One plan's slowed server: the plan and its URL."""
    return request.param, slowed_servers[request.param]


def speak(url: str) -> Outcome:
    async def scenario() -> Outcome:
        async with websockets.connect(url) as ws:
            outcomes = await send_requests(ws, [("s", SPOKEN, {})])
            await collect(ws, outcomes)
            return outcomes["s"]

    return run(scenario())


def test_a_slow_engine_stalls_mid_sentence_with_the_fixed_plan_and_never_with_the_paced_one(
    slowed: tuple[str, str],
) -> None:
    plan, url = slowed
    outcome = speak(url)
    end = outcome.terminal
    assert end is not None and end["type"] == "end", outcome.messages
    heard = client_stalls(outcome)
    if plan == "fixed":
        # The first clause plays for about a second; the rest takes seconds to render: the voice stops.
        assert end["stalls"] >= 1 and end["stall_seconds"] > 0.5, end
        assert heard and max(heard) > 0.5 and sum(heard) == pytest.approx(end["stall_seconds"], abs=0.1)
        assert end["held_seconds"] == 0
    else:
        # The plan holds a quarter of each render's estimate in reserve; a machine that hiccups past that for
        # a moment (CI runs beside other work) may cost a sliver of silence, never the fixed plan's seconds.
        assert end["stall_seconds"] <= HICCUP, end
        assert sum(heard) <= HICCUP + 0.02, f"a listener heard stalls of {heard} s"
        # What it costs: the sentence starts later, held until the rest would keep up; it is still spoken
        # whole, as fast as the engine allows.
        assert end["audio_seconds"] > 5
