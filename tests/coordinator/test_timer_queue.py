"""TimerQueue against a naive model: whatever mix of schedule (earlier, later, same), cancel, pop_due and clear,
timers come out in (deadline, latest scheduling order) order, next_deadline is the earliest live deadline, and a
watcher is told whenever that earliest deadline may have changed (the service caches deadlines on that promise)."""

from hypothesis import given, settings, strategies as st

from coordinator.timers import TimerQueue

KEYS = [f"k{i}" for i in range(6)]

op = st.one_of(
    st.tuples(st.just("schedule"), st.sampled_from(KEYS), st.integers(0, 60)),
    st.tuples(st.just("cancel"), st.sampled_from(KEYS), st.just(0)),
    st.tuples(st.just("pop"), st.just(""), st.integers(0, 60)),
    st.tuples(st.just("clear"), st.just(""), st.just(0)),
    st.tuples(st.just("peek"), st.just(""), st.just(0)),
)


class Model:
    def __init__(self) -> None:
        self.timers: dict[str, tuple[int, int]] = {}  # key -> (deadline, seq)
        self.seq = 0

    def schedule(self, key: str, deadline: int) -> None:
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


@settings(max_examples=400, deadline=None)
@given(st.lists(op, max_size=80))
def test_timer_queue_matches_the_naive_model(ops):
    q, m = TimerQueue(), Model()
    changed: set = set()
    q.watch(changed, "p")
    seen = q.next_deadline()
    for kind, key, n in ops:
        if kind == "schedule":
            q.schedule(key, n, ("a", key))
            m.schedule(key, n)
        elif kind == "cancel":
            q.cancel(key)
            m.timers.pop(key, None)
        elif kind == "pop":
            t = q.pop_due(n)
            want = m.pop_due(n)
            assert (None if t is None else (t.key, t.deadline_ms)) == want
        elif kind == "clear":
            q.clear()
            m.timers.clear()
        assert q.snapshot() == {k: d for k, (d, _) in sorted(m.timers.items())}
        if not changed:
            # nobody was told: the earliest deadline must be what the watcher last read
            assert m.next() == seen
        if kind == "peek" or changed:
            changed.clear()
            seen = q.next_deadline()
            assert seen == m.next()


def test_a_postponed_timer_fires_at_its_new_deadline_in_scheduling_order():
    q = TimerQueue()
    q.schedule("a", 10, ("a",))
    q.schedule("b", 20, ("b",))
    q.schedule("a", 20, ("a",))  # postponed past b's deadline: same deadline, scheduled after b
    assert q.next_deadline() == 20
    assert q.pop_due(19) is None
    assert [q.pop_due(20).key, q.pop_due(20).key] == ["b", "a"]


def test_heap_stays_bounded_when_a_timer_moves_earlier_again_and_again():
    q = TimerQueue()
    q.schedule("keep", 0, ("k",))
    for i in range(10_000):
        q.schedule("x", 1_000_000 - i, ("x",))
    assert len(q._heap) <= 4 * 2 + 64
