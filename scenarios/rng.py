"""The simulation's one source of randomness.

A run is a pure function of (scenario, seed). :class:`SimRandom` is seeded once; every random choice in a run
(network jitter, fault probabilities, the sticky partitioner, which broker a client bootstraps from, the
coordinator's member UUIDs, fuzzed fault schedules) comes from it or from a named child stream derived from it
(``child("network")``). Child streams keep unrelated choices independent: adding a produce action does not
change the network's jitter. Derivation is deterministic (a hash of the seed and the name, never Python's
salted ``hash``).
"""

from __future__ import annotations

import hashlib
import random


class SimRandom(random.Random):
    def __init__(self, seed: int, name: str = "root") -> None:
        self.seed_value = int(seed)
        self.name = name
        digest = hashlib.sha256(f"{int(seed)}/{name}".encode()).digest()
        super().__init__(int.from_bytes(digest[:8], "big"))

    def child(self, name: str) -> "SimRandom":
        return SimRandom(self.seed_value, f"{self.name}/{name}")

    def derive_seed(self, name: str) -> int:
        """A 32-bit seed for a component that owns a ``random.Random`` (the coordinator core)."""
        digest = hashlib.sha256(f"{self.seed_value}/{self.name}/{name}".encode()).digest()
        return int.from_bytes(digest[:4], "big")
