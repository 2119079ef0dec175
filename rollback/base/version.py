"""The engine's version, written into every script header."""

__version__ = "0.1.0"
