"""``kgroup demo --compare``: the demo's story in the simulator under eager, cooperative and consumer protocols,
and each partition's unowned time measured from the run's trace.

The measure is checked on a hand-made trace (numbers worked out by hand), then the run is checked against the
protocols' rules, not against numbers it printed: eager revokes every partition at every rebalance (every
partition idles, and there is a moment when all do); cooperative (KIP-429) and consumer (KIP-848) revoke only the
partitions that move, so a partition that keeps its owner never idles and there is no stop-the-world; a moved
partition idles between its revocation and its assignment (revocation before assignment); a killed consumer's
partitions idle until its session expires -- at least session timeout minus one heartbeat interval after the kill,
under every protocol.
"""

from __future__ import annotations

import pytest

from kgroup.cli import main
from kgroup.demo_compare import Story, run_story, unowned

SESSION, HEARTBEAT = 2000, 500


def test_the_measure_on_a_hand_made_trace():
    parts = ["t-0", "t-1"]
    trace = [
        {"t": 0, "type": "assigned", "consumer": "a", "owned": ["t-0"]},        # t-1 still unowned: no window yet
        {"t": 10, "type": "assigned", "consumer": "a", "owned": ["t-0", "t-1"]},  # window starts at 10
        {"t": 100, "type": "revoked", "consumer": "a", "partitions": ["t-0", "t-1"]},   # all stopped from 100
        {"t": 130, "type": "assigned", "consumer": "a", "owned": ["t-0"]},      # t-0 idle 30, stop-the-world 30
        {"t": 150, "type": "assigned", "consumer": "b", "owned": ["t-1"]},      # t-1 idle 50
        {"t": 200, "type": "crash", "consumer": "b"},                           # t-1 idle from 200 ...
        {"t": 260, "type": "assigned", "consumer": "a", "owned": ["t-0", "t-1"]},  # ... to 260: 60
        {"t": 300, "type": "assigned", "consumer": "x", "owned": ["t-0"]},      # another group: ignored
    ]
    u = unowned(trace, {"a": "g", "b": "g", "x": "h"}, parts, end_ms=400)["g"]
    assert u.window == (10, 400)
    assert u.total_ms == {"t-0": 30, "t-1": 110} and u.max_ms == {"t-0": 30, "t-1": 60}
    assert u.stopped_ms == 30
    assert u.owners == {"t-0": ["a"], "t-1": ["a", "b", "a"]}


@pytest.fixture(scope="module")
def story():
    st = Story("orders", 6, 3, SESSION, HEARTBEAT, 500, 10_000, 50.0)
    res, measured = run_story(st)
    assert res.ok, res.violations[:3]
    return st, res, measured


def _victim_partitions(trace, victim: str) -> set[str]:
    """What the killed consumer owned when it crashed (its callbacks up to the crash)."""
    owned: set[str] = set()
    for ev in trace:
        if ev.get("consumer") != victim:
            continue
        if ev["type"] == "assigned":
            owned = set(ev["owned"])
        elif ev["type"] in ("revoked", "lost"):
            owned -= set(ev["partitions"])
        elif ev["type"] == "crash":
            return owned
    raise AssertionError(f"{victim} never crashed")


def test_eager_stops_the_world(story):
    _, _, m = story
    eager = m["eager"]
    assert eager.stopped_ms > 0
    assert all(v > 0 for v in eager.total_ms.values())


@pytest.mark.parametrize("protocol", ["cooperative", "consumer"])
def test_incremental_protocols_stop_only_what_moves(story, protocol):
    _, _, m = story
    u = m[protocol]
    assert u.stopped_ms == 0
    for p, owners in u.owners.items():
        stayed = len(owners) == 1
        assert (u.total_ms[p] == 0) == stayed, (p, owners, u.total_ms[p])
    assert any(len(o) == 1 for o in u.owners.values())     # some partitions never moved ...
    assert any(len(o) > 1 for o in u.owners.values())      # ... and some did


@pytest.mark.parametrize("protocol", ["eager", "cooperative", "consumer"])
def test_a_killed_consumers_partitions_wait_for_the_session_timeout(story, protocol):
    st, res, m = story
    victim = _victim_partitions(res.sim.trace, f"{protocol}-c{st.consumers - 1}")
    assert victim
    for p in victim:
        assert m[protocol].max_ms[p] >= SESSION - HEARTBEAT
    # the same story everywhere: c1, the last one standing, ends with every partition
    assert all(o[-1] == f"{protocol}-c1" for o in m[protocol].owners.values())


def test_the_command_prints_the_table(capsys):
    assert main(["demo", "--compare"]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.strip().startswith("partition"))
    assert head.split()[1:] == ["eager", "cooperative", "consumer"]
    assert sum(1 for line in out.splitlines() if line.strip().startswith("orders-")) == 6
    assert "invariants ok" in out
    assert main(["demo", "--compare", "--lang", "zh", "--topic", "t:4", "--consumers", "4"]) == 0
    zh = capsys.readouterr().out
    assert "全部停止" in zh and "从未空闲" in zh
    assert sum(1 for line in zh.splitlines() if line.strip().startswith("t-")) == 4
    assert main(["demo", "--compare", "--step"]) == 2
