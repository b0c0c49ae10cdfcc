"""Narration of KIP-848 consumer groups (kgroup/narrate_cg.py) on the coordinator's own Outputs, in virtual time:
the cases a real client does not show on demand (``tests/interop/test_interop_narrate_consumer_protocol.py`` has the
real-client story).

The coordinator (``GroupCoordinatorService``, real server assignors) is driven with ConsumerGroupHeartbeats as
KIP-848 describes them, and every Output goes to the ``kgroup serve --narrate`` narrator. Expectations follow Kafka's
rules, not the narrator: a target is computed at most once per ``group.consumer.assignment.interval.ms``
(KIP-1263: 1000 ms by default, so a member joining within it gets the *current* target's share at the current
target epoch); a member that does not revoke within its rebalance timeout is fenced
(``GroupMetadataManager.scheduleConsumerGroupRebalanceTimeout``); a static member leaving with epoch -2 keeps its
place until its session expires (``consumerGroupStaticMemberGroupLeave``); a session expiry fences
(``scheduleConsumerGroupSessionTimeout``); an empty group can be deleted.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from coordinator.cluster import topic_id
from coordinator.config import CoordinatorConfig
from coordinator.service import GroupCoordinatorService, RequestContext
from kgroup.catalogue import Catalogue
from kgroup.cli import main
from kgroup.narrate import NarrationContext, ServeNarrator
from protocol.messages import ConsumerGroupHeartbeatRequest, DeleteGroupsRequest
from protocol.uuids import uuid_from_string, uuid_to_string
from tests.kgroup.mermaid_grammar import check

ORDERS = uuid_to_string(topic_id("orders"))
A, B, C = "AAAAAAAAaaaaaaaaaaaaaa", "BBBBBBBBbbbbbbbbbbbbbb", "CCCCCCCCcccccccccccccc"


class Story:
    def __init__(self, lang: str) -> None:
        self.svc = GroupCoordinatorService(num_brokers=1, config=CoordinatorConfig.create(
            {"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1}), seed=7, start_ms=1000)
        self.svc.cluster.create_topic("orders", 4, 1)
        self.now = 1000
        self.rid = 0
        self.lines: list[str] = []
        self.records: list[dict] = []    # what a kgroup serve --data-dir would hold (and more: every record)
        ctx = NarrationContext(offsets_partitions=1, partitions_of={"orders": 4}, wide_groups=False,
                               consumer_assignor="uniform", topic_names=lambda: list(self.svc.cluster.topics),
                               live=True)
        self.narrator = ServeNarrator(Catalogue(lang), ctx, self.lines.append, lambda: self.now)

    def take(self) -> list[str]:
        out, self.lines[:] = list(self.lines), []
        return out

    def send(self, req, version: int, client: str):
        self.rid += 1
        out = self.svc.handle(self.svc.coordinator_of("g"), req,
                              RequestContext(self.rid, version, client_id=client, client_host="/127.0.0.1"), self.now)
        self.narrator.on_output(out)
        self.records += [e.to_dict() for e in out.records]
        return out.answer

    def heartbeat(self, client: str, member: str, epoch: int, owned: list[int] | None = None, **kw):
        req = ConsumerGroupHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=epoch, rebalance_timeout_ms=kw.pop("rebalance", -1),
            subscribed_topic_names=kw.pop("names", None), instance_id=kw.pop("instance", None),
            topic_partitions=None if owned is None else [
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=uuid_from_string(ORDERS), partitions=owned)
            ] if owned else [])
        r = self.send(req, 1, client)
        assert r.error_code == 0, r
        return r

    def advance(self, ms: int) -> None:
        self.now += ms
        out = self.svc.poll(self.now)
        self.narrator.on_output(out)
        self.records += [e.to_dict() for e in out.records]


def one(lines: list[str], pattern: str) -> re.Match:
    found = [m for m in (re.search(pattern, line) for line in lines) if m]
    assert len(found) == 1, f"{pattern!r} found {len(found)} times in:\n" + "\n".join(lines)
    return found[0]


def story(lang: str, s: Story | None = None) -> list[list[str]]:
    """The same steps in either language; the narration of each step."""
    s = s or Story(lang)
    steps = []
    s.heartbeat("a", A, 0, [], rebalance=10000, names=["orders"])          # a joins: epoch 2, all four
    steps.append(s.take())
    s.now += 100                                                             # b joins 100 ms later
    s.heartbeat("b", B, 0, [], rebalance=10000, names=["orders"])
    steps.append(s.take())
    s.now += 1000                                                            # the interval has passed
    s.heartbeat("b", B, 2, [])
    s.heartbeat("a", A, 2, [0, 1, 2, 3])
    steps.append(s.take())
    s.heartbeat("b", B, 3, [])                                               # b keeps its session
    s.advance(10000)                                                         # a never revokes
    steps.append(s.take())
    s.heartbeat("b", B, 3, [])
    s.heartbeat("c", C, 0, [], rebalance=10000, names=["orders"], instance="c-1")
    steps.append(s.take())
    s.heartbeat("c", C, -2, None, instance="c-1")                           # static member: temporary leave
    steps.append(s.take())
    s.advance(45000)                                                         # no more heartbeats at all
    steps.append(s.take())
    s.send(DeleteGroupsRequest(groups_names=["g"]), 2, "admin")
    steps.append(s.take())
    return steps


@pytest.fixture(scope="module")
def stories():
    return {lang: story(lang) for lang in ("en", "zh")}


def test_joins_a_target_deferred_by_the_assignment_interval_then_revocation(stories):
    join_a, join_b, computed, *_ = stories["en"]
    one(join_a, r"member a/AAAAAAAA…: member epoch 0 -> 2, STABLE: owns its whole target orders-\[0,1,2,3\]")
    one(join_b, r"group epoch 2 -> 3 \(b/BBBBBBBB… joined\)")
    # no target for epoch 3 yet: b is STABLE at epoch 2 with its share of epoch 2's target -- nothing
    one(join_b, r"member b/BBBBBBBB…: member epoch 0 -> 2, STABLE with its part of the current target, \[\]: the "
                r"target for group epoch 3 is not computed yet")
    assert not [line for line in join_b if "target assignment for epoch" in line]
    one(computed, r"target assignment for epoch 3, computed by the coordinator itself with the server-side "
                  r"assignor 'uniform'")
    # uniform: two each; a keeps what it has (sticky) -- the half it gives up is what b waits for
    waits = one(computed, r"member b/BBBBBBBB…: member epoch 2 -> 3 \(UNRELEASED_PARTITIONS\): owns \[\]; waits for "
                          r"orders-\[(\d),(\d)\]")
    revoke = one(computed, r"member a/AAAAAAAA… stays at member epoch 2 \(UNREVOKED_PARTITIONS\): it must first "
                           r"revoke orders-\[(\d),(\d)\], now in other members' targets, and keeps "
                           r"orders-\[(\d),(\d)\]; it reaches epoch 3 .*rebalance timeout \(10000 ms\)")
    assert revoke.groups()[:2] == waits.groups()
    assert sorted(revoke.groups()) == ["0", "1", "2", "3"]


def test_fenced_by_the_rebalance_timeout_and_the_session_timeout(stories):
    steps = stories["en"]
    fenced = steps[3]
    one(fenced, r"member a/AAAAAAAA… was fenced: it did not revoke its partitions within its rebalance timeout "
                r"\(10000 ms\); its partitions orders-\[\d,\d\] are free")
    one(fenced, r"group epoch 3 -> 4 \(a/AAAAAAAA… left\)")
    # b's next heartbeat: the new target gives it all four
    one(steps[4], r"member b/BBBBBBBB…: member epoch 3 -> 4, STABLE: owns its whole target orders-\[0,1,2,3\]")
    one(steps[4], r"static member: group.instance.id=c-1")
    one(steps[5], r"static member c/CCCCCCCC… left with member epoch -2")
    expired = steps[6]
    one(expired, r"member b/BBBBBBBB… was fenced: no heartbeat within the session timeout")
    one(expired, r"member c/CCCCCCCC… was fenced: no heartbeat within the session timeout")
    one(expired, r"the group is empty: the target assignment moves to epoch \d+ with no members")
    one(steps[7], r"consumer group g deleted")


def test_chinese_tells_the_same_steps(stories):
    en, zh = stories["en"], stories["zh"]
    assert [len(s) for s in zh] == [len(s) for s in en]
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for line in (line for s in zh for line in s):
        assert cjk.search(line), line
    one(zh[1], r"成员 b/BBBBBBBB…：member epoch 0 -> 2，STABLE，先拿到当前目标分配中属于它的部分 \[\]：group epoch 3 的"
               r"目标分配还没有计算")
    one(zh[2], r"必须先撤销 orders-\[\d,\d\]（它们已经分给了其他成员）")
    one(zh[3], r"成员 a/AAAAAAAA… 被隔离（fenced）：没有在再平衡超时（10000 ms）内撤销分区")
    one(zh[5], r"静态成员 c/CCCCCCCC… 以 member epoch -2 离开")
    one(zh[7], r"消费者组 g 被删除")


def test_kgroup_diagram_draws_the_heartbeats_of_a_consumer_group(tmp_path, capsys):
    """``kgroup diagram`` of the same story's records: joins at epoch 0, the group epoch notes, the server
    assignor's targets, the answers with epochs and states (the revocation asked of ``a``), removals."""
    s = Story("en")
    story("en", s)
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(r) + "\n" for r in s.records), encoding="utf-8")
    assert main(["diagram", str(events)]) == 0
    text = capsys.readouterr().out
    parsed = check(text)
    assert parsed is not None
    lines = [line.strip() for line in text.splitlines()]
    ids = {line.split()[1]: line.split(" as ")[1] for line in lines if line.startswith("participant ")}
    a, b = (next(k for k, v in ids.items() if v == name) for name in ("a", "b"))
    k = next(k for k, v in ids.items() if v.startswith("coordinator"))
    want = [f"{a}->>{k}: ConsumerGroupHeartbeat epoch 0 (join), subscribe [orders]",
            f"Note over {k}: group epoch 2",
            f"{k}-->>{a}: epoch 2 STABLE: orders-[0,1,2,3]",
            f"{b}->>{k}: ConsumerGroupHeartbeat epoch 0 (join), subscribe [orders]",
            f"Note over {k}: group epoch 3",
            f"{k}-->>{b}: epoch 2 STABLE: []",                      # the deferred target (KIP-1263)
            f"{k}-->>{a}: epoch 2 UNREVOKED_PARTITIONS: orders-[0,1], revoke orders-[2,3] first",
            f"Note over {k}: a removed (left or fenced)",
            f"Note over {k}: consumer group deleted"]
    at = [lines.index(w) for w in want]                              # each drawn, in this order
    assert at == sorted(at)
    # the log does not name the broker's default assignor; the targets are uniform's two each
    target = next(line for line in lines if line.startswith(f"Note over {k}: target epoch 3 by the default "))
    assert "b orders-[2,3], a orders-[0,1]" in target or "a orders-[0,1], b orders-[2,3]" in target
    svg = tmp_path / "cg.svg"
    assert main(["diagram", str(events), "--out", str(svg), "--lang", "zh"]) == 0
    root = ET.parse(svg).getroot()
    assert "ConsumerGroupHeartbeat epoch 0（加入），订阅 [orders]" in "".join(root.itertext())


def test_a_narrator_started_later_knows_the_groups_from_the_log():
    """``kgroup serve --narrate --data-dir`` after a restart: the groups the log brought back are replayed first
    (``ConsumerGroupNarration.seed``), so a join is told against the group as it is -- not as a new group."""
    s = Story("en")
    s.heartbeat("a", A, 0, [], rebalance=10000, names=["orders"])
    s.take()
    late = ServeNarrator(Catalogue("en"), s.narrator.narrator.ctx, s.lines.append, lambda: s.now)
    late.narrator.cg.seed(e.record for log in s.svc.logs.values() for e in log)
    s.narrator = late
    s.now += 2000
    s.heartbeat("b", B, 0, [], rebalance=10000, names=["orders"])
    lines = s.take()
    assert not [line for line in lines if "created" in line]
    one(lines, r"group epoch 2 -> 3 \(b/BBBBBBBB… joined\)")
    # a is known by its client id, and the target splits the topic between the two
    one(lines, r"^\s+a/AAAAAAAA… -> orders-\[\d,\d\]$")
    one(lines, r"^\s+b/BBBBBBBB… -> orders-\[\d,\d\]$")
