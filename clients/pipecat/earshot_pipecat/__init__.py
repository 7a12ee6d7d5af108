"""earshot as a pipecat voice (:class:`EarshotTTSService`)."""

from .tts import EarshotTTSService, Heard

__all__ = ["EarshotTTSService", "Heard"]
