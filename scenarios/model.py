"""Scenario files: TOML (stdlib ``tomllib``) validated by pydantic v2. See docs/scenarios.md for every field.

A scenario is data: the cluster (brokers, topics, broker settings), the network, the consumer groups and their
members (Kafka consumer settings, the simulated application), a timeline of actions and faults, and invariant
settings. :func:`load_scenario` reads and validates a file; a bad file raises :class:`ScenarioError`, whose
message names the file, the field path and the accepted values. Nothing runs before a scenario validated.

Durations are integers in milliseconds or strings with a unit: ``"250ms"``, ``"10s"``, ``"5m"``, ``"1h"``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

# --------------------------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------------------------


class ScenarioError(ValueError):
    """A scenario file that cannot run. ``problems`` is a list of (field path, message)."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h)\s*$")


def parse_duration(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a duration is a number of milliseconds or a string such as '10s', '250ms', '5m', '1h'")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return int(round(float(m.group(1)) * _UNITS[m.group(2)]))
    raise ValueError(f"invalid duration {value!r}: use milliseconds (an integer) or a string with a unit: "
                     f"ms, s, m, h (e.g. '10s')")


Duration = Annotated[int, BeforeValidator(parse_duration), Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------------------------------------------
# cluster, network, groups
# --------------------------------------------------------------------------------------------------------------


class TopicSpec(_Strict):
    name: str = Field(min_length=1)
    partitions: int = Field(ge=1, le=10_000)
    replication_factor: int = Field(1, ge=1)


class ClusterSpec(_Strict):
    brokers: int = Field(3, ge=1, le=100)
    #: broker settings under Kafka's names (coordinator.config.CoordinatorConfig), e.g. group.initial.rebalance.delay.ms
    broker: dict[str, Any] = Field(default_factory=dict)
    topics: list[TopicSpec] = Field(default_factory=list)
    #: how long until a consumer sees new metadata (partitions added): each consumer refreshes at a seeded random
    #: moment within this window (Kafka: metadata.max.age.ms, default 5 minutes)
    metadata_max_age_ms: Duration = 5000


class NetworkSpec(_Strict):
    latency_ms: Duration = 1
    jitter_ms: Duration = 0
    #: round-trip every request and response through the wire codec at the negotiated version
    codec: bool = True


class AppSpec(_Strict):
    """The simulated application around KafkaConsumer.poll."""

    poll_ms: Duration = 0              # processing time per poll that returned records
    record_ms: float = Field(0.0, ge=0)  # extra processing time per record
    max_poll_records: int = Field(500, ge=1)
    poll_timeout_ms: Duration = 1000   # KafkaConsumer.poll(timeout) of an idle application


StartAt = Union[Duration, Literal["never"]]

#: ``group.protocol`` (KIP-848): the classic JoinGroup/SyncGroup protocol or the consumer protocol
#: (ConsumerGroupHeartbeat, server-side assignment)
Protocol = Literal["classic", "consumer"]
PROTOCOLS = ("classic", "consumer")
#: settings Kafka's ``ConsumerConfig.checkUnsupportedConfigsPostProcess`` refuses with group.protocol=consumer
#: (CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS: the broker decides the assignor, session and heartbeat interval) and
#: with group.protocol=classic (CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS)
CONSUMER_UNSUPPORTED = ("partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms")
CLASSIC_UNSUPPORTED = ("group.remote.assignor",)


class MemberSpec(_Strict):
    name: str = Field(min_length=1, pattern=r"^[a-zA-Z0-9._-]+$")
    topics: Optional[list[str]] = None
    config: dict[str, Any] = Field(default_factory=dict)
    app: Optional[AppSpec] = None
    start: StartAt = 0
    static: Optional[bool] = None
    #: this member's group.protocol (None: the group's); a group whose members differ is a mixed group
    protocol: Optional[Protocol] = None
    #: this member's group.remote.assignor (consumer protocol; None: the group's)
    remote_assignor: Optional[str] = None


class GroupSpec(_Strict):
    id: str = Field(min_length=1)
    topics: list[str] = Field(min_length=1)
    consumers: int = Field(0, ge=0, le=100_000)
    #: shorthand for partition.assignment.strategy (a name or a list in preference order)
    strategy: Optional[Union[str, list[str]]] = None
    #: static membership: group.instance.id = the member's name
    static: bool = False
    config: dict[str, Any] = Field(default_factory=dict)
    app: AppSpec = Field(default_factory=AppSpec)
    start: StartAt = 0
    #: stagger: member i of the default members starts at start + i * start_interval_ms
    start_interval_ms: Duration = 0
    members: list[MemberSpec] = Field(default_factory=list)
    #: group.protocol of the members: "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848)
    protocol: Protocol = "classic"
    #: group.remote.assignor of consumer-protocol members: a server assignor (the broker's
    #: group.consumer.assignors: uniform, range); None: the broker's default
    remote_assignor: Optional[str] = None


# --------------------------------------------------------------------------------------------------------------
# timeline
# --------------------------------------------------------------------------------------------------------------

ApiName = Literal["any", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                  "OffsetFetch", "ConsumerGroupHeartbeat"]


class _Action(_Strict):
    at: Duration


class Start(_Action):
    action: Literal["start"]
    consumer: str


class Stop(_Action):
    action: Literal["stop"]
    consumer: str


class Crash(_Action):
    action: Literal["crash"]
    consumer: str


class Restart(_Action):
    action: Literal["restart"]
    consumer: str
    down_ms: Duration = 0
    graceful: bool = True
    protocol: Optional[Protocol] = None  # come back with this group.protocol (a migration step)


class GcPause(_Action):
    action: Literal["gc_pause"]
    consumer: str
    duration_ms: Duration


class Slow(_Action):
    action: Literal["slow"]
    consumer: str
    duration_ms: Duration
    poll_ms: Duration


class NetworkPartition(_Action):
    action: Literal["network_partition"]
    consumer: str
    broker: Union[int, Literal["coordinator", "all"]] = "coordinator"
    duration_ms: Duration
    direction: Literal["both", "to_broker", "from_broker"] = "both"
    mode: Literal["drop", "delay"] = "drop"
    delay_ms: Duration = 0


class MessageFault(_Action):
    action: Literal["message_fault"]
    consumer: Optional[str] = None  # None: every consumer
    api: ApiName = "any"
    direction: Literal["request", "response", "both"] = "both"
    #: reorder: hold a response back until the next one on its connection was delivered, at most delay_ms
    mode: Literal["drop", "delay", "duplicate", "reorder"]
    delay_ms: Duration = 0
    probability: float = Field(1.0, ge=0, le=1)
    count: Optional[int] = Field(None, ge=1)
    duration_ms: Duration
    #: ConsumerGroupHeartbeat responses only: the one that raises the member's epoch, or that carries an assignment
    phase: Optional[Literal["epoch_bump", "assignment"]] = None
    #: ConsumerGroupHeartbeat responses only: the one of this member epoch
    epoch: Optional[int] = Field(None, ge=0)


class HoldRevocation(_Action):
    """The application does not call poll for ``duration_ms`` once the consumer (consumer protocol) starts
    reconciling: its revocation callback -- run on the application thread in poll, as in Kafka's
    AsyncKafkaConsumer -- and the acknowledgement wait (past the rebalance timeout: the coordinator fences it)."""

    action: Literal["hold_revocation"]
    consumer: str
    duration_ms: Duration
    within_ms: Duration = 60_000  # armed this long from ``at``: the first reconciliation in this window is held


#: a group phase a fault can wait for: a consumer group reconciling or assigning, a classic group rebalancing
Phase = Literal["reconciling", "assigning", "rebalancing"]


class BrokerCrash(_Action):
    action: Literal["broker_crash"]
    broker: Union[int, Literal["coordinator"]] = "coordinator"
    group: Optional[str] = None  # whose coordinator, for broker = "coordinator" (default: the first group)
    duration_ms: Optional[Duration] = None  # restart after this long (None: stays down)
    elect_preferred: bool = False
    #: crash at the first moment from ``at`` (within ``within_ms``) the group is in this phase: a consumer group
    #: "reconciling" (members moving to the target) or "assigning" (a new target pending); a classic group
    #: "rebalancing" (PreparingRebalance or CompletingRebalance)
    during: Optional[Phase] = None
    within_ms: Optional[Duration] = None  # with ``during``: how long it waits for the phase (default 60 s)


class BrokerRestart(_Action):
    action: Literal["broker_restart"]
    broker: int
    elect_preferred: bool = False


class ElectLeaders(_Action):
    action: Literal["elect_leaders"]


class AddPartitions(_Action):
    action: Literal["add_partitions"]
    topic: str
    partitions: int = Field(ge=1)  # the new total
    #: grow the topic at the first moment from ``at`` (within ``within_ms``) ``group`` is in this phase
    during: Optional[Phase] = None
    within_ms: Optional[Duration] = None
    group: Optional[str] = None  # whose phase (default: the first group)


class Subscribe(_Action):
    action: Literal["subscribe"]
    consumer: Optional[str] = None
    group: Optional[str] = None  # every member of the group
    topics: list[str] = Field(min_length=1)
    #: change the subscription at the first moment from ``at`` (within ``within_ms``) the group is in this phase
    during: Optional[Phase] = None
    within_ms: Optional[Duration] = None


class RollingRestart(_Action):
    action: Literal["rolling_restart"]
    group: str
    count: Optional[int] = Field(None, ge=1)  # None: every member
    batch: int = Field(1, ge=1)
    interval_ms: Duration = 10_000
    down_ms: Duration = 1_000
    graceful: bool = True
    protocol: Optional[Protocol] = None  # each member comes back with this group.protocol (rolling migration)


class Produce(_Action):
    action: Literal["produce"]
    topic: str
    count: int = Field(ge=1, le=10_000_000)
    rate_per_s: Optional[float] = Field(None, gt=0)  # None: all at once
    keys: Optional[list[str]] = None  # cycled; None and no key_format: unkeyed
    key_format: Optional[str] = None  # e.g. "user-{i}"
    partitioner: Literal["default", "murmur2", "round-robin", "sticky"] = "default"
    batch_records: int = Field(16, ge=1)  # sticky partitioner: records per batch before switching
    partition: Optional[int] = Field(None, ge=0)


Action = Annotated[Union[Start, Stop, Crash, Restart, GcPause, Slow, NetworkPartition, MessageFault, BrokerCrash,
                         BrokerRestart, ElectLeaders, AddPartitions, Subscribe, RollingRestart, Produce,
                         HoldRevocation],
                   Field(discriminator="action")]

ACTION_NAMES = ("start", "stop", "crash", "restart", "gc_pause", "slow", "network_partition", "message_fault",
                "broker_crash", "broker_restart", "elect_leaders", "add_partitions", "subscribe", "rolling_restart",
                "produce", "hold_revocation")
#: how long a phase-triggered fault (broker_crash ``during``) waits for its phase when ``within_ms`` is not given
PHASE_WAIT_MS = 60_000
#: actions that are faults (the group must settle after the last one ends)
FAULTS = ("crash", "gc_pause", "slow", "network_partition", "message_fault", "broker_crash", "hold_revocation")

INVARIANTS = ("single-owner-per-generation", "exclusive-ownership", "generations-increase", "settles",
              "offsets-monotonic", "offsets-survive-failover", "at-least-once", "state-equals-replay",
              # consumer-protocol groups (KIP-848)
              "member-epochs-increase", "epochs-bounded", "one-owner-at-a-time", "revocation-acknowledged",
              "commits-by-epoch", "target-up-to-date", "join-heartbeats-full", "heartbeats-resume")

InvariantName = Literal["single-owner-per-generation", "exclusive-ownership", "generations-increase", "settles",
                        "offsets-monotonic", "offsets-survive-failover", "at-least-once", "state-equals-replay",
                        "member-epochs-increase", "epochs-bounded", "one-owner-at-a-time", "revocation-acknowledged",
                        "commits-by-epoch", "target-up-to-date", "join-heartbeats-full", "heartbeats-resume"]


class InvariantSpec(_Strict):
    check: list[InvariantName] = Field(default_factory=lambda: list(INVARIANTS))
    #: extra time allowed, on top of rebalance timeout + session timeout (+ initial delay), to settle
    settle_slack_ms: Duration = 5000
    #: the OffsetCommit rule ``commits-by-epoch`` holds the coordinator to: "assignment-epoch" (Kafka 4.3+/4.4,
    #: KIP-1251: an older member epoch is accepted for a partition assigned at or before it) or "member-epoch"
    #: (Kafka 4.0-4.2: the member's current epoch only)
    commit_rule: Literal["assignment-epoch", "member-epoch"] = "assignment-epoch"


class ScenarioHead(_Strict):
    name: str = ""
    description: str = ""
    duration_ms: Duration = 60_000
    seed: int = 1


class Scenario(_Strict):
    scenario: ScenarioHead = Field(default_factory=ScenarioHead)
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    groups: list[GroupSpec] = Field(min_length=1)
    timeline: list[Action] = Field(default_factory=list)
    invariants: InvariantSpec = Field(default_factory=InvariantSpec)


# --------------------------------------------------------------------------------------------------------------
# resolved members
# --------------------------------------------------------------------------------------------------------------


class ResolvedMember(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    group: str
    index: int
    topics: tuple[str, ...]
    config: dict[str, Any]  # Kafka consumer settings (ConsumerConfig) for ``protocol``
    app: AppSpec
    start: Optional[int]  # None: started by the timeline
    protocol: str = "classic"
    #: the settings for each group.protocol (a timeline restart may switch protocols)
    configs: dict[str, dict[str, Any]] = Field(default_factory=dict)


def protocol_config(cfg: dict[str, Any], protocol: str, explicit: frozenset = frozenset()) -> dict[str, Any]:
    """A member's settings under ``protocol``: ``group.protocol`` is set only for the consumer protocol (a classic
    member's settings stay exactly what they were before KIP-848 support), and settings of the other protocol
    that come from the *group* (a mixed group's classic assignor, say) are left out -- ``explicit`` ones (the
    member's own) are kept, so Kafka's ConsumerConfig check reports them."""
    out = dict(cfg)
    if protocol == "consumer":
        out["group.protocol"] = "consumer"
        for k in CONSUMER_UNSUPPORTED:
            if k not in explicit:
                out.pop(k, None)
    else:
        for k in CLASSIC_UNSUPPORTED:
            if k not in explicit:
                out.pop(k, None)
    return out


def resolve_members(sc: Scenario) -> list[ResolvedMember]:
    """Every consumer the scenario can run, in declaration order (groups, then default members, then members)."""
    out: list[ResolvedMember] = []
    for g in sc.groups:
        defaults = {f"{g.id}-{i}": i for i in range(g.consumers)}
        overrides = {m.name: m for m in g.members}
        names = list(defaults) + [m.name for m in g.members if m.name not in defaults]
        for name in names:
            m = overrides.get(name)
            cfg: dict[str, Any] = {"group.id": g.id, "client.id": name, "auto.offset.reset": "earliest"}
            if g.strategy is not None:
                cfg["partition.assignment.strategy"] = g.strategy if isinstance(g.strategy, str) else list(g.strategy)
            if g.remote_assignor is not None:
                cfg["group.remote.assignor"] = g.remote_assignor
            cfg.update(g.config)
            static = g.static
            protocol = g.protocol
            explicit: set[str] = set()
            if m is not None:
                cfg.update(m.config)
                explicit |= set(m.config)
                if m.static is not None:
                    static = m.static
                if m.protocol is not None:
                    protocol = m.protocol
                if m.remote_assignor is not None:
                    cfg["group.remote.assignor"] = m.remote_assignor
                    explicit.add("group.remote.assignor")
            if protocol == g.protocol:  # the group's own settings are explicit for its own protocol
                explicit |= set(g.config) | ({"partition.assignment.strategy"} if g.strategy is not None else set())
                explicit |= {"group.remote.assignor"} if g.remote_assignor is not None else set()
            if static and "group.instance.id" not in cfg:
                cfg["group.instance.id"] = name
            if name in defaults:
                start: StartAt = g.start
                if m is not None and "start" in m.model_fields_set:
                    start = m.start
                elif start != "never":
                    start = int(start) + defaults[name] * g.start_interval_ms
            else:
                start = m.start if m is not None else 0
            configs = {p: protocol_config(cfg, p, frozenset(explicit) if p == protocol else frozenset())
                       for p in PROTOCOLS}
            out.append(ResolvedMember(
                name=name, group=g.id, index=len(out),
                topics=tuple((m.topics if m is not None and m.topics is not None else g.topics)),
                config=configs[protocol], app=(m.app if m is not None and m.app is not None else g.app),
                start=None if start == "never" else int(start), protocol=protocol, configs=configs))
    return out


# --------------------------------------------------------------------------------------------------------------
# loading and cross-checks
# --------------------------------------------------------------------------------------------------------------


def _path(loc: tuple) -> str:
    parts: list[str] = []
    skip_next_tag = False
    for i, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
            skip_next_tag = parts[0:1] == ["timeline"] and len(parts) == 2
            continue
        if skip_next_tag and item in ACTION_NAMES:
            skip_next_tag = False
            continue  # pydantic's discriminated-union tag, not a field
        skip_next_tag = False
        parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def _accepted(err: dict) -> str:
    ctx = err.get("ctx") or {}
    if err["type"] == "literal_error" and "expected" in ctx:
        values = str(ctx["expected"]).replace("'", "").replace(" or ", ", ")
        return f" (accepted values: {values})"
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return f" (accepted values: {', '.join(ACTION_NAMES)})"
    if err["type"] == "extra_forbidden":
        return ""
    return ""


def _is_branch(item: Any) -> bool:
    """pydantic names union branches in error locations (``literal['never']``, ``function-before[...]``)."""
    return isinstance(item, str) and ("[" in item or "(" in item)


def _pydantic_problems(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    seen = set()
    for err in exc.errors():
        loc = tuple(err["loc"])
        if any(_is_branch(x) for x in loc):
            # Union[Duration, Literal["never"]] (a member's start) reports one error per branch: say it once
            loc = tuple(x for x in loc if not _is_branch(x))
            path = _path(loc)
            if path in seen:
                continue
            seen.add(path)
            problems.append((path, f"invalid value {err.get('input')!r} (accepted values: a duration such as "
                                   f"'10s', or 'never')"))
            continue
        msg = err["msg"]
        if err["type"] == "literal_error":
            msg = f"invalid value {err.get('input')!r}"
        elif err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            tag = (err.get("ctx") or {}).get("tag")
            msg = f"unknown action {tag!r}" if tag is not None else "missing field 'action'"
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        path = _path(loc)
        key = (path, msg)
        if key in seen:
            continue
        seen.add(key)
        problems.append((path, msg + _accepted(err)))
    return problems


def parse_scenario(data: dict[str, Any], source: str = "<scenario>") -> Scenario:
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(source, _pydantic_problems(exc)) from None
    problems = cross_check(sc)
    if problems:
        raise ScenarioError(source, problems)
    return sc


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(source, [("", f"cannot read the file: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(source, [("", f"not UTF-8 text (byte {exc.start}: {exc.reason}); a scenario is a TOML "
                                          "file, which is UTF-8")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(source, [("", f"not valid TOML: {exc}")]) from None
    return parse_scenario(data, source)


def _one_of(values) -> str:
    vals = list(values)
    return f" (accepted values: {', '.join(map(str, vals))})" if vals else " (none defined)"


def cross_check(sc: Scenario) -> list[tuple[str, str]]:
    """Checks across fields: names that must exist, settings the cores accept."""
    from consumer.assignors import get_assignor
    from consumer.config import ConfigError as ConsumerConfigError, ConsumerConfig
    from coordinator.config import ConfigError as BrokerConfigError, CoordinatorConfig

    problems: list[tuple[str, str]] = []
    topics = {}
    for i, t in enumerate(sc.cluster.topics):
        if t.name in topics:
            problems.append((f"cluster.topics[{i}].name", f"topic {t.name!r} defined twice"))
        if t.name.startswith("__"):
            problems.append((f"cluster.topics[{i}].name", "topic names starting with '__' are internal"))
        if t.replication_factor > sc.cluster.brokers:
            problems.append((f"cluster.topics[{i}].replication_factor",
                             f"{t.replication_factor} is more than the {sc.cluster.brokers} brokers"))
        topics[t.name] = t
    try:
        CoordinatorConfig.create(broker_settings(sc))
    except BrokerConfigError as exc:
        problems.append(("cluster.broker", str(exc)))
    group_ids: set[str] = set()
    for gi, g in enumerate(sc.groups):
        if g.id in group_ids:
            problems.append((f"groups[{gi}].id", f"group {g.id!r} defined twice"))
        group_ids.add(g.id)
        for ti, t in enumerate(g.topics):
            if t not in topics:
                problems.append((f"groups[{gi}].topics[{ti}]", f"unknown topic {t!r}{_one_of(topics)}"))
        strategies = [g.strategy] if isinstance(g.strategy, str) else (g.strategy or [])
        for si, s in enumerate(strategies):
            try:
                get_assignor(s)
            except LookupError:
                problems.append((f"groups[{gi}].strategy", f"unknown assignor {s!r} (accepted values: range, "
                                 f"roundrobin, sticky, cooperative-sticky, a Kafka class name or module:Class)"))
        for mi, m in enumerate(g.members):
            for ti, t in enumerate(m.topics or []):
                if t not in topics:
                    problems.append((f"groups[{gi}].members[{mi}].topics[{ti}]",
                                     f"unknown topic {t!r}{_one_of(topics)}"))
    if problems:
        return problems
    members = resolve_members(sc)
    names: dict[str, ResolvedMember] = {}
    # the protocols each consumer runs: its own, and those a timeline restart switches it to
    runs: dict[str, set[str]] = {m.name: {m.protocol} for m in members}
    for a in sc.timeline:
        if isinstance(a, Restart) and a.protocol is not None and a.consumer in runs:
            runs[a.consumer].add(a.protocol)
        elif isinstance(a, RollingRestart) and a.protocol is not None:
            for m in members:
                if m.group == a.group:
                    runs[m.name].add(a.protocol)
    assignors = broker_consumer_assignors(sc)
    for m in members:
        gi = next(i for i, g in enumerate(sc.groups) if g.id == m.group)
        if m.name in names:
            problems.append((f"groups[{gi}]", f"consumer name {m.name!r} is used twice (names are global)"))
        names[m.name] = m
        for protocol in sorted(runs[m.name]):
            cfg = m.configs[protocol]
            if protocol == "consumer":
                if not consumer_protocol_supported():
                    problems.append((f"groups[{gi}].protocol", f"consumer {m.name}: protocol \"consumer\" needs "
                                     f"the consumer-protocol membership core, which this build does not have"))
                    break
                bad = [k for k in CONSUMER_UNSUPPORTED if k in cfg]
                if bad:
                    problems.append((f"groups[{gi}].config", f"consumer {m.name}: {', '.join(bad)} cannot be set "
                                     f"when group.protocol=CONSUMER (the broker decides; use remote_assignor)"))
                    continue
                ra = cfg.get("group.remote.assignor")
                if ra is not None and assignors is not None and ra not in assignors:
                    problems.append((f"groups[{gi}].remote_assignor", f"consumer {m.name}: unknown server assignor "
                                     f"{ra!r}{_one_of(assignors)}"))
                    continue
            elif "group.remote.assignor" in cfg:
                problems.append((f"groups[{gi}].remote_assignor", f"consumer {m.name}: group.remote.assignor "
                                 f"cannot be set when group.protocol=CLASSIC (use strategy)"))
                continue
            try:
                ConsumerConfig.create(cfg)
            except ConsumerConfigError as exc:
                problems.append((f"groups[{gi}].config", f"consumer {m.name}: {exc}"))
            except Exception as exc:  # noqa: BLE001 - pydantic or assignor lookup errors
                problems.append((f"groups[{gi}].config", f"consumer {m.name}: {exc}"))
    brokers = range(sc.cluster.brokers)
    for ai, a in enumerate(sc.timeline):
        p = f"timeline[{ai}]"
        for attr in ("consumer",):
            v = getattr(a, attr, None)
            if v is not None and v not in names:
                problems.append((f"{p}.{attr}", f"unknown consumer {v!r}{_one_of(list(names)[:20])}"))
        g = getattr(a, "group", None)
        if g is not None and g not in group_ids:
            problems.append((f"{p}.group", f"unknown group {g!r}{_one_of(group_ids)}"))
        t = getattr(a, "topic", None)
        if t is not None and t not in topics:
            problems.append((f"{p}.topic", f"unknown topic {t!r}{_one_of(topics)}"))
        b = getattr(a, "broker", None)
        if isinstance(b, int) and b not in brokers:
            problems.append((f"{p}.broker", f"unknown broker {b} (accepted values: 0..{sc.cluster.brokers - 1}"
                                            f", or 'coordinator')"))
        for ti, tn in enumerate(getattr(a, "topics", None) or []):
            if tn not in topics:
                problems.append((f"{p}.topics[{ti}]", f"unknown topic {tn!r}{_one_of(topics)}"))
        if isinstance(a, Subscribe) and (a.consumer is None) == (a.group is None):
            problems.append((p, "subscribe needs exactly one of consumer or group"))
        if isinstance(a, AddPartitions) and a.topic in topics and a.partitions <= topics[a.topic].partitions:
            problems.append((f"{p}.partitions", f"must be more than the topic's current "
                                                f"{topics[a.topic].partitions} partitions"))
        if isinstance(a, Produce) and a.partition is not None and a.topic in topics \
                and a.partition >= topics[a.topic].partitions:
            problems.append((f"{p}.partition", f"topic {a.topic!r} has {topics[a.topic].partitions} partitions"))
        if isinstance(a, MessageFault):
            if (a.phase is not None or a.epoch is not None) and (a.api != "ConsumerGroupHeartbeat"
                                                                 or a.direction != "response"):
                problems.append((p, "phase and epoch aim at ConsumerGroupHeartbeat responses: set api = "
                                    "\"ConsumerGroupHeartbeat\" and direction = \"response\""))
            if a.mode == "reorder" and (a.direction != "response" or a.delay_ms <= 0):
                problems.append((p, "reorder holds responses back: set direction = \"response\" and delay_ms (the "
                                    "longest hold) above 0"))
        if isinstance(a, HoldRevocation) and a.consumer in names and names[a.consumer].protocol != "consumer":
            problems.append((f"{p}.consumer", f"hold_revocation needs a consumer-protocol member (protocol = "
                                              f"\"consumer\"); {a.consumer} uses {names[a.consumer].protocol}"))
        if isinstance(a, BrokerCrash) and a.during is not None and a.broker != "coordinator":
            problems.append((f"{p}.during", "during needs broker = \"coordinator\" (the group's coordinator when "
                                            "the phase comes)"))
        if isinstance(a, Produce) and a.key_format is not None:
            try:
                a.key_format.format(i=0)
            except (KeyError, IndexError, ValueError) as exc:
                problems.append((f"{p}.key_format", f"invalid format ({exc}); use {{i}} for the record number"))
    return problems


def consumer_protocol_supported() -> bool:
    """Whether the consumer core runs ``group.protocol = consumer`` (KIP-848's ConsumerMembershipManager):
    its settings know ``group.protocol``."""
    from consumer.config import ConsumerConfig
    return "group_protocol" in ConsumerConfig.model_fields


def broker_consumer_assignors(sc: Scenario) -> Optional[tuple[str, ...]]:
    """The simulated brokers' ``group.consumer.assignors`` (None when the broker settings are invalid)."""
    from coordinator.config import ConfigError as BrokerConfigError, CoordinatorConfig
    try:
        return tuple(CoordinatorConfig.create(broker_settings(sc)).group_consumer_assignors)
    except BrokerConfigError:
        return None


def broker_settings(sc: Scenario) -> dict[str, Any]:
    """Broker settings for the simulated cluster: Kafka's defaults, except that the offsets topic's replication
    factor is capped at the number of brokers (Kafka would refuse to create it)."""
    settings: dict[str, Any] = {"offsets.topic.replication.factor": min(3, sc.cluster.brokers)}
    settings.update(sc.cluster.broker)
    return settings


__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario", "resolve_members", "ResolvedMember",
           "parse_duration", "FAULTS", "INVARIANTS", "ACTION_NAMES", "broker_settings", "PROTOCOLS",
           "consumer_protocol_supported", "protocol_config"]
