"""The Kokoro TTS container: a SageMaker-compatible streaming speech server.

It exists so that earshot can turn sentences into speech with low first-audio latency: every request is cut
into pieces paced against the listener and each piece's audio is sent the moment it may be. The same engine
(``onnx``) runs on the CPU for local runs and tests and on CUDA in production; ``torch`` stays as an option. One
WebSocket protocol, described in PROTOCOL.md next to this package.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
