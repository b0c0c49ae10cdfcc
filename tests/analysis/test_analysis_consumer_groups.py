"""KIP-848 consumer groups in the analysis (docs/analysis.md "Consumer groups").

The expected values on hand_logs_cg.py's run D are worked out by hand here from the records' timestamps (each
comment shows the arithmetic), following Kafka's rules: a member owns a partition while its current assignment
lists it as assigned or pending revocation (``CurrentAssignmentBuilder``: it keeps it until it acknowledges the
revocation); the group's state is ``ConsumerGroup``'s (Assigning while the group epoch is above the target
assignment epoch, Reconciling while a member is not STABLE at the target epoch). The library scenarios are checked
against ``scenarios.runner.consumer_group_facts``, the simulator summary's own count of reconciliations (a
separate implementation over the coordinator's record objects)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _rows(rows, **match):
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def _one(rows, **match):
    found = _rows(rows, **match)
    assert len(found) == 1, (match, found)
    return found[0]


@pytest.fixture(scope="module")
def cg_analyzed(spark, tmp_path_factory):
    import hand_logs_cg
    from analysis.analyze import run_analysis
    root = tmp_path_factory.mktemp("cg-logs")
    d = hand_logs_cg.write_d(root)
    out = tmp_path_factory.mktemp("cg-out")
    res = run_analysis([str(d)], out, spark=spark)
    res.out = out
    return res


EXPECTED_EPOCHS = {
    # epoch: (bumped, end, trigger, from_empty, members, target_epoch, target_ms, reconciled, reconciliation,
    #         superseded, revoked, assigned, unowned partition-ms in [bumped, end), max member epoch lag)
    # a alone: target and its current assignment at 0; a gets w0-w3 (assigned 4)
    1: (0, 1000, "member-joined", True, 1, 1, 0, 0, 0, False, 0, 4, 0, 0),
    # b joins at 1000; a (epoch 1, lag 1) revokes w2,w3 at 1700; b gets them at 2000: Stable at 2000 (1000 ms).
    # Unowned: w2,w3 1700..2000 = 300 each
    2: (1000, 3000, "member-joined", False, 2, 2, 1000, 2000, 1000, False, 2, 2, 600, 1),
    # b leaves at 3000 (its w2,w3 revoked with its tombstone); epoch 4 bumps at 3200 before a target for 3:
    # superseded; target 4 at 3400 covers it, Stable at 3600 (600 ms). Unowned in [3000, 3200): w2,w3 200 each
    3: (3000, 3200, "member-left", False, 1, 4, 3400, 3600, 600, True, 2, 0, 400, 1),
    # c joins at 3200; target at 3400 gives c w2,w3 at once; a (epoch 2: lag 2) reaches 4 at 3600: 400 ms.
    # Unowned in [3200, 5000): w2,w3 until 3400 = 200 each
    4: (3200, 5000, "member-joined", False, 2, 4, 3400, 3600, 400, False, 0, 2, 400, 2),
}
EPOCH_KEYS = ("bumped_ms", "end_ms", "trigger", "from_empty", "members", "target_epoch", "target_ms",
              "reconciled_ms", "reconciliation_ms", "superseded", "partitions_revoked", "partitions_assigned",
              "unowned_partition_ms", "max_member_epoch_lag")


@pytest.mark.spark
@pytest.mark.parametrize("epoch", sorted(EXPECTED_EPOCHS))
def test_epoch_rows(cg_analyzed, epoch):
    row = _one(cg_analyzed.data["epochs"], group_id="cg", epoch=epoch)
    assert tuple(row[k] for k in EPOCH_KEYS) == EXPECTED_EPOCHS[epoch]


EXPECTED_RECONCILIATIONS = [
    # (group, no): generation (target epoch), trigger, start, end, duration, from_empty, members before/after,
    # revoked, assigned, moved, balance, unowned partition-ms in [start, end], assignor, rebalance_starts (bumps)
    # a alone at 0: Stable at once
    (("cg", 1), (1, "member-joined", 0, 0, 0, True, 0, 1, 0, 4, 0, 0, 0, "uniform", 1)),
    # w2,w3 a -> b: revoked 2 (lost their owner a), assigned 2, moved 2; 2|2: balance 0; unowned 300 + 300
    (("cg", 2), (2, "member-joined", 1000, 2000, 1000, False, 1, 2, 2, 2, 2, 0, 600, "uniform", 1)),
    # epochs 3 and 4 in one reconciliation; w2,w3 b -> c; unowned w2,w3 3000..3400 = 400 each
    (("cg", 3), (4, "member-left", 3000, 3600, 600, False, 2, 2, 2, 2, 2, 0, 800, "uniform", 2)),
    # mig: the classic rebalance (m's SyncGroup at 120; z0,z1 unowned 0..120)
    (("mig", 1), (1, "member-joined", 0, 120, 120, True, 0, 1, 0, 2, 0, 0, 240, "range", 1)),
    # the online upgrade: m carries z0,z1 over at epoch 1, nothing moves, no gap; m names no server assignor
    (("mig", 2), (1, "upgraded-from-classic", 2000, 2000, 0, False, 1, 1, 0, 0, 0, 0, 0, "(server default)", 1)),
    # n joins at 2500: z1 m -> n (m acknowledges at 2700, n gets it at 2800: unowned 100); 1|1
    (("mig", 3), (2, "member-joined", 2500, 2800, 300, False, 1, 2, 1, 1, 1, 0, 100, "range", 1)),
]
RB_KEYS = ("generation_id", "trigger", "start_ms", "end_ms", "duration_ms", "from_empty", "members_before",
           "members_after", "partitions_revoked", "partitions_assigned", "partitions_moved", "balance",
           "unowned_partition_ms", "assignor", "rebalance_starts")


@pytest.mark.spark
@pytest.mark.parametrize("key,expected", EXPECTED_RECONCILIATIONS, ids=lambda x: str(x))
def test_reconciliations_are_the_consumer_groups_rebalances(cg_analyzed, key, expected):
    group, no = key
    row = _one(cg_analyzed.data["rebalances"], group_id=group, rebalance_no=no)
    assert tuple(row[k] for k in RB_KEYS) == expected
    assert row["outcome"] == "stable"
    # the classic rebalance of mig keeps its classic protocol; the rest are the consumer protocol's
    assert row["protocol"] == ("eager" if key == ("mig", 1) else "consumer")
    if row["protocol"] == "consumer":
        assert row["group_stopped_ms"] is None          # no group-wide barrier


@pytest.mark.spark
def test_group_rows(cg_analyzed):
    cg = _one(cg_analyzed.data["groups"], group_id="cg")
    # consuming from the end of the first reconciliation (0) to 5000: w2,w3 unowned 300 + 400 each = 1400,
    # 350 per partition; moved 2 + 2; epochs 2, 3, 4 while consuming reconcile in 1000, 600, 400 ms
    assert (cg["protocol"], cg["assignor"], cg["members"], cg["partitions"], cg["rebalances"], cg["from_empty"],
            cg["rebalances_while_consuming"], cg["group_stopped_ms"], cg["unowned_partition_ms"],
            cg["unowned_ms_per_partition"], cg["partitions_moved"], cg["partitions_revoked"], cg["group_epochs"],
            cg["max_reconciliation_ms"], cg["max_member_epoch_lag"]) == \
        ("consumer", "uniform", 3, 4, 3, 1, 2, None, 1400, 350.0, 4, 4, 4, 1000, 2)
    assert cg["mean_reconciliation_ms"] == pytest.approx((1000 + 600 + 400) / 3)
    mig = _one(cg_analyzed.data["groups"], group_id="mig")
    # its last reconciliation is the consumer protocol's; consuming from 120: z1 unowned 2700..2800 only (the
    # upgrade at 2000 leaves no gap); epochs 1 (0 ms) and 2 (300 ms)
    assert (mig["protocol"], mig["assignor"], mig["members"], mig["partitions"], mig["rebalances"],
            mig["unowned_partition_ms"], mig["partitions_moved"], mig["group_epochs"], mig["max_reconciliation_ms"],
            mig["mean_reconciliation_ms"]) == ("consumer", "range", 2, 2, 3, 100, 1, 2, 300, 150.0)


@pytest.mark.spark
def test_members_and_ownership(cg_analyzed):
    members = {m["member_id"]: m for m in cg_analyzed.data["members"] if m["group_id"] == "cg"}
    # a: always owns w0,w1; behind the group epoch 1000..1700 and 3000..3600 (1300 ms), 2 epochs at most
    # b: 1000..3000, owns 2000..3000; c: 3200..5000, owns from 3400
    got = {mid: (m["first_seen_ms"], m["last_ms"], m["owned_ms"], m["without_partitions_ms"], m["rebalances_joined"],
                 m["max_epoch_lag"], m["epoch_lag_ms"]) for mid, m in members.items()}
    assert got == {"a": (0, 5000, 5000, 0, 3, 2, 1300), "b": (1000, 3000, 1000, 1000, 1, 0, 0),
                   "c": (3200, 5000, 1600, 200, 1, 0, 0)}
    # topic ids are named by the members' subscriptions; w2's owners: a (epoch 1), b (epoch 2), c (epoch 4)
    own = sorted((o["from_ms"], o["to_ms"], o["owner"], o["generation_id"]) for o in cg_analyzed.data["ownership"]
                 if o["group_id"] == "cg" and o["topic"] == "w" and o["partition"] == 2)
    assert own == [(0, 1700, "a", 1), (2000, 3000, "b", 2), (3400, 5000, "c", 4)]
    mig = sorted((o["from_ms"], o["to_ms"], o["owner"]) for o in cg_analyzed.data["ownership"]
                 if o["group_id"] == "mig" and o["topic"] == "z" and o["partition"] == 1)
    # classic ownership ends at the group's tombstone, the consumer group's starts at the same instant
    assert mig == [(120, 2000, "m"), (2000, 2700, "m"), (2800, 5000, "n")]
    m = _one(cg_analyzed.data["members"], group_id="mig", member_id="m")
    assert (m["last_ms"], m["owned_ms"], m["removed_reason"]) == (5000, 4880, None)
    part = _one(cg_analyzed.data["partitions"], group_id="cg", topic="w", partition=2)
    assert (part["unowned_ms"], part["owners"], part["assignments"]) == (700, 3, 3)


@pytest.mark.spark
def test_tables_files_and_events_parquet_round_trip(cg_analyzed, spark, tmp_path):
    import csv

    from analysis.analyze import run_analysis
    out = cg_analyzed.out
    with open(out / "epochs.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["group_id"], r["epoch"], r["reconciliation_ms"]) for r in rows] == \
        [("cg", "1", "0"), ("cg", "2", "1000"), ("cg", "3", "600"), ("cg", "4", "400"), ("mig", "1", "0"),
         ("mig", "2", "300")]
    assert spark.read.parquet(str(out / "epochs.parquet")).count() == 6
    # events.parquet keeps the ConsumerGroup* fields the fold reads: the same tables without the JSON
    again = run_analysis([str(out / "events.parquet")], tmp_path / "again", spark=spark, export_events=False)

    def strip(rows):
        return sorted(tuple(sorted((k, v) for k, v in r.items() if k != "run")) for r in rows)
    for name in ("epochs", "rebalances", "groups", "members", "partitions"):
        assert strip(again.data[name]) == strip(cg_analyzed.data[name]), name


def _run(name: str):
    from scenarios.runner import run_scenario
    return run_scenario(ROOT / "scenarios" / "library" / name, 1, trace=False)


def _events(res) -> list[str]:
    import json
    return [json.dumps(e.to_dict()) for e in sorted(res.sim.records,
                                                    key=lambda e: (e.timestamp_ms, e.partition, e.offset))]


@pytest.mark.parametrize("name", ["rolling-deploy-protocols.toml", "classic-to-consumer-migration.toml"])
def test_reconciliations_match_the_simulators_count(name):
    """The analysis (from the JSON log) and the simulator summary (scenarios.runner.consumer_group_facts, from the
    record objects) count the same reconciliations, with the same times and partition moves."""
    from analysis.analyze import fold_lines
    from analysis.fold import COLUMNS
    res = _run(name)
    rows = fold_lines(_events(res), "r", name, 1)
    rbs = [dict(zip(COLUMNS["rebalances"], r)) for r in rows["rebalances"]]
    for gid, g in res.summary["groups"].items():
        cf = g.get("consumer_protocol")
        if cf is None:
            assert all(r["protocol"] != "consumer" for r in rbs if r["group_id"] == gid)
            continue
        mine = [r for r in rbs if r["group_id"] == gid and r["protocol"] == "consumer"]
        assert [(r["start_ms"], r["end_ms"], r["generation_id"]) for r in mine] == \
            [(x["started_ms"], x["stable_ms"], x["to_epoch"]) for x in cf["reconciliations"]]
        epochs = [dict(zip(COLUMNS["epochs"], r)) for r in rows["epochs"] if r[3] == gid]
        assert len(epochs) == cf["epoch_bumps"] + 1 and epochs[-1]["epoch"] == cf["group_epoch"]
    groups = {r[3]: dict(zip(COLUMNS["groups"], r)) for r in rows["groups"]}
    if name.startswith("rolling"):
        # the showcase: one group per protocol, each with its own kind
        assert {g: (groups[g]["protocol"], groups[g]["assignor"]) for g in groups} == {
            "eager": ("eager", "range"), "cooperative": ("cooperative", "cooperative-sticky"),
            "consumer": ("consumer", "uniform")}
        # the consumer group moves each restarted member's 3 partitions out and 3 back: 4 restarts x 2 x 3 = 24,
        # plus 9 when the initial joins split 12 partitions 3/3/3/3 away from the first member
        assert groups["consumer"]["partitions_moved"] == 33
    else:
        assert groups["payments"]["protocol"] == "consumer"


@pytest.fixture(scope="module")
def protocols_report(spark, tmp_path_factory):
    from analysis.analyze import run_analysis
    root = tmp_path_factory.mktemp("protocols")
    _run("rolling-deploy-protocols.toml").write(root / "run")
    a = run_analysis([str(root / "run")], root / "out", spark=spark, export_events=False)
    return a, root / "out" / "report.html"


@pytest.mark.spark
def test_report_compares_the_three_protocols(protocols_report):
    from analysis.report import kind_colors
    a, path = protocols_report
    html = path.read_text(encoding="utf-8")
    colors = kind_colors(a.data["groups"])
    assert set(colors) == {"eager · range", "cooperative · cooperative-sticky", "consumer · uniform"}
    assert len(set(colors.values())) == 3
    c = colors["consumer · uniform"]
    # one colour for the consumer group everywhere: legend swatch, comparison bar, Gantt, epochs chart, lag line
    assert html.count(f'fill="{c}"') >= 4 and f'stroke="{c}"' in html
    assert "Group epochs" in html and "group epochs of group consumer" in html
    assert "never: cooperative" in html and "no barrier: consumer" in html
    assert "reconciliation (consumer protocol)" in html


@pytest.mark.spark
def test_protocols_report_layout_in_headless_chromium(protocols_report, tmp_path):
    import json
    import re

    import browser
    if browser.chromium() is None:
        pytest.skip("chromium is not installed (make test installs it with apt-get)")
    page = tmp_path / "checked.html"
    page.write_text(protocols_report[1].read_text(encoding="utf-8").replace("</body>", browser.CHECK_SCRIPT
                                                                             + "</body>"), encoding="utf-8")
    dom = browser.dump_dom(page)
    m = re.search(r'<pre id="kgroup-check">(.*?)</pre>', dom, flags=re.S)
    assert m, dom[-2000:]
    res = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                     .replace("&gt;", ">"))
    # comparison + (Gantt, ownership, lag) per group + the consumer group's epochs chart
    assert res["svgs"] == 1 + 3 * 3 + 1, res
    assert res["clipped"] == [], res["clipped"][:5]
    assert res["page"][0] <= res["page"][1], "the page scrolls sideways"
    xs = {res["charts"][f"{kind} of group consumer"] for kind in ("rebalance Gantt", "partition ownership",
                                                                  "consumer lag")}
    assert len(xs) == 1 and None not in xs, xs


def test_sweep_distribution_of_a_consumer_group():
    """A sweep reports a consumer group without a 'whole group stopped' distribution and with its longest
    reconciliation per run (nearest rank over 3000, 1000, 2000: p50 2000, max 3000)."""
    import json

    from analysis.report import sweep_html
    from analysis.sweep import distribution
    params = json.dumps({}, sort_keys=True)
    runs = [{"seed": s, "overrides": {}, "params": params, "ok": True, "invariants": {}} for s in (1, 2, 3)]
    groups = [{"seed": s, "params": params, "group_id": "c", "protocol": "consumer", "assignor": "uniform",
               "static_members": 0, "rebalances": 3, "group_stopped_ms": None, "unowned_partition_ms": 10 * s,
               "unowned_ms_per_partition": 5.0 * s, "partitions_moved": 2, "max_reconciliation_ms": r}
              for s, r in ((1, 3000), (2, 1000), (3, 2000))]
    (d,), _ = distribution(runs, groups, [{}])
    (g,) = d["groups"]
    assert g["group_stopped_ms"] is None
    assert (g["max_reconciliation_ms"]["p50"], g["max_reconciliation_ms"]["max"]) == (2000, 3000)
    html = sweep_html({"scenario": "x", "tasks": 3, "seeds": 3, "master": "local[1]", "distribution": [d],
                       "runs": [], "groups": groups})
    assert "longest reconciliation per run" in html and "no barrier: consumer" in html
