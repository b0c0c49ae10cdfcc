"""Fixtures for the coordinator tests; the harness itself is coord_harness.py."""

import pytest

from coord_harness import Env


@pytest.fixture
def env() -> Env:
    return Env()
