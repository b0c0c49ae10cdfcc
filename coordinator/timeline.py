"""Iteration order of Kafka's ``org.apache.kafka.timeline.TimelineHashMap`` (sans-IO).

Kafka's new group coordinator keeps its group state in timeline collections (``TimelineHashMap``, backed by
``BaseHashTable``/``SnapshottableHashTable`` in ``server-common``; Apache Kafka 4.4 as carried by confluentinc/kafka
branch ``4.4``, commit 8d3916cfe15f13a2d878c79d302ba2d63172f0af), and some of its results depend on the
order they iterate in: the members of a consumer group are handed to the server-side assignor in that order
(``TargetAssignmentBuilder`` copies them into a ``HashMap``, whose order within a bucket is insertion order), the
preferred assignor is the first maximum of that order, and ConsumerGroupDescribe lists members in it.
:class:`TimelineHashMap` is a ``dict`` that iterates in exactly that order; nothing else about it differs.

``BaseHashTable`` (what decides the order, at the latest snapshot):

* an open table of ``2^k`` slots; a slot holds one element or an array of colliding elements. The slot of a key
  is the top ``k`` bits of ``hashCode * -7046029254386353131`` (Knuth's multiplicative Fibonacci hashing on the
  sign-extended 32-bit hash, 64-bit wrap-around);
* capacity starts at ``max(2, nextPow2(ceil(expected / 0.75)))`` (2 for the coordinator's maps, created with an
  expected size of 0) and doubles *before* an insertion -- or a replacement -- when ``(size + 1) * 0.75 >
  capacity``; a rehash re-inserts slot by slot, in order, appending to the new slots' arrays. It never shrinks;
* a new key is appended to its slot's array; replacing a value keeps its position; removing a key closes the
  gap (the others keep their order);
* iteration (``SnapshottableHashTable.CurrentIterator``): slots ``0 .. capacity-1``, each slot's array from its
  *last* element to its first (the iterator unpacks a slot into a list and pops from its end).

Checked against Kafka's own timeline classes run by a JDK
(``tests/coordinator/consumer_group/java_oracles``). Snapshots, reverts and historical iteration (``entrySet(committedOffset)``) are not modelled: kgroup replays
only committed records, so the latest snapshot is the only one it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, MutableMapping
from typing import Generic, TypeVar

from protocol.hashing import java_string_hash

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MAX_LOAD_FACTOR = 0.75
_MIN_CAPACITY = 2
_MAX_CAPACITY = 1 << 30
_FIBONACCI = -7046029254386353131
_MASK64 = (1 << 64) - 1


def expected_size_to_capacity(expected_size: int) -> int:
    """``BaseHashTable.expectedSizeToCapacity``."""
    min_capacity = -(-expected_size * 4 // 3) if expected_size > 0 else 0  # ceil(expected / 0.75)
    cap = 1 << (min_capacity - 1).bit_length() if min_capacity > 0 else 0
    return max(_MIN_CAPACITY, min(_MAX_CAPACITY, cap))


def find_slot(hash_code: int, capacity: int) -> int:
    """``BaseHashTable.findSlot``: the top ``log2(capacity)`` bits of the Fibonacci hash of a 32-bit hash code."""
    shift = 65 - capacity.bit_length()
    return ((hash_code * _FIBONACCI) & _MASK64) >> shift


class TimelineHashMap(MutableMapping[K, V], Generic[K, V]):
    """A mapping iterating in ``TimelineHashMap`` order; ``key_hash`` is the key's Java ``hashCode`` (default:
    ``String.hashCode``)."""

    __slots__ = ("_values", "_slots", "_key_hash")

    def __init__(self, expected_size: int = 0, key_hash: Callable[[K], int] = java_string_hash) -> None:
        self._values: dict[K, V] = {}
        self._slots: list[list[K]] = [[] for _ in range(expected_size_to_capacity(expected_size))]
        self._key_hash = key_hash

    def __getitem__(self, key: K) -> V:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def get(self, key, default=None):
        return self._values.get(key, default)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[K]:
        for slot in self._slots:
            yield from tuple(reversed(slot))  # CurrentIterator pops each slot's array from its end

    def values(self):  # type: ignore[override]  # (a list: faster than the Mapping view, same order)
        v = self._values
        return [v[k] for k in self]

    def items(self):  # type: ignore[override]
        v = self._values
        return [(k, v[k]) for k in self]

    def __setitem__(self, key: K, value: V) -> None:
        # baseAddOrReplace: the growth check comes first, even when the key is already present.
        if (len(self._values) + 1) * _MAX_LOAD_FACTOR > len(self._slots) and len(self._slots) < _MAX_CAPACITY:
            self._rehash(len(self._slots) * 2)
        if key not in self._values:
            self._slots[find_slot(self._key_hash(key), len(self._slots))].append(key)
        self._values[key] = value

    def __delitem__(self, key: K) -> None:
        del self._values[key]
        self._slots[find_slot(self._key_hash(key), len(self._slots))].remove(key)

    def _rehash(self, capacity: int) -> None:
        slots: list[list[K]] = [[] for _ in range(capacity)]
        for slot in self._slots:
            for key in slot:
                slots[find_slot(self._key_hash(key), capacity)].append(key)
        self._slots = slots

    @property
    def capacity(self) -> int:
        return len(self._slots)

    def copy(self) -> "TimelineHashMap[K, V]":
        other: TimelineHashMap[K, V] = TimelineHashMap.__new__(TimelineHashMap)
        other._values = dict(self._values)
        other._slots = [list(s) for s in self._slots]
        other._key_hash = self._key_hash
        return other

    def __repr__(self) -> str:
        return f"TimelineHashMap({dict(self.items())!r})"
