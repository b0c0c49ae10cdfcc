"""Compaction of the KIP-848 consumer group records (issue 14, item 3): after consumer groups churn -- members
joining, heartbeating through their reconciliations, committing and leaving, thousands of group epochs -- how many
records the ``__consumer_offsets`` log holds, how large its files are, and how long a restart from ``--data-dir``
takes to load it, with compaction (``kgroup.offsets.compaction.min.records``, Kafka's cleaner settings) and with
compaction off, measured side by side in one run. The loaded groups are checked against the live ones (epochs,
assignments, members; member order aside, see coordinator/log.py).

Usage: python bench/cg_compaction.py [--steps 20000] [--groups 20] [--seed 14]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
import uuid

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from broker.storage import OffsetsLogStorage  # noqa: E402
from coordinator import CoordinatorConfig, GroupCoordinatorService, RequestContext  # noqa: E402
from coordinator.cluster import topic_id  # noqa: E402
from coordinator.replay import state_snapshot  # noqa: E402
from protocol.messages import ConsumerGroupHeartbeatRequest, OffsetCommitRequest  # noqa: E402
from protocol.uuids import uuid_from_string, uuid_to_string  # noqa: E402

TOPICS = {"foo": 12, "bar": 6}
Q = ConsumerGroupHeartbeatRequest
NAMES = {uuid_to_string(topic_id(n)): n for n in TOPICS}  # topic id -> name


def service(data_dir: str, min_records: int, start_ms: int = 1000) -> GroupCoordinatorService:
    conf = CoordinatorConfig.create({"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
                                     "kgroup.offsets.compaction.min.records": min_records,
                                     "log.cleaner.delete.retention.ms": 60_000,
                                     "group.consumer.session.timeout.ms": 45_000})
    svc = GroupCoordinatorService(num_brokers=1, config=conf, seed=7, start_ms=start_ms,
                                  storage=OffsetsLogStorage(data_dir, fsync="never"))
    for name, n in TOPICS.items():
        svc.cluster.create_topic(name, n, 1)
    return svc


def churn(svc: GroupCoordinatorService, steps: int, groups: int, seed: int) -> dict:
    rng = random.Random(seed)
    members: dict[tuple[str, str], tuple[int, dict]] = {}
    now, rid, beats = 1000, 0, 0
    gids = [f"cg-{i}" for i in range(groups)]

    def send(req, version):
        nonlocal rid
        rid += 1
        return svc.handle(0, req, RequestContext(rid, version, client_id="bench"), now).answer

    def owned_tps(owned):
        return [Q.TopicPartitions(topic_id=uuid_from_string(t), partitions=ps) for t, ps in owned.items()]

    for _ in range(steps):
        gid = rng.choice(gids)
        mine = [m for (g, m) in members if g == gid]
        x = rng.random()
        if not mine or (x < 0.08 and len(mine) < 8):
            mid = str(uuid.UUID(int=rng.getrandbits(128)))
            r = send(Q(group_id=gid, member_id=mid, member_epoch=0, rebalance_timeout_ms=5000,
                       subscribed_topic_names=rng.choice([["foo"], ["foo", "bar"]]), topic_partitions=[]), 1)
            members[(gid, mid)] = (r.member_epoch, {})
        elif x < 0.14 and len(mine) > 1:
            mid = rng.choice(mine)
            send(Q(group_id=gid, member_id=mid, member_epoch=-1), 1)
            del members[(gid, mid)]
        elif x < 0.30:
            mid = rng.choice(mine)
            epoch, owned = members[(gid, mid)]
            topics = [OffsetCommitRequest.Topic(name=n, partitions=[OffsetCommitRequest.Topic.Partition(
                partition_index=p, committed_offset=rng.randrange(10 ** 6)) for p in owned[t]])
                for t, n in NAMES.items() if owned.get(t)]
            if topics:
                send(OffsetCommitRequest(group_id=gid, generation_id_or_member_epoch=epoch, member_id=mid,
                                         topics=topics), 9)
        else:
            for mid in mine:
                epoch, owned = members[(gid, mid)]
                r = send(Q(group_id=gid, member_id=mid, member_epoch=epoch, topic_partitions=owned_tps(owned)), 1)
                beats += 1
                if r.error_code:
                    del members[(gid, mid)]
                    continue
                if r.assignment is not None:
                    owned = {uuid_to_string(tp.topic_id): sorted(tp.partitions)
                             for tp in r.assignment.topic_partitions}
                members[(gid, mid)] = (r.member_epoch, owned)
        now += rng.choice([10, 100, 1000])
        svc.poll(now)
    return {"heartbeats": beats, "live_members": len(members), "now": now}


def order_free(snap: dict) -> dict:
    return {gid: dict(g, members=dict(g["members"]), server_assignors=dict(g["server_assignors"]),
                      resolved_regular_expressions=dict(g["resolved_regular_expressions"]))
            for gid, g in snap["consumer_groups"].items()}


def dir_bytes(path: str) -> tuple[int, int]:
    """(bytes of the files a restart reads: snapshot + active segment, bytes of the rolled history)."""
    st = OffsetsLogStorage(path)
    hist = sum(os.path.getsize(p) for _, _, p in st.history_segments(0))
    load = sum(os.path.getsize(p) for p in (st.path(0), st.snapshot_path(0)) if os.path.exists(p))
    return load, hist


def measure(steps: int, groups: int, seed: int, min_records: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="kgroup-cgc-")
    try:
        svc = service(tmp, min_records)
        t0 = time.perf_counter()
        info = churn(svc, steps, groups, seed)
        churn_s = time.perf_counter() - t0
        log = svc.logs[0]
        live = svc.shard_for("cg-0").runtime.state
        before = order_free(state_snapshot(live))
        epochs = sum(g.group_epoch for g in live.consumer_groups)
        for lg in svc.logs.values():
            lg.close()
        load_b, hist_b = dir_bytes(tmp)
        t0 = time.perf_counter()
        svc2 = service(tmp, min_records, start_ms=info["now"])
        svc2.shard_for("cg-0")
        load_s = time.perf_counter() - t0
        after = order_free(state_snapshot(svc2.shard_for("cg-0").runtime.state))
        return dict(info, records=log.next_offset, kept=len(log.entries), compactions=log.compactions,
                    group_epochs=epochs, load_bytes=load_b, history_bytes=hist_b, load_s=load_s, churn_s=churn_s,
                    same_state=after == before)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--seed", type=int, default=14)
    a = ap.parse_args()
    print(f"{a.groups} consumer groups, {a.steps:,} churn steps (seed {a.seed})")
    print(f"{'compaction':<22}{'heartbeats':>11}{'group epochs':>13}{'records written':>16}{'records kept':>13}"
          f"{'live members':>13}{'bytes loaded':>13}{'restart load':>13}{'same state':>11}")
    for label, mr in (("off", 2 ** 62), ("min.records 10,000", 10_000), ("min.records 1,000", 1_000)):
        r = measure(a.steps, a.groups, a.seed, mr)
        print(f"{label:<22}{r['heartbeats']:>11,}{r['group_epochs']:>13,}{r['records']:>16,}{r['kept']:>13,}"
              f"{r['live_members']:>13,}{r['load_bytes']:>13,}{r['load_s'] * 1000:>10.0f} ms{str(r['same_state']):>11}",
              flush=True)


if __name__ == "__main__":
    main()
