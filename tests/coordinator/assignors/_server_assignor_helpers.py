"""Shared helpers for the server-side assignor tests: Kafka's test fixtures in kgroup's terms.

Kafka's assignor tests build ``MemberSubscriptionAndAssignmentImpl`` by hand: ``mkAssignment`` is a ``HashMap``
(= what ``Assignment.fromRecord`` builds, kgroup's ``current``), ``mkOrderedAssignment`` a ``LinkedHashMap``
(insertion order: here a plain dict replaces the member's rebuilt map), ``mkTopicAssignment`` a
``new HashSet<>(Arrays.asList(...))`` (= what kgroup rebuilds from a list). Members are in a ``TreeMap`` there,
which for the ids used (A, B, C) iterates like kgroup's ``HashMap`` (checked by the tests).
"""

from __future__ import annotations

from coordinator.assignors import ASSIGNORS
from coordinator.assignors._spec import build_group_spec, canonical_topic_id
from protocol.java import JavaIntSet

# The topic ids of Kafka's UniformHomogeneous/HeterogeneousAssignmentBuilderTest.
T1 = "T1-A4s3VTwiI5CTbEp6POw"
T2 = "T2-B4s3VTwiI5YHbPp6YUe"
T3 = "T3-CU8fVTLCz5YMkLoDQsa"
T4 = "T4-Tw9fVTLCz5HbPp6YQsa"
TOPIC_IDS = {"T1": T1, "T2": T2, "T3": T3, "T4": T4}


def topics_of(counts: dict[str, int]) -> dict:
    return {TOPIC_IDS[t]: {"name": t.lower(), "partitions": n} for t, n in counts.items()}


def member(subs: list[str], current: dict[str, list[int]] | None = None, instance_id: str | None = None) -> dict:
    return {"instance_id": instance_id, "rack_id": None, "subscribed_topic_ids": [TOPIC_IDS[t] for t in subs],
            "current": {TOPIC_IDS[t]: ps for t, ps in (current or {}).items()}}


def as_sets(result: dict) -> dict:
    """{member: {topic name: set}} with Kafka's names back (T1...), empty members kept."""
    names = {v: k for k, v in TOPIC_IDS.items()}
    names.update({canonical_topic_id(v): k for k, v in TOPIC_IDS.items()})
    return {m: {names.get(t, t): set(ps) for t, ps in a.items()} for m, a in result.items()}


def run(name: str, members: dict, topics: dict, subscription_type: str | None = None,
        ordered: tuple[str, ...] = (), member_order: list[str] | None = None) -> dict:
    """Run an assignor on Kafka's view of ``members``; ``ordered`` members keep their ``current`` map in
    insertion order (``mkOrderedAssignment``); ``member_order`` replaces the HashMap member order
    (a ``LinkedHashMap`` of members, as in ``CommonAssignorTests``)."""
    spec = build_group_spec(members, topics, subscription_type)
    for m in spec.members:
        if m.member_id in ordered:
            m.assignment = {canonical_topic_id(t): JavaIntSet.from_collection(ps)
                            for t, ps in members[m.member_id]["current"].items()}
    if member_order is not None:
        by_id = {m.member_id: m for m in spec.members}
        spec.members = [by_id[x] for x in member_order]
    return ASSIGNORS[name].assign(spec)
