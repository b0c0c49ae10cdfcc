"""KIP-848 in virtual time: the library's protocol comparisons and migration, each showing the rule of Kafka it is
about (checked from the run's own records and trace), determinism, a broken coordinator rule caught across a
migration, and fuzzing of consumer-protocol scenarios (>= 200 seeds, zero violations)."""

from __future__ import annotations

import pytest

from consumer import outputs as O
from consumer.listener import RebalanceListenerInvoker
from coordinator import reconciliation
from coordinator import records as R

from scenarios.fuzz import fuzz_actions, fuzz_scenario
from scenarios.model import load_scenario
from scenarios.runner import library_paths, run_scenario

from scenario_helpers import DATA

RESULTS: dict = {}


def result(name: str):
    if name not in RESULTS:
        RESULTS[name] = run_scenario(next(p for p in library_paths() if p.stem == name), trace=True)
    return RESULTS[name]


def records(res, group: str, *types) -> list:
    return [e for e in res.sim.records if e.record.group_id == group and isinstance(e.record, types)]


def callbacks(res, kind: str, prefix: str, after_ms: int = 0) -> dict[str, int]:
    """consumer -> partitions revoked / lost by its callbacks after ``after_ms`` (consumers named ``prefix-*``)."""
    out: dict[str, int] = {}
    for e in res.sim.trace:
        if e["type"] == kind and e["t"] > after_ms and e["consumer"].startswith(prefix + "-"):
            out[e["consumer"]] = out.get(e["consumer"], 0) + len(e["partitions"])
    return out


def test_consumer_leaves_side_by_side():
    """A leave: eager members revoke everything (onJoinPrepare); cooperative and consumer-protocol members revoke
    nothing they keep; the consumer group's epoch is bumped once by the leave heartbeat (epoch -1: the member is
    removed, GroupMetadataManager bumps the group epoch) and the two left share the 9 partitions."""
    res = result("consumer-leaves-protocols")
    assert res.ok
    assert callbacks(res, "revoked", "eager", 20_000) == {"eager-0": 3, "eager-1": 3, "eager-2": 3}
    assert callbacks(res, "revoked", "cooperative", 20_000) == {"cooperative-1": 3}
    assert callbacks(res, "revoked", "consumer", 20_000) == {"consumer-1": 3}  # only the leaver, on close
    epochs = [e.record.epoch for e in records(res, "consumer", R.ConsumerGroupMetadata) if e.timestamp_ms >= 20_000]
    assert len(epochs) == 1
    final = res.summary["groups"]["consumer"]["assignment"]
    assert sorted(final) == ["consumer-0", "consumer-2"] and sum(map(len, final.values())) == 9


def test_rolling_deploy_side_by_side():
    """Each restart of a dynamic consumer-protocol member is a leave (+1 group epoch) and a new member (+1); the
    group reconciles without any group-wide barrier, so the members that stay revoke far less than eager ones."""
    res = result("rolling-deploy-protocols")
    assert res.ok
    bumps = [e for e in records(res, "consumer", R.ConsumerGroupMetadata) if e.timestamp_ms >= 20_000]
    assert len(bumps) == 8  # 4 restarts x (leave + join)
    cp = res.summary["groups"]["consumer"]["consumer_protocol"]
    assert cp["group_epoch"] == bumps[-1].record.epoch and cp["reconciliations"]
    assert res.summary["groups"]["consumer"]["rebalances"] == 0  # no JoinGroup rebalance at all
    eager = sum(callbacks(res, "revoked", "eager", 20_000).values())
    consumer = sum(callbacks(res, "revoked", "consumer", 20_000).values())
    assert consumer < eager


def test_gc_pause_storm_fences_and_the_member_rejoins_with_its_id():
    """A pause past the coordinator's session timeout: the member is fenced (its records tombstoned), on waking it
    calls onPartitionsLost -- not onPartitionsRevoked -- and rejoins with the same member id (KIP-848: the
    member id is the client's for its lifetime)."""
    res = result("gc-pause-storm-protocols")
    assert res.ok
    mid = next(e["member_id"] for e in res.sim.trace if e["type"] == "start" and e["consumer"] == "consumer-1")
    fenced = [e.timestamp_ms for e in records(res, "consumer", R.ConsumerGroupMemberMetadataTombstone)
              if e.record.member_id == mid]
    rejoined = [e.timestamp_ms for e in records(res, "consumer", R.ConsumerGroupMemberMetadata)
                if e.record.member_id == mid and e.timestamp_ms > 0]
    # the session (10 s) runs from the last heartbeat, at most one interval (3 s) before the pause began at 15 s
    assert fenced and 22_000 <= fenced[0] <= 25_000
    assert rejoined and rejoined[-1] > fenced[0]
    lost = [e for e in res.sim.trace if e["type"] == "lost" and e["consumer"] == "consumer-1"]
    assert lost and lost[0]["t"] >= 27_000           # after it woke up
    assert not [e for e in res.sim.trace if e["type"] == "revoked" and e["consumer"] == "consumer-1"
                and 15_000 <= e["t"] < lost[0]["t"]]


def test_coordinator_failover_during_reconciliation():
    """The consumer group's coordinator crashes while it reconciles: the new leader loads the epochs, targets and
    current assignments from the log and the members carry on -- nobody is fenced, the reconciliation ends."""
    res = result("coordinator-failover-protocols")
    assert res.ok
    reached = {e["group"]: e["t"] for e in res.sim.trace if e["type"] == "phase_reached"}
    assert set(reached) == {"eager", "cooperative", "consumer"} and reached["consumer"] >= 60_000
    assert res.summary["groups"]["consumer"]["coordinator_failovers"] == 1
    assert not [e for e in records(res, "consumer", R.ConsumerGroupMemberMetadataTombstone)
                if e.timestamp_ms >= reached["consumer"]]
    last = res.summary["groups"]["consumer"]["consumer_protocol"]["reconciliations"][-1]
    assert last["started_ms"] == reached["consumer"] and last["ended"] == "Stable"


def test_classic_to_consumer_rolling_migration():
    """The first consumer-protocol heartbeat converts the classic group (GroupTombstone, then ConsumerGroup records
    whose epoch continues the classic generation); the classic members are reconciled in the consumer group; at
    the end every member uses the consumer protocol; every record is processed."""
    res = result("classic-to-consumer-migration")
    assert res.ok, "\n".join(map(str, res.violations))
    tomb = records(res, "payments", R.GroupTombstone)
    first = records(res, "payments", R.ConsumerGroupMetadata)
    assert len(tomb) == 1 and first and tomb[0].timestamp_ms == first[0].timestamp_ms == 23_003
    last_generation = max(e.record.generation_id for e in records(res, "payments", R.GroupMetadata))
    assert first[0].record.epoch == last_generation  # ConsumerGroup.fromClassicGroup: epoch = generation
    g = res.sim.svc.consumer_group("payments")
    assert str(g.state) == "Stable" and len(g.members) == 4
    assert not any(m.use_classic_protocol for m in g.members.values())
    assert res.summary["groups"]["payments"]["unprocessed"] == 0


@pytest.mark.parametrize("name", ["rolling-deploy-protocols", "consumer-leaves-protocols"])
def test_a_coordinator_that_does_not_wait_for_revocations_is_caught(monkeypatch, name):
    """Broken coordinator rule: a member is never kept in UNREVOKED_PARTITIONS (its revocation is not waited
    for), so a partition goes to its new owner while the previous one still holds it."""
    monkeypatch.setattr(reconciliation._Step, "owns_revoked", lambda self, pending: False)
    res = run_scenario(next(p for p in library_paths() if p.stem == name), trace=False)
    inv = res.summary["invariants"]
    assert inv["revocation-acknowledged"]["violations"] > 0 and inv["one-owner-at-a-time"]["violations"] > 0


def test_a_client_that_assigns_before_revoking_is_caught_across_the_migration(monkeypatch):
    """Broken client rule: the revocation is acknowledged without running onPartitionsRevoked (the application
    still processes the partitions) -- what "assign before revoke" looks like from outside. The new owner's
    onPartitionsAssigned then finds the old one, still a member, holding the partition."""
    real = RebalanceListenerInvoker.invoke

    def skip_revoke(self, kind, partitions):
        return None if kind is O.PartitionsRevoked else real(self, kind, partitions)
    monkeypatch.setattr(RebalanceListenerInvoker, "invoke", skip_revoke)
    res = run_scenario(next(p for p in library_paths() if p.stem == "classic-to-consumer-migration"), trace=False)
    assert res.summary["invariants"]["one-owner-at-a-time"]["violations"] > 0


def test_consumer_protocol_runs_are_deterministic():
    path = next(p for p in library_paths() if p.stem == "classic-to-consumer-migration")
    a, b = run_scenario(path, seed=5), run_scenario(path, seed=5)
    assert a.events_lines() == b.events_lines() and a.trace_lines() == b.trace_lines()
    assert a.produce_lines() == b.produce_lines()


BASE = load_scenario(DATA / "fuzz-base-consumer.toml")
CHUNK = 50


@pytest.mark.parametrize("start", range(0, 200, CHUNK))
def test_consumer_protocol_fuzz_seeds_have_no_violation(start):
    failures = []
    kinds = set()
    for seed in range(start, start + CHUNK):
        sc = fuzz_scenario(BASE, seed)
        kinds |= {a.action + (f":{a.phase}" if getattr(a, "phase", None) else "") for a in sc.timeline}
        try:
            res = run_scenario(sc, seed, trace=False)
        except Exception as exc:  # noqa: BLE001 - report the seed that reproduces it
            failures.append(f"seed {seed}: {type(exc).__name__}: {exc}")
            continue
        if not res.ok:
            failures.append(f"seed {seed}:\n" + "\n".join(str(v) for v in res.violations[:3]))
    assert not failures, "\n\n".join(failures)
    assert len(kinds) >= 6  # the schedules really vary


def test_consumer_protocol_fuzzing_draws_the_new_faults():
    drawn = {a.action + (f":{a.phase}" if getattr(a, "phase", None) else "")
             + (":during" if getattr(a, "during", None) else "")
             for seed in range(200) for a in fuzz_actions(BASE, seed)}
    assert {"hold_revocation", "broker_crash:during", "message_fault:epoch_bump",
            "message_fault:assignment"} <= drawn


# --- reproductions of reported bugs (scenarios/library/bugs/, not part of --library) -----------------------------

def bug(name: str):
    from scenarios.runner import LIBRARY_DIR
    return run_scenario(LIBRARY_DIR / "bugs" / f"{name}.toml", trace=True)


def test_kafka_19335_reordered_heartbeat_responses():
    """KAFKA-19335 is a client bug (Java's membership managers were left JOINING with epoch -1 by out-of-order
    heartbeat responses): with the same fault kgroup's client core ends STABLE at the group's epoch with its
    target, and its epochs never go back -- the invariants that would catch the buggy client."""
    res = bug("kafka-19335-reordered-heartbeats")
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.sim.stats.get("reordered", 0) >= 1
    inv = res.summary["invariants"]
    assert inv["member-epochs-increase"]["checked"] > 0 and inv["settles"]["checked"] == 1
    assert not res.summary["consumer_errors"]


def test_kafka_21582_static_upgrade_mid_rebalance_is_caught():
    """KAFKA-21582 (Kafka's coordinator, reproduced as Kafka 4.4 behaves): the classic group is converted while a
    new static member's join is in flight and a static member is replaced; no group epoch bump follows, so the
    group "converges" to the classic assignment copied at the conversion, the new member with nothing.
    ``target-up-to-date`` reports it; every other invariant holds."""
    res = bug("kafka-21582-static-upgrade-mid-rebalance")
    bad = {k for k, v in res.summary["invariants"].items() if v["violations"]}
    assert bad == {"target-up-to-date"}
    epochs = {e.record.epoch for e in records(res, "orders", R.ConsumerGroupMetadata)}
    assert epochs == {1}  # converted at the classic generation, never bumped
    started = [e.timestamp_ms for e in records(res, "orders", R.RebalanceStarted)]
    converted = records(res, "orders", R.GroupTombstone)[0].timestamp_ms
    assert started and started[-1] < converted  # mid-rebalance: no JoinCompleted in between
    assert not [e for e in records(res, "orders", R.JoinCompleted) if started[-1] <= e.timestamp_ms < converted]


def test_target_up_to_date_catches_an_assignor_that_ignores_new_members(monkeypatch):
    """Broken rule: the coordinator's assignor keeps every member's previous target and gives newcomers nothing
    once anything is assigned -- the group converges, but to an outdated target."""
    import coordinator.consumer_manager as cm
    from coordinator.assignors import assign_target

    def lazy(name, members, topics, **kw):
        if any(spec["current"] for spec in members.values()):
            return {mid: dict(spec["current"]) for mid, spec in members.items()}
        return assign_target(name, members, topics, **kw)
    monkeypatch.setattr(cm, "assign_target", lazy)
    res = run_scenario(next(p for p in library_paths() if p.stem == "consumer-leaves-protocols"), trace=False)
    assert res.summary["invariants"]["target-up-to-date"]["violations"] > 0


def test_offsets_survive_the_conversion_and_a_failover_after_it():
    """Converting the classic group (its GroupTombstone) does not touch its committed offsets -- only offset
    tombstones do, as Kafka's coordinator loads them -- so a coordinator failover after the conversion loads the
    offsets committed before it. payments-2 is slow from 12 s (it commits nothing after the conversion at 23 s) and
    the coordinator fails over at 32.3 s: its partitions' offsets are those of before the conversion (the faults
    of ``kgroup fuzz`` seed 40, which found the checker dropping a group's offsets with its tombstone)."""
    from scenarios.model import parse_scenario
    sc = load_scenario(next(p for p in library_paths() if p.stem == "classic-to-consumer-migration"))
    data = sc.model_dump(mode="json", exclude_none=True)
    data["timeline"] += [
        {"at": 12_084, "action": "slow", "consumer": "payments-2", "duration_ms": 26_730, "poll_ms": 22_709},
        {"at": 32_327, "action": "broker_crash", "broker": "coordinator", "group": "payments", "duration_ms": 7_828},
    ]
    res = run_scenario(parse_scenario(data, "t"), 40)
    assert res.ok, "\n".join(map(str, res.violations))
    assert res.summary["invariants"]["offsets-survive-failover"]["checked"] >= 1
    assert res.summary["groups"]["payments"]["coordinator_failovers"] == 1


def test_a_zombie_classic_member_across_a_downgrade_and_upgrade_is_not_an_owner():
    """``kgroup fuzz`` seed 136 of the migration: payments-3 (classic, inside the consumer group) is GC-paused
    while its partition payments-11 is moved; payments-0 leaves, the group is downgraded (its classic assignment is
    the target, without payments-11), then upgraded again, and payments-11 goes to payments-0 while the paused
    payments-3 still holds it by its callbacks. That is no double ownership: payments-3's generation is stale for
    payments-11 -- the coordinator refuses its commits (ILLEGAL_GENERATION) and its next heartbeat makes it give the
    partition up (onPartitionsLost). one-owner-at-a-time counts a holder only while it could commit the partition."""
    from scenarios.model import parse_scenario
    sc = load_scenario(next(p for p in library_paths() if p.stem == "classic-to-consumer-migration"))
    data = sc.model_dump(mode="json", exclude_none=True)
    data["timeline"] += [
        {"at": 21_254, "action": "gc_pause", "consumer": "payments-3", "duration_ms": 8_320},
        {"at": 25_401, "action": "restart", "consumer": "payments-0", "down_ms": 4_150, "graceful": True},
    ]
    res = run_scenario(parse_scenario(data, "t"), 136)
    assert res.ok, "\n".join(map(str, res.violations))
    downgraded = [e for e in records(res, "payments", R.RebalanceStarted) if "Downgrade" in e.record.reason]
    assert downgraded and len(records(res, "payments", R.GroupTombstone)) == 2  # upgraded twice
    lost = [e for e in res.sim.trace if e["type"] == "lost" and e["consumer"] == "payments-3"]
    assert lost and "payments-11" in lost[0]["partitions"]
    took = [e for e in res.sim.trace if e["type"] == "assigned" and e["consumer"] == "payments-0"
            and "payments-11" in e["added"] and e["t"] < lost[0]["t"]]
    assert took  # payments-0 got it while the zombie still held it


def test_kip_1251_commits_after_an_epoch_bump():
    """Commits in flight while the epoch moves arrive with the previous epoch, for partitions the member still owns:
    Kafka 4.4 accepts them (KIP-1251's per-partition assignment epochs); under the 4.0-4.2 rule
    (``commit_rule = "member-epoch"``) each is reported, and nothing else is."""
    res = bug("kip-1251-commits-after-epoch-bump")
    bad = {k: v["violations"] for k, v in res.summary["invariants"].items() if v["violations"]}
    assert set(bad) == {"commits-by-epoch"} and bad["commits-by-epoch"] > 0
    assert all("commit_rule = member-epoch" in v.message for v in res.violations)
    from scenarios.model import parse_scenario
    data = res.scenario.model_dump(mode="json", exclude_none=True)
    data["invariants"]["commit_rule"] = "assignment-epoch"
    assert run_scenario(parse_scenario(data, "t"), 1).ok
