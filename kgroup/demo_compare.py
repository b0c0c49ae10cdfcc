"""`kgroup demo --compare`: the demo's story run in the simulator under the eager, cooperative and consumer
protocols side by side, and the time each partition was unowned under each.

Theory of operation
-------------------
* **The story** (:func:`story_scenario`) is the live demo's, in virtual time: one group per protocol on its own copy
  of the topic's partition count -- ``eager`` (classic protocol, ``range``: Kafka's eager rebalance, every member
  revokes everything before it rejoins), ``cooperative`` (classic protocol, ``cooperative-sticky``: KIP-429's
  incremental rebalance, only the partitions that move are revoked, in a second rebalance they are assigned) and
  ``consumer`` (KIP-848, the coordinator's default server assignor, ``uniform``: revocation before assignment, one
  member at a time). In each group ``c1`` starts alone, ``c2`` .. ``cN`` join one after the other, the last one
  leaves cleanly (``close()``), the one before it is killed (no LeaveGroup: the coordinator finds out by the
  session timeout). Every step is ``gap_ms`` after the previous one, long enough for the group to settle. The
  classic groups' ``session.timeout.ms`` / ``heartbeat.interval.ms`` and the coordinator's
  ``group.consumer.session.timeout.ms`` / ``group.consumer.heartbeat.interval.ms`` are the same values, so that
  the three are comparable. Records keep coming (50 a second) and each poll that returns some takes
  ``processing_ms`` (the live demo's ``--processing-ms``): an eager member gives its partitions up when it rejoins,
  and a classic member rejoins from its next poll.
* **Unowned time** (:func:`unowned`) is computed from the run's trace alone (``trace.jsonl``: the members'
  rebalance callbacks ``assigned`` / ``revoked`` / ``lost`` and their ``crash`` / ``closed``), independently of
  any narration or summary: a partition is owned while at least one live consumer of its group holds it (between
  its ``onPartitionsAssigned`` and its ``onPartitionsRevoked`` / ``onPartitionsLost`` or death). The window starts
  when every partition of the group is first owned (the initial join is the same story under every protocol) and
  ends with the run. Per partition: the total time unowned and its longest stretch; per group: the time every
  partition was unowned at once (a stop-the-world).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from kgroup.catalogue import Catalogue, pad, pad_left

PROTOCOLS = (("eager", "classic", "range"), ("cooperative", "classic", "cooperative-sticky"),
             ("consumer", "consumer", None))


@dataclass
class Story:
    topic: str
    partitions: int
    consumers: int
    session_ms: int
    heartbeat_ms: int
    initial_delay_ms: int
    gap_ms: int
    processing_ms: float = 10.0   # the application's time per poll (the simulator's app.poll_ms)

    @property
    def steps(self) -> list[tuple[int, str, int]]:
        """(time, action, consumer number): c1 starts at 0, the others join every gap, the last leaves, the one
        before it is killed."""
        n = self.consumers
        out = [(0, "start", 1)] + [((i - 1) * self.gap_ms, "start", i) for i in range(2, n + 1)]
        out.append((n * self.gap_ms, "stop", n))
        out.append(((n + 1) * self.gap_ms, "crash", n - 1))
        return out

    @property
    def duration_ms(self) -> int:
        return (self.consumers + 2) * self.gap_ms


def story_scenario(story: Story) -> dict[str, Any]:
    """The scenario (as ``kgroup run`` reads it from TOML) of the story under the three protocols."""
    s = story
    groups = []
    timeline: list[dict] = []
    for gid, protocol, strategy in PROTOCOLS:
        members = []
        for t, action, i in s.steps:
            name = f"{gid}-c{i}"
            if action == "start":
                members.append({"name": name, "start": t})
            else:
                timeline.append({"at": t, "action": action, "consumer": name})
        g: dict[str, Any] = {"id": gid, "topics": [s.topic], "consumers": 0, "members": members,
                             "protocol": protocol, "app": {"poll_ms": s.processing_ms},
                             "config": {"max.poll.interval.ms": 30000}}
        if protocol == "classic":
            g["strategy"] = strategy
            g["config"].update({"session.timeout.ms": s.session_ms, "heartbeat.interval.ms": s.heartbeat_ms})
        groups.append(g)
    # records keep coming, so that each poll has work to do (processing_ms per poll, as in the live demo)
    timeline.append({"at": 0, "action": "produce", "topic": s.topic, "rate_per_s": 50,
                     "count": 50 * s.duration_ms // 1000, "key_format": "k{i}"})
    timeline.sort(key=lambda a: a["at"])
    return {
        "scenario": {"name": "demo-story-protocols", "duration_ms": s.duration_ms,
                     "description": "kgroup demo's story under eager, cooperative and consumer protocols"},
        "cluster": {"brokers": 3, "topics": [{"name": s.topic, "partitions": s.partitions, "replication_factor": 1}],
                    "broker": {"group.initial.rebalance.delay.ms": s.initial_delay_ms,
                               "group.min.session.timeout.ms": min(s.session_ms, 6000),
                               "group.consumer.min.session.timeout.ms": s.session_ms,
                               "group.consumer.session.timeout.ms": s.session_ms,
                               "group.consumer.min.heartbeat.interval.ms": s.heartbeat_ms,
                               "group.consumer.heartbeat.interval.ms": s.heartbeat_ms}},
        "groups": groups,
        "timeline": timeline,
    }


@dataclass
class Unowned:
    """One group's ownership over the window, from the trace."""

    window: tuple[int, int] = (0, 0)
    total_ms: dict[str, int] = field(default_factory=dict)      # partition -> ms unowned
    max_ms: dict[str, int] = field(default_factory=dict)        # partition -> longest stretch unowned
    owners: dict[str, list[str]] = field(default_factory=dict)  # partition -> its owners in order (window only)
    stopped_ms: int = 0                                         # every partition unowned at once


def unowned(trace: Iterable[dict], group_of: dict[str, str], partitions: list[str], end_ms: int) -> dict[str, Unowned]:
    """Per group: the time each of ``partitions`` had no live owner, from the trace's callbacks (see the module
    docstring). ``group_of`` maps consumer names to groups."""
    held: dict[str, dict[str, set[str]]] = {g: {p: set() for p in partitions} for g in set(group_of.values())}
    res = {g: Unowned(total_ms={p: 0 for p in partitions}, max_ms={p: 0 for p in partitions},
                      owners={p: [] for p in partitions}) for g in held}
    since: dict[str, dict[str, int]] = {g: {} for g in held}      # partition -> unowned since (in the window)
    start: dict[str, int] = {}                                    # group -> start of its window
    all_since: dict[str, int] = {}                                # group -> every partition unowned since

    def release(g: str, p: str, who: str, t: int) -> None:
        h = held[g][p]
        if who in h:
            h.discard(who)
            if not h and g in start:
                since[g][p] = t
                if all(not x for x in held[g].values()):
                    all_since[g] = t

    def acquire(g: str, p: str, who: str, t: int) -> None:
        h = held[g][p]
        if g in start and not h:
            gap = t - since[g].pop(p, t)
            res[g].total_ms[p] += gap
            res[g].max_ms[p] = max(res[g].max_ms[p], gap)
            if g in all_since:
                res[g].stopped_ms += t - all_since.pop(g)
        h.add(who)
        if g in start and (not res[g].owners[p] or res[g].owners[p][-1] != who):
            res[g].owners[p].append(who)

    for ev in trace:
        who = ev.get("consumer")
        g = group_of.get(who or "")
        if g is None:
            continue
        t = ev["t"]
        kind = ev["type"]
        if kind == "assigned":
            for p in ev["owned"]:
                acquire(g, p, who, t)
            if g not in start and all(held[g].values()):
                start[g] = t
                for p in partitions:
                    res[g].owners[p].append(next(iter(held[g][p])))
        elif kind in ("revoked", "lost"):
            for p in ev["partitions"]:
                release(g, p, who, t)
        elif kind in ("crash", "closed"):
            for p in partitions:
                release(g, p, who, t)
    for g, r in res.items():
        for p, t in since[g].items():  # still unowned at the end
            r.total_ms[p] += end_ms - t
            r.max_ms[p] = max(r.max_ms[p], end_ms - t)
        if g in all_since:
            r.stopped_ms += end_ms - all_since[g]
        r.window = (start.get(g, end_ms), end_ms)
    return res


def run_story(story: Story) -> tuple[Any, dict[str, Unowned]]:
    """Run the story in the simulator (its own seed) and measure each group's unowned time from the trace."""
    from scenarios import model as M
    from scenarios.runner import run_scenario
    sc = M.parse_scenario(story_scenario(story), "<demo --compare>")
    res = run_scenario(sc)
    group_of = {c.name: c.group for c in res.sim.consumers}
    parts = [f"{story.topic}-{p}" for p in range(story.partitions)]
    return res, unowned(res.sim.trace, group_of, parts, res.facts["end_ms"])


def render(T: Catalogue, story: Story, res: Any, measured: dict[str, Unowned]) -> list[str]:
    """The table: one row per partition, per protocol the total and the longest time unowned; then the totals,
    the time the whole group was stopped and what happened (rebalances / reconciliations)."""
    lines = [T("demo.compare.title"),
             T("demo.compare.story", consumers=story.consumers, topic=story.topic, partitions=story.partitions,
               gap=story.gap_ms / 1000, leaver=f"c{story.consumers}", victim=f"c{story.consumers - 1}",
               session=story.session_ms, heartbeat=story.heartbeat_ms, poll_ms=story.processing_ms),
             T("demo.compare.measure"), ""]
    names = [gid for gid, _, _ in PROTOCOLS]
    w = 17
    head = pad(T("demo.compare.partition"), 12) + "".join(pad_left(n, w) for n in names)
    sub = pad("", 12) + "".join(pad_left(T("demo.compare.total_max"), w) for _ in names)
    lines += ["  " + head, "  " + sub, "  " + "-" * (12 + w * len(names))]

    def cell(total: int, longest: int) -> str:
        return f"{total:>6} / {longest:<6}" if total else f"{0:>6}   {'':<6}"
    for p in range(story.partitions):
        tp = f"{story.topic}-{p}"
        lines.append("  " + pad(tp, 12) + "".join(pad_left(cell(measured[g].total_ms[tp], measured[g].max_ms[tp]), w)
                                                   for g in names))
    lines.append("  " + "-" * (12 + w * len(names)))
    lines.append("  " + pad(T("demo.compare.all"), 12) + "".join(
        pad_left(cell(sum(measured[g].total_ms.values()), max(measured[g].max_ms.values())), w) for g in names))
    lines.append("  " + pad(T("demo.compare.stopped"), 12) + "".join(
        pad_left(f"{measured[g].stopped_ms} ms ", w) for g in names))
    still = [sum(1 for v in measured[g].total_ms.values() if v == 0) for g in names]
    lines.append("  " + pad(T("demo.compare.never"), 12) + "".join(pad_left(f"{n} ", w) for n in still))
    summary = res.summary["groups"]
    changes = []
    for g in names:
        s = summary[g]
        cf = s.get("consumer_protocol")
        n = len(cf["reconciliations"]) if cf else len(s["generations"])
        changes.append(n)
    lines.append("  " + pad(T("demo.compare.changes"), 12) + "".join(pad_left(f"{n} ", w) for n in changes))
    lines.append("")
    lines.append(T("demo.compare.legend", ms="ms"))
    verdict = "ok" if res.ok else "VIOLATED"
    lines.append(T("demo.compare.invariants", verdict=verdict, seed=res.seed,
                   virtual=res.facts["end_ms"] / 1000))
    return lines

