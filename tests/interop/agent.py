"""One real Kafka client in its own process, driven by tests/interop (see harness.py).

    python agent.py '{"lib": "kafka-python" | "aiokafka" | "confluent-kafka", "mode": "consume" | "produce", ...}'

consume: subscribes ``topic`` (a ``^regex`` with confluent-kafka) in ``group`` and prints JSON lines on stdout --
``{"ev": "assigned", "partitions": [...]}`` whenever its assignment changes, ``{"ev": "msg", "key", "value",
"partition", "offset"}`` per record -- until it reads ``close`` on stdin (then it closes cleanly, i.e. leaves the
group, prints ``{"ev": "closed"}`` and exits 0) or is killed.
produce: sends ``keys`` (value = ``value_prefix`` + key) with the library's default partitioner (confluent-kafka:
``murmur2_random``, the Java client's), prints ``{"ev": "produced", "key", "partition", "offset"}`` per record and
``{"ev": "done"}``.

confluent-kafka only: ``group_protocol: "consumer"`` joins with KIP-848's protocol (``group.protocol=consumer``;
the session and heartbeat interval are then the broker's), ``remote_assignor`` sets ``group.remote.assignor``,
``instance_id`` sets ``group.instance.id``; ``manual_commit`` commits each record's next offset synchronously before
polling again (``{"ev": "committed", ...}``, or ``{"ev": "commit_error", ...}``).

Every run has a hard limit (``max_seconds``, SIGALRM): a hang can never outlive its test.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading

cfg = json.loads(sys.argv[1])
LIB = cfg["lib"]
signal.signal(signal.SIGALRM, lambda *a: os._exit(3))
signal.alarm(int(cfg.get("max_seconds", 120)))

if cfg.get("debug_log"):  # a client-side debug log, for investigating a failure
    import logging
    logging.basicConfig(filename=cfg["debug_log"], level=logging.DEBUG,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")

_out_lock = threading.Lock()


def emit(ev: str, **kw) -> None:
    with _out_lock:
        sys.stdout.write(json.dumps({"ev": ev, **kw}) + "\n")
        sys.stdout.flush()


commands: "queue.Queue[str]" = queue.Queue()


def _stdin() -> None:
    for line in sys.stdin:
        commands.put(line.strip())
    commands.put("close")  # the test went away: leave


threading.Thread(target=_stdin, daemon=True).start()


def _dec(b):
    return None if b is None else b.decode("utf-8", "replace")


def want_close() -> bool:
    try:
        return commands.get_nowait() == "close"
    except queue.Empty:
        return False


# --- consumers --------------------------------------------------------------------------------------------------

def consume_kafka_python() -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    names = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "sticky": StickyPartitionAssignor}
    kw = {}
    if cfg.get("assignors"):
        kw["partition_assignment_strategy"] = [names[a] for a in cfg["assignors"]]
    if cfg.get("metadata_max_age_ms"):
        kw["metadata_max_age_ms"] = cfg["metadata_max_age_ms"]
    c = KafkaConsumer(bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"], client_id=cfg["client_id"],
                      auto_offset_reset=cfg.get("offset_reset", "latest"),
                      session_timeout_ms=cfg.get("session_timeout_ms", 10000),
                      heartbeat_interval_ms=cfg.get("heartbeat_interval_ms", 3000),
                      auto_commit_interval_ms=500, enable_auto_commit=cfg.get("auto_commit", True), **kw)
    c.subscribe([cfg["topic"]])
    last = None
    while not want_close():
        # Not shorter: kafka-python 3.0.12 can drop the completion of a JoinGroup/SyncGroup that finishes after
        # poll() timed out while the leader's rejoin was triggered by a metadata change (the member then stays
        # unjoined, with no heartbeats, until its session expires) -- see docs/compatibility.md.
        batch = c.poll(timeout_ms=1000)
        for tp, msgs in batch.items():
            for m in msgs:
                emit("msg", key=_dec(m.key), value=_dec(m.value), partition=m.partition, offset=m.offset)
        a = sorted(tp.partition for tp in c.assignment())
        if a != last:
            try:  # resolve positions (auto.offset.reset) before announcing
                for tp in c.assignment():
                    c.position(tp)
            except Exception:  # noqa: BLE001 - revoked by a rebalance meanwhile: look again next round
                continue
            last = a
            emit("assigned", partitions=a)
    c.close()
    emit("closed")


def consume_confluent() -> None:
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "client.id": cfg["client_id"],
            "auto.offset.reset": cfg.get("offset_reset", "latest"),
            "auto.commit.interval.ms": 500, "topic.metadata.refresh.interval.ms": 2000, "log_level": 3,
            "enable.auto.commit": cfg.get("auto_commit", True) and not cfg.get("manual_commit")}
    if cfg.get("group_protocol") == "consumer":  # KIP-848: session and heartbeat interval are the broker's
        conf["group.protocol"] = "consumer"
        if cfg.get("remote_assignor"):
            conf["group.remote.assignor"] = cfg["remote_assignor"]
    else:
        conf["session.timeout.ms"] = cfg.get("session_timeout_ms", 10000)
        conf["heartbeat.interval.ms"] = cfg.get("heartbeat_interval_ms", 3000)
        if cfg.get("assignors"):
            conf["partition.assignment.strategy"] = ",".join(cfg["assignors"])
    if cfg.get("instance_id"):
        conf["group.instance.id"] = cfg["instance_id"]
    if cfg.get("metadata_max_age_ms"):
        conf["topic.metadata.refresh.interval.ms"] = cfg["metadata_max_age_ms"]
    c = Consumer(conf)
    c.subscribe([cfg["topic"]])
    last = None
    while not want_close():
        m = c.poll(0.1)
        a = sorted(tp.partition for tp in c.assignment())
        if a != last:
            last = a
            emit("assigned", partitions=a)
        if m is not None and not m.error():
            emit("msg", key=_dec(m.key()), value=_dec(m.value()), partition=m.partition(), offset=m.offset())
            if cfg.get("manual_commit"):
                try:
                    c.commit(message=m, asynchronous=False)
                    emit("committed", partition=m.partition(), offset=m.offset() + 1)
                except Exception as e:  # noqa: BLE001 - reported to the test
                    emit("commit_error", partition=m.partition(), offset=m.offset() + 1, error=str(e))
    c.close()
    emit("closed")


def consume_aiokafka() -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    names = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "sticky": StickyPartitionAssignor}

    async def main() -> None:
        kw = {}
        if cfg.get("assignors"):
            kw["partition_assignment_strategy"] = tuple(names[a] for a in cfg["assignors"])
        if cfg.get("metadata_max_age_ms"):
            kw["metadata_max_age_ms"] = cfg["metadata_max_age_ms"]
        c = AIOKafkaConsumer(cfg["topic"], bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"],
                             client_id=cfg["client_id"], auto_offset_reset=cfg.get("offset_reset", "latest"),
                             session_timeout_ms=cfg.get("session_timeout_ms", 10000),
                             heartbeat_interval_ms=cfg.get("heartbeat_interval_ms", 3000),
                             auto_commit_interval_ms=500, enable_auto_commit=cfg.get("auto_commit", True), **kw)
        await c.start()
        last = None
        while not want_close():
            batch = await c.getmany(timeout_ms=100)
            for tp, msgs in batch.items():
                for m in msgs:
                    emit("msg", key=_dec(m.key), value=_dec(m.value), partition=m.partition, offset=m.offset)
            a = sorted(tp.partition for tp in c.assignment())
            if a != last:
                try:
                    for tp in c.assignment():
                        await c.position(tp)
                except Exception:  # noqa: BLE001 - revoked by a rebalance meanwhile: look again next round
                    continue
                last = a
                emit("assigned", partitions=a)
        await c.stop()
        emit("closed")

    asyncio.run(main())


# --- producers --------------------------------------------------------------------------------------------------

def produce() -> None:
    keys, topic, prefix = cfg["keys"], cfg["topic"], cfg.get("value_prefix", "v-")
    if LIB == "kafka-python":
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=cfg["bootstrap"], client_id=cfg["client_id"])
        for k in keys:
            md = p.send(topic, key=k.encode(), value=(prefix + k).encode()).get(timeout=20)
            emit("produced", key=k, partition=md.partition, offset=md.offset)
        p.close(timeout=5)
    elif LIB == "confluent-kafka":
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": cfg["bootstrap"], "client.id": cfg["client_id"],
                      "partitioner": "murmur2_random", "enable.idempotence": True, "linger.ms": 5})
        errors = []

        def cb(err, m):
            if err is not None:
                errors.append(str(err))
            else:
                emit("produced", key=_dec(m.key()), partition=m.partition(), offset=m.offset())
        for k in keys:
            p.produce(topic, key=k.encode(), value=(prefix + k).encode(), on_delivery=cb)
        left = p.flush(20)
        if errors or left:
            emit("error", errors=errors, undelivered=left)
            sys.exit(1)
    else:
        import asyncio

        from aiokafka import AIOKafkaProducer

        async def main() -> None:
            p = AIOKafkaProducer(bootstrap_servers=cfg["bootstrap"], client_id=cfg["client_id"],
                                 enable_idempotence=True)
            await p.start()
            try:
                for k in keys:
                    md = await p.send_and_wait(topic, key=k.encode(), value=(prefix + k).encode())
                    emit("produced", key=k, partition=md.partition, offset=md.offset)
            finally:
                await p.stop()
        asyncio.run(main())
    emit("done")


if __name__ == "__main__":
    if cfg["mode"] == "produce":
        produce()
    elif LIB == "kafka-python":
        consume_kafka_python()
    elif LIB == "confluent-kafka":
        consume_confluent()
    elif LIB == "aiokafka":
        consume_aiokafka()
    else:
        raise SystemExit(f"unknown lib {LIB}")
