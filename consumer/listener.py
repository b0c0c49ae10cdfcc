"""Rebalance listener callbacks, sans-IO: Kafka's ``ConsumerRebalanceListenerInvoker``.

Each callback is an output (:class:`~consumer.outputs.PartitionsRevoked`, ``PartitionsAssigned``,
``PartitionsLost``) queued in the order Kafka invokes them; an optional in-process ``listener`` object with
``on_partitions_revoked`` / ``on_partitions_assigned`` / ``on_partitions_lost`` methods is also called at that
moment (so it may still commit the revoked partitions' positions). ``onPartitionsLost`` defaults to
``onPartitionsRevoked``, as in Kafka. A listener's exception is logged and returned, not raised, so the
rebalance step finishes first; :func:`raise_callback_error` raises it afterwards as Kafka does.

Shared by every membership type (the classic protocol's and, next, KIP-848's).
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from consumer import outputs as out
from consumer.errors import KafkaException
from consumer.network import ConsumerNetworkClient

log = logging.getLogger("kgroup.consumer")

_METHODS = {out.PartitionsRevoked: "on_partitions_revoked", out.PartitionsAssigned: "on_partitions_assigned",
            out.PartitionsLost: "on_partitions_lost"}


class RebalanceListenerInvoker:
    __slots__ = ("listener", "_net")

    def __init__(self, net: ConsumerNetworkClient, listener: Any = None) -> None:
        self.listener = listener
        self._net = net

    def invoke(self, kind: type, partitions: tuple) -> Optional[BaseException]:
        """Queue the callback and call the in-process listener, if any; its exception is returned."""
        self._net.emit(kind(partitions))
        if self.listener is None:
            return None
        name = _METHODS[kind]
        method = getattr(self.listener, name, None)
        if method is None and kind is out.PartitionsLost:  # onPartitionsLost defaults to onPartitionsRevoked
            method = getattr(self.listener, "on_partitions_revoked", None)
        if method is None:
            return None
        try:
            method(partitions)
        except Exception as exc:  # noqa: BLE001 - Kafka logs it and rethrows after the step completes
            log.error("User provided listener failed on %s for partitions %s: %r", name, partitions, exc)
            return exc
        return None


def raise_callback_error(exc: Optional[BaseException], keep_kafka_exception: bool) -> None:
    """Raise a listener's exception after the rebalance step: a ``KafkaException`` as is if asked, anything
    else wrapped ("User rebalance callback throws an error")."""
    if exc is None:
        return
    if keep_kafka_exception and isinstance(exc, KafkaException):
        raise exc
    raise KafkaException("User rebalance callback throws an error") from exc


__all__ = ["RebalanceListenerInvoker", "raise_callback_error"]
