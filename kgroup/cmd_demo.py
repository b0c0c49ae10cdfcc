"""`kgroup demo`: the guided tour of the rebalance protocol.

Until the coordinator and consumers land (issue 5) it shows the first step every client takes: finding the
group coordinator from the hash of the group id.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a guided tour of the consumer-group protocol",
                       description="Walk through how Kafka places consumer groups on coordinators.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kgroup.cli import build_parser
    from protocol.hashing import coordinator_partition, java_string_hash, kafka_abs

    build_parser().print_help()
    print()
    print("Step 1 of every consumer: FIND_COORDINATOR.")
    print("The coordinator of a group is the leader broker of __consumer_offsets partition")
    print("Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions (default 50):")
    for g in ("group1", "group2", "test-group", "polygenelubricants"):
        h = java_string_hash(g)
        print(f"  {g!r:22} hashCode={h:<12} Utils.abs={kafka_abs(h):<11} -> partition {coordinator_partition(g)}")
    print("('polygenelubricants' hashes to Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0, so partition 0;")
    print(" a naive abs() % 50 would say 48.)")
    return 0
