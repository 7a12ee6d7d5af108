"""The one error that says an engine or a front end cannot run in this installation.

A module of its own, importing nothing, so that the engines and the phonemizers (which the engines
import) can both raise it without importing each other.
"""


class EngineUnavailable(RuntimeError):
    """The configured engine cannot run in this installation (for example torch is not installed)."""
