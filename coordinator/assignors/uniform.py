"""Kafka's ``uniform`` server-side assignor (``org.apache.kafka.coordinator.group.assignor.UniformAssignor``).

Balance first (member sizes differ by at most one where subscriptions allow), then stickiness. Two builders, as
in Kafka 4.1-4.4 (identical there; 4.0 lacks KAFKA-18688):

**Homogeneous** (``UniformHomogeneousAssignmentBuilder``; every member subscribes to the same topics)
  1. Topics in the order of ``new HashSet<>(first member's subscribed ids)`` (``Uuid.hashCode`` buckets, JDK 19+
     sizing); the unassigned list starts with every partition no member's previous target holds, topic by topic,
     partitions ascending. ``quota = total // members``, ``total % members`` members get one more.
  2. Members in ``memberIds()`` order: a member keeps its previous partitions, topic by topic in its map's order
     and within a topic in its set's order, up to its quota; the rest go to the end of the unassigned list;
     topics it no longer subscribes to are dropped. It takes its quota plus one while extras remain
     (KAFKA-18688), and gives the extra back when it could not fill even that, unless the members left (itself
     included) are no more than the extras left -- then it must keep it.
  3. Members below quota, in the same order, take the next partitions of the unassigned list.

**Heterogeneous** (``UniformHeterogeneousAssignmentBuilder``)
  1. Members are numbered in ``memberIds()`` order; each keeps the previous partitions of topics it still
     subscribes to (no quota), drops the others.
  2. Unassigned partitions, topic by topic -- topics sorted by partitions per subscriber (descending), subscriber
     count (ascending), topic id (``Uuid.compareTo``) -- go one by one to the least loaded subscriber (ties: lower
     member index), cycling through the members of equal load.
  3. Balancing: topics with two or more subscribers, in the same order, repeatedly: within a topic, partitions
     move from its most loaded subscribers (their highest partitions of that topic first) to its least loaded,
     until the counts differ by at most one; at most 16 passes over the topics, stopping after a full pass
     without a move.

Every map and set is a Java one (:mod:`protocol.java`), built as Kafka builds it -- previous assignments copied
with ``deepCopyAssignment`` only when changed, new topic entries through ``computeIfAbsent`` -- so the returned
iteration orders are Java's, which is what the next round's stickiness (step 2 above) depends on.
"""

from __future__ import annotations

from itertools import compress

from protocol.java import JavaHashMap, JavaIntSet, float_capacity, uuid_sort_key

from ._spec import (HOMOGENEOUS, GroupSpec, PartitionAssignorError, deep_copy_assignment, iteration_list, output,
                    topic_hash)

NAME = "uniform"
MAX_ITERATION_COUNT = 16  # UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT
_INVERT = bytes.maketrans(b"\x00\x01", b"\x01\x00")


def _missing(topic_id: str) -> PartitionAssignorError:
    return PartitionAssignorError(
        f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")


def assign(spec: GroupSpec) -> dict[str, dict[str, list[int]]]:
    """``UniformAssignor.assign``: the homogeneous or the heterogeneous builder by subscription type."""
    if not spec.members:
        return {}
    if spec.subscription_type == HOMOGENEOUS:
        return output(spec, _homogeneous(spec))
    return output(spec, _Heterogeneous(spec).build())


# --- homogeneous ----------------------------------------------------------------------------------------------------

def _homogeneous(spec: GroupSpec) -> dict[str, object]:
    members = spec.members
    jdk = spec.jdk
    first = members[0]
    topic_set = JavaHashMap.hash_set_of(first.subscribed, topic_hash, uuid_sort_key, jdk,
                                        size=first.subscription_size)
    topics = topic_set.keys()
    if not topics:
        return {}
    subscribed = set(topics)

    # The unassigned list as runs (topic, [partitions]): what Kafka holds as one TopicIdPartition per entry.
    runs: list[tuple[str, list[int]]] = []
    total = 0
    for t in topics:
        n = spec.num_partitions(t)
        if n == -1:
            raise _missing(t)
        marks = spec.assigned_marks(t)
        free = list(range(n)) if marks is None else list(compress(range(n), marks.translate(_INVERT)))
        if free:
            runs.append((t, free))
        total += n

    n_members = len(members)
    min_quota, extras = divmod(total, n_members)
    target: dict[str, object] = {}
    mutable: set[str] = set()
    unfilled: list[tuple[str, int]] = []

    # maybeRevokePartitions
    for index, m in enumerate(members):
        old = m.assignment
        new = None
        quota = min_quota
        has_extra = False
        if extras > 0:
            quota += 1
            has_extra = True
        for t in old.keys():
            ps = old[t]
            if t in subscribed:
                size = len(ps)
                if size <= quota:
                    quota -= size
                    continue
                order = iteration_list(ps)
                revoked = order[quota:]
                quota = 0
                if new is None:
                    new = deep_copy_assignment(old, jdk)
                s = new[t]
                for p in revoked:
                    s.remove(p)
                if not len(s):
                    new.remove(t)
                runs.append((t, revoked))
            else:
                if new is None:
                    new = deep_copy_assignment(old, jdk)
                new.remove(t)
        if quota > 0 and has_extra and n_members - index > extras:
            # Give the extra back for another member, unless this one is among the last `extras` members.
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((m.member_id, quota))
        if has_extra:
            extras -= 1
        if new is None:
            target[m.member_id] = old
        else:
            target[m.member_id] = new
            mutable.add(m.member_id)

    # assignRemainingPartitions
    ri = off = 0
    n_runs = len(runs)
    for member_id, remaining in unfilled:
        a = target[member_id]
        if member_id not in mutable:
            a = target[member_id] = deep_copy_assignment(a, jdk)
            mutable.add(member_id)
        while remaining > 0 and ri < n_runs:
            t, ps = runs[ri]
            take = ps[off:off + remaining] if off or remaining < len(ps) else ps
            # Kafka calls computeIfAbsent once per partition: the first may leave a resize overdue, the next
            # (same key) performs it -- get_or_compute reproduces both.
            s = a.get_or_compute(t, JavaIntSet)
            if len(take) > 1:
                a.get_or_compute(t, JavaIntSet)
            s.add_all(take)
            remaining -= len(take)
            off += len(take)
            if off == len(ps):
                ri += 1
                off = 0
    if ri < n_runs:
        raise PartitionAssignorError("Partitions were left unassigned")
    return target


# --- heterogeneous --------------------------------------------------------------------------------------------------

class _Balancer:
    """``MemberAssignmentBalancer``: the least loaded range grows rightwards, the most loaded range leftwards."""

    __slots__ = ("sizes", "sorted", "ll_end", "ll_count", "next_ll", "ml_start", "ml_end", "ml_count", "next_ml")

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.sorted: list[int] = []

    def initialize(self, members: list[int]) -> int:
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        # memberComparator: by assigned count, then member index (members is ascending: a stable sort suffices)
        self.sorted = s = sorted(members, key=sizes.__getitem__)
        self.ll_end = 0
        self.ll_count = sizes[s[0]] - 1
        self.next_ll = 0
        self.ml_start = self.ml_end = len(s)
        self.ml_count = sizes[s[-1]] + 1
        self.next_ml = len(s) - 1
        return sizes[s[-1]] - sizes[s[0]]

    def next_least_loaded(self) -> int:
        if self.next_ll >= self.ll_end:
            self.ll_count += 1
            s, sizes, end, count = self.sorted, self.sizes, self.ll_end, self.ll_count
            n = len(s)
            while end < n and sizes[s[end]] == count:
                end += 1
            self.ll_end = end
            self.next_ll = 0
        i = self.sorted[self.next_ll]
        self.next_ll += 1
        return i

    def next_most_loaded(self) -> int:
        if self.next_ml < self.ml_start:
            s, sizes = self.sorted, self.sizes
            if self.ml_end <= self.ml_start and self.ml_start > 0:
                # The range was emptied by exclusions: reset the count so that the range expands below.
                self.ml_count = sizes[s[self.ml_start - 1]]
            else:
                self.ml_count -= 1
            start = self.ml_start
            while start > 0 and sizes[s[start - 1]] == self.ml_count:
                start -= 1
            self.ml_start = start
            self.next_ml = self.ml_end - 1
        if self.next_ml < 0:
            return -1
        i = self.sorted[self.next_ml]
        self.next_ml -= 1
        return i

    def exclude_most_loaded(self) -> None:
        s = self.sorted
        j = self.next_ml + 1
        s[j], s[self.ml_end - 1] = s[self.ml_end - 1], s[j]
        self.ml_end -= 1

    def is_balanced(self) -> bool:
        return self.ml_count - self.ll_count <= 1


class _Heterogeneous:
    def __init__(self, spec: GroupSpec):
        self.spec = spec
        self.jdk = spec.jdk
        members = spec.members
        self.member_ids = [m.member_id for m in members]
        self.subscribers: dict[str, list[int]] = {}
        for i, m in enumerate(members):
            for t in m.subscribed:
                if spec.num_partitions(t) == -1:
                    raise _missing(t)
                lst = self.subscribers.get(t)
                if lst is None:
                    self.subscribers[t] = [i]
                else:
                    lst.append(i)
        self.sizes = [0] * len(members)
        self.owners: dict[str, list[int]] = {t: [-1] * spec.num_partitions(t) for t in self.subscribers}
        self.target: list[object] = [m.assignment for m in members]
        self.mutable = [False] * len(members)
        self._set_capacity: dict[str, int] = {}

    def _topic_key(self, t: str):
        n = self.spec.num_partitions(t)
        subs = len(self.subscribers[t])
        # partitions per subscriber descending (Double.compare), subscriber count ascending, Uuid.compareTo
        return (-(n / subs), subs, uuid_sort_key(t))

    def _sorted_topics(self, topic_ids) -> list[str]:
        return sorted(topic_ids, key=self._topic_key)

    def build(self) -> dict[str, object]:
        if not self.subscribers:
            return {}
        self._revoke()
        unassigned = self._unassigned()
        self._assign_remaining(unassigned)
        reassignable = [t for t in self.subscribers if len(self.subscribers[t]) >= 2]
        if reassignable:
            self._balance_topics(self._sorted_topics(reassignable))
        return dict(zip(self.member_ids, self.target))

    def _revoke(self) -> None:
        """maybeRevokePartitions: keep what is still subscribed (and count it), drop the rest."""
        jdk = self.jdk
        owners = self.owners
        sizes = self.sizes
        for i, m in enumerate(self.spec.members):
            old = m.assignment
            new = None
            for t in old.keys():
                if t in m.subscribed_set:
                    ps = old[t]
                    sizes[i] += len(ps)
                    own = owners[t]
                    for p in (ps.unordered() if isinstance(ps, JavaIntSet) else ps):
                        own[p] = i
                else:
                    if new is None:
                        new = deep_copy_assignment(old, jdk)
                    new.remove(t)
            if new is not None:
                self.target[i] = new
                self.mutable[i] = True

    def _unassigned(self) -> dict[str, list[int]]:
        out = {}
        for t, own in self.owners.items():
            free = [p for p, o in enumerate(own) if o == -1]
            if free:
                out[t] = free
        return out

    def _assignment(self, i: int) -> JavaHashMap:
        if not self.mutable[i]:
            self.target[i] = deep_copy_assignment(self.target[i], self.jdk)
            self.mutable[i] = True
        return self.target[i]

    def _new_set_factory(self, t: str):
        cap = self._set_capacity.get(t)
        if cap is None:
            n = self.spec.num_partitions(t)
            subs = len(self.subscribers[t])
            cap = self._set_capacity[t] = float_capacity((n + subs - 1) // subs)
        return lambda: JavaIntSet(cap)

    def _add(self, t: str, p: int, i: int, factory) -> None:
        a = self._assignment(i)
        a.get_or_compute(t, factory).add(p)
        self.owners[t][p] = i
        self.sizes[i] += 1

    def _remove(self, t: str, p: int, i: int) -> None:
        a = self._assignment(i)
        s = a.get(t)
        if s is not None:
            s.remove(p)
            if not len(s):
                a.remove(t)
        self.owners[t][p] = -1
        self.sizes[i] -= 1

    def _move(self, t: str, p: int, i: int, factory) -> None:
        old = self.owners[t][p]
        if old != -1:
            self._remove(t, p, old)
        self._add(t, p, i, factory)

    def _assign_remaining(self, unassigned: dict[str, list[int]]) -> None:
        balancer = _Balancer(self.sizes)
        for t in self._sorted_topics(unassigned):
            balancer.initialize(self.subscribers[t])
            factory = self._new_set_factory(t)
            nxt = balancer.next_least_loaded
            for p in unassigned[t]:
                self._move(t, p, nxt(), factory)

    def _balance_topics(self, topics: list[str]) -> None:
        balancer = _Balancer(self.sizes)
        last = -1
        for _ in range(MAX_ITERATION_COUNT):
            for ti, t in enumerate(topics):
                if ti == last:
                    return  # a full pass without a move
                moved = self._balance_topic(t, balancer)
                if moved > 0 or last == -1:
                    last = ti

    def _balance_topic(self, t: str, balancer: _Balancer) -> int:
        if balancer.initialize(self.subscribers[t]) <= 1:
            return 0
        own = self.owners[t]
        # partitions grouped by owner (ascending), then by partition
        parts = sorted(range(len(own)), key=own.__getitem__)
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for k, p in enumerate(parts):
            o = own[p]
            if o not in start:
                start[o] = k
            end[o] = k + 1
        factory = self._new_set_factory(t)
        moved = 0
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            p = parts[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._move(t, p, least, factory)
            moved += 1
        return moved
