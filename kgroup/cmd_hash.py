"""`kgroup hash`: Kafka's hash functions, for checking which coordinator a group gets and which partition a key
lands on.

* group ids: ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` (Kafka's GroupCoordinator
  partitionFor) -- note ``Utils.abs`` maps Integer.MIN_VALUE to 0, where a naive ``abs`` would not;
* keys: ``Utils.toPositive(Utils.murmur2(key)) % numPartitions`` (Kafka's default partitioner for keyed records).
"""

from __future__ import annotations

import argparse
import json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hash",
        help="show a group's __consumer_offsets partition or a key's partition, as Kafka computes them",
        description="Show Java String.hashCode / Utils.abs for group ids (which __consumer_offsets partition, hence "
                    "which coordinator, owns a group) and murmur2 partitioning for record keys.",
    )
    p.add_argument("group", nargs="*", help="group ids to place on __consumer_offsets partitions")
    p.add_argument("--offsets-partitions", type=int, default=50, metavar="N",
                   help="offsets.topic.num.partitions (default 50)")
    p.add_argument("--key", action="append", default=[], metavar="KEY",
                   help="record key (UTF-8) to place with the default partitioner; repeatable")
    p.add_argument("--partitions", type=int, default=3, metavar="N",
                   help="number of partitions of the topic for --key (default 3)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from protocol.hashing import coordinator_partition, java_string_hash, kafka_abs, murmur2, to_positive

    if args.offsets_partitions <= 0 or args.partitions <= 0:
        print("kgroup hash: partition counts must be positive")
        return 2
    if not args.group and not args.key:
        print("kgroup hash: give at least one group id or --key")
        return 2
    groups = [
        {"group_id": g, "java_hash": java_string_hash(g), "kafka_abs": kafka_abs(java_string_hash(g)),
         "partition": coordinator_partition(g, args.offsets_partitions)}
        for g in args.group
    ]
    keys = [
        {"key": k, "murmur2": murmur2(k.encode()), "to_positive": to_positive(murmur2(k.encode())),
         "partition": to_positive(murmur2(k.encode())) % args.partitions}
        for k in args.key
    ]
    if args.json:
        print(json.dumps({"groups": groups, "keys": keys}, indent=2))
        return 0
    if groups:
        print(f"group id -> __consumer_offsets partition (Utils.abs(hashCode) % {args.offsets_partitions})")
        for g in groups:
            print(f"  {g['group_id']!r:24} hashCode={g['java_hash']:<12} abs={g['kafka_abs']:<11} "
                  f"partition={g['partition']}")
        for g in groups:
            if g["java_hash"] == -(1 << 31):
                n = args.offsets_partitions
                java_rem = -((1 << 31) % n)  # Java's % keeps the dividend's sign; Math.abs(MIN_VALUE) == MIN_VALUE
                print(f"  note: {g['group_id']!r}.hashCode() is Integer.MIN_VALUE. Java's Math.abs(-2147483648) is "
                      f"still -2147483648, so Math.abs(hash) % {n} = {java_rem}, not a partition; Python's "
                      f"abs(hash) % {n} = {(1 << 31) % n}; Kafka's Utils.abs maps MIN_VALUE to 0 -> partition "
                      f"{g['partition']}")
    if keys:
        print(f"key -> partition (toPositive(murmur2(key)) % {args.partitions})")
        for k in keys:
            print(f"  {k['key']!r:24} murmur2={k['murmur2']:<12} positive={k['to_positive']:<11} "
                  f"partition={k['partition']}")
    return 0
