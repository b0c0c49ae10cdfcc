"""Kafka's server-side assignors (KIP-848 consumer groups), exact to Kafka 4.1-4.4; sans-IO.

The coordinator of a KIP-848 ``consumer`` group computes the target assignment itself, with the assignor the
members prefer (``group.consumer.assignors``, default ``uniform, range``). This package reproduces Kafka's two
built-in assignors result for result, including everything Kafka's result depends on by accident of Java: the
iteration order of ``HashMap``/``HashSet`` (:mod:`protocol.java`), string and ``Uuid`` comparison::

    from coordinator.assignors import assign_target
    assign_target("uniform", members, topics)  # -> {member_id: {topic_id: [partitions]}}

``members``: ``{member_id: {"instance_id": str|None, "rack_id": str|None, "subscribed_topic_ids": [topic_id, ...],
"current": {topic_id: [partitions]}}}`` -- **in the order Kafka puts them into its member map** (existing
members in the group's order, then the updated or new one), ``subscribed_topic_ids`` in the order Kafka's
``TopicIds`` iterates them (the member's topic-name ``HashSet`` order) and ``current`` as the member's previous
*target* assignment record lists it. Optional ``"subscription_size"``: the number of topic *names* the member
subscribes to, resolvable or not (Kafka sizes some tables by it; default: the number of ids).
``topics``: ``{topic_id: {"name": str, "partitions": int}}``; a topic id is a Kafka ``Uuid`` string (base64).

The result lists every member (``{}`` when it gets nothing), members in Kafka's map order (the order it writes
the ``ConsumerGroupTargetAssignmentMember`` records in), topics and partitions in the Java iteration order of the
sets Kafka builds -- the order its record holds, so feeding a result back as ``current`` continues exactly as
Kafka would. Compare partition lists as sets when only the assignment matters.

Errors: :class:`PartitionAssignorError` where Kafka throws ``PartitionAssignorException`` (a subscribed topic id
missing from ``topics``); ``ValueError`` with a one-line reason for malformed input; :class:`UnknownAssignorError`
for an assignor name that is not ``uniform`` or ``range``. Rack ids are accepted and, as in Kafka's ``uniform``
and ``range``, not used. Topic ids in ``current`` that are not in ``topics`` (deleted topics) are dropped.
``range`` is not sticky: like Kafka's ``RangeAssignor`` it never reads ``current`` (nor checks it).

Modules: ``_spec`` (Kafka's ``GroupSpecImpl`` rebuilt from the arguments), ``uniform``, ``range``.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Callable, NamedTuple

from protocol.java import DEFAULT_JDK

from . import range as _range
from . import uniform as _uniform
from ._spec import HETEROGENEOUS, HOMOGENEOUS, GroupSpec, PartitionAssignorError, build_group_spec

KAFKA_VERSION = "4.4 (confluentinc/kafka branch 4.4, commit 8d3916cfe15f13a2d878c79d302ba2d63172f0af)"


class UnknownAssignorError(ValueError):
    """An assignor name that is not one of Kafka's built-in server assignors."""


class ServerAssignor(NamedTuple):
    """A built-in server-side assignor: Kafka's ``name()`` and class, the function computing its result, and
    whether it reads the members' previous assignment (is sticky)."""
    name: str
    kafka_class: str
    assign: Callable[[GroupSpec], dict]
    sticky: bool


UNIFORM = ServerAssignor(_uniform.NAME, "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                         _uniform.assign, True)
RANGE = ServerAssignor(_range.NAME, "org.apache.kafka.coordinator.group.assignor.RangeAssignor", _range.assign,
                       False)
ASSIGNORS: dict[str, ServerAssignor] = {UNIFORM.name: UNIFORM, RANGE.name: RANGE}
"""Kafka's ``group.consumer.assignors`` default order: the first is the default assignor."""


def get_server_assignor(name: str) -> ServerAssignor:
    """The assignor named ``name`` (Kafka's short name or its class name)."""
    a = ASSIGNORS.get(name)
    if a is None:
        a = next((x for x in ASSIGNORS.values() if x.kafka_class == name), None)
    if a is None:
        raise UnknownAssignorError(f"unknown server assignor {name!r}: supported are {', '.join(ASSIGNORS)}")
    return a


def assign_target(name: str, members: Mapping, topics: Mapping, *, subscription_type: str | None = None,
                  jdk: int = DEFAULT_JDK) -> dict[str, dict[str, list[int]]]:
    """The target assignment Kafka's assignor ``name`` computes (see the module docstring).

    ``subscription_type`` (``"homogeneous"``/``"heterogeneous"``) overrides the derived one, as a coordinator
    that knows Kafka's own rule would pass it; ``jdk`` picks the JDK's ``HashSet(Collection)`` sizing (19+ or 17).
    """
    assignor = get_server_assignor(name)
    # The result is built from a million small objects, none of them in a reference cycle: the cyclic collector
    # would only rescan them (a third of the time on the benchmark's large groups), so it is paused meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        return assignor.assign(build_group_spec(members, topics, subscription_type, jdk, assignor.sticky))
    finally:
        if paused:
            gc.enable()


__all__ = ["ASSIGNORS", "HETEROGENEOUS", "HOMOGENEOUS", "KAFKA_VERSION", "PartitionAssignorError", "RANGE",
           "ServerAssignor", "UNIFORM", "UnknownAssignorError", "assign_target", "get_server_assignor"]
