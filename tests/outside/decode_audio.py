"""An outside decoder for earshot's audio formats: Python's standard library (audioop, array, wave) and,
for the compressed formats, each format's reference tool reading the answer's joined chunks as a file:
Xiph's `opusdec` (opus-tools) for Ogg Opus, `mpg123` for MP3, `faad` (FAAD2) for AAC in ADTS, and Xiph's
`flac` for FLAC (all Debian packages).

MP3 and AAC decoders play an encoder's priming first (no tag in a live stream says how much to drop),
so the answer is aligned to the native answer before it is judged: the lag (at most 100 ms) that best
matches their first two seconds, found on their loudness and then sample by sample, is dropped from
the answer's front and reported as `lag_ms`.

Reads a JSON request on standard input and prints a JSON answer: the answer's audio decoded from its
announced encoding, measured against the native answer (the backend's own PCM) as an outside judge would:

  in:  {"native": {"path", "rate"},                       # 16-bit PCM, the same text without output_format
        "answer": {"path", "rate", "encoding",            # pcm_s16le | mulaw | alaw | ogg_opus | mp3 | aac_adts | flac
                   "sentences": [[first, end], ...],      # sample ranges, per sentence
                   "boundaries": [sample, ...]},          # where one chunk meets the next inside a sentence
        "native_sentences": [[first, end], ...]}
  out: {"duration_ms", "native_duration_ms", "rms", "native_rms",
        "correlation",     # the lowest over sentences, against the native resampled by audioop.ratecv
        "envelope_correlation",  # the same of their loudness in 10 ms frames (what a lossy codec keeps)
        "seam"}            # the worst chunk boundary: its sample-to-sample step over the largest step of
                           # the 32 samples either side (plus a quantization step); a click stands out

audioop is in the standard library up to Python 3.12 (the Kokoro venv's 3.11 has it).
"""
import array
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
import wave

warnings.simplefilter("ignore", DeprecationWarning)
import audioop  # noqa: E402


def opusdec(data):
    """16-bit PCM at 48 kHz from a whole Ogg Opus stream, by opusdec (pre-skip and end trim as RFC 7845 says)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "answer.opus"), os.path.join(tmp, "answer.wav")
        open(src, "wb").write(data)
        subprocess.run(["opusdec", "--quiet", "--rate", "48000", "--force-wav", src, dst], check=True)
        with wave.open(dst, "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, 48000):
                raise SystemExit(f"opusdec wrote {w.getparams()}")
            return w.readframes(w.getnframes())


def tool(command, data, suffix, rate):
    """16-bit mono PCM at `rate` from a whole compressed stream, by a reference decoder writing WAV."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "answer" + suffix), os.path.join(tmp, "answer.wav")
        open(src, "wb").write(data)
        subprocess.run([part.format(src=src, dst=dst) for part in command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with wave.open(dst, "rb") as w:
            channels, width, written_rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            data = w.readframes(w.getnframes())
        # FAAD2 takes AAC-LC at 24 kHz or less for implicit HE-AAC (SBR and parametric stereo may follow
        # unannounced in ADTS) and writes stereo at twice the rate: one channel, back at the stream's rate.
        if command[0] == "faad" and (channels, written_rate) == (2, 2 * rate):
            data = audioop.tomono(data, 2, 1, 0)
            data, _ = audioop.ratecv(data, 2, 1, written_rate, rate, None)
            channels, written_rate = 1, rate
        if (channels, width, written_rate) != (1, 2, rate):
            raise SystemExit(f"{command[0]} wrote {channels} channels of {width} bytes at {written_rate} Hz")
        return data


TOOLS = {
    "mp3": (["mpg123", "-q", "-w", "{dst}", "{src}"], ".mp3"),
    "aac_adts": (["faad", "-q", "-b", "1", "-o", "{dst}", "{src}"], ".aac"),
    "flac": (["flac", "-d", "-s", "-f", "-o", "{dst}", "{src}"], ".flac"),
}


def samples(data, encoding, rate=None):
    if encoding == "ogg_opus":
        data = opusdec(data)
    elif encoding in TOOLS:
        command, suffix = TOOLS[encoding]
        data = tool(command, data, suffix, rate)
    elif encoding == "mulaw":
        data = audioop.ulaw2lin(data, 2)
    elif encoding == "alaw":
        data = audioop.alaw2lin(data, 2)
    elif encoding != "pcm_s16le":
        raise SystemExit(f"unknown encoding {encoding}")
    out = array.array("h")
    out.frombytes(data[: len(data) // 2 * 2])
    return out


def rms(xs):
    return math.sqrt(sum(x * x for x in xs) / len(xs)) / 32768.0 if xs else 0.0


def correlation(a, b):
    n = min(len(a), len(b))
    if n < 2:
        return 0.0
    a, b = a[:n], b[:n]
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb) if va and vb else 0.0


def envelope(xs, frame):
    return [math.sqrt(sum(x * x for x in xs[i:i + frame]) / frame) for i in range(0, len(xs) - frame + 1, frame)]


def lag(answer, reference, rate):
    """The samples of priming at the answer's front: the lag up to 100 ms that best matches the first two
    seconds, coarse on 1 ms loudness frames, then sample by sample around it."""
    span, frame, most = 2 * rate, rate // 1000, rate // 10
    ref_env = envelope(reference[:span], frame)
    coarse = max(range(most // frame + 1), key=lambda k: correlation(envelope(answer[k * frame:k * frame + span], frame), ref_env))
    fine_span = rate // 5
    start = max(0, coarse * frame - 2 * frame)
    # The fine match on the first loud fifth of a second, where the waveform has something to match.
    loud = max(range(0, max(1, len(reference) - fine_span), frame), key=lambda i: sum(abs(x) for x in reference[i:i + frame]))
    loud = min(loud, span)
    ref = list(reference[loud:loud + fine_span])
    return max(range(start, coarse * frame + 2 * frame + 1), key=lambda k: correlation(list(answer[loud + k:loud + k + fine_span]), ref))


def main():
    req = json.load(sys.stdin)
    native_req, answer_req = req["native"], req["answer"]
    native = samples(open(native_req["path"], "rb").read(), "pcm_s16le")
    rate, native_rate = answer_req["rate"], native_req["rate"]
    answer = samples(open(answer_req["path"], "rb").read(), answer_req["encoding"], rate)
    dropped = 0
    if answer_req["encoding"] in ("mp3", "aac_adts"):
        whole = native.tobytes()
        if native_rate != rate:
            whole, _ = audioop.ratecv(whole, 2, 1, native_rate, rate, None)
        reference = array.array("h")
        reference.frombytes(whole)
        dropped = lag(answer, reference, rate)
        answer = answer[dropped:]
    worst_corr = worst_envelope = 1.0
    for (a0, a1), (n0, n1) in zip(answer_req["sentences"], req["native_sentences"]):
        sentence = native[n0:n1].tobytes()
        if native_rate != rate:
            sentence, _ = audioop.ratecv(sentence, 2, 1, native_rate, rate, None)
        reference = array.array("h")
        reference.frombytes(sentence)
        worst_corr = min(worst_corr, correlation(list(answer[a0:a1]), list(reference)))
        frame = rate // 100
        worst_envelope = min(worst_envelope, correlation(envelope(answer[a0:a1], frame), envelope(reference, frame)))
    seam = 0.0
    for b in answer_req["boundaries"]:
        if b < 1 or b >= len(answer):
            continue
        step = abs(answer[b] - answer[b - 1])
        around = [abs(answer[i] - answer[i - 1]) for i in range(max(1, b - 32), min(len(answer), b + 33)) if i != b]
        seam = max(seam, step / (max(around, default=0) + 64))
    print(json.dumps({
        "duration_ms": len(answer) * 1000.0 / rate,
        "native_duration_ms": len(native) * 1000.0 / native_rate,
        "rms": rms(answer),
        "native_rms": rms(native),
        "correlation": worst_corr,
        "envelope_correlation": worst_envelope,
        "seam": seam,
        "lag_ms": dropped * 1000.0 / rate,
    }))


main()
