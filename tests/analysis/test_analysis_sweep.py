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


def test_randomness_names_the_knobs():
    from analysis.sweep import randomness
    assert randomness({"network": {"jitter_ms": 20}, "timeline": [
        {"action": "message_fault", "probability": 0.3, "at": "5s"}, {"action": "message_fault", "at": 1}]}) == \
        ["network jitter (network.jitter_ms = 20)", "message faults with probability 0.3 (at 5s)"]
    assert randomness({"network": {"jitter_ms": 0}}) == []


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
    assert "sweep: running the scenario | 4 run(s)" in err
    rep = json.loads((out / "sweep.json").read_text())
    assert rep["tasks"] == 4 and len(rep["distribution"]) == 2
    for r in rep["runs"]:
        seq = run_one(scenario, r["seed"], r["overrides"], with_events=False)
        assert {k: v for k, v in r.items() if k != "wall_s"} == {k: v for k, v in seq.items() if k != "wall_s"}
    # per group and combination: with sticky each group moves only C1's 3 partitions when it leaves
    by_params = {json.dumps(d["params"]): d for d in rep["distribution"]}
    d = by_params['{"groups.*.strategy": "sticky"}']
    assert d["runs"] == 2 and d["ok"] == 2 and d["violations"] == {}
    assert [(g["group_id"], g["assignor"], g["partitions_moved"]["max"]) for g in d["groups"]] == \
        [("roundrobin", "sticky", 3), ("sticky", "sticky", 3)]
    # the scenario has no randomness: every seed gives the same figures, and the sweep says so
    assert len(rep["warnings"]) == 2 and all("all 2 seeds gave the same result" in w and "network.jitter_ms" in w
                                             for w in rep["warnings"])
    for name in ("runs", "groups"):
        assert (out / f"{name}.csv").is_file() and (out / f"{name}.parquet").is_dir()
    assert (out / "runs.csv").read_text().count("\n") == 5
    assert (out / "groups.csv").read_text().count("\n") == 1 + 4 * 2
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "whole group stopped per run" in html and "sticky {&quot;groups.*.strategy&quot;: &quot;sticky&quot;}" in html


def test_seeds_vary_what_the_scenario_makes_random(spark):
    """rolling-deploy (keyed records, no jitter) gives every seed the same figures: a warning. With network
    jitter, the groups' timings differ by seed: a distribution, no warning."""
    from analysis.sweep import randomness, sweep
    import tomllib
    scenario = LIB / "rolling-deploy.toml"
    assert randomness(tomllib.loads(scenario.read_text())) == []
    # gc-pause-storm's records have no key: the sticky partitioner's choices are random
    assert randomness(tomllib.loads((LIB / "gc-pause-storm.toml").read_text())) == \
        ["keyless records of topic events (the sticky partitioner's random partitions)"]
    rep = sweep(spark, scenario, [1, 2, 3], {"network.jitter_ms": [0, 40]})
    d0, d40 = rep["distribution"]
    assert d0["same_result"] is True and d40["same_result"] is False
    assert len(rep["warnings"]) == 1 and rep["warnings"][0].startswith('{"network.jitter_ms": 0}: all 3 seeds')
    eager = next(g for g in d40["groups"] if g["group_id"] == "eager")
    assert len(set(eager["values"]["unowned_ms_per_partition"])) > 1


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


def test_distribution_per_group_with_violations_and_seeds():
    from analysis.sweep import distribution

    def run(seed, params, ok, inv):
        return {"seed": seed, "overrides": params, "params": json.dumps(params, sort_keys=True), "ok": ok,
                "invariants": inv}

    def grp(seed, params, gid, stopped, unowned):
        return {"seed": seed, "params": json.dumps(params, sort_keys=True), "group_id": gid, "protocol": "eager",
                "assignor": "range", "static_members": 0, "rebalances": 2, "group_stopped_ms": stopped,
                "unowned_partition_ms": unowned, "unowned_ms_per_partition": unowned / 2, "partitions_moved": 1}

    a, b = {"x": 1}, {"x": 2}
    runs = [run(1, a, True, {"settles": 0}), run(2, a, False, {"settles": 1}),
            run(3, a, False, {"settles": 2, "at-least-once": 1}), run(1, b, True, {"settles": 0}),
            run(2, b, True, {"settles": 0})]
    groups = [grp(1, a, "g", 10, 40), grp(2, a, "g", 30, 60), grp(3, a, "g", 20, 80), grp(1, a, "h", 0, 0),
              grp(2, a, "h", 0, 0), grp(3, a, "h", 0, 0), grp(1, b, "g", 5, 8), grp(2, b, "g", 5, 8)]
    (d_a, d_b), warnings = distribution(runs, groups, [a, b])
    assert (d_a["runs"], d_a["ok"]) == (3, 1)
    assert d_a["violations"] == {"at-least-once": [3], "settles": [2, 3]}
    g, h = d_a["groups"]
    # nearest rank over 10, 30, 20: p50 is the 2nd value (20), p90 the 3rd (30)
    assert g["group_stopped_ms"] == {"p50": 20, "p90": 30, "p99": 30, "max": 30, "mean": 20.0}
    assert g["values"]["group_stopped_ms"] == [10, 30, 20] and h["unowned_partition_ms"]["max"] == 0
    assert d_a["same_result"] is False and d_b["same_result"] is True
    assert warnings == ['{"x": 2}: all 2 seeds gave the same result; ' + __import__("analysis.sweep").sweep
                        .NO_RANDOMNESS_HINT]
