"""Fixtures for the tests of the broker over TCP; helpers live in broker_harness.py."""

from __future__ import annotations

from broker_harness import server  # noqa: F401  (the fixture)
