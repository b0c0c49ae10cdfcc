"""Java semantics the assignors depend on: string order, ``String.hashCode`` and ``HashMap`` iteration order.

Kafka's assignors are written against ``java.lang.String`` and ``java.util.HashMap``. Three things leak into
their results and are reproduced here:

* **String order.** ``String.compareTo`` compares UTF-16 code units; Python compares code points. They agree
  unless a string holds an astral character (U+10000 and above, a surrogate pair in UTF-16), which Java sorts
  *below* U+E000..U+FFFF. :func:`java_sort_key` returns ``str`` keys when no astral character is present (fast)
  and UTF-16-BE bytes otherwise (byte order of UTF-16-BE == code-unit order).
* **Hash codes.** ``String.hashCode`` (``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, int32) and
  ``TopicPartition.hashCode`` (``31 * (31 + partition) + topic.hashCode()``).
* **HashMap iteration order.** Where Kafka iterates a ``HashMap`` and the order changes the outcome (who keeps
  its owned partitions first in the constrained sticky algorithm, conflict resolution between claimants,
  the topic order of a range assignment list, the first element of a ``HashSet`` in partition movements) we
  iterate in the order a ``HashMap`` with default capacity would: ascending bucket index
  ``(h ^ (h >>> 16)) & (capacity - 1)``. Within a bucket Java keeps insertion order, which depends on how the
  caller filled the map; we use Java string order there, so results never depend on Python dict order. This
  reproduces Java exactly whenever no two keys share a bucket, and is deterministic always.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Hashable, Iterable, Sequence

_ASTRAL = "\U00010000"


def _has_astral(s: str) -> bool:
    return bool(s) and max(s) >= _ASTRAL


@lru_cache(maxsize=1 << 16)
def java_string_hash(s: str) -> int:
    """``java.lang.String.hashCode`` as a signed 32-bit int."""
    h = 0
    if _has_astral(s):
        data = s.encode("utf-16-be")
        units = [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]
    else:
        units = map(ord, s)
    for u in units:
        h = (31 * h + u) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode`` given the topic's String hash."""
    h = (31 * (31 + partition) + topic_hash) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def default_capacity(size: int) -> int:
    """Table size of a ``new HashMap<>()`` after ``size`` insertions (16, doubling past 0.75 load)."""
    cap = 16
    while size > cap * 3 // 4:
        cap *= 2
    return cap


def java_sort_key(strings: Iterable[str]) -> Callable[[str], object]:
    """A sort key giving Java ``String.compareTo`` order for every string in ``strings``."""
    if any(_has_astral(s) for s in strings):
        return lambda s: s.encode("utf-16-be")
    return lambda s: s


def java_sorted(strings: Iterable[str]) -> list[str]:
    items = list(strings)
    return sorted(items, key=java_sort_key(items))


def hashmap_order(keys: Sequence[str], capacity: int | None = None) -> list[str]:
    """Iteration order of a Java ``HashMap<String, ?>`` holding ``keys``.

    Ties (same bucket) are broken by Java string order, our canonical stand-in for insertion order.
    """
    keys = java_sorted(keys)
    cap = capacity or default_capacity(len(keys))
    mask = cap - 1
    pos = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (_spread(java_string_hash(k)) & mask, pos[k]))


class JavaHashSet:
    """Membership plus Java ``HashSet`` *first-element* order for small sets of hashable keys.

    ``hash_of(key)`` must return the key's Java ``hashCode``. Capacity grows like ``HashMap`` and never
    shrinks; within a bucket Java keeps insertion order, so the first element is the one with the smallest
    (bucket, insertion sequence).
    """

    __slots__ = ("_items", "_seq", "_cap", "_hash_of")

    def __init__(self, hash_of: Callable[[Hashable], int]):
        self._items: dict[Hashable, int] = {}
        self._seq = 0
        self._cap = 16
        self._hash_of = hash_of

    def add(self, key: Hashable) -> None:
        if key in self._items:
            return
        self._items[key] = self._seq
        self._seq += 1
        if len(self._items) > self._cap * 3 // 4:
            self._cap *= 2

    def discard(self, key: Hashable) -> None:
        self._items.pop(key, None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def first(self) -> Hashable:
        mask = self._cap - 1
        hash_of = self._hash_of
        return min(self._items.items(), key=lambda kv: (_spread(hash_of(kv[0])) & mask, kv[1]))[0]
