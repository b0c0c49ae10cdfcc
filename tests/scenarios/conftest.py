"""Shared helpers for the scenario tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def fuzz_base() -> Path:
    return DATA / "fuzz-base.toml"
