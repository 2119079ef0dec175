"""Fixtures and helpers shared by the tests; test modules import from here, never from each other."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
