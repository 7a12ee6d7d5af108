"""Writes g711_vectors.txt: G.711 as CPython's audioop (the ITU-T reference code) computes it.

Run with a Python that still has audioop (3.12 or older): python3 write_g711_vectors.py
"""
import audioop
import struct
import warnings

warnings.simplefilter("ignore", DeprecationWarning)


def runs(law):
    """(first sample, byte) wherever the encoded byte changes, over every 16-bit sample."""
    out, last = [], None
    for s in range(-32768, 32768):
        byte = law(struct.pack("<h", s), 2)[0]
        if byte != last:
            out.append((s, byte))
            last = byte
    return out


lines = [
    "# G.711 as CPython's audioop computes it (the ITU-T reference code); written by write_g711_vectors.py.",
    "# u|a FIRST BYTE: lin2ulaw / lin2alaw give BYTE (hex) to every 16-bit sample from FIRST to the next line's",
    "# d BYTE ULAW ALAW: ulaw2lin / alaw2lin of BYTE, as a 16-bit sample",
]
lines += [f"u {s} {b:02x}" for s, b in runs(audioop.lin2ulaw)]
lines += [f"a {s} {b:02x}" for s, b in runs(audioop.lin2alaw)]
for byte in range(256):
    u = struct.unpack("<h", audioop.ulaw2lin(bytes([byte]), 2))[0]
    a = struct.unpack("<h", audioop.alaw2lin(bytes([byte]), 2))[0]
    lines.append(f"d {byte:02x} {u} {a}")
with open("g711_vectors.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
