"""The invariant checker catches a deliberately broken coordinator (rules injected by monkeypatching), and
reports each violation with virtual time, seed and the events that led to it."""

from __future__ import annotations

import dataclasses

from coordinator import records as R
from coordinator.runtime import CoordinatorRuntime
from scenarios.model import parse_scenario
from scenarios.runner import run_scenario

from scenario_helpers import break_assignments, failover_and_back, small_scenario


def run(sc: dict, seed: int = 3):
    return run_scenario(parse_scenario(sc, "test"), seed)


def test_healthy_baseline_has_no_violation():
    res = run(small_scenario())
    assert res.ok, "\n".join(map(str, res.violations))


def test_same_partition_handed_to_two_members_is_caught(monkeypatch):
    break_assignments(monkeypatch)
    res = run(small_scenario())
    assert not res.ok
    found = [v for v in res.violations if v.invariant == "single-owner-per-generation"]
    assert any("GroupMetadata record" in v.message for v in found)      # the coordinator's log
    v = next(v for v in found if "received by" in v.message)            # what the consumers applied
    assert v.seed == 3 and v.time_ms > 0
    assert v.context and any("SyncGroup" in line for line in v.context)
    assert "seed=3" in str(v) and "preceding events" in str(v)
    # the partitions nobody got are reported by the settle check too
    assert res.summary["invariants"]["settles"]["violations"] >= 1


def test_cooperative_double_ownership_is_caught(monkeypatch):
    break_assignments(monkeypatch)
    sc = small_scenario()
    sc["groups"][0]["strategy"] = "cooperative-sticky"
    res = run(sc)
    assert res.summary["invariants"]["exclusive-ownership"]["violations"] >= 1


def test_skipped_generation_bump_is_caught(monkeypatch):
    """Broken rule: completing a join phase does not bump the generation (after the first one)."""
    original = CoordinatorRuntime.append

    def broken_append(self, rec):
        if isinstance(rec, R.JoinCompleted) and rec.generation_id > 1:
            rec = dataclasses.replace(rec, generation_id=rec.generation_id - 1)
        return original(self, rec)

    monkeypatch.setattr(CoordinatorRuntime, "append", broken_append)
    sc = small_scenario()
    sc["groups"][0]["consumers"] = 3
    sc["groups"][0]["members"] = [{"name": "late", "start": "4s"}]
    res = run(sc)
    v = next(v for v in res.violations if v.invariant == "generations-increase")
    assert "join completed generation 1" in v.message
    assert v.context


def test_offsets_going_backwards_are_caught(monkeypatch):
    """Broken rule: the coordinator stores every commit one lower after the first (offsets go back)."""
    original = CoordinatorRuntime.append
    seen = set()

    def broken_append(self, rec):
        if isinstance(rec, R.OffsetCommit) and rec.offset > 5:
            key = (rec.group_id, rec.topic, rec.partition)
            if key in seen:
                rec = dataclasses.replace(rec, offset=1)
            seen.add(key)
        return original(self, rec)

    monkeypatch.setattr(CoordinatorRuntime, "append", broken_append)
    res = run(small_scenario())
    assert res.summary["invariants"]["offsets-monotonic"]["violations"] >= 1


def test_lost_records_are_caught(monkeypatch):
    """Broken data path: a consumer skips records (its position jumps) -> at-least-once fails."""
    from consumer.coordinator import ConsumerCoordinator

    original = ConsumerCoordinator.advance

    def skipping_advance(self, tp, records=1):
        return original(self, tp, records + 1)

    monkeypatch.setattr(ConsumerCoordinator, "advance", skipping_advance)
    res = run(small_scenario())
    assert res.summary["invariants"]["at-least-once"]["violations"] >= 1


def test_state_changed_without_a_record_is_caught(monkeypatch):
    """Broken rule: the coordinator applies some offset commits to its state without logging them -- state no
    longer equals the replay of the log (what a new leader would load). Only the replay check sees it: the
    offset invariants read the records."""
    original = CoordinatorRuntime.append

    def unlogged_append(self, rec):
        original(self, rec)
        if isinstance(rec, R.OffsetCommit) and rec.offset % 7 == 3:
            self._records.pop()  # applied, never appended to the log

    monkeypatch.setattr(CoordinatorRuntime, "append", unlogged_append)
    res = run(small_scenario())
    inv = res.summary["invariants"]
    assert inv["state-equals-replay"]["violations"] >= 1
    assert inv["offsets-monotonic"]["violations"] == 0
    v = next(v for v in res.violations if v.invariant == "state-equals-replay")
    assert "at the end of the run" in v.message and "offset" in v.message


def test_replay_is_checked_around_failovers_and_at_the_end():
    res = run(failover_and_back())
    assert res.ok, "\n".join(map(str, res.violations))
    loads = [e for e in res.sim.records if e.record.TYPE == "CoordinatorLoaded"]
    assert loads
    # at bounded moments only: before the stop, before the preferred-leader election, after each load, at the end
    assert res.summary["invariants"]["state-equals-replay"]["checked"] == 1 + 1 + len(loads) + 1
