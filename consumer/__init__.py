"""The consumer side of Kafka's classic group protocol.

* :class:`ConsumerCoordinator` (``consumer/coordinator.py``) - the sans-IO member state machine
  (AbstractCoordinator + ConsumerCoordinator + Heartbeat of the Java client); see ``docs/consumer.md``.
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
    "MemberState": "consumer.coordinator",
    "Generation": "consumer.coordinator",
    "PollResult": "consumer.coordinator",
    "RebalanceProtocol": "consumer.coordinator",
    "DISCONNECTED": "consumer.coordinator",
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
