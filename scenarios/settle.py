"""Settling and the end of a run: what "the group has settled" means after the last disturbance, by when it must
hold, and how long a run lasts.

Theory of operation
-------------------
* **The last disturbance** (:func:`disturbance_end`) is when the last membership change, fault or topology
  change is over: a member's start, a restart's ``down_ms`` later, a pause, a slow window (plus one slow poll
  started just before its end), a network or message fault (plus its delay), a broker crash's down time, the
  metadata window after ``add_partitions``, a rolling restart's last batch. Producing records disturbs nothing.
* **The bound** (:func:`settle_bound`) is *session timeout + rebalance timeout* (the bound a group needs: a dead
  member is noticed, then a join phase runs) + ``group.initial.rebalance.delay.ms`` + the coordinator's load
  time + the scenario's ``settle_slack_ms``; when the timeline has faults that *drop* messages, also the time a
  lost request takes to time out first (``max(request.timeout.ms, rebalance timeout + 5 s)``, Kafka's JoinGroup
  wait) and the longest reconnect backoff.
* **Settled** (:func:`check_settled`, at last disturbance + bound, per group): every running member (alive, not
  closing, not paused) is Stable in the group's generation and a member of it, the group is Stable at the
  coordinator, and every partition of the subscribed topics is owned by exactly one running member.
* **How long a run lasts** (:func:`run_simulation`): at least ``duration_ms``, and at least until every group's
  settle check; then, while records are still unprocessed, up to ``drain_limit_ms`` more; then every record
  produced to a subscribed partition must have been processed by each group that still has running members
  (``at-least-once``), and every loaded coordinator shard's state must equal the replay of its log
  (``state-equals-replay``).
"""

from __future__ import annotations

import functools
from typing import Any

from consumer.config import ConsumerConfig
from consumer.coordinator import MemberState
from coordinator import CoordinatorConfig
from coordinator.assignors import assign_target
from coordinator.consumer_manager import java_hashset_order
from coordinator.group import GroupState
from coordinator.target_assignment import compute_target_assignment

from scenarios import model as M
from scenarios.invariants import consumer_group_settle_problems


def disturbance_end(sc: M.Scenario) -> int:
    """When the last disturbance (membership change, fault, topology change) is over."""
    last = 0
    for m in M.resolve_members(sc):
        if m.start is not None:
            last = max(last, m.start)
    age = sc.cluster.metadata_max_age_ms
    for a in sc.timeline:
        end = a.at
        k = a.action
        if k == "restart":
            end = a.at + a.down_ms
        elif k == "gc_pause":
            end = a.at + a.duration_ms
        elif k == "slow":
            end = a.at + a.duration_ms + a.poll_ms  # a slow poll started just before the end lasts poll_ms
        elif k in ("network_partition", "message_fault"):
            end = a.at + a.duration_ms + a.delay_ms
        elif k == "broker_crash":
            end = a.at + (a.duration_ms or 0)
            if a.during is not None:
                end += a.within_ms if a.within_ms is not None else M.PHASE_WAIT_MS
        elif k == "hold_revocation":
            end = a.at + a.within_ms + a.duration_ms
        elif k == "add_partitions":
            end = a.at + age
            if a.during is not None:
                end += a.within_ms if a.within_ms is not None else M.PHASE_WAIT_MS
        elif k == "rolling_restart":
            n = a.count if a.count is not None else sum(1 for m in M.resolve_members(sc) if m.group == a.group)
            end = a.at + ((max(n, 1) - 1) // a.batch) * a.interval_ms + a.down_ms
        elif k == "subscribe" and a.during is not None:
            end = a.at + (a.within_ms if a.within_ms is not None else M.PHASE_WAIT_MS)
        elif k == "produce":
            continue
        last = max(last, end)
    return last


def settle_bound(sc: M.Scenario, group: str, broker: CoordinatorConfig) -> int:
    """How long a group may take to settle after the last disturbance: session timeout + rebalance timeout (the
    issue's bound) + the initial rebalance delay + coordinator loading + the scenario's slack; and, when the
    timeline has network faults that lose messages, the time a lost request takes to time out first
    (max(request.timeout.ms, rebalance timeout + 5 s) + retry.backoff.max.ms)."""
    lossy = any(a.action in ("network_partition", "message_fault") and a.mode == "drop" for a in sc.timeline)
    worst = 0
    for m in M.resolve_members(sc):
        if m.group != group:
            continue
        cfg = ConsumerConfig.create(m.config)
        session = cfg.session_timeout_ms
        if m.protocol == "consumer" or any(getattr(a, "protocol", None) == "consumer" for a in sc.timeline):
            # KIP-848: the coordinator's session timeout (group.consumer.session.timeout.ms), not the client's
            session = max(session, broker.group_consumer_session_timeout_ms)
        bound = session + cfg.rebalance_timeout_ms
        if lossy:
            bound += max(cfg.request_timeout_ms, cfg.rebalance_timeout_ms + 5000) + cfg.retry_backoff_max_ms
        worst = max(worst, bound)
    return (worst + broker.group_initial_rebalance_delay_ms + broker.coordinator_load_time_ms
            + sc.invariants.settle_slack_ms)


def check_settled(sim: Any, gid: str) -> None:
    """The ``settles`` invariant for group ``gid``, now."""
    if "settles" not in sim.checker.enabled:
        return
    sim.checker.checked["settles"] += 1
    live = [c for c in sim.consumers if c.group == gid and c.alive and not c.closing and c.paused_until is None]
    if not live:
        sim.settled_ok[gid] = sim.now
        return
    cg = sim.svc.consumer_group(gid)
    if cg is not None:
        _check_consumer_group_settled(sim, gid, cg, live)
        return
    problems = []
    g = sim.svc.group(gid)
    if g is None:
        problems.append("the coordinator does not know the group (unavailable or loading)")
    elif g.state != GroupState.STABLE:
        problems.append(f"group state is {g.state.value}")
    owners: dict[tuple[str, int], list[str]] = {}
    topics: set[str] = set()
    for c in live:
        core = c.core
        topics |= set(core.subscription)
        if core.state != MemberState.STABLE:
            problems.append(f"{c.name} is {core.state.value}")
        elif g is not None and (core.generation.generation_id != g.generation_id
                                or core.generation.member_id not in g.members):
            problems.append(f"{c.name} is in generation {core.generation.generation_id} as "
                            f"{core.generation.member_id}, the group in {g.generation_id}")
        for tp in core.assignment:
            owners.setdefault((tp.topic, tp.partition), []).append(c.name)
    for t in sorted(topics):
        for ps in sim.svc.cluster.partitions(t):
            who = owners.get((t, ps.partition), [])
            if len(who) != 1:
                problems.append(f"{t}-{ps.partition} owned by {who or 'nobody'}")
    if problems:
        sim.checker.violate("settles", sim.now, f"group {gid} has not settled: " + "; ".join(problems[:8])
                            + (f" (+{len(problems) - 8} more)" if len(problems) > 8 else ""))
    else:
        sim.settled_ok[gid] = sim.now


def _check_consumer_group_settled(sim: Any, gid: str, cg: Any, live: list) -> None:
    """``settles`` for a consumer group (KIP-848): converged to the target assignment -- the coordinator's group is
    Stable, every running consumer-protocol member is STABLE, each running member holds by its callbacks exactly
    its target, and every partition of the subscribed topics is owned exactly once."""
    problems = []
    owned: dict[str, set] = {}
    owners: dict[tuple[str, int], list[str]] = {}
    topics: set[str] = set()
    for c in live:
        core = c.core
        topics |= set(core.subscription)
        if c.protocol == "consumer" and core.state.value != "STABLE":
            problems.append(f"{c.name} is {core.state.value}")
        owned[core.generation.member_id] = set(c.owned)
        for tp in c.owned:
            owners.setdefault(tp, []).append(c.name)
    problems += consumer_group_settle_problems(cg, owned, sim.brokers.topic_ids)
    if "target-up-to-date" in sim.checker.enabled and not problems:
        sim.checker.checked["target-up-to-date"] += 1
        stale = stale_target(sim, gid, cg)
        if stale:
            sim.checker.violate("target-up-to-date", sim.now, f"group {gid}: converged to a stale target "
                                f"assignment (epoch {cg.assignment_epoch}): {stale}")
    for t in sorted(topics):
        for ps in sim.svc.cluster.partitions(t):
            who = owners.get((t, ps.partition), [])
            if len(who) != 1:
                problems.append(f"{t}-{ps.partition} owned by {who or 'nobody'}")
    if problems:
        sim.checker.violate("settles", sim.now, f"group {gid} has not converged to its target assignment: "
                            + "; ".join(problems[:8]) + (f" (+{len(problems) - 8} more)" if len(problems) > 8
                                                         else ""))
    else:
        sim.settled_ok[gid] = sim.now


def stale_target(sim: Any, gid: str, cg: Any) -> str:
    """``target-up-to-date``: the group's preferred server assignor, run now on the group's members with their
    current targets as the previous assignment (what the coordinator computes at the next group epoch,
    ``TargetAssignmentBuilder``), gives the target the group holds -- Kafka's assignors are sticky, so an up-to-date
    target is a fixed point. A difference means some change (a member, a subscription) never bumped the group
    epoch, and the group settled on an outdated target (KAFKA-21582). Returns how it differs ("" if it does not)."""
    shard = sim.svc.shard_for(gid)
    mgr = shard.consumer
    name = cg.preferred_server_assignor() or mgr.config.default_consumer_group_assignor
    fresh = compute_target_assignment(cg, cg.group_epoch, None, subscription_type=cg.subscription_type,
                                      topics=mgr.image.assignor_topics(), assignor=functools.partial(assign_target,
                                                                                                     name),
                                      now_ms=sim.now, topic_name_order=java_hashset_order).target_assignment
    names = {v: k for k, v in sim.brokers.topic_ids.items()}

    def parts(a: Any) -> list[str]:
        return sorted(f"{names.get(t, t)}-{p}" for t, ps in (a.as_sets() if a is not None else {}).items()
                      for p in ps)
    diff = []
    for mid in sorted(set(cg.members)):
        held, want = parts(cg.target_assignment.get(mid)), parts(fresh.get(mid))
        if held != want:
            diff.append(f"{mid} has {held}, the assignor ({name}) now gives {want}")
    return "; ".join(diff[:4]) + (f" (+{len(diff) - 4} more)" if len(diff) > 4 else "")


def all_consumed(sim: Any) -> bool:
    for gid in sorted({c.group for c in sim.consumers}):
        live = [c for c in sim.consumers if c.group == gid and c.alive]
        if not live:
            continue
        topics = set()
        for c in live:
            topics |= set(c.core.subscription)
        if sim.consumption.stats(gid, sim.logs, topics)["missing"]:
            return False
    return True


def check_at_least_once(sim: Any) -> dict[str, dict]:
    """The ``at-least-once`` invariant at the end of a run; returns each group's delivery facts."""
    result = {}
    for gid in [g.id for g in sim.scenario.groups]:
        live = [c for c in sim.consumers if c.group == gid and c.alive]
        topics = set()
        for c in (live or [c for c in sim.consumers if c.group == gid]):
            topics |= set(c.topics if c.topics is not None else c.spec.topics)
        st = sim.consumption.stats(gid, sim.logs, topics)
        result[gid] = st
        if live and "at-least-once" in sim.checker.enabled:
            sim.checker.checked["at-least-once"] += 1
            if st["missing"]:
                miss = st["missing"]
                sim.checker.violate("at-least-once", sim.now, f"group {gid}: {len(miss)} produced records were "
                                    f"never processed, e.g. {[f'{t}-{p}@{o}' for (t, p), o in miss[:5]]}")
    return result


def run_simulation(sim: Any, drain_limit_ms: int = 120_000) -> dict:
    """Run to the end: the scenario's duration, every group's settle deadline, then (if records are still
    unprocessed) until they are or ``drain_limit_ms`` passed. Returns the end-of-run facts."""
    sc = sim.scenario
    last = disturbance_end(sc)
    end = sc.scenario.duration_ms
    checks = []
    for g in sc.groups:
        t = last + settle_bound(sc, g.id, sim.broker_config)
        checks.append((t, g.id))
        end = max(end, t)
    for t, gid in checks:
        sim.call(t, check_settled, sim, gid)
    sim.run(end)
    extra = 0
    while extra < drain_limit_ms and not all_consumed(sim):
        extra += 1000
        sim.run(end + extra)
    sim.end_ms = sim.now
    delivery = check_at_least_once(sim)
    sim.brokers.check_replay("at the end of the run")
    return {"end_ms": sim.now, "settle_checks": checks, "delivery": delivery, "last_disturbance_ms": last}
