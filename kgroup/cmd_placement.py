"""``kgroup placement``: where a topic's partition replicas go (seed 001), by the article's rule and by Kafka's.

* ``--rule article`` (default): partition *i*'s first replica (its preferred leader) on broker ``i mod n``, its
  *j*-th replica on broker ``(i + j) mod n``, brokers sorted by id.
* ``--rule kafka``: ``AdminUtils.assignReplicasToBrokers`` without racks (``assignReplicasToBrokersRackUnaware``,
  ZooKeeper-mode topic creation and ``kafka-reassign-partitions --generate``): the first replica of partition *i*
  is broker ``(i + startIndex) mod n``; the others follow at ``1 + (shift + j) mod (n - 1)`` brokers further;
  ``startIndex`` and ``shift`` are random (``--start-index``/``--shift`` fix them, ``--seed`` draws them) and the
  shift grows by one every *n* partitions, so replica pairs do not repeat.

``--add-brokers K --grow-to P`` then adds brokers and partitions as ``kafka-topics --alter --partitions`` does:
existing replicas never move; only the new partitions are placed, over all brokers (Kafka: starting from the
broker of partition 0's first replica, ``AdminZkClient.createNewPartitionsAssignment``). The placement itself is
``coordinator/cluster.py``'s (the same code places the simulator's topics).

Exit codes: 0, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("placement", help="where a topic's replicas go: the article's i mod n rule and Kafka's own",
                       description="Place a topic's partition replicas on brokers by the article's rule (i mod n, "
                                   "(i + j) mod n) or by Kafka's AdminUtils.assignReplicasToBrokers, and optionally "
                                   "add brokers and partitions.")
    p.add_argument("--brokers", type=int, required=True, metavar="N", help="brokers (ids 0..N-1)")
    p.add_argument("--partitions", type=int, required=True, metavar="P", help="partitions of the topic")
    p.add_argument("--replication-factor", type=int, default=1, metavar="R", help="replicas per partition")
    p.add_argument("--rule", choices=("article", "kafka"), default="article",
                   help="article: i mod n, (i + j) mod n (default); kafka: AdminUtils.assignReplicasToBrokers")
    p.add_argument("--start-index", type=int, default=None, metavar="I", help="kafka rule: the start index")
    p.add_argument("--shift", type=int, default=None, metavar="S", help="kafka rule: the replica shift")
    p.add_argument("--seed", type=int, default=0, help="kafka rule: draws start index and shift (default 0)")
    p.add_argument("--add-brokers", type=int, default=0, metavar="K", help="then add K brokers")
    p.add_argument("--grow-to", type=int, default=None, metavar="P2", help="then grow the topic to P2 partitions")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


class _Fixed:
    """Stands in for the cluster's random source: the start index, then the shift (the order Kafka draws them)."""

    def __init__(self, values: list[int]) -> None:
        self.values = list(values)

    def randrange(self, n: int) -> int:
        return self.values.pop(0) % n


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ValueError as e:  # includes coordinator.cluster.ClusterError
        print(f"kgroup placement: {e}", file=sys.stderr)
        return 2


def table(cluster, topic: str) -> list[str]:
    parts = cluster.partitions(topic)
    brokers = cluster.broker_ids()
    rf = max(len(p.replicas) for p in parts)
    cells = {(j, b): [] for j in range(rf) for b in brokers}
    for p in parts:
        for j, b in enumerate(p.replicas):
            cells[(j, b)].append(f"P{p.partition}")
    width = max([9] + [len(",".join(v)) + 2 for v in cells.values()])
    lines = ["  " + " " * 11 + "".join(f"broker {b}".ljust(width) for b in brokers).rstrip()]
    for j in range(rf):
        label = "leader" if j == 0 else f"replica {j + 1}"
        lines.append("  " + label.ljust(11) + "".join((",".join(cells[(j, b)]) or "-").ljust(width)
                                                    for b in brokers).rstrip())
    return lines


def _run(args: argparse.Namespace) -> int:
    from coordinator.cluster import Cluster
    from coordinator.config import CoordinatorConfig

    if args.brokers < 1 or args.partitions < 1 or args.replication_factor < 1:
        raise ValueError("--brokers, --partitions and --replication-factor must be >= 1")
    if args.add_brokers < 0:
        raise ValueError("--add-brokers must be >= 0")
    if args.grow_to is not None and args.grow_to <= args.partitions:
        raise ValueError(f"--grow-to must be more than --partitions ({args.partitions}): Kafka only adds partitions")
    if args.rule == "article" and (args.start_index is not None or args.shift is not None):
        raise ValueError("--start-index and --shift belong to --rule kafka")
    placement = "round-robin" if args.rule == "article" else "kafka"
    cluster = Cluster.with_brokers(args.brokers, CoordinatorConfig.create({"kgroup.replica.placement": placement}),
                                   seed=args.seed)
    n = args.brokers
    drawn = None
    if args.rule == "kafka":
        import random
        rng = random.Random(args.seed)
        start = args.start_index if args.start_index is not None else rng.randrange(n)
        shift = args.shift if args.shift is not None else rng.randrange(n)
        if not 0 <= start < n or not 0 <= shift < n:
            raise ValueError(f"--start-index and --shift must be in 0..{n - 1}")
        cluster.rng = _Fixed([start, shift])
        drawn = (start, shift)
    cluster.create_topic("t", args.partitions, args.replication_factor)
    before = cluster.assignment("t")
    out = {"rule": args.rule, "brokers": cluster.broker_ids(), "assignment": before,
           "start_index": drawn[0] if drawn else None, "shift": drawn[1] if drawn else None}
    lines = []
    if args.rule == "article":
        lines.append(f"rule: the article's -- partition i on broker i mod {n}, its j-th replica on broker (i + j) mod {n}")
    else:
        lines.append(f"rule: Kafka's AdminUtils.assignReplicasToBrokers (rack-unaware), start index {drawn[0]}, "
                     f"replica shift {drawn[1]} (+1 every {n} partitions)")
    lines.append(f"{args.partitions} partitions x {args.replication_factor} replicas on brokers 0..{n - 1}:")
    lines += [f"  P{i}: replicas {reps} (preferred leader: broker {reps[0]})" for i, reps in enumerate(before)]
    lines += table(cluster, "t")
    if args.add_brokers or args.grow_to:
        added = cluster.add_brokers(args.add_brokers) if args.add_brokers else []
        if args.grow_to:
            cluster.add_partitions("t", args.grow_to)
        after = cluster.assignment("t")
        out.update({"added_brokers": added, "after": after})
        lines.append("")
        lines.append(f"after adding brokers {added or 'none'} and growing to {len(after)} partitions "
                     "(existing replicas do not move; only new partitions are placed):")
        lines += [f"  P{i}: replicas {reps}" + ("  (new)" if i >= len(before) else "")
                  for i, reps in enumerate(after)]
        lines += table(cluster, "t")
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print("\n".join(lines))
    return 0
