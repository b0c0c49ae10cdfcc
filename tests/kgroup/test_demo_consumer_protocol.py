"""``kgroup demo --protocol consumer``: the demo's story told with kgroup's own KIP-848 consumers, live over TCP.

Expectations come from KIP-848's rules, not from the demo's output: a member joins with a ConsumerGroupHeartbeat
of member epoch 0; a new group starts at group epoch 1 (KAFKA-20268) and every join, leave and fencing bumps it by
one; the coordinator's uniform assignor splits P partitions between n members floor(P/n) / ceil(P/n), each
partition once; a partition is never owned by two consumers at once (revocation before assignment); a member that
leaves sends member epoch -1; a killed member is fenced by group.consumer.session.timeout.ms, which its last
heartbeat (at most one heartbeat interval before the kill) started.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from kgroup.cli import main
from tests.kgroup.mermaid_grammar import check
from tests.kgroup.test_step import PROMPT, Pty

LINE = re.compile(r"^  \[\s*([\d.]+)s\] (\S+)\s+(.*)$")
CALLBACK = re.compile(r"onPartitions(Assigned|Revoked|Lost)\((?:orders-\[([\d,]*)\]|[^)]*)\)")


def _demo(*args: str, timeout: float = 90) -> str:
    proc = subprocess.run([sys.executable, "-m", "kgroup", "demo", "--protocol", "consumer", *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr + proc.stdout[-3000:]
    return proc.stdout


def _steps(out: str) -> list[tuple[float, str, str]]:
    return [(float(m.group(1)), m.group(2), m.group(3)) for m in map(LINE.match, out.splitlines()) if m]


@pytest.fixture(scope="module")
def english() -> str:
    t0 = time.monotonic()
    out = _demo()
    assert time.monotonic() - t0 < 30
    return out


def test_members_join_with_epoch_0_and_each_change_bumps_the_group_epoch(english):
    out = english
    joins = [who for _, who, text in _steps(out)
             if text.startswith("-> ConsumerGroupHeartbeat") and "member epoch 0 = join" in text]
    assert joins == ["c1", "c2", "c3"]
    # 1 -> 2 (c1 joins), 3 (c2), 4 (c3), 5 (c3 leaves), 6 (c2 fenced)
    bumps = re.findall(r"group epoch (\d+) -> (\d+) \(([^)]*)\)", out)
    assert [(int(a), int(b)) for a, b, _ in bumps] == [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    assert [why.split("/")[0] for _, _, why in bumps] == ["c1", "c2", "c3", "c3", "c2"]
    assert "joined" in bumps[2][2] and "left" in bumps[3][2]
    # the target is the coordinator's (server-side assignor), not a leader consumer's
    assert out.count("computed by the coordinator itself with the server-side assignor 'uniform'") == 5
    assert "JOIN_GROUP" not in out and "SYNC_GROUP" not in out


def test_the_uniform_split_and_the_member_epochs(english):
    now = english[english.index("assignments now (group epoch 4)"):].splitlines()[1:4]
    owned = []
    for line in now:
        m = re.search(r"member epoch\s+(\d+)\s+orders-\[([\d,]+)\]", line)
        assert m, line
        assert int(m.group(1)) == 4           # every member reconciled to the group epoch
        owned.append([int(p) for p in m.group(2).split(",")])
    assert sorted(len(x) for x in owned) == [2, 2, 2] and sorted(sum(owned, [])) == list(range(6))
    # the last consumer standing owns everything
    assert re.search(r"c1/\S+ <- orders-\[0,1,2,3,4,5\]", english[english.index("== summary"):])


def test_revocation_before_assignment_never_two_owners(english):
    owner: dict[int, str] = {}
    revocations_waited = 0
    for _, who, text in _steps(english):
        if "killed;" in text:
            for p in [p for p, o in owner.items() if o == who]:
                del owner[p]
            continue
        if "UNREVOKED_PARTITIONS" in text:
            revocations_waited += 1
        m = CALLBACK.search(text)
        if not m or not m.group(2):
            continue
        parts = [int(p) for p in m.group(2).split(",")]
        for p in parts:
            if m.group(1) == "Assigned":
                assert p not in owner, f"{who} assigned orders-{p} while {owner.get(p)} still owns it"
                owner[p] = who
            else:
                assert owner.get(p) == who
                del owner[p]
    assert revocations_waited >= 2      # c2's and c3's joins each took partitions from an owner
    assert set(owner) == set(range(6)) and set(owner.values()) == {"c1"}


def test_leave_with_epoch_minus_1_and_fencing_by_the_session_timeout(english):
    steps = _steps(english)
    assert any(who == "c3" and "member epoch -1 = leave the group" in text for _, who, text in steps)
    assert "left the group (ConsumerGroupHeartbeat with member epoch -1)" in english
    killed = next(t for t, who, text in steps if who == "c2" and "killed;" in text)
    fenced = next(t for t, _, text in steps if "was fenced: no heartbeat within the session timeout" in text)
    # session 2000 ms from the last heartbeat, sent at most one interval (500 ms) before the kill
    assert fenced - killed >= 2.0 - 0.5 - 0.05
    summary = english[english.index("== summary"):]
    assert re.findall(r"^\s+(\d+)\s+\d+ ms", summary, re.M) == ["2", "3", "4", "5", "6"]
    assert "fenced (session timeout)" in summary


def test_chinese_and_diagrams(tmp_path):
    out_dir = tmp_path / "d"
    out = _demo("--lang", "zh", "--diagrams", str(out_dir), "--topic", "orders:4")
    assert "第二阶段：c1 独自加入" in out and "先撤销，后分配" in out and "被隔离（fenced）" in out
    assert "member epoch 为 0 即申请加入" in out and "每个阶段的时序图已写到" in out
    stems = ["phase-2-first-join", "phase-3-join-c2", "phase-3-join-c3", "phase-4-heartbeat", "phase-5-leave",
             "phase-6-kill"]
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(f"{s}.{e}" for s in stems for e in ("mmd", "svg"))
    docs = {s: check((out_dir / f"{s}.mmd").read_text()) for s in stems}
    for s in stems:
        ET.parse(out_dir / f"{s}.svg")
        assert [label for _, label in docs[s]["participants"]][:3] == ["c1", "c2", "c3"]
    first = [txt for _, _, _, txt in docs["phase-2-first-join"]["signals"]]
    assert sum(t.startswith("ConsumerGroupHeartbeat epoch 0") for t in first) == 1
    join = docs["phase-3-join-c2"]
    assert any(t.startswith("ConsumerGroupHeartbeat epoch 0") for _, _, _, t in join["signals"])
    assert any("group epoch 变为 3" in text for _, text in join["notes"])
    assert any("撤销" in text for _, text in join["notes"])           # c1 revokes before c2 gets them
    beats = docs["phase-4-heartbeat"]["signals"]
    assert sum(t.startswith("ConsumerGroupHeartbeat epoch 4") for _, _, _, t in beats) >= 3
    assert any("被移出" in text for _, text in docs["phase-6-kill"]["notes"])


def test_step_mode_clocks_stand_still(tmp_path):
    session_ms = 1000
    p = Pty("demo", "--protocol", "consumer", "--step", "--session-timeout-ms", str(session_ms),
            "--heartbeat-interval-ms", "200", "--heartbeat-phase-ms", "400")
    try:
        p.until(PROMPT, timeout=60)      # phase 1's explanation
        for _ in range(12):              # into the joins, one step per Enter
            p.send("\n")
            p.until(PROMPT, timeout=30)
        # three session timeouts paused: no heartbeat is due while the clocks stand still, nobody is fenced
        assert p.read_for(3 * session_ms / 1000) == ""
        p.send("c\n")
        assert p.finish(timeout=120) == 0
    finally:
        p.close()
    assert p.buf.count("was fenced") == 1                 # only the killed consumer
    summary = p.buf[p.buf.index("== summary"):]
    assert re.findall(r"^\s+(\d+)\s+\d+ ms", summary, re.M) == ["2", "3", "4", "5", "6"]


def test_bad_options(capsys):
    assert main(["demo", "--protocol", "consumer", "--strategy", "range"]) == 2
    assert "server-side assignor" in capsys.readouterr().err
    assert main(["demo", "--protocol", "consumer", "--consumers", "2"]) == 2
    # group.consumer.max.session.timeout.ms defaults to 60000: a longer session is refused in one line
    assert main(["demo", "--protocol", "consumer", "--session-timeout-ms", "90000"]) == 2
    err = capsys.readouterr().err
    assert "group.consumer.session.timeout.ms (90000)" in err and "Traceback" not in err
    assert main(["demo", "--compare", "--session-timeout-ms", "90000"]) == 2
    assert main(["demo", "--compare", "--strategy", "range"]) == 2


def test_classic_stays_the_default():
    from kgroup.cli import build_parser
    args = build_parser().parse_args(["demo"])
    assert args.protocol == "classic" and not args.compare


def test_one_broker_and_fewer_partitions_than_consumers():
    """With one broker __consumer_offsets needs offsets.topic.replication.factor 1 (Kafka creates it only with
    enough brokers); with 2 partitions for 3 consumers the uniform assignor leaves one member without any."""
    out = _demo("--brokers", "1", "--topic", "x:2", "--session-timeout-ms", "1000", "--heartbeat-interval-ms", "200",
                "--heartbeat-phase-ms", "400")
    now = out[out.index("assignments now"):].splitlines()[1:4]
    assert sorted(line.count("x-[") for line in now) == [0, 1, 1]
    assert re.search(r"c1/\S+ <- x-\[0,1\]", out[out.index("== summary"):])
