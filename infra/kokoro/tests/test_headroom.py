"""The machine's load as the onnx engine sees it: other processes' CPU, and the session a piece runs on."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kokoro_server.config import Settings
from kokoro_server.headroom import WINDOW, Headroom, machine_busy_ticks, others_cores, process_ticks


def test_the_proc_files_are_read_as_the_kernel_writes_them() -> None:
    stat = "cpu  100 5 50 800 20 3 2 1 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n"
    # Busy: user, nice, system, irq, softirq, steal; idle and iowait are not.
    assert machine_busy_ticks(stat) == (161, 981)
    # The command name may hold spaces and parentheses; utime and stime are the 14th and 15th fields.
    own = "4242 (python (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 37 11 0 0 20 0 3 0"
    assert process_ticks(own) == 48
    # Half the machine's ticks busy, half of those this process's: the others used half a core of two.
    assert others_cores((1000, 4000, 300), (1200, 4400, 400), cores=2) == 0.5
    assert others_cores((1000, 4000, 300), (1000, 4000, 300), cores=2) is None


def test_a_burst_before_a_piece_leaves_the_cores_free_and_a_steady_neighbour_does_not() -> None:
    headroom = Headroom(cores=2)
    assert headroom.free_for(2), "nothing sampled yet: free"
    for quiet in (0.0, 0.04, 0.0):
        headroom.record(quiet)
    # The gateway and the client opening a conversation: half a core for a quarter of a second, then quiet.
    headroom.record(0.55)
    assert headroom.others() == 0.55
    assert headroom.free_for(2), "a burst in one sample does not stop the threads spinning"
    headroom.record(0.5)
    assert headroom.free_for(2), "nor in two"
    # Work that holds a core shows in every sample of the window.
    for busy in [1.0] * WINDOW:
        headroom.record(busy)
    assert not headroom.free_for(2)
    assert headroom.free_for(1), "one thread still has a core"
    # It is seen as gone once a sample is quiet again.
    headroom.record(0.0)
    assert headroom.free_for(2)


@contextmanager
def hogs(n: int) -> Iterator[None]:
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in busy:
            p.kill()
            p.wait()


def test_processes_that_keep_every_core_busy_leave_no_core_free_and_the_engine_stops_spinning() -> None:
    from kokoro_server.engines.onnx_engine import OnnxEngine

    cores = os.cpu_count() or 1
    engine = OnnxEngine(Settings.from_env({}))
    engine.load()
    headroom = engine._headroom  # noqa: SLF001 (the engine's own sampler)
    assert headroom is not None, "auto spinning on the CPU samples the load"
    with hogs(cores):
        # Every sample of the window taken while they run (one interval more for the sampler's phase).
        time.sleep(0.25 * (WINDOW + 2))
        assert headroom.others() > 0.6 * cores, headroom.others()
        assert not headroom.free_for(2)
        assert engine.session_now() is engine._session  # noqa: SLF001 (the one whose threads sleep)
    # The process's own pieces share the cores too: with one piece already rendering (KOKORO_WORKERS over one),
    # a second on a 2-core machine never spins, whatever other processes do.
    if cores <= 2:
        engine._running = 1  # noqa: SLF001 (as while a worker renders)
        assert engine.session_now() is engine._session  # noqa: SLF001
