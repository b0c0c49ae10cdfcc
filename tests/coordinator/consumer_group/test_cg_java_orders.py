"""The orders Kafka's results depend on, against Kafka's own code run by a JDK (java_oracles/generate.py):

* ``coordinator.timeline.TimelineHashMap`` iterates as Kafka 4.4's ``org.apache.kafka.timeline.TimelineHashMap``
  (members, server assignor counts) after random put / replace / remove sequences with snapshots in between;
* ``ConsumerGroup.compute_preferred_server_assignor`` breaks ties as Kafka's ``HashMap`` copy + ``compute`` +
  ``Stream.max`` does, and ``preferred_server_assignor`` as the first maximum of the ``TimelineHashMap``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember, _first_max
from coordinator.timeline import TimelineHashMap, expected_size_to_capacity, find_slot

from cg_helpers import update_member

VECTORS = json.loads((Path(__file__).parent / "java_oracles" / "timeline_vectors.json").read_text())


@pytest.mark.parametrize("index", range(len(VECTORS["timeline"])))
def test_timeline_hash_map_iterates_as_kafka(index):
    case = VECTORS["timeline"][index]
    m: TimelineHashMap[str, int] = TimelineHashMap()
    orders = iter(case["orders"])
    for i, op in enumerate(case["ops"]):
        if op.startswith("put "):
            m[op[4:]] = i
        elif op.startswith("remove "):
            del m[op[7:]]
        elif op == "print":
            assert list(m) == next(orders), f"after op {i}"
    assert next(orders, None) is None


def test_capacity_and_slots():
    # BaseHashTable: capacity max(2, nextPow2(ceil(n / 0.75))); the slot is the top bits of the Fibonacci hash.
    assert [expected_size_to_capacity(n) for n in (0, 1, 2, 3, 4, 6, 7, 100)] == [2, 2, 4, 4, 8, 8, 16, 256]
    assert find_slot(0, 2) == 0 and all(0 <= find_slot(h, 8) < 8 for h in (-(1 << 31), -1, 1, (1 << 31) - 1))


@pytest.mark.parametrize("index", range(len(VECTORS["preferred_assignor"])))
def test_compute_preferred_server_assignor_breaks_ties_as_kafka(index):
    case = VECTORS["preferred_assignor"][index]
    group = ConsumerGroup("g")
    n = 0
    for name, count in case["counts"]:  # members preferring each name, in that (TimelineHashMap) order
        for _ in range(count):
            update_member(group, ConsumerGroupMember(f"m{n}", server_assignor_name=name))
            n += 1
    assert [(k, c) for k, c in group.server_assignors.items()] == [tuple(x) for x in case["counts"]]
    old = next((group.members[m] for m in group.members
                if group.members[m].server_assignor_name == case["old"]), None) if case["old"] != "-" else None
    new = ConsumerGroupMember("new", server_assignor_name=None if case["new"] == "-" else case["new"])
    assert group.compute_preferred_server_assignor(old, new) == case["preferred"]


def test_preferred_server_assignor_is_the_first_maximum_in_timeline_order():
    group = ConsumerGroup("g")
    update_member(group, ConsumerGroupMember("a", server_assignor_name="range"))
    update_member(group, ConsumerGroupMember("b", server_assignor_name="uniform"))
    # "uniform" and "range" both have one vote; in a 2- or 4-slot BaseHashTable "uniform" comes first.
    assert list(group.server_assignors) == ["uniform", "range"]
    assert group.preferred_server_assignor() == "uniform" == _first_max(group.server_assignors.items())
