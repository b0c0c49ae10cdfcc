"""StickyAssignor and CooperativeStickyAssignor: balanced first, sticky second, rack-aware (KIP-54/341/429/881).

Mirrors ``org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor`` (Kafka 3.5+, including
KAFKA-12984, KAFKA-13715, KAFKA-14639 and KAFKA-15106), ``StickyAssignor`` and ``CooperativeStickyAssignor``.

Theory of operation
-------------------
1. **Member data.** Each member reports the partitions it owned and the generation they belong to: the eager
   ``StickyAssignor`` in its user data (``userdata.py``), the cooperative one in the subscription's
   ``owned_partitions``/``generation_id`` (falling back to the generation in its user data).
2. **Ownership conflicts** (``allSubscriptionsEqual``). Claims on a partition are resolved member by member:
   an unclaimed partition is kept; against an earlier claimant the higher generation wins (the earlier
   claimant's generation is the one in its *subscription*, as Kafka reads it); equal generations invalidate
   the partition for both (it will be handed out as "transferring ownership").
3. **Constrained algorithm** when every member subscribes to the same topics. With ``T`` partitions and ``N``
   members, ``minQuota = T // N``, ``maxQuota = ceil(T / N)`` and exactly ``T % N`` members may end at
   ``maxQuota``. Members (in Java ``HashMap`` order) keep up to their quota of owned partitions, sorted by
   (partition, topic); revoked extras and unowned partitions are then dealt round-robin, first within racks,
   to the members below ``minQuota`` (sorted by id) and finally, one each, to members at ``minQuota``.
4. **General algorithm** otherwise: keep valid owned partitions, give each unassigned partition (topics with
   the fewest subscribers first) to the least-loaded eligible member, then move partitions while the
   assignment is not balanced (``isBalanced``), preferring a partition's previous owner of an older
   generation, tracking movements so that a partition never ping-pongs between two members, and reverting if
   the balance score did not improve.
5. **Cooperative** (KIP-429): a partition that changes owner is withheld from its new owner this round; the
   old owner revokes it and a follow-up rebalance hands it over.

Partitions are ints internally (``base[topic] + partition``, topics in Java string order) so a million of them
cost lists of ints, not objects; ``TopicPartition`` appears only at the API boundary.
"""

from __future__ import annotations

import bisect
import heapq
from itertools import compress, repeat
from typing import Iterable, Mapping, Optional

from protocol.java import JavaHashMap, java_sort_key, java_string_hash, topic_partition_hash

from ._common import (BaseAssignor, check_subscriptions, consumer_rack, normalize_partition_racks,
                      subscribed_topic_counts, subscription_order, tp_list)
from ._types import Assignment, PartitionRacks, Subscription, TopicPartition
from .userdata import (decode_cooperative_user_data, decode_sticky_user_data, encode_cooperative_user_data,
                       encode_sticky_user_data)

DEFAULT_GENERATION = -1


class _Layout:
    """Topics in Java order and the int id of every partition: ``base[topic] + partition``."""

    def __init__(self, counts: Mapping[str, int]):
        self.jkey = java_sort_key(counts)
        self.topics = sorted(counts, key=self.jkey)
        self.index = {t: i for i, t in enumerate(self.topics)}
        self.counts = [counts[t] for t in self.topics]
        self.base = []
        total = 0
        for n in self.counts:
            self.base.append(total)
            total += n
        self.total = total
        self._tof: Optional[list[int]] = None
        self._flat: Optional[list[TopicPartition]] = None
        self._topic_hash: dict[int, int] = {}

    @property
    def tof(self) -> list[int]:
        """Topic index of every partition id."""
        if self._tof is None:
            tof: list[int] = []
            for i, n in enumerate(self.counts):
                tof.extend(repeat(i, n))
            self._tof = tof
        return self._tof

    @property
    def flat(self) -> list[TopicPartition]:
        if self._flat is None:
            flat: list[TopicPartition] = []
            for t, n in zip(self.topics, self.counts):
                flat.extend(tp_list(t, n)[:n])
            self._flat = flat
        return self._flat

    def ids(self, grouped: Iterable[tuple[str, Iterable[int]]]) -> list[int]:
        """Ids of the valid partitions in ``(topic, partitions)`` groups, in order (unknown ones dropped)."""
        out: list[int] = []
        index, base, counts = self.index, self.base, self.counts
        for topic, parts in grouped:
            i = index.get(topic)
            if i is None:
                continue
            b, n = base[i], counts[i]
            out.extend(b + p for p in parts if 0 <= p < n)
        return out

    def ids_of_tps(self, tps: Iterable[TopicPartition]) -> list[int]:
        out: list[int] = []
        index, base, counts = self.index, self.base, self.counts
        for topic, p in tps:
            i = index.get(topic)
            if i is not None and 0 <= p < counts[i]:
                out.append(base[i] + p)
        return out

    def partition_topic_key(self):
        """Sort key for (partition, topic) order of ids."""
        tof, base, nt = self.tof, self.base, len(self.topics)
        return lambda g: (g - base[tof[g]]) * nt + tof[g]

    def java_hash(self, g: int) -> int:
        """``TopicPartition.hashCode`` of partition id ``g``."""
        t = self.tof[g]
        th = self._topic_hash.get(t)
        if th is None:
            th = self._topic_hash[t] = java_string_hash(self.topics[t])
        return topic_partition_hash(th, g - self.base[t])


class _RackInfo:
    """``AbstractStickyAssignor.RackInfo``: consumer racks, replica racks and rack-aware decisions."""

    def __init__(self, layout: _Layout, subscriptions: Mapping[str, Subscription], order: list[str],
                 racks: dict[str, list[frozenset]], assignor: BaseAssignor):
        consumers_by_rack: dict[str, list[str]] = {}
        for m in order:
            r = consumer_rack(subscriptions[m])
            if r is not None:
                consumers_by_rack.setdefault(r, []).append(m)
        self.consumer_racks: dict[str, str] = {}
        self.partition_racks: Optional[list[frozenset]] = None
        self.num_consumers_by_partition: Optional[list[int]] = None
        if not consumers_by_rack:
            return
        per_partition: list[frozenset] = []
        empty = frozenset()
        for t, n in zip(layout.topics, layout.counts):
            lst = racks.get(t)
            per_partition.extend(lst[:n] if lst is not None else repeat(empty, n))
        all_racks: set = set().union(*per_partition) if per_partition else set()
        rack_sizes = {r: len(ms) for r, ms in consumers_by_rack.items()}
        # computed from the replica racks even when rack-aware assignment ends up unused (as Kafka does)
        self.num_consumers_by_partition = [sum(rack_sizes.get(r, 0) for r in rs) for rs in per_partition]
        if assignor.use_rack_aware_assignment(set(consumers_by_rack), all_racks, per_partition):
            self.consumer_racks = {m: r for r, ms in consumers_by_rack.items() for m in ms}
            self.partition_racks = per_partition

    def racks_mismatch(self, consumer: str, g: int) -> bool:
        rack = self.consumer_racks.get(consumer)
        return rack is not None and rack not in self.partition_racks[g]

    def sort_by_rack_consumers(self, partitions: list[int]) -> list[int]:
        counts = self.num_consumers_by_partition
        if counts is None:
            return partitions
        return sorted(partitions, key=counts.__getitem__)  # stable, like LinkedList.sort

    def next_rack_consumer(self, g: int, consumers: list[str], first: int) -> int:
        racks = self.partition_racks[g] if self.partition_racks is not None else None
        if not racks:
            return -1
        n = len(consumers)
        crack = self.consumer_racks
        for i in range(n):
            idx = (first + i) % n
            r = crack.get(consumers[idx])
            if r is not None and r in racks:
                return idx
        return -1


class _MemberData:
    __slots__ = ("partitions", "generation")

    def __init__(self, partitions: list[int], generation: Optional[int]):
        self.partitions = partitions
        self.generation = generation


# ---------------------------------------------------------------------------------------------------------------
# Constrained (uniform subscriptions) algorithm


def _constrained(layout: _Layout, order: list[str], owned: dict[str, list[int]], multi: set[int],
                 rack: _RackInfo, transferring: dict[int, str]) -> dict[str, list[int]]:
    n_members = len(owned)
    total = layout.total
    min_q = total // n_members
    max_q = -(-total // n_members)
    expected_over = total % n_members
    current_over = 0
    assignment: dict[str, list[int]] = {m: [] for m in order}
    assigned: list[int] = []
    maybe_revoked: dict[int, str] = {}  # KAFKA-15170: partition -> member that gave it up (quota or rack)
    under_min: list[str] = []
    exactly_min: list[str] = []
    pt_key = layout.partition_topic_key() if total else None
    use_racks = bool(rack.consumer_racks)

    # 1. previously owned partitions, members in HashMap order
    for m in order:
        mine = owned[m]
        if use_racks:
            kept = []
            for g in mine:
                if rack.racks_mismatch(m, g):
                    maybe_revoked[g] = m
                else:
                    kept.append(g)
            mine = kept
        if len(mine) > 1:
            mine = sorted(mine, key=pt_key)
        if multi:
            mine = [g for g in mine if g not in multi]
        k = len(mine)
        dest = assignment[m]
        if k < min_q:
            dest.extend(mine)
            assigned.extend(mine)
            under_min.append(m)
        elif k >= max_q and current_over < expected_over:
            current_over += 1
            if current_over == expected_over:
                exactly_min.clear()
            dest.extend(mine[:max_q])
            assigned.extend(mine[:max_q])
            for g in mine[max_q:]:
                maybe_revoked[g] = m
        else:
            dest.extend(mine[:min_q])
            assigned.extend(mine[:min_q])
            for g in mine[min_q:]:
                maybe_revoked[g] = m
            if current_over < expected_over:
                exactly_min.append(m)

    # unassigned partitions in (topic, partition) order
    if assigned:
        mark = bytearray(total)
        for g in assigned:
            mark[g] = 1
        unassigned = list(compress(range(total), mark.translate(_INVERT)))
    else:
        unassigned = list(range(total))

    jkey = java_sort_key(order)
    under_min.sort(key=jkey)
    exactly_min.sort(key=jkey)
    unassigned = rack.sort_by_rack_consumers(unassigned)

    def assign_new(g: int, m: str) -> int:
        dest = assignment[m]
        dest.append(g)
        prev = maybe_revoked.get(g)
        if (prev is not None and prev != m) or g in multi:
            transferring[g] = m
        return len(dest)

    # 2. round-robin within racks
    if use_racks:
        remaining: list[int] = []
        next_idx = 0
        for g in unassigned:
            consumer = None
            idx = rack.next_rack_consumer(g, under_min, next_idx)
            if idx >= 0:
                consumer = under_min[idx]
                count = len(assignment[consumer]) + 1
                if count >= min_q:
                    under_min.remove(consumer)
                    if count < max_q and current_over < expected_over:
                        exactly_min.append(consumer)
                else:
                    idx += 1
                next_idx = idx % len(under_min) if under_min else 0
            elif exactly_min:
                first = rack.next_rack_consumer(g, exactly_min, 0)
                if first >= 0:
                    consumer = exactly_min[first]
                    if len(assignment[consumer]) + 1 == max_q:
                        del exactly_min[first]
                        current_over += 1
                        if current_over == expected_over:
                            exactly_min.clear()
            if consumer is not None:
                assign_new(g, consumer)
            else:
                remaining.append(g)
        unassigned = remaining

    # 3. round-robin: members under minQuota (a LinkedList iterator that restarts), then one each to minQuota ones
    pos = 0  # next index of the iterator over under_min
    last = -1
    ex_head = 0  # exactly_min is polled from the front
    simple = not maybe_revoked and not multi
    for g in unassigned:
        if pos < len(under_min):
            consumer = under_min[pos]
            last = pos
            pos += 1
        elif not under_min:
            if ex_head >= len(exactly_min):
                raise RuntimeError("No more unfilled consumers to be assigned.")  # IllegalStateException
            consumer = exactly_min[ex_head]
            ex_head += 1
            last = -1
        else:
            pos = 0
            consumer = under_min[0]
            last = 0
            pos = 1
        if simple:
            dest = assignment[consumer]
            dest.append(g)
            count = len(dest)
        else:
            count = assign_new(g, consumer)
        if count == min_q:
            # unfilledConsumerIter.remove()
            del under_min[last]
            pos -= 1
            exactly_min.append(consumer)
        elif count == max_q:
            current_over += 1

    # verifyUnfilledMembers
    if under_min:
        if current_over != expected_over:
            raise RuntimeError("We haven't reached the expected number of members with more than the minQuota "
                               "partitions, but no more partitions to be assigned")
        for m in under_min:
            if len(assignment[m]) != min_q:
                raise RuntimeError(f"Consumer: [{m}] doesn't reach minQuota partitions, and no more partitions "
                                   "to be assigned")
    return assignment


_INVERT = bytes([1]) + bytes(255)


# ---------------------------------------------------------------------------------------------------------------
# General algorithm


class _SortedConsumers:
    """``TreeSet<String>`` ordered by (assigned count, member id): buckets of sorted ids per count."""

    def __init__(self, jkey):
        self._jkey = jkey
        self._sizes: list[int] = []
        self._buckets: dict[int, list] = {}
        self._key: dict[str, tuple] = {}

    def add(self, m: str, size: int) -> None:
        if m in self._key:
            return
        k = (self._jkey(m), m)
        b = self._buckets.get(size)
        if b is None:
            self._buckets[size] = [k]
            bisect.insort(self._sizes, size)
        else:
            bisect.insort(b, k)
        self._key[m] = (size, k)

    def remove(self, m: str) -> None:
        entry = self._key.pop(m, None)
        if entry is None:
            return
        size, k = entry
        b = self._buckets[size]
        del b[bisect.bisect_left(b, k)]
        if not b:
            del self._buckets[size]
            del self._sizes[bisect.bisect_left(self._sizes, size)]

    def __iter__(self):
        # callers stop iterating as soon as they modify the set, so no defensive copies
        buckets = self._buckets
        for s in self._sizes:
            for _, m in buckets[s]:
                yield m

    def first_size(self) -> int:
        return self._sizes[0]

    def last_size(self) -> int:
        return self._sizes[-1]

    def __bool__(self) -> bool:
        return bool(self._key)


class _PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``: per topic, which partitions moved between which pair."""

    def __init__(self, layout: _Layout):
        self._layout = layout
        self.by_topic: dict[int, dict[tuple[str, str], JavaHashMap]] = {}
        self.moves: dict[int, tuple[str, str]] = {}

    def _remove(self, g: int) -> tuple[str, str]:
        pair = self.moves.pop(g)
        t = self._layout.tof[g]
        per = self.by_topic[t]
        per[pair].discard(g)
        if not per[pair]:
            del per[pair]
        if not per:
            del self.by_topic[t]
        return pair

    def _add(self, g: int, pair: tuple[str, str]) -> None:
        self.moves[g] = pair
        per = self.by_topic.setdefault(self._layout.tof[g], {})
        s = per.get(pair)
        if s is None:
            # new HashSet<TopicPartition>(); TopicPartition is not Comparable, but one topic's partitions never
            # share a hash, so even a tree bucket orders them reproducibly
            s = per[pair] = JavaHashMap(self._layout.java_hash)
        s.add(g)

    def move(self, g: int, old: str, new: str) -> None:
        if g in self.moves:
            src, _dst = self._remove(g)
            if src != new:
                self._add(g, (src, new))
        else:
            self._add(g, (old, new))

    def actual_partition_to_move(self, g: int, old: str, new: str) -> int:
        t = self._layout.tof[g]
        per = self.by_topic.get(t)
        if per is None:
            return g
        if g in self.moves:
            old = self.moves[g][0]
        s = per.get((new, old))
        if s is None:
            return g
        return s.first()

    def is_sticky(self) -> bool:
        """No topic saw partitions move both a->b and b->a (Kafka's ``hasCycles`` for 2-cycles)."""
        for per in self.by_topic.values():
            for (a, b) in per:
                if (b, a) in per:
                    return False
        return True


class _General:
    def __init__(self, layout: _Layout, subscriptions: Mapping[str, Subscription], order: list[str],
                 owned: dict[str, list[int]], rack: _RackInfo):
        self.layout = layout
        self.subs = subscriptions
        self.order = order
        self.rack = rack
        nt = len(layout.topics)
        self.topic_consumers: list[list[str]] = [[] for _ in range(nt)]
        self.consumer_topics: dict[str, list[int]] = {}
        self.consumer_topic_sets: dict[str, set[int]] = {}
        index = layout.index
        for m in order:
            ts = [index[t] for t in subscriptions[m].topics if t in index]
            self.consumer_topics[m] = ts
            self.consumer_topic_sets[m] = set(ts)
            for t in ts:
                self.topic_consumers[t].append(m)
        self.current: dict[str, list[int]] = {m: owned[m] for m in order}
        self.owner: dict[int, str] = {}
        for m in order:
            for g in self.current[m]:
                self.owner[g] = m
        jk = layout.jkey
        sorted_topics = sorted(range(nt), key=lambda t: (len(self.topic_consumers[t]), jk(layout.topics[t])))
        self.topic_rank = [0] * nt
        for r, t in enumerate(sorted_topics):
            self.topic_rank[t] = r
        all_parts: list[int] = []
        for t in sorted_topics:
            b = layout.base[t]
            all_parts.extend(range(b, b + layout.counts[t]))
        self.sorted_all = all_parts
        self.sorted_set = _SortedConsumers(java_sort_key(order))
        self.revocation_required = False
        self.movements = _PartitionMovements(layout)
        self._version = 0
        self._balanced_cache: tuple[int, bool] = (-1, False)
        self._hist: Optional[list[dict[int, int]]] = None
        self._own: dict[str, dict[int, int]] = {}

    # -- helpers ------------------------------------------------------------------------------------------------
    def _max_assignment_size(self, m: str) -> int:
        ts = self.consumer_topics[m]
        if len(ts) == len(self.layout.topics):
            return self.layout.total
        counts = self.layout.counts
        return sum(counts[t] for t in ts)

    def _add_sorted(self, m: str) -> None:
        self.sorted_set.add(m, len(self.current[m]))

    def build(self, member_data: dict[str, _MemberData], max_generation: int) -> dict[str, list[int]]:
        prev: dict[int, tuple[str, int]] = {}
        for m in self.order:  # prepopulateCurrentAssignments
            md = member_data[m]
            if md.generation is not None and md.generation < max_generation:
                self._update_prev(prev, md.partitions, m, md.generation)
            elif md.generation is None and max_generation > DEFAULT_GENERATION:
                self._update_prev(prev, md.partitions, m, DEFAULT_GENERATION)

        assigned = self._assign_owned()
        unassigned = self._unassigned(assigned)
        for m in self.order:
            self._add_sorted(m)
        self._balance(prev, unassigned)
        return self.current

    @staticmethod
    def _update_prev(prev, partitions, m, generation) -> None:
        for g in partitions:
            cur = prev.get(g)
            if cur is None or generation > cur[1]:
                prev[g] = (m, generation)

    def _assign_owned(self) -> list[int]:
        assigned: list[int] = []
        rack = self.rack
        use_racks = bool(rack.consumer_racks)
        tof = self.layout.tof
        for m in self.order:
            sub_topics = self.consumer_topic_sets[m]
            keep: list[int] = []
            for g in self.current[m]:
                if tof[g] not in sub_topics or (use_racks and rack.racks_mismatch(m, g)):
                    self.revocation_required = True
                    # Kafka leaves the stale entry in currentPartitionConsumer; it is overwritten on reassignment
                else:
                    keep.append(g)
            self.current[m] = keep
            assigned.extend(keep)
        return assigned

    def _unassigned(self, assigned: list[int]) -> list[int]:
        if not assigned:
            return list(self.sorted_all)
        a = set(assigned)
        return [g for g in self.sorted_all if g not in a]

    def _maybe_assign(self, partitions: list[int], use_racks: bool, remove_assigned: bool) -> list[int]:
        """``maybeAssign``: each partition to the first member, in (assigned count, member id) order, that
        subscribes to its topic (and, in the rack pass, whose rack hosts it)."""
        if not use_racks:
            return self._maybe_assign_by_topic_runs(partitions, remove_assigned)
        remaining: list[int] = []
        tof = self.layout.tof
        for g in partitions:
            t = tof[g]
            if not self.topic_consumers[t]:
                remaining.append(g)
                continue
            done = False
            for m in self.sorted_set:
                if t in self.consumer_topic_sets[m] and not self.rack.racks_mismatch(m, g):
                    self.sorted_set.remove(m)
                    self.current[m].append(g)
                    self.owner[g] = m
                    self._add_sorted(m)
                    done = True
                    break
            if not (done and remove_assigned):
                remaining.append(g)
        return remaining

    def _maybe_assign_by_topic_runs(self, partitions: list[int], remove_assigned: bool) -> list[int]:
        # Same choice as scanning the TreeSet: the minimum (count, id) among the topic's subscribers. Partitions
        # come grouped by topic, and only this loop changes counts, so a heap per run of one topic is exact.
        remaining: list[int] = []
        tof = self.layout.tof
        jkey = self.sorted_set._jkey
        current, owner, ss = self.current, self.owner, self.sorted_set
        i, n = 0, len(partitions)
        while i < n:
            t = tof[partitions[i]]
            j = i
            while j < n and tof[partitions[j]] == t:
                j += 1
            subscribers = self.topic_consumers[t]
            if not subscribers:
                remaining.extend(partitions[i:j])
                i = j
                continue
            heap = [(len(current[m]), jkey(m), m) for m in subscribers]
            heapq.heapify(heap)
            for g in partitions[i:j]:
                size, k, m = heap[0]
                ss.remove(m)
                current[m].append(g)
                owner[g] = m
                ss.add(m, size + 1)
                heapq.heapreplace(heap, (size + 1, k, m))
                if not remove_assigned:
                    remaining.append(g)
            i = j
        return remaining

    def _can_consumer_participate(self, m: str) -> bool:
        cur = self.current[m]
        if len(cur) < self._max_assignment_size(m):
            return True
        tof, tc = self.layout.tof, self.topic_consumers
        return any(len(tc[tof[g]]) >= 2 for g in cur)

    def _balance_score(self) -> int:
        sizes = sorted(len(v) for v in self.current.values())
        n = len(sizes)
        return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))

    def _balance(self, prev, unassigned: list[int]) -> None:
        initializing = self.sorted_set.last_size() == 0 if self.sorted_set else True
        if self.rack.consumer_racks:
            rest = self._maybe_assign(unassigned, True, True)
            self._maybe_assign(rest, False, False)
        else:
            self._maybe_assign(unassigned, False, False)

        tof, tc = self.layout.tof, self.topic_consumers
        fixed_topics = {t for t in range(len(self.layout.topics)) if len(tc[t]) < 2}
        if fixed_topics:
            self.sorted_all = [g for g in self.sorted_all if tof[g] not in fixed_topics]
            unassigned = [g for g in unassigned if tof[g] not in fixed_topics]

        fixed: dict[str, list[int]] = {}
        for m in self.order:
            if not self._can_consumer_participate(m):
                self.sorted_set.remove(m)
                fixed[m] = self.current.pop(m)

        pre_balance = {m: list(v) for m, v in self.current.items()}
        pre_owner = dict(self.owner)
        self._init_balance_index()

        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)

        if not initializing and performed and self._balance_score() >= self._score_of(pre_balance):
            self.current = pre_balance
            self.owner = pre_owner

        for m in self.order:
            if m in fixed:
                self.current[m] = fixed[m]
        # restore HashMap-independent key order
        self.current = {m: self.current[m] for m in self.order}

    @staticmethod
    def _score_of(assignment: dict[str, list[int]]) -> int:
        sizes = sorted(len(v) for v in assignment.values())
        n = len(sizes)
        return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))

    def _is_balanced(self) -> bool:
        if self._balanced_cache[0] == self._version:
            return self._balanced_cache[1]
        result = self._compute_balanced()
        self._balanced_cache = (self._version, result)
        return result

    def _compute_balanced(self) -> bool:
        """Kafka's ``isBalanced``: sizes differ by at most one, or no member below its maximum could take a
        partition of one of its topics from a member holding 2+ more partitions (KAFKA-15106)."""
        ss = self.sorted_set
        if not ss or ss.first_size() >= ss.last_size() - 1:
            return True
        gmax = ss.last_size()
        current, hist = self.current, self._hist
        memo: dict[int, int] = {}
        for m in ss:  # ascending load; nobody can be 2+ below an owner once within one of the global maximum
            count = len(current[m])
            if count + 1 >= gmax:
                break
            if count == self._max_assignment_size(m):
                continue
            for t in self.consumer_topics[m]:
                top = memo.get(t)
                if top is None:
                    h = hist[t]
                    top = memo[t] = max(h) if h else 0
                if count + 1 < top:
                    return False
        return True

    def _init_balance_index(self) -> None:
        """Per topic, a histogram of the loads of the members owning its partitions (kept up to date by
        ``_reassign``), so ``isBalanced`` does not rescan every partition after each move."""
        tof = self.layout.tof
        self._own = {}
        self._hist = [dict() for _ in self.layout.topics]
        for m, parts in self.current.items():
            own: dict[int, int] = {}
            for g in parts:
                t = tof[g]
                own[t] = own.get(t, 0) + 1
            self._own[m] = own
            size = len(parts)
            for t in own:
                h = self._hist[t]
                h[size] = h.get(size, 0) + 1

    @staticmethod
    def _hist_move(h: dict[int, int], old: int, new: int) -> None:
        c = h[old] - 1
        if c:
            h[old] = c
        else:
            del h[old]
        h[new] = h.get(new, 0) + 1

    def _index_move(self, g: int, old: str, new: str) -> None:
        hist = self._hist
        so, sn = len(self.current[old]), len(self.current[new])
        own_old, own_new = self._own[old], self._own[new]
        for u in own_old:
            self._hist_move(hist[u], so, so - 1)
        for u in own_new:
            self._hist_move(hist[u], sn, sn + 1)
        t = self.layout.tof[g]
        c = own_old[t] - 1
        if c:
            own_old[t] = c
        else:
            del own_old[t]
            h = hist[t]
            c = h[so - 1] - 1
            if c:
                h[so - 1] = c
            else:
                del h[so - 1]
        if t in own_new:
            own_new[t] += 1
        else:
            own_new[t] = 1
            hist[t][sn + 1] = hist[t].get(sn + 1, 0) + 1

    def _perform_reassignments(self, partitions: list[int], prev) -> bool:
        performed = False
        tof = self.layout.tof
        rack = self.rack
        current = self.current
        while True:
            modified = False
            for g in partitions:
                if self._is_balanced():
                    break
                consumer = self.owner.get(g)
                if consumer is None or consumer not in current:
                    continue
                size = len(current[consumer])
                p = prev.get(g)
                if p is not None and p[0] in current and size > len(current[p[0]]) + 1:
                    self._reassign(g, p[0])
                    performed = modified = True
                    continue
                t = tof[g]
                found = False
                crack = rack.consumer_racks.get(consumer)
                if crack is not None:
                    pracks = rack.partition_racks[g]
                    if pracks and crack in pracks:
                        for other in self.topic_consumers[t]:
                            orack = rack.consumer_racks.get(other)
                            if orack is None or orack not in pracks:
                                continue
                            if size > len(current[other]) + 1:
                                self._reassign_to_least_loaded(g)
                                performed = modified = found = True
                                break
                if not found:
                    for other in self.topic_consumers[t]:
                        if size > len(current[other]) + 1:
                            self._reassign_to_least_loaded(g)
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _reassign_to_least_loaded(self, g: int) -> None:
        t = self.layout.tof[g]
        for m in self.sorted_set:
            if t in self.consumer_topic_sets[m]:
                self._reassign(g, m)
                return
        raise AssertionError("no consumer for a reassignable partition")

    def _reassign(self, g: int, new: str) -> None:
        old = self.owner[g]
        g = self.movements.actual_partition_to_move(g, old, new)
        old = self.owner[g]
        if self._hist is not None:
            self._index_move(g, old, new)
        self.sorted_set.remove(old)
        self.sorted_set.remove(new)
        self.movements.move(g, old, new)
        self.current[old].remove(g)
        self.current[new].append(g)
        self.owner[g] = new
        self._add_sorted(new)
        self._add_sorted(old)
        self._version += 1


# ---------------------------------------------------------------------------------------------------------------


class AbstractStickyAssignor(BaseAssignor):
    """Shared engine of the two sticky assignors (``AbstractStickyAssignor``)."""

    def __init__(self) -> None:
        super().__init__()
        self.max_generation = DEFAULT_GENERATION  # like Kafka, kept across assign() calls
        #: ``partitionsTransferringOwnership`` of the last assign(): dict (uniform subscriptions) or None (general)
        self.partitions_transferring_ownership: Optional[dict[TopicPartition, str]] = {}
        self._movements: Optional[_PartitionMovements] = None

    # subclasses: decode (partitions grouped by topic or TopicPartitions, generation) from a subscription
    def _member_data(self, sub: Subscription, layout: _Layout) -> _MemberData:
        raise NotImplementedError

    def member_data(self, subscription: Subscription) -> tuple[list[TopicPartition], Optional[int]]:
        """``memberData(subscription)``: the owned partitions and generation this assignor reads."""
        raise NotImplementedError

    def is_sticky(self) -> bool:
        """Kafka's ``isSticky()`` check of the last general-algorithm run (True after a constrained run)."""
        return self._movements.is_sticky() if self._movements is not None else True

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription],
               partition_racks: Optional[PartitionRacks] = None) -> dict[str, Assignment]:
        check_subscriptions(subscriptions)
        raw, transferring = self._assign_ids(partitions_per_topic, subscriptions, partition_racks)
        layout, result = raw
        flat = layout.flat
        if transferring is None:
            self.partitions_transferring_ownership = None
        else:
            self.partitions_transferring_ownership = {flat[g]: m for g, m in transferring.items()}
        return {m: Assignment(tuple(map(flat.__getitem__, result.get(m, ())))) for m in subscriptions}

    def _assign_ids(self, partitions_per_topic, subscriptions, partition_racks):
        counts = subscribed_topic_counts(partitions_per_topic, subscriptions)
        layout = _Layout(counts)
        order = subscription_order(subscriptions)
        racks = normalize_partition_racks(partition_racks, counts)
        rack = _RackInfo(layout, subscriptions, order, racks, self)
        self._movements = None
        if not order:
            return (layout, {}), {}

        # allSubscriptionsEqual: also resolves ownership conflicts (KAFKA-12984, KAFKA-14639)
        member_data: dict[str, _MemberData] = {}
        owned: dict[str, list[int]] = {}
        prev_owner: dict[int, str] = {}
        multi: set[int] = set()
        all_equal = True
        ref_topics: set[str] = set()
        for m in order:
            sub = subscriptions[m]
            if not ref_topics:
                ref_topics.update(sub.topics)
            elif all_equal and not (len(sub.topics) == len(ref_topics) and ref_topics.issuperset(sub.topics)):
                all_equal = False
            md = self._member_data(sub, layout)
            member_data[m] = md
            gen = md.generation if md.generation is not None else DEFAULT_GENERATION
            if gen > self.max_generation:
                self.max_generation = gen
            mine: list[int] = []
            owned[m] = mine
            for g in md.partitions:
                other = prev_owner.get(g)
                if other is None:
                    mine.append(g)
                    prev_owner[g] = m
                    continue
                other_gen = subscriptions[other].generation_id
                if other_gen < 0:
                    other_gen = DEFAULT_GENERATION
                if gen == other_gen:  # same generation: invalid for both
                    multi.add(g)
                    _remove_first(owned[other], g)
                    prev_owner[g] = m
                elif gen > other_gen:  # higher generation wins
                    mine.append(g)
                    _remove_first(owned[other], g)
                    prev_owner[g] = m
                # else: the other member keeps it

        if all_equal:
            transferring: Optional[dict[int, str]] = {}
            result = _constrained(layout, order, owned, multi, rack, transferring)
        else:
            transferring = None
            builder = _General(layout, subscriptions, order, owned, rack)
            result = builder.build(member_data, self.max_generation)
            self._movements = builder.movements
        return (layout, result), transferring


def _remove_first(lst: list[int], g: int) -> None:
    try:
        lst.remove(g)
    except ValueError:
        pass


class StickyAssignor(AbstractStickyAssignor):
    """``org.apache.kafka.clients.consumer.StickyAssignor`` (eager; owned partitions travel in user data)."""

    name = "sticky"
    rebalance_protocols = ("EAGER",)

    def __init__(self) -> None:
        super().__init__()
        self._member_assignment: Optional[tuple[TopicPartition, ...]] = None
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._member_assignment = tuple(assignment.partitions) if assignment is not None else None
        self._generation = generation_id

    def subscription_user_data(self, topics, owned_partitions=None, generation_id=None) -> bytes | None:
        """StickyAssignorUserData v1 of ``owned_partitions`` (default: the last assignment received).

        Returns None when no assignment is known yet, as Kafka does before the first assignment.
        """
        partitions = owned_partitions if owned_partitions is not None else self._member_assignment
        if partitions is None:
            return None
        generation = generation_id if generation_id is not None else self._generation
        return encode_sticky_user_data(partitions, generation)

    def _member_data(self, sub: Subscription, layout: _Layout) -> _MemberData:
        grouped, generation = decode_sticky_user_data(sub.user_data)
        return _MemberData(layout.ids(grouped), generation)

    def member_data(self, subscription: Subscription) -> tuple[list[TopicPartition], Optional[int]]:
        grouped, generation = decode_sticky_user_data(subscription.user_data)
        return [TopicPartition(t, p) for t, ps in grouped for p in ps], generation


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """``org.apache.kafka.clients.consumer.CooperativeStickyAssignor`` (KIP-429)."""

    name = "cooperative-sticky"
    rebalance_protocols = ("COOPERATIVE", "EAGER")

    def __init__(self) -> None:
        super().__init__()
        self._generation = DEFAULT_GENERATION

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        self._generation = generation_id

    def subscription_user_data(self, topics, owned_partitions=None, generation_id=None) -> bytes | None:
        """The generation as INT32 (``generation_id`` if given, else the one from the last assignment)."""
        return encode_cooperative_user_data(generation_id if generation_id is not None else self._generation)

    def _generation_of(self, sub: Subscription) -> Optional[int]:
        if sub.generation_id >= 0:  # ConsumerProtocolSubscription v2+: taken from the subscription
            return sub.generation_id
        return decode_cooperative_user_data(sub.user_data)

    def _member_data(self, sub: Subscription, layout: _Layout) -> _MemberData:
        return _MemberData(layout.ids_of_tps(sub.owned_partitions), self._generation_of(sub))

    def member_data(self, subscription: Subscription) -> tuple[list[TopicPartition], Optional[int]]:
        return list(subscription.owned_partitions), self._generation_of(subscription)

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription],
               partition_racks: Optional[PartitionRacks] = None) -> dict[str, Assignment]:
        check_subscriptions(subscriptions)
        (layout, result), transferring = self._assign_ids(partitions_per_topic, subscriptions, partition_racks)
        if transferring is None:
            # general case: partitions assigned to one member while another still lists them as owned
            added: dict[int, str] = {}
            revoked: set[int] = set()
            for m in subscriptions:
                mine = set(layout.ids_of_tps(subscriptions[m].owned_partitions))
                got = result.get(m, [])
                got_set = set(got)
                for g in got:
                    if g not in mine:
                        added[g] = m
                revoked.update(g for g in mine if g not in got_set)
            transferring = {g: m for g, m in added.items() if g in revoked}
            self.partitions_transferring_ownership = None
        else:
            self.partitions_transferring_ownership = {layout.flat[g]: m for g, m in transferring.items()}
        # withhold partitions changing owner until the previous owner has revoked them (follow-up rebalance)
        withheld: dict[str, set[int]] = {}
        for g, m in transferring.items():
            withheld.setdefault(m, set()).add(g)
        flat = layout.flat
        out: dict[str, Assignment] = {}
        for m in subscriptions:
            ids = result.get(m, ())
            w = withheld.get(m)
            if w:
                ids = [g for g in ids if g not in w]
            out[m] = Assignment(tuple(map(flat.__getitem__, ids)))
        return out
