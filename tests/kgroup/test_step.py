"""Step mode (``--step``) in a pseudo-terminal: the narration stops after each protocol step until the learner
answers (Enter or n: one more step; c: run on; q: quit), for scenario runs and for the live demo -- whose brokers
and consumers must not notice a pause longer than their session timeout. Every wait is bounded."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time

import pytest

PROMPT = "-- paused: Enter or n = next step"
STEP = re.compile(r"^  \[\s*[\d.]+s\] ", re.M)


class Pty:
    def __init__(self, *args: str) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "kgroup", *args], stdin=slave, stdout=slave,
                                     stderr=slave, start_new_session=True, cwd=os.getcwd())
        os.close(slave)
        self.buf = ""

    def read_for(self, seconds: float) -> str:
        """Everything written in the next ``seconds`` (at most)."""
        got = ""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.master], [], [], left)
            if not ready:
                break
            try:
                chunk = os.read(self.master, 65536).decode("utf-8", "replace")
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            got += chunk
        self.buf += got
        return got

    def until(self, needle: str, timeout: float = 60) -> str:
        """Read until ``needle`` appears after what was read so far; returns the new text."""
        start = len(self.buf)
        end = time.monotonic() + timeout
        while needle not in self.buf[start:]:
            if time.monotonic() > end:
                raise AssertionError(f"{needle!r} not seen in {timeout} s; got:\n{self.buf[start:][-3000:]}")
            if not self.read_for(0.2) and self.proc.poll() is not None:
                self.read_for(0.2)
                if needle not in self.buf[start:]:
                    raise AssertionError(f"exited ({self.proc.returncode}) before {needle!r}:\n{self.buf[-3000:]}")
        return self.buf[start:]

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 90) -> int:
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            self.read_for(0.2)
        self.read_for(0.3)
        if self.proc.poll() is None:
            self.proc.kill()
            raise AssertionError(f"still running after {timeout} s:\n{self.buf[-3000:]}")
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)


@pytest.fixture
def pty_run():
    opened: list[Pty] = []

    def start(*args: str) -> Pty:
        p = Pty(*args)
        opened.append(p)
        return p
    yield start
    for p in opened:
        p.close()


def test_scenario_run_waits_for_each_step(pty_run, tmp_path):
    p = pty_run("run", "scenarios/library/join-four-phases.toml", "--out", str(tmp_path / "r"), "--step")
    first = p.until(PROMPT)
    assert len(STEP.findall(first)) == 1 and "billing-0" in first
    assert p.read_for(0.7) == ""          # paused: nothing more until the learner answers
    p.send("\n")
    second = p.until(PROMPT)
    assert len(STEP.findall(second)) == 1
    p.send("n\n")
    third = p.until(PROMPT)
    assert len(STEP.findall(third)) == 1 and "FIND_COORDINATOR" in third
    p.send("c\n")
    assert p.finish() == 0
    rest = p.buf[p.buf.index(third) + len(third):]
    assert PROMPT not in rest.split("\n", 1)[1]  # no more pauses after c
    assert "end of the narration" in rest and "invariants:" in rest


def test_scenario_run_quits_on_q(pty_run, tmp_path):
    p = pty_run("run", "scenarios/library/join-four-phases.toml", "--out", str(tmp_path / "r"), "--narrate",
                "--step", "--lang", "zh")
    assert "—— 已暂停" in p.until("—— 已暂停")
    p.send("q\n")
    assert p.finish() == 0
    assert "已按你的要求停止" in p.buf and "invariants:" not in p.buf


def test_demo_stands_still_while_paused(pty_run):
    session_ms = 1000
    p = pty_run("demo", "--step", "--session-timeout-ms", str(session_ms), "--heartbeat-interval-ms", "200",
                "--initial-rebalance-delay-ms", "100", "--heartbeat-phase-ms", "400")
    p.until(PROMPT, timeout=60)       # end of phase 1's explanation
    for _ in range(14):               # into the live join: one step per Enter
        p.send("\n")
        p.until(PROMPT, timeout=30)
    # a pause three session timeouts long: no heartbeat is due while the clocks stand still, nobody is expelled
    assert p.read_for(3 * session_ms / 1000) == ""
    p.send("c\n")
    assert p.finish(timeout=120) == 0
    summary = p.buf[p.buf.index("== summary"):]
    gens = re.findall(r"^\s+(\d+)\s+\d+ ms", summary, re.M)
    assert gens == ["1", "2", "3"]     # join, clean leave, kill: no extra rebalance from the pause
    assert "removing member c1" not in p.buf and "removing member c3" not in p.buf
