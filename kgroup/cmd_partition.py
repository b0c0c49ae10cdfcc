"""``kgroup partition``: which partition Kafka's Java producer picks for each record, by Kafka version.

``KafkaProducer.partition``: a record with an explicit partition goes there and no partitioner runs. Otherwise:

* **a key** -- ``Utils.toPositive(Utils.murmur2(serializedKey)) % numPartitions`` over *all* partitions of the
  topic (a keyed record goes to its partition even if that partition has no leader). The same in every version:
  ``DefaultPartitioner`` before 3.3, ``BuiltInPartitioner.partitionForKey`` since (KIP-794; unless
  ``partitioner.ignore.keys=true``). The key is hashed as serialized: ``--key-serializer string`` (UTF-8,
  ``StringSerializer``), ``int`` (4 bytes big-endian, ``IntegerSerializer``), ``long`` (8 bytes), ``bytes`` (hex).
* **no key**, by version (``--partitioner``):

  - ``pre-2.4`` -- ``DefaultPartitioner`` up to 2.3: a per-topic counter that starts at a random int
    (``ThreadLocalRandom.nextInt()``; fix it with ``--counter-start``), ``toPositive(counter++) %
    available.size()`` indexes the partitions that have a leader (all partitions if none has): round-robin;
  - ``sticky`` -- 2.4 to 3.2 (KIP-480, ``StickyPartitionCache``): stick to one random available partition until a
    new batch is created, then move to a random *other* available partition;
  - ``builtin`` -- 3.3 and later (KIP-794, ``BuiltInPartitioner``): stick to a partition until ``batch.size``
    bytes were produced to it, then pick the next one at random among the available partitions (the same one may
    come again); with ``partitioner.adaptive.partitioning.enable`` (the default) the pick is weighted by the
    brokers' queue sizes -- not modelled here (all queues equal: a uniform pick);
  - ``round-robin`` -- ``RoundRobinPartitioner`` (KIP-369, 2.4+, must be configured): a per-topic counter from 0
    over the available partitions, keys ignored.

  A batch is ``--batch-records`` records here (Kafka: ``batch.size`` bytes or ``linger.ms``). Java's random
  numbers cannot be reproduced; ``--seed`` makes kgroup's own random choices repeatable.

Exit codes: 0, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys

from protocol.hashing import murmur2, to_positive

PARTITIONERS = ("pre-2.4", "sticky", "builtin", "round-robin")
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("partition", help="which partition Kafka's producer picks for each record (by version)",
                       description="Show which partition Kafka's Java producer picks for records with a key "
                                   "(murmur2) or without one (round-robin before 2.4, sticky since KIP-480, "
                                   "uniform sticky since KIP-794), or with an explicit partition.")
    p.add_argument("--partitions", type=int, required=True, metavar="N", help="partitions of the topic")
    p.add_argument("--key", action="append", default=[], metavar="KEY", help="a record key (repeatable)")
    p.add_argument("--key-serializer", choices=("string", "int", "long", "bytes"), default="string",
                   help="how the key is serialized before hashing (default: string = UTF-8; bytes = hex)")
    p.add_argument("--records", type=int, default=0, metavar="R", help="R records without a key")
    p.add_argument("--partitioner", choices=PARTITIONERS, default="builtin",
                   help="for records without a key: pre-2.4 | sticky (2.4-3.2) | builtin (3.3+, default) | "
                        "round-robin (RoundRobinPartitioner)")
    p.add_argument("--explicit", type=int, default=None, metavar="P",
                   help="the records carry this partition (ProducerRecord.partition): no partitioner runs")
    p.add_argument("--counter-start", type=int, default=None, metavar="C",
                   help="pre-2.4: the counter's first value (Kafka: a random int; default from --seed)")
    p.add_argument("--batch-records", type=int, default=4, metavar="B",
                   help="sticky/builtin: records per batch before the partition may change (default 4)")
    p.add_argument("--unavailable", default="", metavar="P[,P...]",
                   help="partitions without a leader (skipped by the unkeyed partitioners)")
    p.add_argument("--seed", type=int, default=0, help="seed of kgroup's random choices (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def serialize(key: str, how: str) -> bytes:
    if how == "string":
        return key.encode("utf-8")
    if how == "int":
        v = int(key)
        if not INT_MIN <= v <= INT_MAX:
            raise ValueError(f"--key {key!r} does not fit IntegerSerializer's 32 bits")
        return struct.pack(">i", v)
    if how == "long":
        v = int(key)
        if not -(1 << 63) <= v < (1 << 63):
            raise ValueError(f"--key {key!r} does not fit LongSerializer's 64 bits")
        return struct.pack(">q", v)
    return bytes.fromhex(key)


def int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n > INT_MAX else n


def unkeyed(kind: str, n: int, available: list[int], records: int, rng: random.Random,
            counter_start: int, batch_records: int) -> list[dict]:
    """The partition of each of ``records`` unkeyed records, with the values that chose it."""
    from scenarios.partitioners import Partitioners
    out = []
    if kind == "pre-2.4":
        counter = counter_start
        for _ in range(records):
            value, counter = counter, int32(counter + 1)  # AtomicInteger.getAndIncrement wraps around
            pool = available or list(range(n))
            idx = to_positive(value) % len(pool)
            out.append({"partition": pool[idx], "counter": value, "to_positive": to_positive(value), "index": idx,
                        "pool": len(pool)})
        return out
    if kind in ("sticky", "round-robin"):
        # the simulator's own partitioners: RoundRobinPartitioner and StickyPartitionCache (scenarios/partitioners.py)
        parts = Partitioners(rng)
        for i in range(records):
            if kind == "round-robin":
                out.append({"partition": parts.round_robin("t", n, available)})
            else:
                out.append({"partition": parts.sticky("t", n, available, batch_records), "batch": i // batch_records})
        return out
    # builtin (KIP-794): a new random pick after each batch, uniform over the available partitions
    current = None
    for i in range(records):
        if i % batch_records == 0:
            pool = available or list(range(n))
            current = pool[to_positive(rng.getrandbits(32)) % len(pool)]
        out.append({"partition": current, "batch": i // batch_records})
    return out


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ValueError as e:
        print(f"kgroup partition: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    n = args.partitions
    if n < 1:
        raise ValueError("--partitions must be >= 1")
    if args.records < 0 or args.batch_records < 1:
        raise ValueError("--records must be >= 0 and --batch-records >= 1")
    if not args.key and not args.records:
        raise ValueError("give --key KEY (repeatable) and/or --records R")
    try:
        unavailable = {int(x) for x in args.unavailable.split(",") if x.strip()}
    except ValueError:
        raise ValueError(f"--unavailable {args.unavailable!r}: expected partition numbers like 1,2") from None
    if any(not 0 <= p < n for p in unavailable):
        raise ValueError(f"--unavailable: partitions are 0..{n - 1}")
    if args.explicit is not None and not 0 <= args.explicit < n:
        raise ValueError(f"--explicit {args.explicit}: partitions are 0..{n - 1}")
    available = [p for p in range(n) if p not in unavailable]
    rng = random.Random(args.seed)
    counter_start = args.counter_start if args.counter_start is not None else int32(rng.getrandbits(32))
    if not INT_MIN <= counter_start <= INT_MAX:
        raise ValueError("--counter-start must be a 32-bit int")
    keys = []
    for k in args.key:
        try:
            data = serialize(k, args.key_serializer)
        except ValueError as e:
            raise ValueError(str(e) if "--key" in str(e) else f"--key {k!r}: not {args.key_serializer}") from None
        h = murmur2(data)
        keys.append({"key": k, "bytes": data.hex(), "murmur2": h, "to_positive": to_positive(h),
                     "partition": args.explicit if args.explicit is not None else to_positive(h) % n})
    rows = unkeyed(args.partitioner, n, available, args.records, rng, counter_start, args.batch_records)
    if args.explicit is not None:
        rows = [{"partition": args.explicit} for _ in rows]
    if args.json:
        print(json.dumps({"partitions": n, "available": available, "explicit": args.explicit, "keys": keys,
                          "partitioner": args.partitioner, "counter_start": counter_start, "records": rows},
                         indent=2))
        return 0
    if args.explicit is not None:
        print(f"every record carries partition {args.explicit} (ProducerRecord.partition): the partitioner is not "
              "called")
    if keys:
        print(f"records with a key -> toPositive(murmur2(serialized key)) % {n} (all partitions; every Kafka "
              f"version; {args.key_serializer} serializer)")
        for k in keys:
            print(f"  key {k['key']!r:12} bytes {k['bytes']:<16} murmur2 {k['murmur2']:>11}  "
                  f"toPositive {k['to_positive']:>10}  % {n} = partition {k['partition']}")
    if rows and args.explicit is None:
        pool = f"available partitions {available}" + (f" (no leader: {sorted(unavailable)})" if unavailable else "")
        if args.partitioner == "pre-2.4":
            print(f"records without a key, DefaultPartitioner before 2.4 (round-robin): counter starts at "
                  f"{counter_start}; {pool}")
            for i, r in enumerate(rows):
                print(f"  record {i}: counter {r['counter']:>11}  toPositive {r['to_positive']:>10}  "
                      f"% {r['pool']} = {r['index']} -> partition {r['partition']}")
        elif args.partitioner == "round-robin":
            print(f"records without a key, RoundRobinPartitioner (KIP-369): counter from 0; {pool}")
            print("  " + " ".join(f"{r['partition']}" for r in rows))
        else:
            what = ("2.4-3.2 sticky partitioner (KIP-480): a random other partition at each new batch"
                    if args.partitioner == "sticky" else
                    "3.3+ built-in partitioner (KIP-794): a uniform random pick after each batch")
            print(f"records without a key, {what}; {args.batch_records} records per batch; {pool}")
            by_batch: dict[int, list[int]] = {}
            for r in rows:
                by_batch.setdefault(r["batch"], []).append(r["partition"])
            for b, ps in by_batch.items():
                print(f"  batch {b}: {len(ps)} record(s) -> partition {ps[0]}")
    elif rows:
        print(f"  {len(rows)} record(s) without a key -> partition {args.explicit}")
    return 0
