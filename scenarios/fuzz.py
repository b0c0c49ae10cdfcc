"""Random fault schedules on top of a scenario (``kgroup fuzz``).

:func:`fuzz_scenario` adds 1-4 faults, drawn from the seed alone (child stream ``fuzz`` of
:class:`~scenarios.rng.SimRandom`), to a copy of the scenario's timeline: GC pauses, slow processing, crashes
and restarts, network partitions (drop or delay, one or both ways), dropped / delayed / duplicated messages of
one API, and coordinator broker crashes. Scenarios with consumer-protocol members (KIP-848) also draw the faults
aimed at its epochs and phases: ConsumerGroupHeartbeat responses dropped, delayed, duplicated or reordered when
they carry an epoch bump or an assignment; a member held in revocation past its rebalance timeout; the
coordinator failed over while the group reconciles. The same (scenario, seed) always gives the same schedule, and the run
uses the same seed, so a failing seed *is* the bug report: ``kgroup fuzz FILE --seed S`` replays it, ``--dump``
writes the scenario with its generated timeline as TOML.
"""

from __future__ import annotations

from typing import Any

from consumer.config import ConsumerConfig
from coordinator.config import CoordinatorConfig
from scenarios import model as M
from scenarios.rng import SimRandom

FAULT_KINDS = ("gc_pause", "slow", "crash_restart", "restart", "network_partition", "message_fault",
               "broker_crash")
APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch", "FindCoordinator", "LeaveGroup",
        "any")
#: with consumer-protocol members (classic scenarios draw exactly as before: their runs stay byte-identical)
CONSUMER_FAULT_KINDS = FAULT_KINDS + ("heartbeat_phase_fault", "hold_revocation", "failover_reconciling")
CONSUMER_APIS = ("ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch", "FindCoordinator", "any")


def fuzz_actions(sc: M.Scenario, seed: int, max_faults: int = 4) -> list[Any]:
    rng = SimRandom(seed).child("fuzz")
    members = [m for m in M.resolve_members(sc) if m.start is not None]
    if not members:
        return []
    window_start = max(m.start for m in members) + 5000
    window_end = max(window_start + 1000, sc.scenario.duration_ms)
    actions: list[Any] = []
    kip848 = any(m.protocol == "consumer" for m in members)
    broker_session = CoordinatorConfig.create(M.broker_settings(sc)).group_consumer_session_timeout_ms
    for _ in range(rng.randint(1, max_faults)):
        kind = rng.choice(CONSUMER_FAULT_KINDS if kip848 else FAULT_KINDS)
        m = rng.choice(members)
        cfg = ConsumerConfig.create(m.config)
        session = cfg.session_timeout_ms if m.protocol == "classic" else broker_session
        at = rng.randint(window_start, window_end)
        if kind in ("heartbeat_phase_fault", "hold_revocation", "failover_reconciling"):
            actions += _consumer_protocol_fault(rng, kind, m, cfg, session, at)
            continue
        if kind == "gc_pause":
            actions.append(M.GcPause(at=at, action="gc_pause", consumer=m.name,
                                     duration_ms=rng.randint(session // 5, session * 2)))
        elif kind == "slow":
            mpi = cfg.max_poll_interval_ms
            actions.append(M.Slow(at=at, action="slow", consumer=m.name, duration_ms=rng.randint(1000, mpi * 2),
                                  poll_ms=rng.randint(mpi // 2, mpi * 2)))
        elif kind == "crash_restart":
            actions.append(M.Crash(at=at, action="crash", consumer=m.name))
            actions.append(M.Start(at=at + rng.randint(0, session * 2), action="start", consumer=m.name))
        elif kind == "restart":
            actions.append(M.Restart(at=at, action="restart", consumer=m.name, down_ms=rng.randint(0, session),
                                     graceful=rng.random() < 0.5))
        elif kind == "network_partition":
            mode = rng.choice(("drop", "delay"))
            actions.append(M.NetworkPartition(
                at=at, action="network_partition", consumer=m.name, broker=rng.choice(("coordinator", "all")),
                duration_ms=rng.randint(500, session * 2), direction=rng.choice(("both", "to_broker", "from_broker")),
                mode=mode, delay_ms=rng.randint(100, session) if mode == "delay" else 0))
        elif kind == "message_fault":
            mode = rng.choice(("drop", "delay", "duplicate"))
            actions.append(M.MessageFault(
                at=at, action="message_fault", consumer=m.name if rng.random() < 0.8 else None,
                api=rng.choice(CONSUMER_APIS if m.protocol == "consumer" else APIS),
                direction=rng.choice(("request", "response", "both")), mode=mode,
                delay_ms=rng.randint(100, session) if mode == "delay" else 0,
                probability=rng.choice((1.0, 0.5, 0.2)), count=rng.choice((None, 1, 3)),
                duration_ms=rng.randint(1000, session * 2)))
        else:
            actions.append(M.BrokerCrash(at=at, action="broker_crash", broker="coordinator", group=m.group,
                                         duration_ms=rng.randint(1000, session * 3),
                                         elect_preferred=rng.random() < 0.5))
    actions.sort(key=lambda a: a.at)
    return actions


def _consumer_protocol_fault(rng: Any, kind: str, m: M.ResolvedMember, cfg: ConsumerConfig, session: int,
                             at: int) -> list[Any]:
    """One fault aimed at KIP-848's epochs and phases (member ``m``; a classic member of a mixed group gets the
    failover, which every member feels)."""
    if kind == "failover_reconciling" or m.protocol != "consumer":
        return [M.BrokerCrash(at=at, action="broker_crash", broker="coordinator", group=m.group,
                              duration_ms=rng.randint(1000, session), during="reconciling",
                              within_ms=rng.randint(5000, 30000))]
    if kind == "hold_revocation":
        mpi = cfg.max_poll_interval_ms
        return [M.HoldRevocation(at=at, action="hold_revocation", consumer=m.name,
                                 duration_ms=rng.randint(mpi // 2, mpi * 2), within_ms=rng.randint(5000, 30000))]
    mode = rng.choice(("drop", "delay", "duplicate", "reorder"))
    return [M.MessageFault(
        at=at, action="message_fault", consumer=m.name, api="ConsumerGroupHeartbeat", direction="response",
        mode=mode, delay_ms=rng.randint(100, session) if mode in ("delay", "reorder") else 0,
        probability=rng.choice((1.0, 0.5)), count=rng.choice((1, 2, 3)), duration_ms=rng.randint(1000, session * 2),
        phase=rng.choice(("epoch_bump", "assignment")))]


def fuzz_scenario(sc: M.Scenario, seed: int, max_faults: int = 4) -> M.Scenario:
    extra = fuzz_actions(sc, seed, max_faults)
    return sc.model_copy(update={"timeline": list(sc.timeline) + extra})


def actions_toml(actions: list[Any]) -> str:
    """The generated actions as ``[[timeline]]`` tables (append them to the scenario file to replay)."""
    out = []
    for a in actions:
        out.append("[[timeline]]")
        for k, v in a.model_dump().items():
            if v is None:
                continue
            if isinstance(v, bool):
                out.append(f"{k} = {'true' if v else 'false'}")
            elif isinstance(v, (int, float)):
                out.append(f"{k} = {v}")
            else:
                out.append(f"{k} = {str(v)!r}".replace("'", '"'))
        out.append("")
    return "\n".join(out)
