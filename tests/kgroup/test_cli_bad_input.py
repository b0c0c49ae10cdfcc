"""Every subcommand given bad input answers with ONE line on stderr and its documented exit code, never a traceback
(issue 14 item 8; the exit codes are the ones each subcommand's docstring and kgroup/cli.py promise: 2 usage or
unusable input, 1 a runtime refusal such as a port in use or a rule the server does not have)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from kgroup.cli import main
from kgroup.testing import KGroupCluster


@pytest.fixture(scope="module")
def bad_toml(tmp_path_factory) -> str:
    # Latin-1 bytes in a comment: not UTF-8, which TOML requires
    p = tmp_path_factory.mktemp("bad") / "latin1.toml"
    p.write_bytes(b"# caf\xe9 \xff\xfe\nname = 'x'\n")
    return str(p)


@pytest.fixture(scope="module")
def cluster():
    with KGroupCluster(brokers=1) as c:
        yield c


def _one_line(capsys, argv: list[str], code: int) -> str:
    assert main(argv) == code, argv
    cap = capsys.readouterr()
    lines = cap.err.strip("\n").splitlines()
    assert len(lines) == 1, (argv, cap.err)
    assert "Traceback" not in cap.err and "unexpected error" not in cap.err, cap.err
    return lines[0]


@pytest.mark.parametrize("cmd", [["run"], ["fuzz"], ["sweep", "--seeds", "2"]])
def test_non_utf8_scenario_file_names_the_file(capsys, bad_toml, cmd) -> None:
    line = _one_line(capsys, [cmd[0], bad_toml, *cmd[1:]], 2)
    assert bad_toml in line and "UTF-8" in line, line


@pytest.mark.parametrize("cmd", [["run"], ["fuzz"], ["sweep", "--seeds", "2"]])
def test_missing_scenario_file(capsys, tmp_path, cmd) -> None:
    missing = str(tmp_path / "nope.toml")
    assert missing in _one_line(capsys, [cmd[0], missing, *cmd[1:]], 2)


@pytest.mark.parametrize("argv, needle", [
    (["ctl", "fail-next", "Heartbeat", "1", "BOGUS_ERR"], "BOGUS_ERR"),
    (["ctl", "fail-next", "Heartbeat", "1", "9999"], "9999"),
    (["ctl", "fail-next", "NoSuchApi", "1", "NOT_COORDINATOR"], "NoSuchApi"),
    (["ctl", "fail-next", "Heartbeat", "0", "NOT_COORDINATOR"], "count"),
    (["ctl", "drop-heartbeats", "g", "--count", "0"], "count"),
    (["ctl", "delay-heartbeats", "g", "-5"], "delay-ms"),
    (["ctl", "--bootstrap", "nohost", "describe"], "HOST:PORT"),
    (["ctl", "stop-broker", "x"], "invalid int value"),
    (["ctl"], "required"),
])
def test_ctl_usage_errors_exit_2_before_anything_is_sent(capsys, argv, needle) -> None:
    # --bootstrap points at a closed port: a usage error must be caught before any connection is tried
    assert needle in _one_line(capsys, [argv[0], "--bootstrap", "127.0.0.1:1", *argv[1:]]
                               if "--bootstrap" not in argv else argv, 2)


def test_ctl_refusals_from_a_running_server_exit_1(capsys, cluster) -> None:
    b = cluster.bootstrap
    line = _one_line(capsys, ["ctl", "--bootstrap", b, "clear", "99"], 1)
    assert "99" in line and "no fault rule" in line, line
    line = _one_line(capsys, ["ctl", "--bootstrap", b, "stop-broker", "7"], 1)
    assert "7" in line, line
    # a rule that exists is cleared (exit 0, its count on stdout); clearing it again is refused
    assert main(["ctl", "--bootstrap", b, "fail-next", "Heartbeat", "1", "NOT_COORDINATOR"]) == 0
    rule = int(capsys.readouterr().out.strip())
    assert main(["ctl", "--bootstrap", b, "clear", str(rule)]) == 0
    assert capsys.readouterr().out.strip() == "1"
    _one_line(capsys, ["ctl", "--bootstrap", b, "clear", str(rule)], 1)


def test_ctl_unreachable_server_exits_1(capsys) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        assert "cannot reach" in _one_line(capsys, ["ctl", "--bootstrap", f"127.0.0.1:{port}", "--timeout", "2",
                                                    "describe"], 1)


@pytest.mark.parametrize("argv, needle", [
    (["assign", "--topics", "t0:3", "--member", "C0=t0,t9"], "'t9' is not in --topics"),
    (["assign", "--topics", "t0:3,t1:0", "--member", "C0=t0,t1"], "t1"),
    (["assign", "--topics", "t0:x", "--member", "C0=t0"], "integer"),
    (["assign", "--topics", "t0:3", "--member", "C0=t0", "--strategy", "nosuch"], "nosuch"),
])
def test_assign_bad_input_exits_2(capsys, argv, needle) -> None:
    assert needle in _one_line(capsys, argv, 2)


def test_assign_still_accepts_good_input(capsys) -> None:
    assert main(["assign", "--topics", "t0:2", "--member", "C0=t0", "--member", "C1=t0", "--json"]) == 0
    assert "C0" in capsys.readouterr().out


def test_serve_port_in_use_exits_1() -> None:
    # a real process: serve configures the root logger on its stderr, which must not outlive an in-process call
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "kgroup", "serve", "--brokers", "1", "--port", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    # serve logs at INFO by default (Kafka's log lines, "[time] INFO ..."): the error is the one other line
    lines = [ln for ln in proc.stderr.strip("\n").splitlines() if not ln.startswith("[")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(port) in lines[0] and "cannot listen" in lines[0], lines[0]


@pytest.mark.parametrize("argv", [
    ["serve", "--brokers", "0"], ["serve", "--port", "70000"], ["serve", "--brokers", "abc"],
    ["demo", "--brokers", "0"], ["demo", "--consumers", "1"], ["demo", "--topic", "orders"],
    ["hash", "g", "--offsets-partitions", "0"], ["hash"], ["analyze"], ["nosuchcommand"],
    ["run", "--nosuchflag", "x.toml"], ["fuzz", "x.toml", "--seeds", "0"],
])
def test_usage_errors_exit_2(capsys, argv) -> None:
    _one_line(capsys, argv, 2)


def test_analyze_unusable_input_exits_2(capsys, tmp_path) -> None:
    assert str(tmp_path / "none") in _one_line(capsys, ["analyze", str(tmp_path / "none"), "--no-progress"], 2)


def test_unexpected_error_is_one_line_with_exit_1(capsys, monkeypatch) -> None:
    # a bug in a subcommand still ends in one line (KGROUP_DEBUG=1 would re-raise it)
    import kgroup.cmd_hash as cmd_hash

    def boom(args):
        raise RuntimeError("first line\nsecond line")

    monkeypatch.delenv("KGROUP_DEBUG", raising=False)
    monkeypatch.setattr(cmd_hash, "run", boom)
    assert main(["hash", "g"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unexpected error: RuntimeError: first line" in err, err


def test_real_process_prints_no_traceback(bad_toml) -> None:
    # the installed entry point, not just main(): python -m kgroup
    proc = subprocess.run([sys.executable, "-m", "kgroup", "run", bad_toml], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
