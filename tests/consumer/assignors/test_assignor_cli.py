"""``kgroup assign`` (kgroup/cmd_assign.py)."""

import json

from kgroup.cmd_assign import add_parser

import argparse


def run(argv, capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["assign", *argv])
    rc = args.func(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_table(capsys):
    rc, out, _ = run(["--strategy", "range", "--topics", "t0:3,t1:3", "--member", "c0=t0,t1", "--member", "c1=t0,t1"],
                     capsys)
    assert rc == 0
    assert "c0      t0,t1   4  t0[0,1] t1[0,1]" in out
    assert "balance (max - min): 2" in out


def test_json_round_trip_with_previous(tmp_path, capsys):
    topics = "t0:2,t1:2,t2:2,t3:2"
    members = ["--member", "C0=t0,t1,t2,t3", "--member", "C1=t0,t1,t2,t3", "--member", "C2=t0,t1,t2,t3"]
    rc, out, _ = run(["--strategy", "sticky", "--topics", topics, *members, "--json"], capsys)
    assert rc == 0
    first = json.loads(out)
    assert first["assignment"]["C0"] == ["t0-0", "t1-1", "t3-0"]
    prev = tmp_path / "prev.json"
    prev.write_text(out)
    rc, out, _ = run(["--strategy", "sticky", "--topics", topics, "--member", "C0=t0,t1,t2,t3",
                      "--member", "C2=t0,t1,t2,t3", "--previous", str(prev), "--json"], capsys)
    second = json.loads(out)
    assert set(first["assignment"]["C0"]) <= set(second["assignment"]["C0"])
    assert set(first["assignment"]["C2"]) <= set(second["assignment"]["C2"])
    assert second["generation"] == 2


def test_cooperative_shows_pending(tmp_path, capsys):
    prev = tmp_path / "p.json"
    prev.write_text(json.dumps({"generation": 3, "assignment": {"a": ["t-0", "t-1", "t-2", "t-3"]}}))
    rc, out, _ = run(["--strategy", "cooperative-sticky", "--topics", "t:4", "--member", "a=t", "--member", "b=t",
                      "--previous", str(prev)], capsys)
    assert rc == 0
    assert "pending (withheld until revoked, follow-up rebalance): t[2,3]" in out


def test_bad_input_exits_2(tmp_path, capsys):
    cases = [
        ["--topics", "t0", "--member", "a=t0"],
        ["--topics", "t0:-1", "--member", "a=t0"],
        ["--topics", "t0:1", "--member", "a"],
        ["--topics", "t0:1", "--member", "a=t0", "--strategy", "nope"],
        ["--topics", "t0:1", "--member", "a=t0", "--previous", str(tmp_path / "missing.json")],
        ["--topics", "t0:1", "--member", "a=t0", "--rack", "b=r1"],
    ]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    cases.append(["--topics", "t0:1", "--member", "a=t0", "--previous", str(bad)])
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"a": ["t0-x"]}))
    cases.append(["--topics", "t0:1", "--member", "a=t0", "--previous", str(wrong)])
    for argv in cases:
        rc, out, err = run(argv, capsys)
        assert rc == 2, argv
        assert err.startswith("kgroup assign: error: "), err


def test_registered_in_cli():
    from kgroup import cli
    assert "kgroup.cmd_assign" in cli.SUBCOMMANDS
