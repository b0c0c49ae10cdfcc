"""The consumer side of Kafka's group protocols (sans-IO core; the I/O drivers live in ``client/`` and
``scenarios/``).

* :class:`ConsumerCoordinator` (``consumer/coordinator.py``) - the facade a driver talks to: one group member;
  see ``docs/consumer.md``. It wires the parts, each owning its state (Kafka's seams):
  ``consumer._state`` (member state machine and its tables), ``consumer.network`` (requests, futures,
  timeouts, versions), ``consumer.discovery`` (the coordinator), ``consumer.subscription`` (subscription,
  assignment, positions), ``consumer.commits`` (offset commit/fetch, auto-commit), ``consumer.membership``
  (classic join/sync/heartbeat/leave), ``consumer.listener`` (rebalance callbacks), ``consumer.heartbeat``
  (timers); with ``group.protocol=consumer`` (KIP-848) ``consumer.consumer_membership`` replaces the classic
  membership, with ``consumer._consumer_state`` (its state table) and ``consumer.consumer_heartbeat``.
* :class:`ConsumerConfig` (``consumer/config.py``) - Kafka's consumer settings, names and defaults.
* ``consumer.outputs`` - what the core asks a driver to do; ``consumer.errors`` - Kafka's exceptions.
* ``consumer.assignors`` - the partition assignors.

Names are resolved lazily so that importing ``consumer.assignors`` alone stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ConsumerCoordinator": "consumer.coordinator",
    "MemberState": "consumer._state",
    "ConsumerMemberState": "consumer._consumer_state",
    "Generation": "consumer._state",
    "PollResult": "consumer.coordinator",
    "RebalanceProtocol": "consumer.membership",
    "DISCONNECTED": "consumer.network",
    "ConsumerConfig": "consumer.config",
    "ConfigError": "consumer.config",
    "Heartbeat": "consumer.heartbeat",
    "KafkaException": "consumer.errors",
    "ApiException": "consumer.errors",
    "CommitFailedException": "consumer.errors",
    "RebalanceInProgressException": "consumer.errors",
    "FencedInstanceIdException": "consumer.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'consumer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
