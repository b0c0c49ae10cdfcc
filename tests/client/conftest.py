"""Fixtures for the client tests: the consumer driver meets an embedded `kgroup serve` (tests/broker's harness)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "broker"))

from broker_harness import server  # noqa: E402,F401  (the fixture)
