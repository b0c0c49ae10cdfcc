"""Helpers for the scenario tests (imported by name: the test directories are not packages)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def small_scenario(**overrides) -> dict:
    """A small valid scenario as a dict (tests mutate it)."""
    sc = {
        "scenario": {"name": "small", "duration_ms": "20s"},
        "cluster": {"brokers": 3, "broker": {"group.initial.rebalance.delay.ms": 0,
                                              "group.min.session.timeout.ms": 1000},
                    "topics": [{"name": "t", "partitions": 4, "replication_factor": 2}]},
        "network": {"latency_ms": 1},
        "groups": [{"id": "g", "topics": ["t"], "consumers": 2, "strategy": "range",
                    "config": {"session.timeout.ms": 3000, "heartbeat.interval.ms": 1000,
                               "max.poll.interval.ms": 5000, "request.timeout.ms": 5000,
                               "auto.commit.interval.ms": 1000}}],
        "timeline": [{"at": "1s", "action": "produce", "topic": "t", "count": 40, "rate_per_s": 20,
                      "key_format": "k{i}"}],
        "invariants": {"settle_slack_ms": 2000},
    }
    sc.update(overrides)
    return sc


def failover_and_back() -> dict:
    """small_scenario with the coordinator's broker down from 4 s to 7 s, then a preferred-leader election: the
    group's offsets partition moves away and back (two loads)."""
    sc = small_scenario()
    sc["timeline"].append({"at": "4s", "action": "broker_crash", "broker": "coordinator", "duration_ms": "3s",
                           "elect_preferred": True})
    return sc


def break_assignments(monkeypatch) -> None:
    """Broken rule: when the leader's assignment is stored, every member gets the first member's partitions."""
    from coordinator.group import ClassicGroup

    original = ClassicGroup.to_group_metadata

    def broken(self, assignment=None):
        if assignment:
            first = next(iter(assignment.values()))
            assignment = {mid: first for mid in assignment}
        return original(self, assignment)

    monkeypatch.setattr(ClassicGroup, "to_group_metadata", broken)


def cli(argv: list[str]) -> int:
    """Run `kgroup run|fuzz ...` through their own parsers (independent of the other subcommands' state)."""
    import argparse

    from kgroup import cmd_fuzz, cmd_run

    parser = argparse.ArgumentParser(prog="kgroup")
    sub = parser.add_subparsers(dest="command")
    cmd_run.add_parser(sub)
    cmd_fuzz.add_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
