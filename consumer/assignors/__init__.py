"""Partition assignors, exact to Apache Kafka's Java implementations.

* ``range`` - :class:`RangeAssignor` (``org.apache.kafka.clients.consumer.RangeAssignor``, rack-aware KIP-881)
* ``roundrobin`` - :class:`RoundRobinAssignor`
* ``sticky`` - :class:`StickyAssignor` (KIP-54, KIP-341, rack-aware KIP-881)
* ``cooperative-sticky`` - :class:`CooperativeStickyAssignor` (KIP-429)

``assign(partitions_per_topic, subscriptions, partition_racks=None)`` is pure: no I/O, no clocks, and the
result does not depend on the iteration order of the dicts passed in. See ``docs/assignors.md``.
"""

from ._types import Assignment, Assignor, PartitionRacks, Subscription, TopicPartition
from .range import RangeAssignor
from .registry import AssignorNotFound, get_assignor
from .roundrobin import RoundRobinAssignor
from .sticky import AbstractStickyAssignor, CooperativeStickyAssignor, StickyAssignor
from .userdata import (decode_cooperative_user_data, decode_sticky_user_data, encode_cooperative_user_data,
                       encode_sticky_user_data)

__all__ = [
    "TopicPartition", "Subscription", "Assignment", "Assignor", "PartitionRacks", "get_assignor",
    "AssignorNotFound", "RangeAssignor", "RoundRobinAssignor", "StickyAssignor", "CooperativeStickyAssignor",
    "AbstractStickyAssignor", "encode_sticky_user_data", "decode_sticky_user_data",
    "encode_cooperative_user_data", "decode_cooperative_user_data",
]
