"""`kgroup ctl`: fault control of a running `kgroup serve` (broker/faults.py; docs/testing-your-consumer.md,
section "Fault control").

    kgroup ctl --bootstrap 127.0.0.1:9092 stop-broker 1
    kgroup ctl --bootstrap 127.0.0.1:9092 fail-next Heartbeat 3 REBALANCE_IN_PROGRESS --group orders-app

Talks to the broker port through kgroup's private control API (never advertised to Kafka clients; accepted only
from loopback peers; unauthenticated). Prints the result as JSON. Exit codes: 0 ok, 1 the server refused (e.g. no
such broker, rule or member) or could not be reached, 2 usage (an unknown API or error name, a count below 1...).
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ctl", help="fault control of a running `kgroup serve` (brokers, coordinators, members, "
                                   "request faults, the coordinator clock)",
                       description="Fault control of a running kgroup serve over its private, loopback-only, "
                                   "unauthenticated control API on the broker port.")
    p.add_argument("--bootstrap", default="127.0.0.1:9092", metavar="HOST:PORT",
                   help="any broker of the server (default 127.0.0.1:9092)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the answer (default 10)")
    ops = p.add_subparsers(dest="op", metavar="OP", required=True)
    o = ops.add_parser("stop-broker", help="crash a broker (listener and connections closed, leaders move)")
    o.add_argument("broker", type=int)
    o = ops.add_parser("start-broker", help="restart a stopped broker on its old port")
    o.add_argument("broker", type=int)
    o = ops.add_parser("move-coordinator", help="make BROKER the coordinator of GROUP (leader election)")
    o.add_argument("group")
    o.add_argument("broker", type=int)
    o = ops.add_parser("coordinator", help="print the coordinator of GROUP")
    o.add_argument("group")
    o = ops.add_parser("expire-member", help="expire the session of GROUP's member(s) now")
    o.add_argument("group")
    o.add_argument("member", nargs="?", default=None, help="member id or prefix (client.id); default: all members")
    o = ops.add_parser("drop-heartbeats", help="Heartbeats of matching members never reach the coordinator "
                                               "(their connection is closed)")
    o.add_argument("group")
    o.add_argument("--member", default=None, help="member id or prefix (client.id); default: every member")
    o.add_argument("--count", type=int, default=None, help="only the next N heartbeats (default: until cleared)")
    o = ops.add_parser("drop-member-requests", help="every group request of matching members is dropped (a "
                                                    "network partition between member and coordinator)")
    o.add_argument("group")
    o.add_argument("member", help="member id or prefix (client.id)")
    o.add_argument("--count", type=int, default=None)
    o = ops.add_parser("delay-heartbeats", help="Heartbeats of matching members reach the coordinator DELAY_MS late")
    o.add_argument("group")
    o.add_argument("delay_ms", type=int)
    o.add_argument("--member", default=None)
    o.add_argument("--count", type=int, default=None)
    o = ops.add_parser("fail-next", help="answer the next COUNT requests of API with ERROR (name or number)")
    o.add_argument("api", help="API name (Heartbeat, JoinGroup, OffsetCommit, Fetch, ...) or key")
    o.add_argument("count", type=int)
    o.add_argument("error", help="error name (REBALANCE_IN_PROGRESS, NOT_COORDINATOR, ...) or code")
    o.add_argument("--group", default=None, help="only requests of this group")
    o = ops.add_parser("clear", help="remove a fault rule (default: all rules)")
    o.add_argument("rule", type=int, nargs="?", default=None)
    ops.add_parser("freeze-clock", help="stop the coordinator's clock (no session/rebalance timer fires)")
    o = ops.add_parser("advance-clock", help="move the coordinator's clock forward MS, firing what falls due")
    o.add_argument("ms", type=int)
    ops.add_parser("thaw-clock", help="let the coordinator's clock run again from where it stood")
    o = ops.add_parser("describe", help="brokers, clock, active rules (and a group's members)")
    o.add_argument("group", nargs="?", default=None)
    p.set_defaults(func=run)


def check(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments before anything is sent (None: nothing), as the server would say it."""
    from broker.faults import api_key, error_code
    host, sep, port = args.bootstrap.split(",")[0].rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"--bootstrap {args.bootstrap!r}: expected HOST:PORT"
    if args.timeout <= 0:
        return f"--timeout must be > 0 (got {args.timeout})"
    try:
        if args.op == "fail-next":
            api_key(args.api)
            error_code(args.error)
    except ValueError as e:
        return str(e)
    for name in ("count", "broker", "delay_ms", "ms", "rule"):
        v = getattr(args, name, None)
        if v is not None and (v < 1 if name == "count" else v < 0):
            return f"{name.replace('_', '-')} must be {'>= 1' if name == 'count' else '>= 0'} (got {v})"
        if v is not None and v > _INT32_MAX:  # Kafka's counts, ids and millisecond settings are 32-bit ints
            return f"{name.replace('_', '-')} must be <= {_INT32_MAX} (got {v})"
    if getattr(args, "group", None) == "":
        return "the group id must not be empty"
    return None


_INT32_MAX = 2**31 - 1


def run(args: argparse.Namespace) -> int:
    from client.control import ControlClient

    problem = check(args)
    if problem is not None:
        print(f"kgroup ctl: {problem}", file=sys.stderr)
        return 2
    op = args.op.replace("-", "_")
    fields = {k: v for k, v in vars(args).items() if k not in ("op", "func", "bootstrap", "timeout", "command")}
    try:
        with ControlClient(args.bootstrap, timeout=args.timeout) as c:
            result = c.call(op, **fields)
    except (OSError, ConnectionError) as e:
        print(f"kgroup ctl: cannot reach {args.bootstrap}: {e}", file=sys.stderr)
        return 1
    except RuntimeError as e:
        print(f"kgroup ctl: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=None, default=str))
    return 0
