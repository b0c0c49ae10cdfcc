"""A run is a pure function of (scenario, seed): byte-identical event logs; the wire codec changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.fuzz import fuzz_scenario
from scenarios.model import load_scenario
from scenarios.runner import library_paths, run_scenario

from scenario_helpers import DATA


def files(res, tmp: Path) -> dict[str, bytes]:
    res.write(tmp)
    return {n: (tmp / n).read_bytes() for n in ("events.jsonl", "trace.jsonl")}


@pytest.mark.parametrize("name", ["rolling-deploy", "coordinator-failover", "gc-pause-storm"])
def test_same_scenario_and_seed_give_identical_bytes(name, tmp_path):
    path = next(p for p in library_paths() if p.stem == name)
    a = files(run_scenario(path, seed=11), tmp_path / "a")
    b = files(run_scenario(path, seed=11), tmp_path / "b")
    assert a["events.jsonl"] and a == b
    c = files(run_scenario(path, seed=12), tmp_path / "c")
    assert c["events.jsonl"] != a["events.jsonl"]  # member ids come from the seed


def test_fuzzed_runs_are_reproducible(tmp_path):
    base = load_scenario(DATA / "fuzz-base.toml")
    for seed in (5, 17):
        sc = fuzz_scenario(base, seed)
        assert sc.timeline != base.timeline
        a = files(run_scenario(sc, seed), tmp_path / f"a{seed}")
        b = files(run_scenario(fuzz_scenario(base, seed), seed), tmp_path / f"b{seed}")
        assert a == b


def test_codec_round_trip_changes_nothing(tmp_path):
    """Every request and response encoded and decoded at its negotiated version gives the same run as passing
    the objects: the simulation exercises the wire format without changing behaviour."""
    path = next(p for p in library_paths() if p.stem == "rolling-deploy")
    with_codec = run_scenario(path, seed=2, codec=True)
    without = run_scenario(path, seed=2, codec=False)
    assert with_codec.events_lines() == without.events_lines()
    assert with_codec.trace_lines() == without.trace_lines()


def test_identical_across_processes_with_different_hash_seeds(tmp_path):
    """No iteration over hash-ordered sets leaks into a run: two interpreters with different PYTHONHASHSEED
    write the same bytes."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = ("import sys; from scenarios.runner import run_scenario; "
            "run_scenario(sys.argv[1], seed=9).write(sys.argv[2])")
    outs = []
    for hs in ("1", "2"):
        out = tmp_path / hs
        env = dict(os.environ, PYTHONHASHSEED=hs, PYTHONPATH=str(root))
        subprocess.run([sys.executable, "-c", code, str(DATA / "fuzz-base.toml"), str(out)], check=True, env=env,
                       cwd=root, capture_output=True)
        outs.append(files_only(out))
    assert outs[0] == outs[1]


def files_only(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("events.jsonl", "trace.jsonl")}
