"""TimerQueue against a naive model: whatever mix of schedule (earlier, later, same), cancel, cancel of a whole
group, pop_due and clear, timers come out in (deadline, latest scheduling order) order, next_deadline is the
earliest live deadline, and a watcher is told whenever that earliest deadline may have changed (the service caches
deadlines on that promise). Undoing a journal of changes gives back exactly the timers from before them (the
runtime's rollback)."""

from hypothesis import given, settings, strategies as st

from coordinator.timers import (RETENTION_TIMER, TimerKey, TimerQueue, heartbeat_timer, initial_rebalance_timer,
                                join_timer, pending_member_timer, pending_sync_timer)

KEYS = [heartbeat_timer("g", "m1"), heartbeat_timer("g", "m2"), heartbeat_timer("g-x", "m1"), join_timer("g"),
        pending_sync_timer("g-x"), RETENTION_TIMER]

op = st.one_of(
    st.tuples(st.just("schedule"), st.sampled_from(KEYS), st.integers(0, 60)),
    st.tuples(st.just("cancel"), st.sampled_from(KEYS), st.just(0)),
    st.tuples(st.just("cancel_group"), st.sampled_from(["g", "g-x"]), st.just(0)),
    st.tuples(st.just("pop"), st.just(""), st.integers(0, 60)),
    st.tuples(st.just("clear"), st.just(""), st.just(0)),
    st.tuples(st.just("peek"), st.just(""), st.just(0)),
)


class Model:
    def __init__(self) -> None:
        self.timers: dict[TimerKey, tuple[int, int]] = {}  # key -> (deadline, seq)
        self.seq = 0

    def schedule(self, key: TimerKey, deadline: int) -> None:
        self.seq += 1
        self.timers[key] = (deadline, self.seq)

    def next(self):
        return min((d for d, _ in self.timers.values()), default=None)

    def pop_due(self, now: int):
        if not self.timers:
            return None
        key, (d, _) = min(self.timers.items(), key=lambda kv: kv[1])
        if d > now:
            return None
        del self.timers[key]
        return key, d

    def snapshot(self) -> dict[str, int]:
        return dict(sorted((k.name, d) for k, (d, _) in self.timers.items()))


def apply(q: TimerQueue, m: Model, kind: str, key, n: int) -> None:
    if kind == "schedule":
        q.schedule(key, n, ("payload", n))
        m.schedule(key, n)
    elif kind == "cancel":
        q.cancel(key)
        m.timers.pop(key, None)
    elif kind == "cancel_group":
        q.cancel_group(key)
        for k in [k for k in m.timers if k.group_id == key]:  # exact group id: "g" is not a prefix match of "g-x"
            del m.timers[k]
    elif kind == "pop":
        t = q.pop_due(n)
        want = m.pop_due(n)
        assert (None if t is None else (t.key, t.deadline_ms)) == want
    elif kind == "clear":
        q.clear()
        m.timers.clear()


@settings(max_examples=400, deadline=None)
@given(st.lists(op, max_size=80))
def test_timer_queue_matches_the_naive_model(ops):
    q, m = TimerQueue(), Model()
    changed: set = set()
    q.watch(changed, "p")
    seen = q.next_deadline()
    for kind, key, n in ops:
        apply(q, m, kind, key, n)
        assert q.snapshot() == m.snapshot()
        if not changed:
            # nobody was told: the earliest deadline must be what the watcher last read
            assert m.next() == seen
        if kind == "peek" or changed:
            changed.clear()
            seen = q.next_deadline()
            assert seen == m.next()


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=30), st.lists(op, max_size=30))
def test_undoing_a_journal_restores_the_timers_and_their_order(before, during):
    q, m = TimerQueue(), Model()
    for kind, key, n in before:
        apply(q, m, kind, key, n)
    armed = {k: q.get(k) for k in KEYS}
    journal: list = []
    q.journal = journal
    m2 = Model()
    m2.timers, m2.seq = dict(m.timers), m.seq
    for kind, key, n in during:
        apply(q, m2, kind, key, n)
    q.journal = None
    q.undo(journal)
    assert {k: q.get(k) for k in KEYS} == armed  # same deadlines and scheduling order
    assert q.snapshot() == m.snapshot()
    # and the queue still works: timers come out in their old order
    while (t := q.pop_due(10**6)) is not None:
        assert (t.key, t.deadline_ms) == m.pop_due(10**6)
    assert m.pop_due(10**6) is None
    for g in ("g", "g-x"):
        q.cancel_group(g)  # the group index survived the undo (nothing left to cancel, nothing raised)


def test_a_postponed_timer_fires_at_its_new_deadline_in_scheduling_order():
    q = TimerQueue()
    a, b = join_timer("a"), join_timer("b")
    q.schedule(a, 10)
    q.schedule(b, 20)
    q.schedule(a, 20)  # postponed past b's deadline: same deadline, scheduled after b
    assert q.next_deadline() == 20
    assert q.pop_due(19) is None
    assert [q.pop_due(20).key, q.pop_due(20).key] == [b, a]


def test_heap_stays_bounded_when_a_timer_moves_earlier_again_and_again():
    q = TimerQueue()
    q.schedule(join_timer("keep"), 0)
    for i in range(10_000):
        q.schedule(join_timer("x"), 1_000_000 - i)
    assert len(q._heap) <= 4 * 2 + 64


def test_timer_names():
    assert [k.name for k in (heartbeat_timer("g", "m-1"), pending_member_timer("g", "m-2"),
                             initial_rebalance_timer("g"), join_timer("g"), pending_sync_timer("g"),
                             RETENTION_TIMER)] == \
        ["heartbeat-g-m-1", "pending-g-m-2", "initial-g", "join-g", "sync-g", "offsets-retention"]
