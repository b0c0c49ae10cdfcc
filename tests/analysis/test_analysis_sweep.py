"""Sweeps: parameters, and a Spark sweep equal to sequential runs of the same seeds in this process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

LIB = Path(__file__).parents[2] / "scenarios" / "library"


def test_parse_sets_and_combinations():
    from analysis.sweep import apply_overrides, combinations, parse_sets
    sets = parse_sets(['groups.*.strategy=range,roundrobin', 'cluster.broker."group.initial.rebalance.delay.ms"=0,3000',
                       'scenario.name="a,b"'])
    assert sets == {"groups.*.strategy": ["range", "roundrobin"],
                    'cluster.broker."group.initial.rebalance.delay.ms"': [0, 3000], "scenario.name": ["a,b"]}
    combos = combinations(sets)
    assert len(combos) == 4 and combos[0] == {"groups.*.strategy": "range",
                                              'cluster.broker."group.initial.rebalance.delay.ms"': 0,
                                              "scenario.name": "a,b"}
    data = {"groups": [{"strategy": "x"}, {"strategy": "y"}], "cluster": {"broker": {}}, "scenario": {}}
    got = apply_overrides(data, combos[3])
    assert got["groups"] == [{"strategy": "roundrobin"}, {"strategy": "roundrobin"}]
    assert got["cluster"]["broker"] == {"group.initial.rebalance.delay.ms": 3000}
    assert data["groups"][0]["strategy"] == "x"      # the input is not modified
    assert apply_overrides(data, {"groups.1.strategy": "z"})["groups"][1] == {"strategy": "z"}
    with pytest.raises(ValueError):
        apply_overrides(data, {"groups.5.strategy": "z"})
    with pytest.raises(ValueError):
        parse_sets(["novalue="])


def test_percentiles_nearest_rank():
    from analysis.sweep import percentiles
    # nearest rank: p50 of 1..4 is the 2nd value, p90 the ceil(3.6) = 4th
    assert percentiles([4, 1, 3, 2]) == {"p50": 2, "p90": 4, "p99": 4, "max": 4, "mean": 2.5}
    assert percentiles(list(range(1, 101)))["p90"] == 90
    assert percentiles([])["max"] is None


def test_sweep_equals_sequential_runs(spark, tmp_path, capsys):
    from analysis.sweep import run_one
    from kgroup.cli import main

    scenario = LIB / "sticky-consumer-leaves.toml"
    out = tmp_path / "sweep"
    rc = main(["sweep", str(scenario), "--seeds", "2", "--seed-start", "7", "--set", "groups.*.strategy=range,sticky",
               "--master", "local[2]", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0
    assert "sweep: 4/4 tasks done" in err
    rep = json.loads((out / "sweep.json").read_text())
    assert rep["tasks"] == 4 and len(rep["distribution"]) == 2
    volatile = ("wall_s", "stw_total_ms", "stw_max_ms", "completed_rebalances", "partitions_moved")
    for r in rep["runs"]:
        seq = run_one(scenario, r["seed"], r["overrides"], with_events=False)
        assert {k: v for k, v in r.items() if k not in volatile} == \
            {k: v for k, v in seq.items() if k not in volatile}, r["seed"]
    # the analysis part: with range both groups are range; every run has 2 groups x 2 completed rebalances
    for r in rep["runs"]:
        assert r["completed_rebalances"] == 4 and r["ok"]
    by_params = {json.dumps(d["params"]): d for d in rep["distribution"]}
    d = by_params['{"groups.*.strategy": "sticky"}']
    assert d["runs"] == 2 and d["ok"] == 2 and d["violations"] == {}
    # sticky: each group moves only C1's 3 partitions when it leaves -> 6 per run
    assert d["partitions_moved_per_run"]["max"] == 6 and d["partitions_moved_per_run"]["p50"] == 6
    assert (out / "runs.csv").read_text().count("\n") == 5


def test_cluster_settings_and_shipped_code():
    """What changes on a non-local master (the sweep itself is tested on local[2] above)."""
    import io
    import zipfile

    from analysis.session import spark_conf
    from analysis.sweep import package_zip

    local = spark_conf("local[2]")
    assert local["spark.driver.host"] == "127.0.0.1" and local["spark.sql.adaptive.enabled"] == "false"
    assert local["spark.sql.shuffle.partitions"] == "2" and local["spark.ui.enabled"] == "false"
    assert "-XX:TieredStopAtLevel=1" in local["spark.driver.extraJavaOptions"]
    assert "log4j2.properties" in local["spark.driver.extraJavaOptions"]
    cluster = spark_conf("spark://master:7077")
    assert "spark.driver.host" not in cluster and "spark.pyspark.python" not in cluster
    assert cluster["spark.sql.adaptive.enabled"] == "true" and cluster["spark.sql.shuffle.partitions"] == "200"
    names = set(zipfile.ZipFile(io.BytesIO(package_zip())).namelist())
    assert {"scenarios/runner.py", "analysis/sweep.py", "coordinator/records.py", "protocol/__init__.py",
            "analysis/log4j2.properties", "kgroup/cli.py"} <= names
    assert not any("__pycache__" in n for n in names)


def test_distribution_names_violations_with_their_seeds():
    from analysis.sweep import distribution

    def run(seed, params, ok, inv, rebalances, stw):
        return {"seed": seed, "overrides": params, "params": json.dumps(params, sort_keys=True), "ok": ok,
                "invariants": inv, "rebalances": rebalances, "stw_total_ms": stw, "partitions_moved": 1}

    a, b = {"x": 1}, {"x": 2}
    runs = [run(1, a, True, {"settles": 0}, 2, 10), run(2, a, False, {"settles": 1}, 4, 30),
            run(3, a, False, {"settles": 2, "at-least-once": 1}, 3, 20), run(1, b, True, {"settles": 0}, 1, 5)]
    rb_rows = [{"run": 'seed=1 {"x": 1}', "stw_ms": 10}, {"run": 'seed=2 {"x": 1}', "stw_ms": 30},
               {"run": 'seed=3 {"x": 1}', "stw_ms": 20}, {"run": 'seed=1 {"x": 2}', "stw_ms": 5}]
    d_a, d_b = distribution(runs, rb_rows, [a, b])
    assert (d_a["runs"], d_a["ok"]) == (3, 1)
    assert d_a["violations"] == {"at-least-once": [3], "settles": [2, 3]}
    assert d_a["rebalances_per_run"] == {"p50": 3, "p90": 4, "p99": 4, "max": 4, "mean": 3.0}
    assert d_a["stw_ms_per_rebalance"]["p50"] == 20 and d_a["stw_ms_per_run"]["max"] == 30
    assert (d_b["runs"], d_b["ok"], d_b["violations"]) == (1, 1, {})
