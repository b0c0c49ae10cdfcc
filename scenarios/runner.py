"""Running scenarios: one run (:func:`run_scenario`), the built-in library (:func:`library_paths`), the summary
(rebalances, stop-the-world time per generation, partitions moved, delivery, invariant results) and the output
files:

* ``events.jsonl`` -- the coordinator's records in the docs/events.md schema (v1), ordered by
  ``(timestamp_ms, log_partition, log_offset)``; what analysis/ reads. Byte-identical for the same
  (scenario, seed).
* ``produce.jsonl`` -- each partition's log end offset after the appends of each virtual millisecond (what the
  analysis' lag chart compares the offset commits with).
* ``trace.jsonl`` -- the simulator's own events (actions, faults, consumer state changes, assignments,
  violations), one JSON object per line with virtual time ``t``; also deterministic.
* ``summary.json`` -- the summary below (plus wall-clock time, which is not deterministic).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from coordinator import records as R
from scenarios import model as M
from scenarios.invariants import Violation, assignment_partitions
from scenarios.settle import run_simulation
from scenarios.world import Simulation

LIBRARY_DIR = Path(__file__).parent / "library"


def library_paths() -> list[Path]:
    return sorted(LIBRARY_DIR.glob("*.toml"))


@dataclass
class RunResult:
    scenario: M.Scenario
    source: str
    seed: int
    sim: Simulation
    facts: dict
    wall_s: float
    summary: dict = field(default_factory=dict)

    @property
    def violations(self) -> list[Violation]:
        return self.sim.checker.violations

    @property
    def ok(self) -> bool:
        return not any(self.sim.checker.counts.values())

    def events_lines(self) -> list[str]:
        entries = sorted(self.sim.records, key=lambda e: (e.timestamp_ms, e.partition, e.offset))
        return [json.dumps(e.to_dict(), sort_keys=True) for e in entries]

    def produce_lines(self) -> list[str]:
        """The topics' log end offsets over time: one line per (virtual ms, topic, partition) with appends, the end
        offset after them (``analysis.lag`` computes consumer lag from these and the offset commits)."""
        out = []
        for (topic, p), times in sorted(self.sim.logs.produce_time.items()):
            for i, t in enumerate(times):
                if i + 1 < len(times) and times[i + 1] == t:
                    continue
                out.append((t, topic, p, i + 1))
        out.sort()
        return [json.dumps({"t": t, "topic": topic, "partition": p, "end_offset": end}, sort_keys=True)
                for t, topic, p, end in out]

    def trace_lines(self) -> list[str]:
        return [json.dumps(d, sort_keys=True, default=str) for d in self.sim.trace]

    def write(self, out_dir: str | Path) -> Path:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "events.jsonl").write_text("".join(line + "\n" for line in self.events_lines()), encoding="utf-8")
        (out / "trace.jsonl").write_text("".join(line + "\n" for line in self.trace_lines()), encoding="utf-8")
        (out / "produce.jsonl").write_text("".join(line + "\n" for line in self.produce_lines()), encoding="utf-8")
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n",
                                          encoding="utf-8")
        return out


def run_scenario(scenario: M.Scenario | str | Path, seed: Optional[int] = None, *, trace: bool = True,
                 codec: Optional[bool] = None, source: Optional[str] = None) -> RunResult:
    """Validate (if given a path) and run one scenario with one seed (default: the scenario's own)."""
    if not isinstance(scenario, M.Scenario):
        source = source or str(scenario)
        scenario = M.load_scenario(scenario)
    seed = scenario.scenario.seed if seed is None else seed
    t0 = time.perf_counter()
    sim = Simulation(scenario, seed, trace=trace, codec=codec)
    facts = run_simulation(sim)
    wall = time.perf_counter() - t0
    for v in sim.checker.violations:
        sim.tracer.trace("violation", **v.to_dict())
    res = RunResult(scenario, source or scenario.scenario.name, seed, sim, facts, wall)
    res.summary = summarize(res)
    return res


# ----------------------------------------------------------------------------------------------------------------
# summary
# ----------------------------------------------------------------------------------------------------------------

def rebalance_facts(entries: list[Any]) -> dict[str, dict]:
    """Per group, from the event records alone, counted the way ``kgroup analyze`` counts them
    (docs/analysis.md, analysis/fold.py): a rebalance runs from the first RebalanceStarted after the group was
    Stable or Empty to the GroupMetadata of a new generation with members (Stable), a JoinCompleted without
    members (Empty) or a GroupTombstone; a join phase restarted meanwhile is the same rebalance. Per completed
    generation: its duration from that first RebalanceStarted, its members, and how many partitions changed owner
    since the previous Stable generation -- owners named by group.instance.id when they have one, else member id
    (a restarted static member is the same owner, a restarted dynamic one is not)."""
    groups: dict[str, dict] = {}
    ordered = sorted(entries, key=lambda e: (e.timestamp_ms, e.partition, e.offset))
    for e in ordered:
        r = e.record
        gid = r.group_id
        if not gid:
            continue
        g = groups.setdefault(gid, {"rebalances": 0, "generations": [], "_start": None, "_reason": None,
                                    "_prev": None, "_gen": -1, "failovers": 0})
        if isinstance(r, R.RebalanceStarted):
            if g["_start"] is None:
                g["rebalances"] += 1
                g["_start"] = e.timestamp_ms
                g["_reason"] = r.reason
        elif isinstance(r, R.GroupMetadata) and r.members and r.generation_id > g["_gen"]:
            g["_gen"] = r.generation_id
            owners = {}
            for m in r.members:
                for tp in assignment_partitions(m.assignment):
                    owners[tp] = m.group_instance_id or m.member_id
            prev = g["_prev"]
            moved = None if prev is None else sum(1 for tp in set(prev) | set(owners)
                                                  if prev.get(tp) != owners.get(tp))
            if g["_start"] is not None:
                g["generations"].append({"generation": r.generation_id, "started_ms": g["_start"],
                                         "stable_ms": e.timestamp_ms, "duration_ms": e.timestamp_ms - g["_start"],
                                         "members": len(r.members), "partitions_moved": moved,
                                         "reason": g["_reason"]})
            g["_prev"] = owners
            g["_start"] = None
        elif ((isinstance(r, R.JoinCompleted) and not r.members) or isinstance(r, R.GroupTombstone)) \
                and g["_start"] is not None:
            g["_start"] = None        # the rebalance ended with the group Empty (or deleted)
    for g in groups.values():
        for k in [k for k in g if k.startswith("_")]:
            del g[k]
    return groups


def consumer_group_facts(entries: list[Any], topic_names: dict[str, str]) -> dict[str, dict]:
    """Per consumer group (KIP-848), from its ``ConsumerGroup*`` records alone: the group's state after each
    record by ``ConsumerGroup``'s rule (no members: Empty; group epoch above the target assignment epoch:
    Assigning; a member not STABLE at the target epoch: Reconciling; else Stable), each *reconciliation* -- from
    leaving Stable/Empty to the next Stable/Empty, the consumer protocol's counterpart of a rebalance: its
    epochs, duration and the partitions that changed owner (owners named by instance id when they have one) --
    and the epoch bumps."""
    groups: dict[str, dict] = {}
    ordered = sorted(entries, key=lambda e: (e.timestamp_ms, e.partition, e.offset))
    cg_types = (R.ConsumerGroupMetadata, R.ConsumerGroupMetadataTombstone, R.ConsumerGroupMemberMetadata,
                R.ConsumerGroupMemberMetadataTombstone, R.ConsumerGroupTargetAssignmentMetadata,
                R.ConsumerGroupCurrentMemberAssignment)
    for e in ordered:
        r = e.record
        if not isinstance(r, cg_types):
            continue
        g = groups.get(r.group_id)
        if g is None:
            g = groups[r.group_id] = {"epoch_bumps": 0, "group_epoch": 0, "reconciliations": [],
                                      "_epoch": None, "_target": 1, "_members": {}, "_names": {}, "_owner": {},
                                      "_start": None, "_from": None, "_moved": 0}
        t = e.timestamp_ms
        if isinstance(r, R.ConsumerGroupMetadata):
            if g["_epoch"] is not None and r.epoch > g["_epoch"]:
                g["epoch_bumps"] += 1
            g["_epoch"] = g["group_epoch"] = r.epoch
        elif isinstance(r, R.ConsumerGroupMetadataTombstone):
            g["_members"].clear()
            g["_epoch"] = None
        elif isinstance(r, R.ConsumerGroupTargetAssignmentMetadata):
            g["_target"] = r.assignment_epoch
        elif isinstance(r, R.ConsumerGroupMemberMetadata):
            g["_members"].setdefault(r.member_id, (0, -1))
            g["_names"][r.member_id] = r.instance_id or r.member_id
        elif isinstance(r, R.ConsumerGroupMemberMetadataTombstone):
            g["_members"].pop(r.member_id, None)
        else:
            g["_members"][r.member_id] = (r.state, r.member_epoch)
            who = g["_names"].get(r.member_id, r.member_id)
            for tps in r.assigned_partitions:
                for p in tps.partitions:
                    tp = (topic_names.get(tps.topic_id, tps.topic_id), p)
                    prev = g["_owner"].get(tp)
                    if prev is not None and prev != who:
                        g["_moved"] += 1
                    g["_owner"][tp] = who
        members = g["_members"]
        if not members:
            state = "Empty"
        elif g["_epoch"] is not None and g["_epoch"] > g["_target"]:
            state = "Assigning"
        elif any(st != 0 or ep != g["_target"] for st, ep in members.values()):
            state = "Reconciling"
        else:
            state = "Stable"
        if state in ("Stable", "Empty"):
            if g["_start"] is not None:
                g["reconciliations"].append({"from_epoch": g["_from"], "to_epoch": g["_target"],
                                             "started_ms": g["_start"], "stable_ms": t,
                                             "duration_ms": t - g["_start"], "members": len(members),
                                             "partitions_moved": g["_moved"], "ended": state})
                g["_start"] = None
        elif g["_start"] is None:
            g["_start"], g["_from"], g["_moved"] = t, g["_target"], 0
    for g in groups.values():
        for k in [k for k in g if k.startswith("_")]:
            del g[k]
    return groups


def summarize(res: RunResult) -> dict:
    sim = res.sim
    facts = rebalance_facts(sim.records)
    cg_facts = consumer_group_facts(sim.records, {v: k for k, v in sim.brokers.topic_ids.items()})
    loads = sum(1 for e in sim.records if isinstance(e.record, R.CoordinatorLoaded) and e.timestamp_ms > 0)
    groups = {}
    for g in res.scenario.groups:
        gf = facts.get(g.id, {"rebalances": 0, "generations": []})
        members = [c for c in sim.consumers if c.group == g.id]
        assignment = {c.name: [f"{tp.topic}-{tp.partition}" for tp in c.core.assignment]
                      for c in members if c.alive and c.core is not None}
        delivery = res.facts["delivery"].get(g.id, {})
        stw = [x["duration_ms"] for x in gf["generations"]]
        groups[g.id] = {
            "rebalances": gf["rebalances"],
            "generations": gf["generations"],
            "total_rebalance_ms": sum(stw),
            "partitions_moved": sum(x["partitions_moved"] or 0 for x in gf["generations"]),
            "assignment": assignment,
            "processed": dict(sorted(sim.consumption.by_consumer.get(g.id, {}).items())),
            "keys": {k: list(v) for k, v in sorted(sim.consumption.keys_by_consumer.get(g.id, {}).items())},
            "duplicates": delivery.get("duplicates", 0),
            "unprocessed": len(delivery.get("missing", [])),
            "settled_at_ms": sim.settled_ok.get(g.id),
            "coordinator_failovers": sum(1 for e in sim.records if isinstance(e.record, R.CoordinatorLoaded)
                                         and e.timestamp_ms > 0 and e.partition == sim.svc.partition_for(g.id)),
        }
        cf = cg_facts.get(g.id)
        if cf is not None:  # the group was a consumer group (KIP-848) at some point
            cf["reconciling_ms"] = sum(x["duration_ms"] for x in cf["reconciliations"])
            cf["partitions_moved"] = sum(x["partitions_moved"] for x in cf["reconciliations"])
            groups[g.id]["consumer_protocol"] = cf
    checker = sim.checker
    return {
        "scenario": res.scenario.scenario.name,
        "file": res.source,
        "seed": res.seed,
        "virtual_ms": res.facts["end_ms"],
        "last_disturbance_ms": res.facts["last_disturbance_ms"],
        "wall_s": round(res.wall_s, 3),
        "produced": sim.logs.total(),
        "coordinator_loads": loads,
        "messages": {"requests": sim.stats["requests"], "responses": sim.stats["responses"],
                     "dropped": sim.stats["dropped"], "duplicated": sim.stats["duplicated"],
                     "delayed": sim.stats["delayed"], "refused": sim.stats["refused"],
                     "by_api": dict(sorted(sim.api_counts.items()))},
        "groups": groups,
        "invariants": {name: {"checked": checker.checked.get(name, 0), "violations": checker.counts.get(name, 0)}
                       for name in M.INVARIANTS if name in checker.enabled},
        "violations": [v.to_dict() for v in checker.violations],
        "consumer_errors": sim.consumer_errors,
        "ok": res.ok,
    }


def format_summary(s: dict) -> str:
    lines = [f"scenario {s['scenario'] or s['file']} (seed {s['seed']}): {s['virtual_ms'] / 1000:.1f} s virtual in "
             f"{s['wall_s']:.2f} s wall; {s['messages']['requests']} requests, {s['produced']} records produced"]
    for gid, g in s["groups"].items():
        lines.append(f"  group {gid}: {g['rebalances']} rebalance(s), {len(g['generations'])} generation(s) "
                     f"completed, {g['partitions_moved']} partition move(s), rebalancing {g['total_rebalance_ms']} ms")
        cf = g.get("consumer_protocol")
        if cf is not None:
            lines.append(f"    consumer protocol: {len(cf['reconciliations'])} reconciliation(s), {cf['epoch_bumps']} "
                         f"group epoch bump(s) (epoch {cf['group_epoch']}), {cf['partitions_moved']} partition "
                         f"move(s), reconciling {cf['reconciling_ms']} ms")
        for gen in g["generations"]:
            moved = "-" if gen["partitions_moved"] is None else gen["partitions_moved"]
            lines.append(f"    generation {gen['generation']}: {gen['duration_ms']} ms "
                         f"({gen['started_ms']}..{gen['stable_ms']} ms), {gen['members']} member(s), moved {moved}"
                         f" -- {gen['reason']}")
        for name, parts in g["assignment"].items():
            processed = g["processed"].get(name, 0)
            keys = g["keys"].get(name)
            extra = f", keys {keys}" if keys and any(k is not None for k in keys) else ""
            lines.append(f"    {name}: {len(parts)} partition(s) {parts}; processed {processed}{extra}")
        if g["duplicates"] or g["unprocessed"]:
            lines.append(f"    duplicates {g['duplicates']}, unprocessed {g['unprocessed']}")
    inv = ", ".join(f"{k} {'ok' if v['violations'] == 0 else 'VIOLATED x' + str(v['violations'])}"
                    for k, v in s["invariants"].items())
    lines.append(f"  invariants: {inv}")
    for v in s["violations"][:10]:
        lines.append(str(Violation(**v)))
    for e in s["consumer_errors"][:5]:
        lines.append(f"  consumer error at {e['t']} ms: {e['consumer']}: {e['error']}")
    return "\n".join(lines)
