"""`kgroup run` and `kgroup fuzz`: files written, summaries printed, exit codes, a fuzzed run replayed from its
dumped scenario."""

from __future__ import annotations

import json

from scenarios.fuzz import fuzz_scenario
from scenarios.model import load_scenario
from scenarios.runner import library_paths, run_scenario

from scenario_helpers import DATA, break_assignments, cli


def test_run_writes_events_and_summary(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["run", str(DATA / "fuzz-base.toml"), "--seed", "4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "group g:" in text and "invariants:" in text and "generation" in text
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert events and all(e["v"] == 1 for e in events)
    assert {"GroupMetadata", "JoinCompleted", "RebalanceStarted", "OffsetCommit"} <= {e["type"] for e in events}
    keys = [(e["timestamp_ms"], e["log_partition"], e["log_offset"]) for e in events]
    assert keys == sorted(keys)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 4 and summary["ok"] is True


def test_run_json(tmp_path, capsys):
    assert cli(["run", str(DATA / "fuzz-base.toml"), "--out", str(tmp_path), "--json", "--no-codec"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["groups"]["g"]["rebalances"] >= 1
    assert set(s["invariants"]) >= {"settles", "at-least-once", "generations-increase"}


def test_run_library(tmp_path, capsys):
    assert cli(["run", "--library", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    n = len(library_paths())
    assert f"{n}/{n} scenarios passed every invariant" in out
    assert (tmp_path / "rolling-deploy" / "events.jsonl").exists()
    assert cli(["run", "--library", "--list"]) == 0
    assert "gc-pause-storm" in capsys.readouterr().out


def test_usage_errors(capsys):
    assert cli(["run"]) == 2
    assert cli(["run", "--library", str(DATA / "fuzz-base.toml")]) == 2


def test_cli_bad_file_exits_2_and_runs_nothing(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text('[cluster]\ntopics = [{ name = "t", partitions = 3 }]\n[[groups]]\nid = "g"\ntopics = ["t"]\n'
                 'consumers = 2\n[[timeline]]\nat = 1\naction = "gc_pause"\nconsumer = "g-0"\n', encoding="utf-8")
    out_dir = tmp_path / "out"
    assert cli(["run", str(p), "--out", str(out_dir)]) == 2
    err = capsys.readouterr().err
    assert "bad.toml: timeline[0].duration_ms: required field is missing" in err
    assert not out_dir.exists()
    assert cli(["fuzz", str(p), "--seeds", "1"]) == 2


def test_fuzz_cli_reports_and_replays(tmp_path, capsys):
    assert cli(["fuzz", str(DATA / "fuzz-base.toml"), "--seeds", "3", "--start", "7"]) == 0
    assert "3/3 seeds passed every invariant" in capsys.readouterr().out
    dump = tmp_path / "replay.toml"
    out = tmp_path / "out"
    assert cli(["fuzz", str(DATA / "fuzz-base.toml"), "--seed", "7", "--out", str(out), "--dump", str(dump)]) == 0
    assert (out / "events.jsonl").stat().st_size > 0
    # the dumped file is a plain scenario that replays the same run
    replay = run_scenario(dump, seed=7)
    original = run_scenario(fuzz_scenario(load_scenario(DATA / "fuzz-base.toml"), 7), 7)
    assert replay.events_lines() == original.events_lines()


def test_fuzz_cli_exit_code_on_violation(monkeypatch, capsys):
    break_assignments(monkeypatch)
    assert cli(["fuzz", str(DATA / "fuzz-base.toml"), "--seeds", "2"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION" in out and "reproduce: kgroup fuzz" in out and "--seed 0" in out
