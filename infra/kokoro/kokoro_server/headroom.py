"""How much of the machine's CPU other processes use, sampled in the background, so that the onnx engine spins its
threads only when a core is free for each of them.

onnxruntime's threads either spin between the operators of a run or sleep and are woken for each parallel
section. On a free machine spinning is the faster (thousands of sections a sentence, each a wake-up saved: a
short sentence's first audio 5 to 10% sooner); beside other work it is the slower by far, since a spinning
thread holds a core its partner is waiting in the run queue for (measured on 2 cores: a clause rendered in
1.40 s spinning and 1.50 s sleeping when idle, 3.12 s and 2.41 s beside one CPU-bound process, 6.20 s and
5.48 s beside four). So the engine keeps a session of each kind and asks here which to run.

What other processes use is the machine's busy time (``/proc/stat``) less this process's own (``/proc/self/stat``),
over the last ``interval`` seconds, read by a daemon thread: two small files a quarter of a second, nothing on
a render's path but reading a number. Written by hand: psutil would give the same two figures, and nothing
else of it would be used.

The engine asks about the load that will share the render, so it is judged by the *least* of the last
``WINDOW`` samples: work that holds a core holds it in each of them, while a burst (the gateway and the client
opening a conversation, a moment before its first piece) is in one or two and gone by the time the piece
renders. Judged by the last sample alone, an answer's first piece ran on the sleeping session in 2 of 6 to 8 of
10 answers on an otherwise idle machine, the others' burst already over when it rendered, and paid for it:
"Sure." 380 ms sleeping against 360 spinning, a 29-phoneme sentence 842 against 800 (``measure_sessions.py``).
"""

from __future__ import annotations

import os
import threading
from collections import deque

# Seconds between samples: a change of load is seen within two of them.
INTERVAL = 0.25
# A core counts as free when others use less than this much of it (the conversation's own gateway and client
# wake for every token and use a few percent).
SLACK = 0.25
# The samples a steady load must show in (three quarters of a second): a new neighbour is seen within that.
WINDOW = 3


def machine_busy_ticks(stat: str) -> tuple[int, int]:
    """Busy and total clock ticks of all CPUs together, from the text of ``/proc/stat`` (its ``cpu`` line: user,
    nice, system, idle, iowait, irq, softirq, steal; idle and iowait are not busy)."""
    fields = [int(x) for x in stat.split("\n", 1)[0].split()[1:9]]
    total = sum(fields)
    return total - fields[3] - fields[4], total


def process_ticks(stat: str) -> int:
    """A process's user and system clock ticks, every thread together, from the text of ``/proc/<pid>/stat``
    (fields 14 and 15; the command name before them may hold spaces)."""
    after = stat[stat.rfind(")") + 2 :].split()
    return int(after[11]) + int(after[12])


def others_cores(before: tuple[int, int, int], now: tuple[int, int, int], cores: int) -> float | None:
    """Cores other processes used between two readings of (machine busy, machine total, this process) ticks:
    the machine's busy share less this process's, times the cores; ``None`` when no time passed."""
    busy, total, mine = (b - a for a, b in zip(before, now))
    if total <= 0:
        return None
    return max(0.0, (busy - mine) / total * cores)


class Headroom:
    """The cores other processes have used lately, kept fresh by a daemon thread once :meth:`start`\\ed."""

    def __init__(self, interval: float = INTERVAL, cores: int | None = None) -> None:
        self.cores = cores or os.cpu_count() or 1
        self._interval = interval
        # The last ``WINDOW`` samples, the newest last.
        self._recent: deque[float] = deque(maxlen=WINDOW)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Headroom:
        if self._thread is None:
            self._thread = threading.Thread(target=self._sample, name="kokoro-headroom", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def others(self) -> float:
        """Cores other processes used over the last interval (0 until the first interval has passed)."""
        with self._lock:
            return self._recent[-1] if self._recent else 0.0

    def steady(self) -> float:
        """Cores other processes have used in each of the last ``WINDOW`` intervals: the least of those
        samples (0 until the first interval has passed)."""
        with self._lock:
            return min(self._recent, default=0.0)

    def free_for(self, threads: int) -> bool:
        """Whether a core is free for each of ``threads`` threads of this process, by the others' steady load."""
        return self.cores - self.steady() >= threads - SLACK

    def record(self, others: float) -> None:
        """Takes one interval's sample of the others' cores."""
        with self._lock:
            self._recent.append(others)

    def _read(self) -> tuple[int, int, int]:
        with open("/proc/stat", encoding="ascii") as f:
            busy, total = machine_busy_ticks(f.read())
        with open("/proc/self/stat", encoding="ascii") as f:
            mine = process_ticks(f.read())
        return busy, total, mine

    def _sample(self) -> None:
        try:
            before = self._read()
        except OSError:
            return  # no /proc (not Linux): others() stays 0, and the engine spins as onnxruntime does by default
        while not self._stop.wait(self._interval):
            now = self._read()
            others = others_cores(before, now, self.cores)
            before = now
            if others is not None:
                self.record(others)

