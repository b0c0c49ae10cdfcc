"""The views of ``kafka-consumer-groups.sh`` (Kafka's ``ConsumerGroupCommand``), computed over
:class:`client.admin.AdminClient`: ``kgroup groups`` prints them and ``kgroup watch`` records them.

Each view is gathered by an ``async`` function (only Kafka APIs, through the admin client) into plain rows, and
rendered by a pure function into the text Kafka's tool prints -- the same columns, widths, ``-`` for a missing
value, and the same messages (``ConsumerGroupService.printOffsets`` / ``printMembers`` / ``printStates``,
``GroupOffsetsResetter.printOffsetsToReset``, ``deleteOffsets``, ``deleteGroups``). Lines are right-stripped
(Kafka's formats leave trailing blanks).

* **offsets** (``--describe``, ``collectGroupsOffsets``): the members with partitions, most partitions first, each
  member's partitions by topic and partition, then the committed partitions no member owns (consumer ``-``);
  CURRENT-OFFSET is the committed offset, LOG-END-OFFSET the partition leader's latest offset (ListOffsets),
  LAG their difference (``-`` when either is missing); ``--verbose`` adds LEADER-EPOCH (of the commit).
* **members** (``--members``): GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS, ``--verbose`` adds
  CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT (KIP-848: the member epoch, the group's target
  assignment epoch and the member's target; ``-`` for a classic group), and UPGRADED (``true``: consumer protocol,
  ``false``: classic) for a consumer group with members of both protocols. The header is printed even for a group
  without members (Kafka 4.4's ``printMembers``).
* **state** (``--state``): GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS, ``--verbose`` adds GROUP-EPOCH
  and TARGET-ASSIGNMENT-EPOCH.

Messages go where Kafka sends them: ``printError`` lines ("\\nError: ...") and the tables to stdout; "Consumer group
'G' has no active members." and "Warning: Consumer group 'G' is rebalancing." to stderr.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from client.admin import EARLIEST, LATEST, AdminClient, AdminError, GroupDescription

MISSING = "-"
#: GroupState names (``GroupState.toString``) by their upper-case form: ``GroupState.parse`` is case-insensitive.
STATES = {s.upper(): s for s in ("Unknown", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
                                 "Assigning", "Reconciling")}
#: ``GroupState.groupStatesForType(CONSUMER)``, in the order ``--help`` lists them
CONSUMER_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
                   "Reconciling")
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


def normal_state(s: str | None) -> str:
    return STATES.get((s or "").upper(), "Unknown")


class Output:
    """What a command prints: (stream, text) in order; ``failed`` if any part failed (exit code 1)."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, str]] = []
        self.failed = False

    def out(self, text: str) -> None:
        self.parts.append(("out", text))

    def err(self, text: str) -> None:
        self.parts.append(("err", text))

    def error(self, msg: str) -> None:
        """``ConsumerGroupCommand.printError``: a blank line and "Error: ..." on stdout."""
        self.out(f"\nError: {msg}")
        self.failed = True

    def text(self, stream: str = "out") -> str:
        return "\n".join(t for s, t in self.parts if s == stream)


def _fmt(widths: list[int | None], values: list[Any]) -> str:
    """``%-Ns`` columns separated by one blank (None: the last, unpadded column); right-stripped."""
    cells = []
    for w, v in zip(widths, values):
        v = MISSING if v is None else str(v)
        cells.append(v if w is None else v.ljust(w))
    return " ".join(cells).rstrip()


def assignment_string(parts: list[tuple[str, int]] | None) -> str:
    """``getAssignmentString``: ``topic:0,1;other:3`` (topics sorted as strings, partitions numerically)."""
    if not parts:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return ";".join(sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in by_topic.items()))


# --- state and list -----------------------------------------------------------------------------------------------

def should_print(out: Output, group: str, state: str | None, num_rows: int | None) -> bool:
    """``shouldPrintMemberState``: the group's state as a message; whether its table is printed."""
    if num_rows is None:
        out.error(f"The consumer group '{group}' does not exist.")
        return False
    if state == "Dead":
        out.error(f"Consumer group '{group}' does not exist.")
    elif state == "Empty":
        out.err(f"\nConsumer group '{group}' has no active members.")
    elif state in REBALANCING:
        out.err(f"\nWarning: Consumer group '{group}' is rebalancing.")
    return state != "Dead" and num_rows > 0


def render_list(listings: list[Any], with_state: bool, with_type: bool = False) -> str:
    """``--list``: one group id per line; with ``--state`` (or ``--type``) a GROUP [TYPE] [STATE] table."""
    if not with_state and not with_type:
        return "\n".join(g.group_id for g in listings)
    glen = max([15] + [len(g.group_id) for g in listings]) + 10
    widths: list[int | None] = [glen]
    head = ["GROUP"]
    if with_type:
        widths.append(20)
        head.append("TYPE")
    if with_state:
        widths.append(20)
        head.append("STATE")
    lines = [_fmt(widths, head)]
    for g in listings:
        row = [g.group_id]
        if with_type:
            row.append((g.group_type or "Unknown").capitalize() if g.group_type else "Unknown")
        if with_state:
            row.append(normal_state(g.state) if g.state else "Unknown")
        lines.append(_fmt(widths, row))
    return "\n".join(lines)


@dataclass
class StateRow:
    group: str
    coordinator_id: int
    coordinator_host: str
    coordinator_port: int
    assignment_strategy: str
    state: str
    members: int
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None


def state_row(d: GroupDescription) -> StateRow:
    return StateRow(d.group_id, d.coordinator.node_id, d.coordinator.host, d.coordinator.port, d.assignor,
                    normal_state(d.state), len(d.members), d.group_epoch, d.assignment_epoch)


def render_state(out: Output, rows: list[StateRow], verbose: bool) -> None:
    """``printStates``."""
    for r in rows:
        if not should_print(out, r.group, r.state, 1):
            continue
        coordinator = f"{r.coordinator_host}:{r.coordinator_port}  ({r.coordinator_id})"
        cw, gw = max(25, len(coordinator)), max(15, len(r.group))
        strategy = r.assignment_strategy or MISSING
        if verbose:
            widths = [gw, cw, 20, 20, 15, 25, None]
            out.out("\n" + _fmt(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                                         "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]))
            out.out(_fmt(widths, [r.group, coordinator, strategy, r.state, r.group_epoch, r.target_assignment_epoch,
                                  r.members]))
        else:
            widths = [gw, cw, 20, 20, None]
            out.out("\n" + _fmt(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]))
            out.out(_fmt(widths, [r.group, coordinator, strategy, r.state, r.members]))


# --- offsets ------------------------------------------------------------------------------------------------------

@dataclass
class OffsetRow:
    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None
    leader_epoch: int | None = None


def lag_of(offset: int | None, end: int | None) -> int | None:
    """``getLag``: end - committed, when both are known (a committed -1 is none)."""
    if offset is None or offset == -1 or end is None:
        return None
    return end - offset


def offset_rows(d: GroupDescription, committed: dict, ends: dict) -> list[OffsetRow]:
    """``collectGroupsOffsets`` for one group: its members' partitions, then committed partitions nobody owns."""
    rows: list[OffsetRow] = []
    assigned: set[tuple[str, int]] = set()
    members = sorted((m for m in d.members if m.assignment), key=lambda m: -len(m.assignment))  # stable
    for m in members:
        for t, p in sorted(m.assignment):
            assigned.add((t, p))
            c = committed.get((t, p))
            off = c.offset if c is not None else None
            end = ends.get((t, p))
            rows.append(OffsetRow(d.group_id, t, p, off, end, lag_of(off, end), m.member_id, m.host, m.client_id,
                                  c.leader_epoch if c is not None else None))
    for (t, p), c in sorted(committed.items()):
        if (t, p) in assigned:
            continue
        end = ends.get((t, p))
        rows.append(OffsetRow(d.group_id, t, p, c.offset, end, lag_of(c.offset, end), MISSING, MISSING, MISSING,
                              c.leader_epoch))
    return rows


def render_offsets(out: Output, group: str, state: str | None, rows: list[OffsetRow] | None, verbose: bool) -> None:
    """``printOffsets`` for one group."""
    if not should_print(out, group, state, None if rows is None else len(rows)):
        return
    gw = max([15] + [len(r.group) for r in rows])
    tw = max([15] + [len(r.topic or MISSING) for r in rows])
    cw = max([15] + [len(r.consumer_id or MISSING) for r in rows])
    hw = max([15] + [len(r.host or MISSING) for r in rows])
    if verbose:
        widths = [gw, tw, 10, 15, 15, 15, 15, cw, hw, None]
        out.out("\n" + _fmt(widths, ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET",
                                     "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]))
        for r in rows:
            out.out(_fmt(widths, [r.group, r.topic, r.partition, r.leader_epoch, r.current_offset, r.log_end_offset,
                                  r.lag, r.consumer_id, r.host, r.client_id]))
    else:
        widths = [gw, tw, 10, 15, 15, 15, cw, hw, None]
        out.out("\n" + _fmt(widths, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                     "CONSUMER-ID", "HOST", "CLIENT-ID"]))
        for r in rows:
            out.out(_fmt(widths, [r.group, r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag,
                                  r.consumer_id, r.host, r.client_id]))


# --- members ------------------------------------------------------------------------------------------------------

@dataclass
class MemberRow:
    group: str
    consumer_id: str
    group_instance_id: str
    host: str
    client_id: str
    partitions: int
    assignment: list[tuple[str, int]]
    target_assignment: list[tuple[str, int]]
    current_epoch: int | None
    target_epoch: int | None
    upgraded: bool | None = None   # KIP-848 consumer groups (ConsumerGroupDescribe v1): consumer protocol or not


def member_rows(d: GroupDescription) -> list[MemberRow]:
    """``collectGroupsMembers``: a consumer group's members carry their epoch, the group's target assignment epoch
    and their target assignment; a classic group's have none (``-``)."""
    return [MemberRow(d.group_id, m.member_id, m.group_instance_id or "", m.host, m.client_id, len(m.assignment),
                      list(m.assignment), list(m.target_assignment or []), m.member_epoch, d.assignment_epoch,
                      m.upgraded)
            for m in d.members]


def render_members(out: Output, group: str, state: str | None, rows: list[MemberRow] | None, verbose: bool) -> None:
    """``printMembers`` for one group (Kafka 4.4): the state message, then the header -- always, even for an Empty
    group (widths at their minimums unless the group's rows are printable) -- and one row per member. ``--verbose``
    adds CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT, and UPGRADED when a consumer group has both
    classic and consumer-protocol members (an online migration)."""
    rows = rows or []
    gw, cw, iw, hw, clw, curw, tgw = 15, 15, 17, 15, 15, 20, 20
    with_instance = has_classic = has_consumer = False
    if should_print(out, group, state, len(rows)):
        for r in rows:
            gw, cw, iw = max(gw, len(r.group)), max(cw, len(r.consumer_id)), max(iw, len(r.group_instance_id))
            hw, clw = max(hw, len(r.host)), max(clw, len(r.client_id))
            with_instance = with_instance or bool(r.group_instance_id)
            curw = max(curw, len(assignment_string(r.assignment)))
            tgw = max(tgw, len(assignment_string(r.target_assignment)))
            has_classic = has_classic or r.upgraded is False
            has_consumer = has_consumer or r.upgraded is True
    migrating = has_classic and has_consumer
    base = [gw, cw, iw, hw, clw, 15] if with_instance else [gw, cw, hw, clw, 15]
    head = (["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] if with_instance
            else ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"])
    extra_w: list[int | None] = []
    extra_h: list[str] = []
    if verbose:
        extra_w = [15, curw, 15, tgw] + ([None] if migrating else [])
        extra_h = ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"] + \
            (["UPGRADED"] if migrating else [])
    out.out("\n" + _fmt(base + extra_w, head + extra_h))
    for r in rows:
        vals = ([r.group, r.consumer_id, r.group_instance_id, r.host, r.client_id, r.partitions] if with_instance
                else [r.group, r.consumer_id, r.host, r.client_id, r.partitions])
        if verbose:
            vals += [r.current_epoch, assignment_string(r.assignment), r.target_epoch,
                     assignment_string(r.target_assignment)]
            if migrating:
                vals.append(None if r.upgraded is None else str(r.upgraded).lower())
        out.out(_fmt(base + extra_w, vals))


# --- gathering (Kafka APIs only) ------------------------------------------------------------------------------------

async def describe_offsets(admin: AdminClient, group: str) -> tuple[GroupDescription, list[OffsetRow]]:
    d = await admin.describe_group(group)
    committed = await admin.group_offsets(group)
    parts = {tp for m in d.members for tp in m.assignment} | set(committed)
    ends = await admin.list_offsets(parts, LATEST)
    return d, offset_rows(d, committed, ends)


def as_json(obj: Any) -> Any:
    """Dataclass rows as JSON-ready dicts."""
    if isinstance(obj, list):
        return [as_json(x) for x in obj]
    if hasattr(obj, "__dataclass_fields__"):
        return {k: as_json(v) for k, v in asdict(obj).items()}
    if isinstance(obj, tuple):
        return [as_json(x) for x in obj]
    return obj


# --- reset-offsets ------------------------------------------------------------------------------------------------

class ResetError(Exception):
    """A reset that cannot be planned (Kafka: an exception -> "Executing consumer group command failed due to ...",
    or ``printUsageAndExit``)."""

    def __init__(self, msg: str, usage: bool = False) -> None:
        super().__init__(msg)
        self.usage = usage


async def partitions_to_reset(admin: AdminClient, group: str, all_topics: bool, topics: list[str]
                              ) -> list[tuple[str, int]]:
    """``getPartitionsToReset``: the committed partitions (``--all-topics``) or the ``--topic`` ones."""
    if all_topics:
        return sorted(await admin.group_offsets(group))
    return await parse_topic_partitions(admin, topics)


def split_topic_args(topics: list[str]) -> tuple[list[tuple[str, int]], list[str]]:
    """The ``--topic`` arguments as (named partitions, bare topics); raises ResetError (usage) for a malformed
    one, with ``parseTopicPartitionsToReset``'s messages. Needs no cluster: checked before connecting."""
    out: list[tuple[str, int]] = []
    bare = []
    for arg in topics:
        if ":" in arg:
            t, _, ps = arg.partition(":")
            if ":" in ps or not t:
                raise ResetError(f"Invalid topic arg '{arg}', expected topic name and partitions", usage=True)
            for p in ps.split(","):
                try:
                    out.append((t, int(p)))
                except ValueError:
                    raise ResetError(f"Invalid partition '{p}' specified in topic arg '{arg}''", usage=True) from None
        else:
            bare.append(arg)
    return out, bare


async def parse_topic_partitions(admin: AdminClient, topics: list[str]) -> list[tuple[str, int]]:
    """``parseTopicPartitionsToReset``: ``topic:0,1`` names partitions; a bare topic means all of them."""
    out, bare = split_topic_args(topics)
    if bare:
        info = await admin.partitions(bare)
        for t in bare:
            parts = info.get(t)
            if not isinstance(parts, list):
                err = parts if parts is not None else None
                raise ResetError(err.message if err is not None else f"unknown topic {t}")
            out += [(t, p.partition) for p in parts]
    return out


async def check_partitions(admin: AdminClient, partitions: list[tuple[str, int]]) -> None:
    """``checkAllTopicPartitionsValid``: every partition exists and has a leader."""
    info = await admin.partitions({t for t, _ in partitions})
    missing, leaderless = [], []
    for t, p in partitions:
        parts = info.get(t)
        part = next((x for x in parts if x.partition == p), None) if isinstance(parts, list) else None
        if part is None:
            missing.append(f"{t}-{p}")
        elif part.leader < 0:
            leaderless.append(f"{t}-{p}")
    if missing:
        raise ResetError(f'The partitions "{",".join(missing)}" do not exist')
    if leaderless:
        raise ResetError(f'The partitions "{",".join(leaderless)}" have no leader')


async def plan_reset(admin: AdminClient, group: str, partitions: list[tuple[str, int]], how: str, value: int | None,
                     warn: Any) -> dict[tuple[str, int], int]:
    """``prepareOffsetsToReset``: the new offset of each partition (``--to-earliest``, ``--to-latest``,
    ``--to-offset N`` and ``--shift-by N`` clamped to [earliest, latest] with Kafka's warnings)."""
    await check_partitions(admin, partitions)
    if how == "to-earliest":
        starts = await admin.list_offsets(partitions, EARLIEST)
        return {tp: starts[tp] for tp in partitions}
    if how == "to-latest":
        ends = await admin.list_offsets(partitions, LATEST)
        return {tp: ends[tp] for tp in partitions}
    if how == "to-offset":
        wanted = {tp: value for tp in partitions}
    elif how == "shift-by":
        current = await admin.group_offsets(group)
        wanted = {}
        for t, p in partitions:
            c = current.get((t, p))
            if c is None:
                raise ResetError(f"Cannot shift offset for partition {t}-{p} since there is no current committed "
                                 "offset", usage=True)
            wanted[(t, p)] = c.offset + value
    else:
        raise ValueError(how)
    # checkOffsetsRange
    starts = await admin.list_offsets(partitions, EARLIEST)
    ends = await admin.list_offsets(partitions, LATEST)
    out = {}
    for tp, off in wanted.items():
        end, start = ends.get(tp), starts.get(tp)
        if end is not None and off > end:
            warn(f"New offset ({off}) is higher than latest offset for topic partition {tp[0]}-{tp[1]}. Value will "
                 f"be set to {end}.")
            out[tp] = end
        elif start is not None and off < start:
            warn(f"New offset ({off}) is lower than earliest offset for topic partition {tp[0]}-{tp[1]}. Value will "
                 f"be set to {start}.")
            out[tp] = start
        else:
            out[tp] = off
    return out


def render_reset(out: Output, plans: dict[str, dict[tuple[str, int], int]]) -> None:
    """``printOffsetsToReset``: GROUP TOPIC PARTITION NEW-OFFSET."""
    gw = max([15] + [len(g) for g in plans])
    tw = max([15] + [len(t) for p in plans.values() for t, _ in p])
    widths = [gw, tw, 10, None]
    lines = []
    if plans:
        lines.append(_fmt(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for g in sorted(plans):
        for (t, p), off in sorted(plans[g].items()):
            lines.append(_fmt(widths, [g, t, p, off]))
    out.out("\n" + "\n".join(lines) if lines else "")


__all__ = ["AdminError", "Output", "OffsetRow", "MemberRow", "StateRow", "offset_rows", "member_rows", "state_row",
           "render_offsets", "render_members", "render_state", "render_list", "render_reset", "describe_offsets",
           "plan_reset", "partitions_to_reset", "parse_topic_partitions", "split_topic_args", "ResetError", "as_json", "lag_of",
           "assignment_string", "normal_state", "CONSUMER_STATES"]
