"""KIP-848 consumer cores against kgroup's real KIP-848 coordinator (``GroupCoordinatorService``, written from
Kafka's broker side), in-process and in virtual time: no sockets, every run identical.

The rules checked are the protocol's, which the two sides must keep *together*: a partition is never owned by two
members at once (ownership read from the members' own outputs: ``onPartitionsAssigned`` takes; revoked / lost, or
leaving / going stale / being fenced -- when the member pauses what it owns -- gives up; the coordinator hands a
partition over only after the old owner stopped reporting it or left); every member's
epoch in its heartbeats only moves forward, except the documented resets (0 to rejoin, -1 / -2 to leave); the group
converges to disjoint assignments covering every partition with the coordinator's group STABLE and every member
STABLE at the coordinator's assignment epoch; commits carrying the member epoch are accepted.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from consumer import outputs as out
from consumer._consumer_state import ConsumerMemberState as S
from consumer.assignors import TopicPartition
from consumer.coordinator import ConsumerCoordinator
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext
from coordinator.cluster import topic_id
from protocol.api import ApiKey
from protocol.messages import FindCoordinatorResponse
from protocol.uuids import random_uuid

GROUP = "orders-app"
TOPIC = "events"
PARTITIONS = 6
ALL = {TopicPartition(TOPIC, p) for p in range(PARTITIONS)}
LATENCY = 2          # ms, each way
APP_POLL = 50        # the application polls every 50 ms unless paused


class World:
    def __init__(self, seed: int = 1, **member_cfg: Any) -> None:
        self.config = CoordinatorConfig.create({
            "group.consumer.heartbeat.interval.ms": 500, "group.consumer.min.heartbeat.interval.ms": 100,
            "group.consumer.session.timeout.ms": 3000, "group.consumer.min.session.timeout.ms": 1000,
            "group.consumer.assignment.interval.ms": 0})
        self.svc = GroupCoordinatorService(num_brokers=3, config=self.config, seed=7)
        self.svc.cluster.create_topic(TOPIC, PARTITIONS, 1)
        self.rng = random.Random(seed)
        self.member_cfg = member_cfg
        self.now = 0
        self.cores: dict[str, ConsumerCoordinator] = {}
        self.paused: set[str] = set()
        self.next_poll: dict[str, int] = {}
        self.inflight: dict[int, tuple[str, int]] = {}   # coordinator request id -> (member, handle)
        self.deliveries: list[tuple[int, int, str, int, Any]] = []
        self.seq = 0
        self.rid = 0
        self.owner: dict[TopicPartition, str] = {}
        self.violations: list[str] = []
        self.epochs: dict[str, list[int]] = {}
        self.commit_errors: list[tuple[str, int]] = []
        self.log: list[tuple[int, str, str]] = []
        self.cut_off: set[str] = set()   # members whose requests are lost on the way (a network partition)

    # --- members -----------------------------------------------------------------------------------------------
    def add(self, name: str, **cfg: Any) -> ConsumerCoordinator:
        config = {"group.id": GROUP, "client.id": name, "group.protocol": "consumer", "max.poll.interval.ms": 5000,
                  "auto.commit.interval.ms": 1000, **self.member_cfg, **cfg}
        core = ConsumerCoordinator(config, now_ms=self.now, member_id=random_uuid(self.rng))
        core.set_metadata({TOPIC: PARTITIONS}, {TOPIC: topic_id(TOPIC)})
        core.subscribe([TOPIC])
        self.cores[name] = core
        self.epochs[name] = []
        self.next_poll[name] = self.now
        return core

    # --- the network and the coordinator -------------------------------------------------------------------------
    def _deliver_later(self, name: str, handle: int, response: Any) -> None:
        self.seq += 1
        self.deliveries.append((self.now + LATENCY, self.seq, name, handle, response))

    def _collect(self, output) -> None:
        for rid, resp in output.responses:
            target = self.inflight.pop(rid, None)
            if target is not None:
                self._deliver_later(target[0], target[1], resp)

    def pump(self, name: str) -> None:
        core = self.cores[name]
        for o in core.drain():
            self.log.append((self.now, name, type(o).__name__))
            if isinstance(o, out.SendRequest):
                self._send(name, o)
            elif isinstance(o, out.PartitionsAssigned):
                for tp in o.partitions:
                    if self.owner.get(tp, name) != name:
                        self.violations.append(f"{self.now}: {name} assigned {tp} owned by {self.owner[tp]}")
                    self.owner[tp] = name
            elif isinstance(o, (out.PartitionsRevoked, out.PartitionsLost)):
                for tp in o.partitions:
                    if self.owner.get(tp) == name:
                        del self.owner[tp]
            elif isinstance(o, out.StateChanged) and o.new in ("LEAVING", "STALE", "FENCED"):
                # the member stops fetching its partitions at this moment (pending revocation; its lost/revoked
                # callback may come only at its next poll, when it is no longer in the group)
                for tp in [tp for tp, n in self.owner.items() if n == name]:
                    del self.owner[tp]
            elif isinstance(o, out.OffsetCommitCompleted) and o.exception is not None:
                self.commit_errors.append((name, self.now))

    def _send(self, name: str, req: out.SendRequest) -> None:
        if name in self.cut_off:
            return  # lost: the core's request timeout fails it
        if req.api_key == ApiKey.FIND_COORDINATOR:
            node = self.svc.coordinator_of(GROUP)
            self._deliver_later(name, req.handle, FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponse.Coordinator(key=GROUP, node_id=node, host="broker", port=9092,
                                                    error_code=0)]))
            return
        if req.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            self.epochs[name].append(req.body.member_epoch)
        self.rid += 1
        self.inflight[self.rid] = (name, req.handle)
        output = self.svc.handle(req.node_id, req.body, RequestContext(self.rid, req.api_version, client_id=name),
                                 self.now)
        self._collect(output)

    # --- time ------------------------------------------------------------------------------------------------------
    def run_until(self, t_end: int) -> None:
        while True:
            times = [d[0] for d in self.deliveries]
            for name, core in self.cores.items():
                d = core.next_deadline_ms()
                if d is not None:
                    times.append(d)
                if name not in self.paused and not core.closed and not core.closing:
                    times.append(self.next_poll[name])
            d = self.svc.next_deadline()
            if d is not None:
                times.append(d)
            t = max(self.now, min(times)) if times else t_end + 1
            if t > t_end:
                self.now = t_end
                return
            self.now = t
            self._collect(self.svc.poll(self.now))
            due = sorted(d for d in self.deliveries if d[0] <= self.now)
            self.deliveries = [d for d in self.deliveries if d[0] > self.now]
            for _t, _s, name, handle, resp in due:
                self.cores[name].on_response(handle, resp, self.now)
                self.pump(name)
            for name, core in self.cores.items():
                d = core.next_deadline_ms()
                if d is not None and d <= self.now:
                    core.tick(self.now)
                    self.pump(name)
                if name not in self.paused and not core.closed and not core.closing \
                        and self.next_poll[name] <= self.now:
                    result = core.poll(self.now)
                    for tp in result.fetchable:
                        core.advance(tp, 1)
                    self.next_poll[name] = self.now + APP_POLL
                    self.pump(name)

    # --- what the coordinator says ---------------------------------------------------------------------------------
    def group(self):
        return self.svc.consumer_group(GROUP)


def assert_converged(w: World, members: list[str]) -> None:
    owned = {n: set(w.cores[n].assignment) for n in members}
    assert set().union(*owned.values()) == ALL
    assert sum(len(o) for o in owned.values()) == PARTITIONS
    assert all(w.cores[n].state == S.STABLE for n in members), {n: w.cores[n].state for n in members}
    g = w.group()
    assert str(g.state).upper() == "STABLE", g.state
    epochs = {w.cores[n].generation.generation_id for n in members}
    assert len(epochs) == 1 and epochs.pop() == g.assignment_epoch
    assert w.owner == {tp: n for n, o in owned.items() for tp in o}


def assert_epochs_move_forward(w: World) -> None:
    """A member's heartbeat epochs never go backwards except to rejoin (0) or leave (-1 / -2)."""
    for name, epochs in w.epochs.items():
        last = 0
        for e in epochs:
            if e in (0, -1, -2):
                last = 0 if e == 0 else last
                continue
            assert e >= last, f"{name}: epoch {e} after {last}: {epochs}"
            last = e


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_join_share_leave_and_rejoin_without_double_ownership(seed):
    w = World(seed=seed)
    for i, name in enumerate(["a", "b", "c"]):
        w.add(name)
        w.run_until(w.now + 300 * (i + 1))
    w.run_until(10_000)
    assert_converged(w, ["a", "b", "c"])
    assert sorted(len(w.cores[n].assignment) for n in "abc") == [2, 2, 2]  # uniform over 6 partitions

    # "b" leaves: revoke, heartbeat with epoch -1; "a" and "c" take its partitions
    w.cores["b"].close(w.now)
    w.pump("b")
    w.run_until(w.now + 5000)
    assert w.cores["b"].closed and w.epochs["b"][-1] == -1
    assert_converged(w, ["a", "c"])
    assert sorted(len(w.cores[n].assignment) for n in "ac") == [3, 3]

    # "c" stops polling for longer than max.poll.interval.ms: it leaves, is STALE, then rejoins on its next poll
    w.paused.add("c")
    w.run_until(w.now + 5000 + 1500)
    assert w.cores["c"].state == S.STALE
    assert -1 in w.epochs["c"]
    w.paused.discard("c")
    w.next_poll["c"] = w.now
    w.run_until(w.now + 10_000)
    assert_converged(w, ["a", "c"])

    assert not w.violations, w.violations
    assert_epochs_move_forward(w)
    assert not w.commit_errors, w.commit_errors


def test_virtual_time_runs_are_identical():
    def run() -> list:
        w = World(seed=5)
        w.add("a")
        w.add("b")
        w.run_until(8000)
        w.cores["a"].close(w.now)
        w.pump("a")
        w.run_until(12_000)
        return w.log
    assert run() == run()


def test_static_member_leaves_with_minus_two_and_gets_its_partitions_back():
    """A static member (group.instance.id) leaves with epoch -2 (close) and the coordinator keeps its assignment;
    a new incarnation with the same instance id (a new member id) gets the same partitions back."""
    w = World(seed=9)
    w.add("a", **{"group.instance.id": "instance-a"})
    w.add("b")
    w.run_until(8000)
    assert_converged(w, ["a", "b"])
    before = set(w.cores["a"].assignment)
    w.cores["a"].close(w.now)
    w.pump("a")
    w.run_until(w.now + 500)
    assert w.epochs["a"][-1] == -2
    assert set(w.cores["b"].assignment) & before == set()  # kept for the static member while it is away
    del w.cores["a"]
    w.add("a2", **{"group.instance.id": "instance-a"})
    w.run_until(w.now + 4000)
    assert set(w.cores["a2"].assignment) == before
    assert not w.violations, w.violations


def test_member_cut_off_past_its_session_is_fenced_loses_its_partitions_and_rejoins():
    """The coordinator removes a member it has not heard from for the session timeout (3 s); when the member gets
    through again its heartbeat is answered UNKNOWN_MEMBER_ID: FENCED, onPartitionsLost (not revoked), and a
    rejoin with epoch 0 and the same member id, after which the group converges again."""
    w = World(seed=4, **{"request.timeout.ms": 1000})
    w.add("a")
    w.add("b")
    w.run_until(8000)
    assert_converged(w, ["a", "b"])
    b_owned = tuple(sorted(w.cores["b"].assignment, key=lambda tp: tp.partition))
    member_b = w.cores["b"].member_id
    w.cut_off.add("b")
    w.run_until(w.now + 4500)
    assert set(w.cores["a"].assignment) == ALL  # the coordinator fenced b after its session
    w.cut_off.discard("b")
    w.run_until(w.now + 8000)
    assert_converged(w, ["a", "b"])
    names = [(n, kind) for _t, n, kind in w.log if n == "b"]
    assert ("b", "PartitionsLost") in names
    lost = [i for i, x in enumerate(names) if x == ("b", "PartitionsLost")][0]
    assert ("b", "PartitionsRevoked") not in names[:lost]
    assert w.cores["b"].member_id == member_b
    assert 0 in w.epochs["b"][2:]  # the rejoin
    assert b_owned
