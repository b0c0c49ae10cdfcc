"""tests/interop: real Kafka clients (kafka-python, aiokafka, confluent-kafka) against `kgroup serve`.

Each client runs in its own process (agent.py) with a hard time limit; the server runs in this process in a
background thread (kgroup.testing.KGroupCluster, the pytest plugin's fixture)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The plugin's fixtures, also when the pytest11 entry point is not installed.
from kgroup.pytest_plugin import kgroup_cluster, kgroup_cluster_options  # noqa: E402,F401


@pytest.fixture
def agents():
    """Client agents a test started (append them); each is killed when the test ends."""
    started = []
    yield started
    for a in started:
        a.kill()
