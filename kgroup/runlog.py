"""Reading what a run recorded -- the coordinator's records and the simulator's trace -- as one time-ordered
stream, and following the groups through it (for narration and sequence diagrams).

Inputs (all JSON lines; see docs/events.md and docs/scenarios.md):

* a ``kgroup run`` output directory: ``events.jsonl`` (records) and ``trace.jsonl`` (the simulator's consumer-side
  events: state changes, JoinGroup answers, assignments, actions);
* a ``kgroup serve --data-dir`` directory: ``__consumer_offsets-<p>.jsonl`` (records only);
* a single ``events.jsonl`` / ``__consumer_offsets-<p>.jsonl`` or ``trace.jsonl`` file.

Records are dicts in ``LogEntry.to_dict()`` form (they have ``log_partition``); trace entries have ``t``. The
stream is ordered by time; at equal times records come first (a response that reaches a consumer at ``t`` was
released by the coordinator before ``t``: the simulated network has a latency of at least one millisecond), then
each source keeps its own order (a partition's records are in causal order).

:class:`GroupTracker` follows the classic groups through the stream: state, generation, leader, the members'
client names, protocols and timeouts, which consumer belongs to which group. It knows nothing of presentation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

UUID_LEN = 36


class RunLogError(ValueError):
    """A file or directory that is not a run's output (the message names it)."""


def is_record(ev: dict) -> bool:
    return "log_partition" in ev


def ev_time(ev: dict) -> int:
    return int(ev["timestamp_ms"] if is_record(ev) else ev.get("t", 0))


def read_jsonl(path: Path) -> list[dict]:
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    d = json.loads(line)
                except json.JSONDecodeError as e:
                    raise RunLogError(f"{path}:{n}: not JSON ({e.msg})") from None
                if not isinstance(d, dict):
                    raise RunLogError(f"{path}:{n}: expected a JSON object per line")
                out.append(d)
    except OSError as e:
        raise RunLogError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise RunLogError(f"{path}: not UTF-8 text ({e.reason}); run logs are UTF-8 JSON lines") from None
    return out


def merge(records: Iterable[dict], trace: Iterable[dict]) -> list[dict]:
    """One stream ordered by time; records before trace entries at the same time; each source in its order."""
    recs = sorted(records, key=lambda d: (d["timestamp_ms"], d["log_partition"], d["log_offset"]))
    keyed = [(ev_time(d), 0, i, d) for i, d in enumerate(recs)]
    keyed += [(ev_time(d), 1, i, d) for i, d in enumerate(trace)]
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def load(path: str | Path) -> list[dict]:
    """The merged stream of a run directory, a serve data directory or one JSON-lines file."""
    p = Path(path)
    if p.is_dir():
        records: list[dict] = []
        trace: list[dict] = []
        if (p / "events.jsonl").is_file():
            records = read_jsonl(p / "events.jsonl")
        else:
            for f in sorted(p.glob("__consumer_offsets-*.jsonl")):
                records += read_jsonl(f)
        if (p / "trace.jsonl").is_file():
            trace = read_jsonl(p / "trace.jsonl")
        if not records and not trace:
            raise RunLogError(f"{p}: no events.jsonl, trace.jsonl or __consumer_offsets-*.jsonl here")
        return merge(records, trace)
    if not p.is_file():
        raise RunLogError(f"{p}: no such file or directory")
    rows = read_jsonl(p)
    if not rows:
        return []
    if all(is_record(d) for d in rows):
        return merge(rows, [])
    if all("t" in d and "type" in d for d in rows):
        return merge([], rows)
    raise RunLogError(f"{p}: neither coordinator records (events.jsonl) nor a trace (trace.jsonl)")


def client_of(member_id: str) -> str:
    """The client id a dynamic or static member id starts with (``client.id`` + ``-`` + UUID)."""
    if len(member_id) > UUID_LEN + 1 and member_id[-UUID_LEN - 1] == "-":
        return member_id[: -UUID_LEN - 1]
    return member_id


def short_id(member_id: Optional[str]) -> str:
    """``client-1a2b3c4d…``: the client id and the first 8 digits of the UUID (as ``kgroup demo`` prints them)."""
    if not member_id:
        return "-"
    if len(member_id) > UUID_LEN + 1 and member_id[-UUID_LEN - 1] == "-":
        return member_id[: -UUID_LEN + 8] + "…"
    return member_id


def shorten_ids(text: str) -> str:
    """Member ids inside free text (the coordinator's reasons, Kafka's log text) in their short form."""
    out = []
    for word in text.split(" "):
        core = word.strip("(),.:;[]")
        out.append(word.replace(core, short_id(core)) if core and client_of(core) != core else word)
    return " ".join(out)


@dataclass
class MemberInfo:
    member_id: str
    client: str
    protocols: list[tuple[str, str]] = field(default_factory=list)  # (name, metadata hex)
    session_timeout_ms: Optional[int] = None
    rebalance_timeout_ms: Optional[int] = None
    instance_id: Optional[str] = None


@dataclass
class GroupInfo:
    group_id: str
    state: str = "Empty"
    generation: int = 0
    protocol: Optional[str] = None
    leader: Optional[str] = None
    join_leader: Optional[str] = None              # the leader named by the last completed join phase
    log_partition: Optional[int] = None
    coordinator: Optional[int] = None              # broker id, when a consumer found it
    members: dict[str, MemberInfo] = field(default_factory=dict)
    join_members: list[str] = field(default_factory=list)  # members of the last completed join phase
    rebalance_started_ms: Optional[int] = None
    join_completed_ms: Optional[int] = None
    synced: set[str] = field(default_factory=set)  # members that sent SyncGroup for the current generation


class GroupTracker:
    """Follows classic groups through a merged stream. :meth:`prescan` first (who belongs to which group: the
    trace names consumers, not groups), then :meth:`update` with each event *after* presenting it."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupInfo] = {}
        self.group_of_client: dict[str, str] = {}
        self.member_of_client: dict[str, str] = {}

    def prescan(self, events: Iterable[dict]) -> None:
        for ev in events:
            if is_record(ev):
                g = self._group_of_record(ev)
                if g is None:
                    continue
                d, gid = ev["data"], g.group_id
                if ev["type"] == "MemberJoined" and d.get("client_id"):
                    self.group_of_client.setdefault(d["client_id"], gid)
                for key in ("member_id", "new_member_id"):
                    if d.get(key):
                        self.group_of_client.setdefault(client_of(d[key]), gid)

    def _group_of_record(self, ev: dict) -> Optional[GroupInfo]:
        """The group a record belongs to (None for CoordinatorLoaded), noting the partition its records go to."""
        gid = ev.get("data", {}).get("group_id")
        if not gid:
            return None
        g = self.group(gid)
        if g.log_partition is None:
            g.log_partition = ev["log_partition"]
        return g

    def group(self, gid: str) -> GroupInfo:
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = GroupInfo(gid)
        return g

    def member_client(self, gid: str, member_id: Optional[str]) -> str:
        if not member_id:
            return "-"
        g = self.groups.get(gid)
        m = g.members.get(member_id) if g else None
        return m.client if m else client_of(member_id)

    def rebalance_timeout_ms(self, gid: str) -> Optional[int]:
        g = self.groups.get(gid)
        vals = [m.rebalance_timeout_ms for m in g.members.values() if m.rebalance_timeout_ms] if g else []
        return max(vals) if vals else None

    def update(self, ev: dict) -> None:
        if not is_record(ev):
            if ev.get("type") == "coordinator":
                gid = self.group_of_client.get(ev.get("consumer", ""))
                if gid:
                    self.group(gid).coordinator = ev.get("node")
            elif ev.get("type") == "joined":
                self.member_of_client[ev["consumer"]] = ev.get("member_id", "")
            return
        g = self._group_of_record(ev)
        if g is None:
            return
        d = ev["data"]
        kind = ev["type"]
        t = ev["timestamp_ms"]
        if kind in ("MemberJoined", "MemberRejoined"):
            mid = d["member_id"]
            m = g.members.get(mid)
            if m is None:
                m = g.members[mid] = MemberInfo(mid, d.get("client_id") or client_of(mid))
            m.protocols = [(p[0], (p[1] or {}).get("hex", "") if isinstance(p[1], dict) else "")
                           for p in d.get("protocols", [])]
            m.session_timeout_ms = d.get("session_timeout_ms", m.session_timeout_ms)
            m.rebalance_timeout_ms = d.get("rebalance_timeout_ms", m.rebalance_timeout_ms)
            if kind == "MemberJoined":
                m.instance_id = d.get("group_instance_id")
                if g.leader is None:
                    g.leader = mid  # the first member added to a leaderless group leads it
        elif kind == "StaticMemberReplaced":
            old = g.members.pop(d["old_member_id"], None)
            new = d["new_member_id"]
            m = g.members[new] = MemberInfo(new, old.client if old else client_of(new))
            m.instance_id = d.get("group_instance_id")
            m.protocols = [(p[0], (p[1] or {}).get("hex", "") if isinstance(p[1], dict) else "")
                           for p in d.get("protocols", [])]
            m.session_timeout_ms = d.get("session_timeout_ms")
            m.rebalance_timeout_ms = d.get("rebalance_timeout_ms")
            if g.leader == d["old_member_id"]:
                g.leader = new
        elif kind == "MemberRemoved":
            g.members.pop(d["member_id"], None)
            g.synced.discard(d["member_id"])
            if g.leader == d["member_id"]:
                g.leader = d.get("new_leader")
        elif kind == "RebalanceStarted":
            if g.state in ("Stable", "Empty", "CompletingRebalance") or g.rebalance_started_ms is None:
                if g.state != "PreparingRebalance":
                    g.rebalance_started_ms = t
            g.state = "PreparingRebalance"
        elif kind == "JoinCompleted":
            g.generation = d["generation_id"]
            g.protocol = d.get("protocol_name")
            g.leader = d.get("leader")
            g.join_leader = g.leader
            g.join_members = list(d.get("members", []))
            g.join_completed_ms = t
            g.synced = set()
            g.state = "CompletingRebalance" if g.join_members else "Empty"
            if not g.join_members:
                g.rebalance_started_ms = None
        elif kind == "SyncReceived":
            g.synced.add(d["member_id"])
        elif kind == "GroupMetadata":
            if d.get("members") and g.state == "CompletingRebalance" and d.get("generation_id") == g.generation:
                g.state = "Stable"
                g.rebalance_started_ms = None
            elif d.get("members") and g.state == "Dead":
                # a classic group rebuilt from a consumer group (KIP-848 online downgrade): ClassicGroup
                # .fromConsumerGroup makes it Stable with the consumer group's classic members
                g.state = "Stable"
                g.leader = g.join_leader = d.get("leader")
                g.rebalance_started_ms = None
                for m in d["members"]:
                    info = g.members.setdefault(m["member_id"], MemberInfo(m["member_id"], m.get("client_id")
                                                                           or client_of(m["member_id"])))
                    info.session_timeout_ms = m.get("session_timeout_ms")
                    info.rebalance_timeout_ms = m.get("rebalance_timeout_ms")
            g.generation = d.get("generation_id", g.generation)
        elif kind == "GroupTombstone":
            g.state = "Dead"


def partitions_text(parts: Iterable[Any]) -> str:
    """``orders-[0,1] t1-[2]`` from ``("orders", 0)`` pairs, TopicPartitions or ``"orders-0"`` strings."""
    by_topic: dict[str, list[int]] = {}
    for p in parts:
        if isinstance(p, str):
            topic, _, num = p.rpartition("-")
            by_topic.setdefault(topic, []).append(int(num))
        else:
            topic, num = (p.topic, p.partition) if hasattr(p, "topic") else p
            by_topic.setdefault(topic, []).append(int(num))
    if not by_topic:
        return "[]"
    return " ".join(f"{t}-[{','.join(map(str, sorted(ps)))}]" for t, ps in sorted(by_topic.items()))


def assignment_of(data: Optional[str | bytes]) -> list[tuple[str, int]]:
    """The partitions in a ConsumerProtocolAssignment, given as bytes (a SyncGroup response) or as hex (records'
    ``{"hex": ...}``)."""
    from protocol.consumer_protocol import decode_assignment
    if not data:
        return []
    try:
        _, a = decode_assignment(bytes.fromhex(data) if isinstance(data, str) else data)
    except Exception:  # noqa: BLE001 - not a consumer-protocol assignment: nothing to show
        return []
    return [(t, p) for t, ps in a.assigned_partitions for p in ps]


def subscription_topics(hex_bytes: Optional[str]) -> Optional[list[str]]:
    """The topics in a ConsumerProtocolSubscription given as hex, None if it is not one."""
    from protocol.consumer_protocol import decode_subscription
    if not hex_bytes:
        return None
    try:
        _, s = decode_subscription(bytes.fromhex(hex_bytes))
    except Exception:  # noqa: BLE001
        return None
    return list(s.topics)
