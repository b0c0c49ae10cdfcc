"""``kgroup assign``: run one assignor on a group described on the command line and print the result.

The teaching aid for the seeds' examples::

    kgroup assign --strategy sticky --topics t0:3,t1:3 --member c0=t0,t1 --member c1=t0
    kgroup assign --strategy sticky --topics t0:2,t1:2,t2:2,t3:2 --member C0=t0,t1,t2,t3 \
                  --member C2=t0,t1,t2,t3 --previous round1.json

``--user-data NAME=VALUE`` sets a member's ``Subscription.userData`` (``ConsumerPartitionAssignor.subscriptionUserData``
as the leader receives it): ``int32:N`` (4 bytes big-endian, e.g. a weight for
``consumer.assignors.examples:WeightedAssignor``) or hex bytes. Seed 004::

    kgroup assign --strategy consumer.assignors.examples:WeightedAssignor --topics t0:6 \
                  --member c0=t0 --member c1=t0 --user-data c0=int32:2 --user-data c1=int32:1

``--previous FILE`` is JSON giving what each member owned and the generation it was assigned in::

    {"generation": 1, "assignment": {"C0": ["t0-0", "t1-1"], "C2": ["t1-0"]}}

(a bare ``{"C0": [...], ...}`` object means generation 1). ``--json`` prints the same shape (with the next
generation), so one run's output can be the next run's ``--previous``. Exit codes: 0 ok, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

USAGE_ERROR = 2


class InputError(ValueError):
    pass


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "assign", help="compute a partition assignment with a Kafka assignor",
        description="Compute a partition assignment exactly as Kafka's assignor would and print it.")
    p.add_argument("--strategy", default="range",
                   help="range | roundrobin | sticky | cooperative-sticky | package.module:Class (default: range)")
    p.add_argument("--topics", required=True, metavar="T:N[,T:N...]", help="topics and partition counts")
    p.add_argument("--member", action="append", required=True, metavar="NAME=T1[,T2...]",
                   help="a member and its subscribed topics (repeat per member)")
    p.add_argument("--rack", action="append", default=[], metavar="NAME=RACK", help="a member's client.rack")
    p.add_argument("--instance", action="append", default=[], metavar="NAME=ID",
                   help="a member's group.instance.id (static membership)")
    p.add_argument("--user-data", action="append", default=[], metavar="NAME=VALUE",
                   help="a member's subscription userData: int32:N (4 bytes big-endian) or hex bytes")
    p.add_argument("--previous", metavar="FILE", help="JSON file with the previous assignment and generation")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--article", action="store_true",
                   help="print one line per member in the seed articles' notation: c0 [t0p0,t0p1,t1p0]")
    p.set_defaults(func=run)


def parse_topics(spec: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, count = item.rpartition(":")
        if not sep or not name:
            raise InputError(f"--topics: {item!r} is not TOPIC:PARTITIONS (e.g. t0:3)")
        try:
            n = int(count)
        except ValueError:
            raise InputError(f"--topics: partition count of {name!r} must be an integer, got {count!r}") from None
        if n < 0:
            raise InputError(f"--topics: partition count of {name!r} must be >= 0, got {n}")
        if name in out:
            raise InputError(f"--topics: topic {name!r} given twice")
        out[name] = n
    if not out:
        raise InputError("--topics: no topics given")
    return out


def parse_pairs(values: list[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name.strip():
            raise InputError(f"{flag}: {v!r} is not NAME=VALUE")
        if name.strip() in out:
            raise InputError(f"{flag}: member {name.strip()!r} given twice")
        out[name.strip()] = rest.strip()
    return out


def parse_partition(s: str, where: str):
    from consumer.assignors import TopicPartition
    topic, sep, p = str(s).rpartition("-")
    if not sep or not topic:
        raise InputError(f"{where}: {s!r} is not TOPIC-PARTITION (e.g. t0-2)")
    try:
        return TopicPartition(topic, int(p))
    except ValueError:
        raise InputError(f"{where}: partition number in {s!r} is not an integer") from None


def parse_user_data(value: str) -> bytes:
    """``int32:N`` -> 4 bytes big-endian; otherwise hex bytes (``0x`` prefix allowed)."""
    import struct
    v = value.strip()
    if v.startswith("int32:"):
        try:
            return struct.pack(">i", int(v[6:]))
        except (ValueError, struct.error):
            raise InputError(f"--user-data: {value!r} is not int32:N with a 32-bit N") from None
    try:
        return bytes.fromhex(v[2:] if v.lower().startswith("0x") else v)
    except ValueError:
        raise InputError(f"--user-data: {value!r} is neither int32:N nor hex bytes") from None


def load_previous(path: str) -> tuple[int, dict[str, list]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise InputError(f"--previous: cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"--previous: {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"--previous: {path} must hold a JSON object")
    if "assignment" in data:
        generation = data.get("generation", 1)
        assignment = data["assignment"]
    else:
        generation, assignment = 1, data
    if not isinstance(generation, int) or isinstance(generation, bool):
        raise InputError(f"--previous: {path}: 'generation' must be an integer")
    if not isinstance(assignment, dict):
        raise InputError(f"--previous: {path}: 'assignment' must map member names to lists of partitions")
    out = {}
    for member, parts in assignment.items():
        if not isinstance(parts, list):
            raise InputError(f"--previous: {path}: partitions of {member!r} must be a list like [\"t0-1\"]")
        out[member] = [parse_partition(p, f"--previous: {path}: member {member!r}") for p in parts]
    return generation, out


def format_partitions(parts) -> str:
    """Group by topic, sorted for reading (the assignor's own list order is kept in --json)."""
    by_topic: dict[str, list[int]] = {}
    for p in parts:
        by_topic.setdefault(p.topic, []).append(p.partition)
    return " ".join(f"{t}[{','.join(map(str, sorted(ps)))}]" for t, ps in sorted(by_topic.items())) or "-"


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except InputError as exc:
        print(f"kgroup assign: error: {exc}", file=sys.stderr)
        return USAGE_ERROR


def _run(args: argparse.Namespace) -> int:
    from consumer.assignors import AssignorNotFound, Subscription, get_assignor

    counts = parse_topics(args.topics)
    members = parse_pairs(args.member, "--member")
    topics_of = {}
    for m, spec in members.items():
        ts = [t.strip() for t in spec.split(",") if t.strip()]
        topics_of[m] = ts
    racks = parse_pairs(args.rack, "--rack")
    instances = parse_pairs(args.instance, "--instance")
    explicit_user_data = {m: parse_user_data(v) for m, v in parse_pairs(args.user_data, "--user-data").items()}
    for flag, mapping in (("--rack", racks), ("--instance", instances), ("--user-data", explicit_user_data)):
        for m in mapping:
            if m not in members:
                raise InputError(f"{flag}: {m!r} is not a --member")
    try:
        assignor = get_assignor(args.strategy)
    except AssignorNotFound as exc:
        raise InputError(f"--strategy: {exc}") from None

    generation, previous = (-1, {})
    if args.previous:
        generation, previous = load_previous(args.previous)
    subs = {}
    for m, ts in topics_of.items():
        owned = previous.get(m, [])
        user_data = None
        if args.previous and m in previous:
            user_data = assignor.subscription_user_data(set(ts), owned, generation)
        elif hasattr(assignor, "subscription_user_data"):
            user_data = assignor.subscription_user_data(set(ts), None, None)
        subs[m] = Subscription(ts, explicit_user_data.get(m, user_data), owned, generation if m in previous else -1,
                               group_instance_id=instances.get(m), rack_id=racks.get(m))
    result = assignor.assign(counts, subs)

    assigned = {p for a in result.values() for p in a.partitions}
    subscribed = {(t, p) for ts in topics_of.values() for t in ts for p in range(counts.get(t, 0))}
    from consumer.assignors import TopicPartition
    pending = sorted((TopicPartition(*tp) for tp in subscribed), key=lambda p: (p.topic, p.partition))
    pending = [p for p in pending if p not in assigned]

    if args.json:
        print(json.dumps({
            "strategy": assignor.name,
            "generation": (generation if generation > 0 else 0) + 1,
            "assignment": {m: [str(p) for p in result[m].partitions] for m in members},
            "pending": [str(p) for p in pending],
        }, indent=2))
        return 0

    if args.article:
        for m in members:
            parts = sorted(result[m].partitions, key=lambda p: (p.topic, p.partition))
            print(f"{m} [{','.join(f'{p.topic}p{p.partition}' for p in parts)}]")
        return 0

    rows = [("MEMBER", "TOPICS") + (("USERDATA",) if explicit_user_data else ()) + ("#", "PARTITIONS")
            + (("KEPT", "ADDED", "REVOKED") if args.previous else ())]
    for m in members:
        parts = result[m].partitions
        ud = ((explicit_user_data[m].hex() if m in explicit_user_data else "-"),) if explicit_user_data else ()
        row = (m, ",".join(topics_of[m]) or "-") + ud + (str(len(parts)), format_partitions(parts))
        if args.previous:
            before = set(previous.get(m, []))
            now = set(parts)
            row += (str(len(now & before)), str(len(now - before)), str(len(before - now)))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f"strategy: {assignor.name}  protocols: {','.join(getattr(assignor, 'rebalance_protocols', ()))}")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    sizes = [len(result[m].partitions) for m in members]
    print(f"balance (max - min): {max(sizes) - min(sizes)}")
    if pending:
        print(f"pending (withheld until revoked, follow-up rebalance): {format_partitions(pending)}")
    return 0
