"""`kgroup run`: files written, summary printed, exit codes."""

from __future__ import annotations

import json

from scenarios.runner import library_paths

from scenario_helpers import DATA, cli


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
