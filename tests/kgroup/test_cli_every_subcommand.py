"""Every subcommand of ``kgroup --help`` walked with bad input: one line on stderr, never a traceback, and the exit
code its help/docstring documents (issue 14 item 8; kgroup/cli.py: 2 usage or unusable input, 1 a runtime
failure such as an unreachable or silent server).

``CASES`` must name every subcommand the parser has: a new subcommand without bad-input cases fails
``test_every_subcommand_is_walked``. tests/kgroup/test_cli_bad_input.py holds the cases the issue names (non-UTF-8
scenario files, ``ctl`` refusals, ``assign`` topics, a port in use); this module covers the rest, the newer
subcommands (groups, watch, diagram, partition, placement) most of all. In-process ``main()`` calls, except for
``serve`` (it configures the root logger) and the checks of the installed entry point.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from kgroup.cli import build_parser, main, one_line
from kgroup.testing import KGroupCluster


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("cli-every")
    out = {"dir": str(d), "missing": str(d / "nope.jsonl"), "empty_dir": str(d / "empty")}
    os.mkdir(out["empty_dir"])
    (d / "latin1.jsonl").write_bytes(b'{"caf\xe9": 1}\n')  # Latin-1: not UTF-8
    out["latin1"] = str(d / "latin1.jsonl")
    (d / "run").mkdir()
    (d / "run" / "events.jsonl").write_bytes(b"\xff\xfe{}\n")
    out["run_latin1"] = str(d / "run")
    (d / "notjson.jsonl").write_text("{\"a\": 1}\nnot json\n")
    out["notjson"] = str(d / "notjson.jsonl")
    (d / "a-file").write_text("x")
    out["file"] = str(d / "a-file")
    (d / "two-errors.toml").write_text("nosuchkey = 1\n")  # two problems: no groups, an unknown key
    out["two_errors"] = str(d / "two-errors.toml")
    return out


@pytest.fixture(scope="module")
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed once the socket is: connection refused


def _one_line(capsys, argv: list[str], code: int) -> str:
    assert main(argv) == code, (argv, capsys.readouterr())
    cap = capsys.readouterr()
    lines = cap.err.strip("\n").splitlines()
    assert len(lines) == 1, (argv, cap.err)
    assert "Traceback" not in cap.err and "unexpected error" not in cap.err, cap.err
    return lines[0]


# subcommand -> [(argv after the subcommand, exit code, text the line must contain)]; "{...}" are filled from the
# fixtures. serve runs in its own process (test_serve_bad_input).
CASES: dict[str, list[tuple[list[str], int, str]]] = {
    "hash": [([], 2, "group id or --key"), (["g", "--offsets-partitions", "0"], 2, "positive"),
             (["g", "--partitions", "x"], 2, "invalid int")],
    "demo": [(["--brokers", "0"], 2, ""), (["--lang", "fr"], 2, "invalid choice"),
             (["--consumers", "x"], 2, "invalid int")],
    "assign": [(["--topics", "t0:3", "--member", "C0"], 2, "NAME=VALUE"),
               (["--topics", ":3", "--member", "C0=t0"], 2, "TOPIC:PARTITIONS"),
               (["--topics", "t0:3", "--member", "C0=t0", "--member", "C0=t0"], 2, "given twice")],
    "run": [(["{missing}"], 2, "{missing}"), (["{empty_dir}"], 2, "{empty_dir}"),
            (["{two_errors}"], 2, "unknown field"), (["--seed", "x"], 2, "invalid int")],
    "fuzz": [(["{missing}"], 2, "{missing}"), (["{two_errors}"], 2, "unknown field"),
             (["{two_errors}", "--seeds", "x"], 2, "invalid int")],
    "analyze": [(["{missing}", "--no-progress"], 2, "{missing}"),
                (["{empty_dir}", "--no-progress"], 2, "{empty_dir}"),
                (["{notjson}", "--no-progress"], 2, "{notjson}")],
    "sweep": [(["{two_errors}", "--seeds", "2"], 2, "unknown field"), (["{missing}", "--seeds", "2"], 2, "{missing}"),
              (["{two_errors}"], 2, "--seeds")],
    "ctl": [(["--bootstrap", "127.0.0.1:{closed}", "delay-heartbeats", "g", "99999999999"], 2, "2147483647"),
            (["--bootstrap", "127.0.0.1:{closed}", "coordinator", ""], 2, "empty"),
            (["--bootstrap", "127.0.0.1:{closed}", "advance-clock", "-5"], 2, ">= 0"),
            (["--bootstrap", "127.0.0.1:{closed}", "--timeout", "2", "describe"], 1, "cannot reach"),
            (["--bootstrap", "127.0.0.1:{closed}", "nosuchop"], 2, "invalid choice")],
    "diagram": [(["{missing}"], 2, "{missing}"), (["{latin1}"], 2, "{latin1}: not UTF-8"),
                (["{run_latin1}"], 2, "events.jsonl: not UTF-8"), (["{notjson}"], 2, "{notjson}:2"),
                (["{empty_dir}"], 2, "{empty_dir}"), (["{notjson}", "--from", "x"], 2, "--from"),
                (["{notjson}", "--max-steps", "0"], 2, "--max-steps"), (["{notjson}", "--format", "png"], 2, "png")],
    "partition": [([], 2, "--partitions"), (["--partitions", "0", "--records", "1"], 2, "--partitions"),
                  (["--partitions", "3"], 2, "--key"),
                  (["--partitions", "3", "--key-serializer", "int", "--key", "abc"], 2, "not int"),
                  (["--partitions", "3", "--key-serializer", "int", "--key", "99999999999"], 2, "32 bits"),
                  (["--partitions", "3", "--explicit", "5", "--records", "1"], 2, "0..2"),
                  (["--partitions", "3", "--unavailable", "x", "--records", "1"], 2, "'x'"),
                  (["--partitions", "3", "--partitioner", "bogus", "--records", "1"], 2, "invalid choice")],
    "placement": [(["--brokers", "0", "--partitions", "3"], 2, ">= 1"),
                  (["--brokers", "3", "--partitions", "3", "--replication-factor", "4"], 2, "replication factor"),
                  (["--brokers", "3", "--partitions", "3", "--rule", "kafka", "--shift", "9"], 2, "0..2"),
                  (["--brokers", "3", "--partitions", "3", "--grow-to", "2"], 2, "--grow-to"),
                  (["--brokers", "x", "--partitions", "3"], 2, "invalid int")],
    "groups": [([], 2, "exactly one action"), (["--list", "--describe"], 2, "exactly one action"),
               (["--describe", "--bootstrap-server", "127.0.0.1:{closed}"], 2, "[group], [all-groups]"),
               (["--list", "--timeout", "0"], 2, "--timeout"), (["--list", "--bootstrap-server", "nohost"], 2,
                                                                  "HOST:PORT"),
               (["--list", "--state", "bogus"], 2, "Invalid state list"),
               (["--list", "--type", "bogus"], 2, "Invalid types list"),
               # malformed TOPIC:P is a usage error before anything is sent (Kafka: printUsageAndExit)
               (["--delete-offsets", "--group", "g", "--topic", "t:x", "--bootstrap-server", "127.0.0.1:{closed}"],
                2, "Invalid partition 'x'"),
               (["--reset-offsets", "--group", "g", "--topic", "t:1:2", "--to-earliest",
                 "--bootstrap-server", "127.0.0.1:{closed}"], 2, "Invalid topic arg"),
               (["--list", "--bootstrap-server", "127.0.0.1:{closed}", "--timeout", "2000"], 1, "cannot reach")],
    "watch": [([], 2, "--out"), (["--out", "{dir}/w", "--interval-ms", "0"], 2, "--interval-ms"),
              (["--out", "{dir}/w", "--duration-s", "-1"], 2, "--duration-s"),
              (["--out", "{dir}/w", "--timeout", "0"], 2, "--timeout"),
              (["--out", "{file}", "--bootstrap", "127.0.0.1:{closed}"], 2, "not a directory"),
              (["--out", "{file}/sub", "--bootstrap", "127.0.0.1:{closed}"], 2, "cannot create"),
              (["--out", "{dir}/w", "--bootstrap", "127.0.0.1:x"], 2, "HOST:PORT"),
              (["--out", "{dir}/w", "--bootstrap", "127.0.0.1:{closed}", "--timeout", "2000"], 1, "cannot reach")],
    "serve": [],  # its own process: test_serve_bad_input
}


def _subcommands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return set(sub.choices)


def test_every_subcommand_is_walked() -> None:
    assert set(CASES) == _subcommands()


@pytest.mark.parametrize("cmd", sorted(CASES))
def test_help_exits_0(capsys, cmd) -> None:
    assert main([cmd, "--help"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith(f"usage: kgroup {cmd}") and cap.err == ""


@pytest.mark.parametrize("cmd, argv, code, needle",
                         [(c, a, code, n) for c, cases in sorted(CASES.items()) for a, code, n in cases])
def test_bad_input_is_one_line(capsys, files, closed_port, cmd, argv, code, needle) -> None:
    fill = dict(files, closed=closed_port)
    argv = [a.format(**fill) for a in argv]
    line = _one_line(capsys, [cmd, *argv], code)
    assert line.startswith(f"kgroup {cmd}") or line.startswith("kgroup: error"), line
    assert needle.format(**fill) in line, line


def test_a_silent_server_is_one_line_within_the_timeout(capsys, tmp_path) -> None:
    # a listener that accepts (the kernel's backlog) and never answers: each client gives up after its --timeout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        boot = f"127.0.0.1:{s.getsockname()[1]}"
        for argv in (["groups", "--list", "--bootstrap-server", boot, "--timeout", "500"],
                     ["watch", "--out", str(tmp_path / "w"), "--bootstrap", boot, "--timeout", "500"],
                     ["ctl", "--bootstrap", boot, "--timeout", "0.5", "describe"]):
            t0 = time.monotonic()
            line = _one_line(capsys, argv, 1)
            assert time.monotonic() - t0 < 10, argv
            assert "cannot reach" in line, line
            assert not line.endswith(": )"), line  # the reason is named (a timeout's message is empty)


@pytest.fixture(scope="module")
def cluster():
    with KGroupCluster(brokers=1) as c:
        yield c


def test_runtime_refusals_against_a_running_server(capsys, cluster) -> None:
    b = cluster.bootstrap
    assert "no broker 7" in _one_line(capsys, ["ctl", "--bootstrap", b, "stop-broker", "7"], 1)
    assert "does not exist" in _one_line(capsys, ["ctl", "--bootstrap", b, "expire-member", "nosuch"], 1)
    # kafka-consumer-groups.sh prints its errors with printError: "\nError: ..." on stdout, exit code 1 in kgroup
    # (docs/operations.md); nothing on stderr
    assert main(["groups", "--describe", "--group", "nosuch", "--bootstrap-server", b]) == 1
    cap = capsys.readouterr()
    assert cap.err == "" and cap.out.strip() == "Error: Consumer group 'nosuch' does not exist.", cap


def test_serve_bad_input(tmp_path) -> None:
    # serve configures the root logger on its stderr: real processes. Exit 2 for flags (the message names the
    # flag); a --data-dir that is a file is refused before anything starts.
    a_file = tmp_path / "f"
    a_file.write_text("x")
    for argv, code, needle in ((["--data-dir", str(a_file)], 2, "not a directory"),
                               (["--topic", "t:x"], 2, "--topic"), (["--port", "-1"], 2, "--port"),
                               (["--fsync", "bogus"], 2, "invalid choice")):
        proc = subprocess.run([sys.executable, "-m", "kgroup", "serve", "--port", "0", *argv], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == code, (argv, proc.stderr)
        lines = proc.stderr.strip("\n").splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr and needle in lines[0], (argv, proc.stderr)


def test_one_line_joins_the_problems_of_one_file() -> None:
    assert one_line("f.toml: a: missing\nf.toml: b: unknown field\n") == "f.toml: a: missing; b: unknown field"
    assert one_line("just one") == "just one"
    assert one_line("x: a\ny: b") == "x: a; y: b"
