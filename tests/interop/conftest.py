"""tests/interop: real Kafka clients (kafka-python, aiokafka, confluent-kafka) against `kgroup serve`.

Each client runs in its own process (agent.py) with a hard time limit; the server runs in this process in a
background thread (kgroup.testing.KGroupCluster, the pytest plugin's fixture)."""

from __future__ import annotations

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The plugin's fixtures, also when the pytest11 entry point is not installed.
from kgroup.pytest_plugin import kgroup_cluster, kgroup_cluster_options  # noqa: E402,F401

from harness import agents  # noqa: E402,F401  (the fixture, shared with tests/kgroup)
