"""Kafka's ``range`` server-side assignor (``org.apache.kafka.coordinator.group.assignor.RangeAssignor``).

Not sticky (Kafka rewrote it in 3.x/4.0 to compute ranges directly): members are sorted -- static members first by
``group.instance.id``, then dynamic members by member id, both by ``String.compareTo`` (UTF-16 code units) -- and
each topic's partitions ``0..n-1`` are cut into consecutive ranges in that order, ``n // subscribers`` each, the
first ``n % subscribers`` members one more. Homogeneous groups use the first sorted member's topics (so a topic's
ranges are co-partitioned across topics of equal size); heterogeneous groups count each topic's own subscribers.
A member's topics sit in a ``HashMap`` sized ``(int) (topics / 0.75f + 1)``, filled in its subscription order; a
range iterates ascending (``RangeSet``).
"""

from __future__ import annotations

from protocol.java import float_capacity, hashmap_order, string_sort_key, uuid_sort_key

from ._spec import HOMOGENEOUS, GroupSpec, PartitionAssignorError, topic_hash

NAME = "range"


def _missing() -> PartitionAssignorError:
    return PartitionAssignorError("Member is subscribed to a non-existent topic")


def sorted_members(spec: GroupSpec) -> list:
    """``sortMemberIds``: static members by instance id, then dynamic ones by member id (stable over ``memberIds()``)."""
    strings = [m.member_id for m in spec.members] + [m.instance_id for m in spec.members if m.instance_id is not None]
    key = string_sort_key(strings)
    return sorted(spec.members, key=lambda m: (0, key(m.instance_id)) if m.instance_id is not None
                  else (1, key(m.member_id)))


def _range(n: int, subscribers: int, k: int) -> range:
    """The range ``TopicMetadata``/``addPartitionsToAssignment`` give the ``k``-th subscriber (0-based, in sorted
    order): quotas ``n // subscribers``, the first ``n % subscribers`` one more, cut consecutively."""
    q, r = divmod(n, subscribers)
    start = k * q + min(k, r)
    return range(start, start + q + (k < r))


class _MapOrder:
    """Iteration orders of the members' topic maps: ``new HashMap<>(capacity)`` filled in a given order."""

    def __init__(self):
        self._cache: dict = {}

    def __call__(self, keys: list[str], capacity: int) -> list[str]:
        k = (capacity, tuple(keys))
        order = self._cache.get(k)
        if order is None:
            order = self._cache[k] = hashmap_order(keys, topic_hash, capacity, uuid_sort_key)
        return order


def assign(spec: GroupSpec) -> dict[str, dict[str, list[int]]]:
    if not spec.members:
        return {}
    members = sorted_members(spec)
    name = spec.spelling.get
    map_order = _MapOrder()
    result: dict[str, dict[str, list[int]]] = {}
    if spec.subscription_type == HOMOGENEOUS:
        # Every topic of the first sorted member's subscription, split over all members.
        topics = []
        for t in members[0].subscribed:
            n = spec.num_partitions(t)
            if n == -1:
                raise _missing()
            topics.append((t, n))
        capacity = float_capacity(len(topics))
        n_members = len(spec.members)
        # Member k gets a non-empty range of topic t while k < (all members if n >= members, else n).
        limit = {t: (n_members if n >= n_members else n) for t, n in topics}
        held_by_all = min(limit.values(), default=0)
        full = [t for t, _ in topics]
        n_of = dict(topics)
        current: list[str] | None = None
        current_bound = -1
        for k, m in enumerate(members):
            if k < held_by_all:
                keys = full
            else:
                if current is None or k >= current_bound:
                    current = [t for t in full if limit[t] > k]
                    current_bound = min((limit[t] for t in full if limit[t] > k), default=n_members)
                keys = current
            if not keys:
                result[m.member_id] = {}
                continue
            ranges: dict[int, range] = {}
            out = {}
            for t in map_order(keys, capacity):
                n = n_of[t]
                r = ranges.get(n)
                if r is None:
                    r = ranges[n] = _range(n, n_members, k)
                out[name(t, t)] = list(r)
            result[m.member_id] = out
    else:
        subscribers: dict[str, int] = {}
        for m in members:
            for t in m.subscribed:
                c = subscribers.get(t)
                if c is None:
                    if spec.num_partitions(t) == -1:
                        raise _missing()
                    c = 0
                subscribers[t] = c + 1
        seen: dict[str, int] = dict.fromkeys(subscribers, 0)
        for m in members:
            got: dict[str, range] = {}
            for t in m.subscribed:
                k = seen[t]
                seen[t] = k + 1
                r = _range(spec.num_partitions(t), subscribers[t], k)
                if r:
                    got[t] = r
            if not got:
                result[m.member_id] = {}
                continue
            order = map_order(list(got), float_capacity(m.subscription_size))
            result[m.member_id] = {name(t, t): list(got[t]) for t in order}
    # members in memberIds() order (the order Kafka writes the records in)
    return {m.member_id: result[m.member_id] for m in spec.members}
