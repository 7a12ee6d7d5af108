"""The Kokoro TTS container: a SageMaker-compatible streaming speech server.

It exists so that earshot can turn sentences into speech with low first-audio latency: every request is cut
into model-sized pieces and each piece's audio is sent the moment it exists. The same code serves two engines
(``onnx`` on CPU for local runs and tests, ``torch`` on GPU for production) behind one WebSocket protocol,
described in PROTOCOL.md next to this package.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
