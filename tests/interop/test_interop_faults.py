"""Fault control (broker/faults.py) under real clients: what a user of `kgroup_cluster.control` / `kgroup ctl`
sees their consumers do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from harness import SESSION_MS, consumer, produce, wait_all, wait_cover

pytestmark = pytest.mark.interop
pytest.importorskip("kafka")
pytest.importorskip("aiokafka")
pytest.importorskip("confluent_kafka")

KGROUP = [sys.executable, "-m", "kgroup"]


def ctl(cluster, *args: str) -> object:
    r = subprocess.run([*KGROUP, "ctl", "--bootstrap", cluster.bootstrap, *args], capture_output=True, text=True,
                       timeout=30, cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def members(cluster, group):
    return sorted(cluster.assignment(group))


def test_ctl_expire_member_makes_the_client_rejoin(kgroup_cluster, agents):
    cluster = kgroup_cluster
    cluster.create_topic("orders", 4)
    a = consumer("kafka-python", cluster.bootstrap, "orders", "exp", name="exp-a")
    b = consumer("kafka-python", cluster.bootstrap, "orders", "exp", name="exp-b")
    agents += [a, b]
    wait_cover(agents, 4)
    before = members(cluster, "exp")
    old_a = [m for m in before if m.startswith("exp-a")]
    expired = ctl(cluster, "expire-member", "exp", "exp-a")
    assert expired == old_a
    # exp-a learns from its next heartbeat (UNKNOWN_MEMBER_ID) and rejoins under a new member id
    wait_all(agents, lambda: len(members(cluster, "exp")) == 2 and not set(old_a) & set(members(cluster, "exp")),
             30, "exp-a to rejoin with a new member id")
    wait_cover(agents, 4)
    d = ctl(cluster, "describe", "exp")
    assert d["group"]["state"] == "Stable" and len(d["group"]["members"]) == 2


def test_frozen_clock_holds_a_dead_members_partitions_until_advanced(kgroup_cluster, agents):
    """A virtual coordinator clock under real clients: while frozen, a killed member is not expired however long
    we wait; advancing the clock by the session timeout expires it at once."""
    cluster = kgroup_cluster
    cluster.create_topic("orders", 4)
    a = consumer("confluent-kafka", cluster.bootstrap, "orders", "frz", name="frz-a")
    b = consumer("confluent-kafka", cluster.bootstrap, "orders", "frz", name="frz-b")
    agents += [a, b]
    wait_cover(agents, 4)
    b.kill()
    time.sleep(0.1)
    cluster.control.freeze_clock()
    time.sleep(SESSION_MS / 1000 * 1.5)
    assert len(members(cluster, "frz")) == 2, "a member expired while the clock was frozen"
    assert len(a.assignment) == 2
    # frozen, every heartbeat of frz-a counts at the frozen instant F (its session ends at F + session timeout);
    # frz-b's last one was >= 100 ms before F
    cluster.control.advance_clock(SESSION_MS - 50)
    assert len(members(cluster, "frz")) == 1
    wait_cover([a], 4, timeout=30)
    cluster.control.thaw_clock()
    wait_cover([a], 4, timeout=10)


def test_move_coordinator_and_stop_its_broker(kgroup_cluster, agents):
    """Clients follow the coordinator (NOT_COORDINATOR -> FindCoordinator) and keep consuming."""
    cluster = kgroup_cluster
    cluster.create_topic("orders", 3, 3)  # replicated: stopping a broker moves its leaderships, loses nothing
    group = "mover"
    agents += [consumer(lib, cluster.bootstrap, "orders", group, name=f"mv-{lib}")
               for lib in ("kafka-python", "aiokafka")]
    wait_cover(agents, 3)
    old = ctl(cluster, "coordinator", group)
    target = (old + 1) % 3
    moved = ctl(cluster, "move-coordinator", group, str(target))
    assert moved["from"] == old and moved["to"] == target
    assert cluster.control.coordinator_of(group) == target
    produce("kafka-python", cluster.bootstrap, "orders", ["a", "b", "c", "d"])
    wait_all(agents, lambda: sum(len(x.messages()) for x in agents) >= 4, 30, "messages after the move")
    # crash the new coordinator: its offsets partition moves to another replica; the group survives
    ctl(cluster, "stop-broker", str(target))
    assert cluster.control.coordinator_of(group) not in (target, -1)
    produce("kafka-python", cluster.bootstrap, "orders", ["e", "f", "g", "h"])
    wait_all(agents, lambda: sum(len(x.messages()) for x in agents) >= 8, 40, "messages after the crash")
    wait_cover(agents, 3)
    ctl(cluster, "start-broker", str(target))
    keys = sorted(m["key"] for x in agents for m in x.messages())
    assert keys == sorted("abcdefgh")


@pytest.mark.parametrize("what", ["heartbeats", "member_requests"])
def test_dropped_heartbeats_expire_the_member(kgroup_cluster, agents, what):
    """Heartbeats only: the member must not commit (an OffsetCommit extends the session too, as on Kafka).
    All of the member's group requests: a partition between member and coordinator, commits or not."""
    cluster = kgroup_cluster
    cluster.create_topic("orders", 4)
    commits = what == "member_requests"
    a = consumer("aiokafka", cluster.bootstrap, "orders", "drop", name="drop-a", auto_commit=commits)
    b = consumer("aiokafka", cluster.bootstrap, "orders", "drop", name="drop-b", auto_commit=commits)
    agents += [a, b]
    wait_cover(agents, 4)
    old_b = [m for m in members(cluster, "drop") if m.startswith("drop-b")]
    if what == "heartbeats":
        rule = cluster.control.drop_heartbeats("drop", "drop-b")
    else:
        rule = ctl(cluster, "drop-member-requests", "drop", "drop-b")
    wait_all(agents, lambda: not set(old_b) & set(members(cluster, "drop")), SESSION_MS / 1000 + 20,
             "drop-b's session to expire")
    cluster.control.clear(rule)
    wait_all(agents, lambda: len(members(cluster, "drop")) == 2, 30, "drop-b to rejoin")
    wait_cover(agents, 4)


def test_fail_next_heartbeats_force_a_rejoin(kgroup_cluster, agents):
    cluster = kgroup_cluster
    cluster.create_topic("orders", 2)
    a = consumer("kafka-python", cluster.bootstrap, "orders", "fail", name="fail-a")
    agents.append(a)
    wait_cover([a], 2)
    gen = cluster.call(lambda: cluster.server.svc.group("fail").generation_id)
    ctl(cluster, "fail-next", "Heartbeat", "1", "REBALANCE_IN_PROGRESS", "--group", "fail")
    wait_all([a], lambda: cluster.call(lambda: cluster.server.svc.group("fail").generation_id) > gen, 20,
             "a rejoin after REBALANCE_IN_PROGRESS")
    wait_cover([a], 2)
    assert ctl(cluster, "describe")["rules"] == []
