"""`kgroup groups`: ``kafka-consumer-groups.sh`` for any Kafka cluster (kgroup serve or a real broker), with Kafka's
option names, columns and messages (``ConsumerGroupCommand``, ``ConsumerGroupCommandOptions``,
``GroupOffsetsResetter``), through Kafka's APIs only (client/admin.py; views: kgroup/groupviews.py).

    kgroup groups --bootstrap-server 127.0.0.1:9092 --list [--state [STATES]]
    kgroup groups --describe --group G [--members|--state|--offsets] [--verbose]
    kgroup groups --describe --all-groups
    kgroup groups --reset-offsets --group G --all-topics|--topic T[:P,...] --to-earliest|--to-latest|--to-offset N
                  |--shift-by N [--dry-run|--execute]
    kgroup groups --delete-offsets --group G --topic T[:P,...]
    kgroup groups --delete --group G

``--json`` prints one JSON document instead of the tables. Exit codes: 0 done, 1 the command failed (a group that
does not exist, a refused reset, an error from the cluster; Kafka's tool exits 0 after printing such errors), 2
usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
SCENARIOS = ("to_earliest", "to_latest", "to_offset", "shift_by")
_NO_VALUE = object()


def _opt(name: str) -> str:
    """jopt-simple's ``OptionSpec.toString``: ``[name]``."""
    return f"[{name.replace('_', '-')}]"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "groups", help="kafka-consumer-groups.sh for any Kafka cluster: list, describe (offsets, lag, members, "
                       "state), reset offsets, delete offsets or groups",
        description="List, describe, delete and manage the offsets of consumer groups on any Kafka cluster (kgroup "
                    "serve or real brokers), with the options, columns and messages of Kafka's "
                    "kafka-consumer-groups.sh. Uses only Kafka APIs: ListGroups, DescribeGroups, "
                    "ConsumerGroupDescribe (when the broker offers it), OffsetFetch, ListOffsets, OffsetCommit, "
                    "OffsetDelete, DeleteGroups, Metadata, FindCoordinator. Exit codes: 0 done, 1 the command "
                    "failed, 2 usage.")
    p.add_argument("--bootstrap-server", "--bootstrap", dest="bootstrap", default="127.0.0.1:9092",
                   metavar="HOST:PORT[,...]", help="the server(s) to connect to (default 127.0.0.1:9092)")
    a = p.add_argument_group("actions (exactly one)")
    a.add_argument("--list", action="store_true", help="list all consumer groups")
    a.add_argument("--describe", action="store_true",
                   help="describe consumer group and list offset lag (number of messages not yet processed)")
    a.add_argument("--delete", action="store_true", help="delete the groups' offsets and ownership information")
    a.add_argument("--reset-offsets", action="store_true",
                   help="reset offsets of inactive consumer groups: --dry-run (the default) plans, --execute "
                        "commits; a scenario (--to-earliest, --to-latest, --to-offset, --shift-by) and a scope "
                        "(--all-topics or --topic) are required")
    a.add_argument("--delete-offsets", action="store_true",
                   help="delete offsets of a consumer group (one group, one or more --topic)")
    s = p.add_argument_group("scope")
    s.add_argument("--group", action="append", default=[], metavar="GROUP", help="the consumer group id (repeatable)")
    s.add_argument("--all-groups", action="store_true", help="apply to all consumer groups")
    s.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,...]",
                   help="the topic whose offsets are reset or deleted; partitions as topic:0,1,2 (repeatable)")
    s.add_argument("--all-topics", action="store_true", help="reset-offsets: apply to all topics the group committed")
    d = p.add_argument_group("describe and list")
    d.add_argument("--members", action="store_true", help="describe the members of the group")
    d.add_argument("--offsets", action="store_true", help="describe the offsets and lag (the default)")
    d.add_argument("--state", nargs="?", const=_NO_VALUE, default=None, metavar="STATES",
                   help="with --describe: the state of the group; with --list: show the states, or list only groups "
                        "in STATES (comma-separated, e.g. stable,empty)")
    d.add_argument("--type", nargs="?", const=_NO_VALUE, default=None, metavar="TYPES",
                   help="with --list: show the group types (Classic, Consumer), or list only groups of TYPES "
                        "(comma-separated: classic,consumer)")
    d.add_argument("--verbose", action="store_true",
                   help="more columns: LEADER-EPOCH (offsets), epochs and assignments (members), group epochs "
                        "(state)")
    r = p.add_argument_group("reset-offsets")
    r.add_argument("--dry-run", action="store_true", help="only show the new offsets (the default)")
    r.add_argument("--execute", action="store_true", help="commit the new offsets")
    r.add_argument("--to-earliest", action="store_true", help="reset to the earliest offset")
    r.add_argument("--to-latest", action="store_true", help="reset to the latest offset")
    r.add_argument("--to-offset", type=int, default=None, metavar="N", help="reset to offset N (clamped to the log)")
    r.add_argument("--shift-by", type=int, default=None, metavar="N",
                   help="shift the committed offsets by N (negative: back; clamped to the log)")
    p.add_argument("--timeout", type=int, default=30000, metavar="MS",
                   help="timeout of each request to the cluster in ms (default 30000)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    p.set_defaults(func=run)


class Usage(ValueError):
    pass


def _used(args: argparse.Namespace, scenario: str) -> bool:
    """A reset scenario given on the command line (``--to-offset 0`` and ``--shift-by 0`` count)."""
    v = getattr(args, scenario)
    return v is not None and v is not False


def _check(args: argparse.Namespace) -> str:
    """``ConsumerGroupCommandOptions.checkArgs`` (messages in jopt-simple's ``[option]`` notation)."""
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise Usage("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                    "--delete-offsets")
    action = chosen[0]
    scope = f"{_opt('group')}, {_opt('all-groups')}"
    if args.group and args.all_groups:
        raise Usage(f'Option "{_opt("group")}" can\'t be used with option "{_opt("all-groups")}"')
    if args.group and action == "list":
        raise Usage(f'Option "{_opt("group")}" can\'t be used with option "{_opt("list")}"')
    if args.topic and action in ("list", "describe"):
        raise Usage(f'Option "{_opt("topic")}" can\'t be used with option "{_opt(action)}"')
    if action != "describe" and (args.members or args.offsets or args.verbose):
        raise Usage("--members, --offsets and --verbose may be used with the --describe option only")
    if args.state is not None and action not in ("describe", "list"):
        raise Usage("--state may be used with the --describe and --list options only")
    if args.type is not None and action != "list":
        raise Usage(f"Option(s) {_opt('type')} are unavailable given other options on the command line")
    if action == "describe":
        if not args.group and not args.all_groups:
            raise Usage(f"Option {_opt('describe')} takes one of these options: {scope}")
        if sum(bool(x) for x in (args.members, args.offsets, args.state is not None)) > 1:
            raise Usage(f"Option {_opt('describe')} takes at most one of these options: {_opt('members')}, "
                        f"{_opt('offsets')}, {_opt('state')}")
        if args.state is not None and args.state is not _NO_VALUE:
            raise Usage(f"Option {_opt('describe')} does not take a value for {_opt('state')}")
    if action == "delete":
        if not args.group and not args.all_groups:
            raise Usage(f"Option {_opt('delete')} takes one of these options: {scope}")
        if args.topic:
            raise Usage("The consumer does not support topic-specific offset deletion from a consumer group.")
    if action == "delete_offsets":
        if len(args.group) != 1 or not args.topic:
            raise Usage(f"Option {_opt('delete-offsets')} takes the following options: {_opt('group')}, "
                        f"{_opt('topic')}")
    if action == "reset_offsets":
        if args.dry_run and args.execute:
            raise Usage(f"Option {_opt('reset-offsets')} only accepts one of {_opt('execute')} and {_opt('dry-run')}")
        if not args.group and not args.all_groups:
            raise Usage(f"Option {_opt('reset-offsets')} takes one of these options: {scope}")
        used = [s for s in SCENARIOS if _used(args, s)]
        if len(used) > 1:
            raise Usage(f'Option "{_opt(used[0])}" can\'t be used with option "{_opt(used[1])}"')
        if not used:
            raise Usage(f"Option '{_opt('reset-offsets')}' requires one of the following scenarios: "
                        + ", ".join(_opt(s) for s in SCENARIOS))
        if not args.all_topics and not args.topic:
            raise Usage("One of the reset scopes should be defined: --all-topics, --topic.")
        if args.all_topics and args.topic:
            raise Usage(f'Option "{_opt("all-topics")}" can\'t be used with option "{_opt("topic")}"')
    if args.timeout <= 0:
        raise Usage(f"--timeout must be > 0 (got {args.timeout})")
    return action


def _types_filter(value: Any) -> list[str]:
    """``consumerGroupTypesFromString``: comma-separated, case-insensitive; classic and consumer only."""
    if value is None or value is _NO_VALUE or value == "":
        return []
    parsed = [s.strip().lower() for s in str(value).split(",")]
    if any(t not in ("classic", "consumer") for t in parsed):
        raise Usage(f"Invalid types list '{value}'. Valid types are: Classic, Consumer")
    return sorted(set(parsed))


def _states_filter(value: Any) -> list[str]:
    """``groupStatesFromString``: comma-separated, case-insensitive; only the consumer group states."""
    from kgroup.groupviews import CONSUMER_STATES, STATES
    if value is None or value is _NO_VALUE or value == "":
        return []
    parsed = [STATES.get(s.strip().upper(), "Unknown") for s in str(value).split(",")]
    if any(s not in CONSUMER_STATES for s in parsed):
        raise Usage(f"Invalid state list '{value}'. Valid states are: {', '.join(CONSUMER_STATES)}")
    return parsed


def run(args: argparse.Namespace) -> int:
    import asyncio

    try:
        action = _check(args)
        states = _states_filter(args.state) if action == "list" else []
        types = _types_filter(args.type) if action == "list" else []
        from client.admin import _bootstrap
        _bootstrap(args.bootstrap)
        from kgroup.groupviews import ResetError, split_topic_args
        try:
            split_topic_args(args.topic or [])  # a malformed TOPIC:P,... is a usage error before connecting
        except ResetError as e:
            raise Usage(str(e)) from None
    except (Usage, ValueError) as e:
        print(f"kgroup groups: {e}", file=sys.stderr)
        return 2
    from kgroup.groupviews import Output
    out = Output()
    data: Any = None
    try:
        data = asyncio.run(_main(args, action, states, out, types))
    except ConnectionError as e:
        print(f"kgroup groups: cannot reach {args.bootstrap}: {e}", file=sys.stderr)
        return 1
    except _UsageLate as e:
        print(f"kgroup groups: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        for stream, text in out.parts:
            print(text, file=sys.stdout if stream == "out" else sys.stderr, flush=True)
    return 1 if out.failed else 0


class _UsageLate(Exception):
    """A usage error found while planning (Kafka's ``printUsageAndExit`` inside the reset)."""


async def _main(args: argparse.Namespace, action: str, states: list[str], out: Any, types: list[str] = ()) -> Any:
    from client.admin import AdminClient, AdminError
    from kgroup import groupviews as V

    async with AdminClient(args.bootstrap, timeout=args.timeout / 1000) as admin:
        try:
            if action == "list":
                listings = await admin.list_groups(states, types)
                out.out(V.render_list(listings, args.state is not None, args.type is not None))
                return [{"group": g.group_id, "state": g.state, "type": g.group_type,
                         "protocol_type": g.protocol_type} for g in listings]
            groups = (sorted(g.group_id for g in await admin.list_groups()) if args.all_groups
                      else list(dict.fromkeys(args.group)))
            if action == "describe":
                return await _describe(admin, args, groups, out)
            if action == "delete":
                return await _delete(admin, groups, out)
            if action == "delete_offsets":
                return await _delete_offsets(admin, groups[0], args.topic, out)
            return await _reset(admin, args, groups, out)
        except AdminError as e:
            out.error(f"Executing consumer group command failed due to {e}")
            return {"error": str(e)}


async def _describe(admin: Any, args: argparse.Namespace, groups: list[str], out: Any) -> Any:
    from client.admin import AdminError
    from kgroup import groupviews as V

    result = []
    for g in sorted(groups):  # a TreeMap in Kafka's tool
        try:
            if args.members:
                d = await admin.describe_group(g)
                rows = V.member_rows(d)
                V.render_members(out, g, V.normal_state(d.state), rows, args.verbose)
                result.append({"group": g, "state": V.normal_state(d.state), "members": V.as_json(rows)})
            elif args.state is not None:
                d = await admin.describe_group(g)
                row = V.state_row(d)
                V.render_state(out, [row], args.verbose)
                result.append(V.as_json(row))
            else:
                d, rows = await V.describe_offsets(admin, g)
                V.render_offsets(out, g, V.normal_state(d.state), rows, args.verbose)
                result.append({"group": g, "state": V.normal_state(d.state), "offsets": V.as_json(rows)})
        except AdminError as e:
            out.error(f"Executing consumer group command failed due to {e}")
            result.append({"group": g, "error": str(e)})
            continue
        if V.normal_state(d.state) == "Dead":
            out.failed = True
    return result


async def _delete(admin: Any, groups: list[str], out: Any) -> Any:
    """``deleteGroups``."""
    results = await admin.delete_groups(groups)
    ok = [g for g, e in results.items() if e == 0]
    failed = {g: e for g, e in results.items() if e != 0}
    if not failed:
        out.out("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in ok) + ") was successful.")
    else:
        out.error("Deletion of some consumer groups failed:")
        for g, e in failed.items():
            out.out(f"* Group '{g}' could not be deleted due to: {e.name}: {e.message}")
        if ok:
            out.out("\nThese consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in ok))
    return {g: e.name for g, e in results.items()}


async def _delete_offsets(admin: Any, group: str, topics: list[str], out: Any) -> Any:
    """``deleteOffsets``: the table TOPIC PARTITION STATUS."""
    from kgroup import groupviews as V
    from protocol.errors import ErrorCode as E

    explicit = [t for t in topics if ":" in t]
    bare = [t for t in topics if ":" not in t]
    partitions = set(await V.parse_topic_partitions(admin, explicit)) if explicit else set()
    per: dict[tuple[str, int], Any] = {}
    if bare:
        info = await admin.partitions(bare)
        for t in bare:
            parts = info.get(t)
            if isinstance(parts, list):
                partitions |= {(t, p.partition) for p in parts}
            else:
                per[(t, -1)] = parts if parts is not None else E.UNKNOWN_TOPIC_OR_PARTITION
    top, results = await admin.delete_group_offsets(group, partitions) if partitions else (E.NONE, {})
    for tp in partitions:
        per[tp] = results.get(tp, top if top != 0 else E.NONE)
    part_errors = {e for e in per.values() if e != 0}
    if top == 0 and part_errors:
        top = sorted(part_errors)[0]   # DeleteConsumerGroupOffsetsResult.all(): the first partition error
    if top == 0:
        out.out(f"Request succeeded for deleting offsets from group {group}.")
    elif top in (E.INVALID_GROUP_ID, E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED, E.NON_EMPTY_GROUP):
        out.error(top.message)
    elif top in (E.GROUP_SUBSCRIBED_TO_TOPIC, E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION):
        out.error("Encountered some partition-level error, see the follow-up details.")
    else:
        out.error(f"Encountered some unknown error: {top.name}")
    tw = max([15] + [len(t) for t, _ in per])
    lines = [V._fmt([tw, 10, None], ["TOPIC", "PARTITION", "STATUS"])]
    for (t, p), e in sorted(per.items(), key=lambda kv: kv[0][0] + str(kv[0][1])):  # Kafka sorts topic + partition
        status = "Successful" if e == 0 else f"Error: {e.name}: {e.message}"
        lines.append(V._fmt([tw, 10, None], [t, p if p >= 0 else "-", status]))
    out.out("\n" + "\n".join(lines))
    return {"error": top.name, "partitions": [{"topic": t, "partition": p, "error": e.name}
                                             for (t, p), e in sorted(per.items())]}


async def _reset(admin: Any, args: argparse.Namespace, groups: list[str], out: Any) -> Any:
    """``resetOffsets``: only an inactive group (Empty, Dead or unknown) is reset; a dry run by default."""
    from kgroup import groupviews as V

    dry = not args.execute
    if not args.dry_run and not args.execute:
        out.err("WARN: No action will be performed as the --execute option is missing. In version 5.0, this command "
                "will require either --dry-run or --execute to be specified. You should add the --dry-run option "
                "explicitly if you are scripting this command and want to keep the current default behavior without "
                "prompting.")
    how = next(s for s in SCENARIOS if _used(args, s)).replace("_", "-")
    value = args.to_offset if how == "to-offset" else args.shift_by
    plans: dict[str, dict] = {}
    for g in groups:
        d = await admin.describe_group(g)
        state = V.normal_state(d.state)
        if state not in ("Empty", "Dead"):
            out.error(f"Assignments can only be reset if the group '{g}' is inactive, but the current state is "
                      f"{state}.")
            plans[g] = {}
            continue
        try:
            parts = await V.partitions_to_reset(admin, g, args.all_topics, args.topic)
            plan = await V.plan_reset(admin, g, parts, how, value, lambda m: out.err(f"[WARN] {m}"))
        except V.ResetError as e:
            if e.usage:
                raise _UsageLate(str(e)) from None
            out.error(f"Executing consumer group command failed due to {e}")
            plans[g] = {}
            continue
        if not dry:
            errors = await admin.alter_group_offsets(g, plan)
            bad = {tp: e for tp, e in errors.items() if e != 0}
            if bad:
                (t, p), e = sorted(bad.items())[0]
                out.error(f"Executing consumer group command failed due to {e.name}: {e.message} ({t}-{p})")
                plans[g] = {}
                continue
        plans[g] = plan
    V.render_reset(out, plans)  # a refused group still gets the header (printOffsetsToReset)
    return {"executed": not dry, "offsets": [{"group": g, "topic": t, "partition": p, "new_offset": o}
                                             for g in sorted(plans) for (t, p), o in sorted(plans[g].items())]}
