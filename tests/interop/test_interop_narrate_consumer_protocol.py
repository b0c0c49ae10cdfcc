"""``kgroup serve --narrate`` tells a KIP-848 consumer group's steps (``group.protocol=consumer``) as real
confluent-kafka consumers (librdkafka) go through them, in English and Chinese.

The story: ``a`` joins alone, ``b`` joins, ``b`` is killed (no leave: fenced when its session expires), ``a``
closes. What is checked comes from KIP-848's rules (Kafka 4.4 ``GroupMetadataManager``, ``CurrentAssignmentBuilder``)
and from what the clients themselves report (the partitions librdkafka hands the application), not from the
narrator:

* a new group starts at epoch 1 (KAFKA-20268); every join or leave bumps the group epoch by one;
* the target assignment is computed by the coordinator with the default server assignor (``uniform``, the first
  of ``group.consumer.assignors``): 4 partitions over 2 members, 2 each;
* revocation before assignment: ``a`` stays at its epoch until it has released the partitions moving to ``b``, and
  only then does ``b`` receive them -- the narrated partitions are those the clients report;
* a killed member is fenced by the session timeout; a closing one leaves with member epoch -1.

Every wait is bounded.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import pytest

from harness import consumer, consumer848, wait_all, wait_cover

pytestmark = pytest.mark.interop
pytest.importorskip("confluent_kafka")

SESSION_MS = 3000


class Serve:
    """``kgroup serve --narrate`` in a subprocess; its stdout read by a thread."""

    def __init__(self, lang: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kgroup", "serve", "--brokers", "1", "--port", "0", "--topic", "orders:4",
             "--narrate", "--lang", lang, "--group-consumer-min-session-timeout-ms", "1000",
             "--group-consumer-session-timeout-ms", str(SESSION_MS), "--group-consumer-min-heartbeat-interval-ms",
             "100", "--group-consumer-heartbeat-interval-ms", "300", "--group-min-session-timeout-ms", "1000"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        assert "bootstrap=" in first, first + self.proc.stderr.read()
        self.bootstrap = first.strip().split("bootstrap=")[1]
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 30.0, after: int = 0) -> re.Match:
        """The first match of ``pattern`` at or after character ``after`` of the narration, waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.compile(pattern).search(self.text(), after)
            if m:
                return m
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} within {timeout}s in:\n{self.text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def serve_factory():
    started: list[Serve] = []

    def make(lang: str) -> Serve:
        s = Serve(lang)
        started.append(s)
        return s
    yield make
    for s in started:
        s.stop()


def parts(text: str) -> list[int]:
    """``orders-[0,1]`` -> [0, 1]; ``[]`` -> []."""
    m = re.search(r"orders-\[([\d,]+)\]", text)
    return [int(p) for p in m.group(1).split(",")] if m else []


WORDS = {
    "en": {
        "created": r"consumer group g created .* group epoch 1 with an empty target assignment \(KAFKA-20268\)",
        "join": r"ConsumerGroupHeartbeat from {c} with member epoch 0 = join: new member ({c}/\S+…) subscribes to "
                r"\[orders\].*coordinator's default, uniform\)",
        "bump": r"group epoch {old} -> {new} \({m} {how}\)",
        "joined": "joined", "left": "left",
        "target": r"target assignment for epoch {e}, computed by the coordinator itself with the server-side "
                  r"assignor 'uniform'",
        "target_member": r"\n\s+{m} -> (orders-\[[\d,]+\]|\[\])",
        "stable": r"member {m}: member epoch {old} -> {new}, STABLE: owns its whole target (orders-\[[\d,]+\])",
        "unreleased": r"member {m}: member epoch 0 -> {e} \(UNRELEASED_PARTITIONS\): owns \[\]; waits for "
                      r"(orders-\[[\d,]+\])",
        "unrevoked": r"member {m} stays at member epoch {e} \(UNREVOKED_PARTITIONS\): it must first revoke "
                     r"(orders-\[[\d,]+\]), now in other members' targets, and keeps (orders-\[[\d,]+\])",
        "revoked": r"member {m} revoked (orders-\[[\d,]+\]) .*member epoch {old} -> {new}, STABLE",
        "received": r"member {m} receives (orders-\[[\d,]+\]), released by their previous owner",
        "fenced": r"member {m} was fenced: no heartbeat within the session timeout .*its partitions "
                  r"(orders-\[[\d,]+\]) are free",
        "left_line": r"member {m} left the group \(ConsumerGroupHeartbeat with member epoch -1\)",
        "answer": r"<- ConsumerGroupHeartbeat to {m}: member epoch {e}, assignment (orders-\[[\d,]+\])",
    },
    "zh": {
        "created": r"创建了消费者组 g（KIP-848 新协议.*group epoch 1 开始，目标分配为空（KAFKA-20268）",
        "join": r"{c} 发来 member epoch 为 0 的 ConsumerGroupHeartbeat，即申请加入：新成员 ({c}/\S+…) 订阅 \[orders\]，"
                r".*服务端分区分配策略 未指定（没有设置 group.remote.assignor，用协调者的默认策略 uniform）",
        "bump": r"group epoch {old} -> {new}（{m} {how}）",
        "joined": "加入", "left": "离开",
        "target": r"协调者自己用服务端分区分配策略 'uniform' 算出了 epoch {e} 的目标分配",
        "target_member": r"\n\s+{m} 的目标：(orders-\[[\d,]+\]|\[\])",
        "stable": r"成员 {m}：member epoch {old} -> {new}，STABLE：已拥有全部目标分区 (orders-\[[\d,]+\])",
        "unreleased": r"成员 {m}：member epoch 0 -> {e}（UNRELEASED_PARTITIONS）：持有 \[\]；(orders-\[[\d,]+\]) 还要等",
        "unrevoked": r"成员 {m} 停在 member epoch {e}（UNREVOKED_PARTITIONS）：必须先撤销 (orders-\[[\d,]+\])（它们已经分给了"
                     r"其他成员），保留 (orders-\[[\d,]+\])；.*先撤销，后分配",
        "revoked": r"成员 {m} 已撤销 (orders-\[[\d,]+\])（心跳里不再上报这些分区）：member epoch {old} -> {new}，STABLE",
        "received": r"原持有者已释放 (orders-\[[\d,]+\])，分给成员 {m}",
        "fenced": r"成员 {m} 被隔离（fenced）：在会话超时（group.consumer.session.timeout.ms）内没有发送心跳；它的分区 "
                  r"(orders-\[[\d,]+\]) 可以分给其他成员了",
        "left_line": r"成员 {m} 离开了消费者组（发送 member epoch 为 -1 的 ConsumerGroupHeartbeat）",
        "answer": r"<- ConsumerGroupHeartbeat 响应 {m}：member epoch {e}，分配 (orders-\[[\d,]+\])",
    },
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_serve_narrates_a_kip848_group_of_real_consumers(lang, serve_factory, agents):
    W = WORDS[lang]
    q = re.escape
    srv = serve_factory(lang)

    # a joins an empty group: epoch 1 -> 2, the whole topic
    a = consumer848(srv.bootstrap, "orders", "g", name="a")
    agents.append(a)
    srv.wait_for(W["created"])
    ma = srv.wait_for(W["join"].format(c="a")).group(1)
    srv.wait_for(W["bump"].format(old=1, new=2, m=q(ma), how=W["joined"]))
    srv.wait_for(W["target"].format(e=2))
    assert parts(srv.wait_for(W["stable"].format(m=q(ma), old=0, new=2)).group(1)) == [0, 1, 2, 3]
    assert parts(srv.wait_for(W["answer"].format(m=q(ma), e=2)).group(1)) == [0, 1, 2, 3]
    wait_all([a], lambda: a.assignment is not None and sorted(a.assignment) == [0, 1, 2, 3], 30, "a owns orders")

    # b joins: epoch 3; uniform gives each two; a revokes before b receives. (b starts more than
    # group.consumer.assignment.interval.ms after the last computation, so the new target is computed at once.)
    time.sleep(1.2)
    b = consumer848(srv.bootstrap, "orders", "g", name="b")
    agents.append(b)
    mb = srv.wait_for(W["join"].format(c="b")).group(1)
    srv.wait_for(W["bump"].format(old=2, new=3, m=q(mb), how=W["joined"]))
    after = srv.wait_for(W["target"].format(e=3)).end()
    # the per-member target lines follow the header; the server's output is read line by line, so wait for them
    to_b = parts(srv.wait_for(W["target_member"].format(m=q(mb)), after=after).group(1))
    to_a = parts(srv.wait_for(W["target_member"].format(m=q(ma)), after=after).group(1))
    assert len(to_b) == len(to_a) == 2 and sorted(to_a + to_b) == [0, 1, 2, 3]
    assert parts(srv.wait_for(W["unreleased"].format(m=q(mb), e=3)).group(1)) == to_b
    unrevoked = srv.wait_for(W["unrevoked"].format(m=q(ma), e=2))
    assert (parts(unrevoked.group(1)), parts(unrevoked.group(2))) == (to_b, to_a)
    revoked = srv.wait_for(W["revoked"].format(m=q(ma), old=2, new=3))
    received = srv.wait_for(W["received"].format(m=q(mb)))
    assert parts(revoked.group(1)) == parts(received.group(1)) == to_b
    assert revoked.start() < received.start()          # revocation before assignment
    # what the narration says is what librdkafka hands the applications
    wait_all([a, b], lambda: (sorted(a.assignment or []), sorted(b.assignment or [])) == (to_a, to_b), 30,
             "the narrated split")

    # b is killed: no leave, fenced after the session timeout; a gets everything at epoch 5
    b.kill()
    fenced = srv.wait_for(W["fenced"].format(m=q(mb)), timeout=SESSION_MS / 1000 + 30)
    assert parts(fenced.group(1)) == to_b
    srv.wait_for(W["bump"].format(old=3, new=4, m=q(mb), how=W["left"]))
    assert parts(srv.wait_for(W["stable"].format(m=q(ma), old=3, new=4)).group(1)) == [0, 1, 2, 3]
    wait_all([a], lambda: sorted(a.assignment or []) == [0, 1, 2, 3], 30, "a owns orders again")

    # a closes: a leave heartbeat (epoch -1), the group empties
    a.close()
    srv.wait_for(W["left_line"].format(m=q(ma)))
    srv.wait_for(W["bump"].format(old=4, new=5, m=q(ma), how=W["left"]))


def test_serve_narrates_a_classic_member_in_a_consumer_group(serve_factory, agents):
    """A kafka-python (classic protocol) consumer joins a KIP-848 group: the coordinator translates its JoinGroup
    into the consumer group's steps (``classicGroupJoinToConsumerGroup``) -- its JoinGroup answer has its member
    epoch as generation and no leader, the target comes from the server assignor, and its partitions are released
    by the KIP-848 member first."""
    pytest.importorskip("kafka")
    srv = serve_factory("en")
    new = consumer848(srv.bootstrap, "orders", "g", name="new")
    agents.append(new)
    wait_cover([new], 4)
    time.sleep(1.2)  # past group.consumer.assignment.interval.ms: the classic member's join computes a target
    old = consumer("kafka-python", srv.bootstrap, "orders", "g", name="old")
    agents.append(old)
    wait_cover([new, old], 4, timeout=60)
    m_old = srv.wait_for(r"ConsumerGroupHeartbeat from old with member epoch 0 = join: new member (old/\S+…) "
                         r"subscribes to \[orders\].*\n\s+a classic-protocol consumer \(JoinGroup/SyncGroup\) in a "
                         r"consumer group").group(1)
    srv.wait_for(rf"<- JOIN_GROUP to {re.escape(m_old)}: generation \d+ \(its member epoch\), protocol '\w+'; no "
                 r"leader and no subscriptions to assign")
    # the classic member receives exactly what its client reports, after the KIP-848 member revoked it
    received = srv.wait_for(rf"member {re.escape(m_old)} receives (orders-\[[\d,]+\])")
    revoked = srv.wait_for(r"member new/\S+… revoked (orders-\[[\d,]+\])")
    assert revoked.start() < received.start()
    assert parts(received.group(1)) == parts(revoked.group(1)) == sorted(old.assignment)


def test_serve_narrates_an_online_upgrade_and_downgrade(serve_factory, agents):
    """A classic confluent-kafka group; a KIP-848 consumer joins: the classic group is converted to a consumer
    group with its member and partitions carried over (``convertToConsumerGroup``, migration policy
    bidirectional); the KIP-848 consumer leaves: the group is converted back and its classic member rejoins
    (``convertToClassicGroup``: a Stable classic group, then a rebalance)."""
    srv = serve_factory("en")
    old = consumer("confluent-kafka", srv.bootstrap, "orders", "g", name="old")
    agents.append(old)
    wait_cover([old], 4)
    time.sleep(1.2)
    new = consumer848(srv.bootstrap, "orders", "g", name="new")
    agents.append(new)
    wait_cover([old, new], 4, timeout=60)
    up = srv.wait_for(r"group g deleted \(upgraded the classic group to a consumer group\)\n.*classic group g "
                      r"converted to a consumer group \(online upgrade.*\n.*(old/\S+…) carried over from the classic "
                      r"group \(subscribes to \[orders\]\)")
    m_old = up.group(1)
    srv.wait_for(rf"member {re.escape(m_old)}: member epoch 0 -> (\d+), STABLE: owns its whole target "
                 r"orders-\[0,1,2,3\]")
    m_new = srv.wait_for(r"ConsumerGroupHeartbeat from new with member epoch 0 = join: new member (new/\S+…)").group(1)
    assert not re.search(rf"ConsumerGroupHeartbeat from old with member epoch 0", srv.text())
    received = srv.wait_for(rf"member {re.escape(m_new)} receives (orders-\[[\d,]+\])")
    assert parts(received.group(1)) == sorted(new.assignment)

    new.close()
    down = srv.wait_for(rf"{re.escape(m_old)} \(classic protocol\) is carried back into the classic group")
    srv.wait_for(rf"member {re.escape(m_new)} left the group \(ConsumerGroupHeartbeat with member epoch -1\)")
    back = srv.wait_for(r"consumer group g converted back to a classic group \(online downgrade")
    rebuilt = srv.wait_for(r"classic group g rebuilt from the consumer group at generation \d+ .*Stable")
    prepare = srv.wait_for(r"group g: Stable -> PreparingRebalance at generation \d+: Downgrade group g from "
                           r"consumer to classic")
    assert down.start() < back.start() < rebuilt.start() < prepare.start()
    assert "was fenced" not in srv.text()
    wait_cover([old], 4, timeout=60)
    # the classic member rejoins and leads the classic group again
    srv.wait_for(r"group Stable at generation \d+", after=prepare.end())
