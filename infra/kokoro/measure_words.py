"""First audio with and without word timings: the same sentences asked for alternately with ``"words": true``
and without, on one container started for the purpose (``python measure_words.py [ROUNDS]``, default 20 each).
BENCHMARKS.md ("Word timings") keeps the figures."""
import asyncio, json, statistics, sys, time
from pathlib import Path
import websockets
from kokoro_server.localrun import ServerProcess, synthesize

SENTENCES = [
    "Your order shipped this morning and should arrive on Thursday.",
    "Well, the short answer is yes, but there is a catch.",
    "The meeting moved to Friday at ten, so please update your calendar.",
    "It costs $12.50 at 3:30 pm, said the clerk.",
]

async def first_audio(url, text, words, rid):
    async with websockets.connect(url) as ws:
        sent = time.perf_counter()
        await ws.send(synthesize(rid, text, words=words))
        first = None
        while True:
            raw = await ws.recv()
            if isinstance(raw, bytes) and first is None:
                first = (time.perf_counter() - sent) * 1000
            elif isinstance(raw, str) and json.loads(raw)["type"] == "end":
                return first

async def main(url, rounds):
    out = {True: [], False: []}
    for i in range(rounds):
        for words in ((True, False) if i % 2 == 0 else (False, True)):
            text = SENTENCES[i % len(SENTENCES)]
            out[words].append(await first_audio(url, text, words, f"r{i}{words}"))
    for words, xs in out.items():
        xs.sort()
        print(f"words={words}: n={len(xs)} median {statistics.median(xs):.1f} ms p90 {xs[int(0.9*(len(xs)-1))]:.1f} ms")

p = ServerProcess({}, Path("/tmp/words_bench.log")).start()
try:
    p.wait_ready()
    asyncio.run(main(p.ws_url, int(sys.argv[1]) if len(sys.argv) > 1 else 20))
finally:
    p.stop()
