"""Real clients as subprocesses (agent.py) and bounded waits over their event streams."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import pytest

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.py")
LIBS = ("kafka-python", "aiokafka", "confluent-kafka")
#: Short sessions so that a killed member is noticed quickly (the cluster's min session timeout is 100 ms).
SESSION_MS = 3000
HEARTBEAT_MS = 300
_ids = itertools.count(1)


class Agent:
    """One client process; ``events`` grows as it prints JSON lines."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.name = cfg.get("client_id", "agent")
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen([sys.executable, AGENT, json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                     start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self.events.append(ev)
                self._cond.notify_all()
        with self._cond:
            self.events.append({"ev": "exit"})
            self._cond.notify_all()

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            if len(self.stderr) < 2000:
                self.stderr.append(line.rstrip())

    # --- views -----------------------------------------------------------------------------------------------

    @property
    def assignment(self) -> list[int] | None:
        with self._cond:
            for ev in reversed(self.events):
                if ev["ev"] == "assigned":
                    return ev["partitions"]
        return None

    def messages(self) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["ev"] == "msg"]

    def has(self, ev: str) -> bool:
        with self._cond:
            return any(e["ev"] == ev for e in self.events)

    def wait(self, pred: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: timed out after {timeout}s waiting for {what}; "
                                         f"events={self.events[-10:]} stderr={self.stderr[-10:]}")
                self._cond.wait(min(left, 0.2))

    # --- control ---------------------------------------------------------------------------------------------

    def close(self, timeout: float = 20.0) -> None:
        """Ask the client to close cleanly (LeaveGroup) and wait for it to exit."""
        try:
            self.proc.stdin.write("close\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not close within {timeout}s; stderr={self.stderr[-10:]}")

    def kill(self) -> None:
        """SIGKILL: the member stops heartbeating abruptly (no LeaveGroup)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


def consumer(lib: str, bootstrap: str, topic: str, group: str, *, name: str | None = None,
             offset_reset: str = "earliest", assignors: list[str] | None = None, max_seconds: int = 120,
             auto_commit: bool = True, metadata_max_age_ms: int | None = None) -> Agent:
    cid = name or f"{lib}-{next(_ids)}"
    return Agent({"lib": lib, "mode": "consume", "bootstrap": bootstrap, "topic": topic, "group": group,
                  "client_id": cid, "offset_reset": offset_reset, "session_timeout_ms": SESSION_MS,
                  "heartbeat_interval_ms": HEARTBEAT_MS, "assignors": assignors, "max_seconds": max_seconds,
                  "auto_commit": auto_commit, "metadata_max_age_ms": metadata_max_age_ms,
                  "debug_log": _debug_log(cid)})


def consumer848(bootstrap: str, topic: str, group: str, *, name: str, offset_reset: str = "earliest",
                manual_commit: bool = True, remote_assignor: str | None = None, instance_id: str | None = None,
                max_seconds: int = 150) -> Agent:
    """A confluent-kafka consumer on KIP-848's protocol (``group.protocol=consumer``)."""
    return Agent({"lib": "confluent-kafka", "mode": "consume", "bootstrap": bootstrap, "topic": topic, "group": group,
                  "client_id": name, "offset_reset": offset_reset, "group_protocol": "consumer",
                  "manual_commit": manual_commit, "remote_assignor": remote_assignor, "instance_id": instance_id,
                  "max_seconds": max_seconds, "debug_log": _debug_log(name)})


def _debug_log(cid: str) -> str | None:
    """KGROUP_INTEROP_DEBUG_DIR=DIR: each client writes its library's DEBUG log to DIR/<client id>.log."""
    d = os.environ.get("KGROUP_INTEROP_DEBUG_DIR")
    return os.path.join(d, cid + ".log") if d else None


def produce(lib: str, bootstrap: str, topic: str, keys: list[str], timeout: float = 60.0,
            value_prefix: str = "v-") -> list[dict[str, Any]]:
    a = Agent({"lib": lib, "mode": "produce", "bootstrap": bootstrap, "topic": topic, "keys": keys,
               "client_id": f"{lib}-producer-{next(_ids)}", "value_prefix": value_prefix,
               "max_seconds": int(timeout) + 5})
    try:
        a.wait(lambda: any(e["ev"] in ("done", "exit", "error") for e in a.events), timeout, "the producer")
        assert a.has("done"), f"producer failed: {a.events[-5:]} {a.stderr[-20:]}"
        return [e for e in a.events if e["ev"] == "produced"]
    finally:
        a.kill()


def wait_all(agents: list[Agent], pred: Callable[[], bool], timeout: float, what: str, hold: float = 0.0) -> None:
    """Wait (bounded) until ``pred`` holds -- continuously for ``hold`` seconds, so that a transient state of a
    rebalance in progress is not mistaken for the result."""
    deadline = time.monotonic() + timeout
    since: float | None = None
    while True:
        now = time.monotonic()
        if pred():
            since = now if since is None else since
            if now - since >= hold:
                return
        else:
            since = None
        if now > deadline:
            state = {a.name: (a.assignment, a.proc.poll(), a.stderr[-3:]) for a in agents}
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {state}")
        for a in agents:
            if a.proc.poll() is not None and a.proc.returncode not in (0, -9):
                raise AssertionError(f"{a.name} exited with {a.proc.returncode}: {a.stderr[-20:]}")
        time.sleep(0.1)


def covers(agents: list[Agent], partitions: int) -> bool:
    """Disjoint assignments covering every partition."""
    got = [a.assignment for a in agents]
    if any(g is None for g in got):
        return False
    flat = [p for g in got for p in g]
    return sorted(flat) == list(range(partitions))


def wait_cover(agents: list[Agent], partitions: int, timeout: float = 45.0, *, each_nonempty: bool = True,
               hold: float = 1.0) -> None:
    def ok() -> bool:
        return covers(agents, partitions) and (not each_nonempty or all(a.assignment for a in agents))
    wait_all(agents, ok, timeout, f"disjoint assignments covering {partitions} partitions", hold)


@pytest.fixture
def agents():
    """Client agents a test started (append them); each is killed when the test ends."""
    started: list[Agent] = []
    yield started
    for a in started:
        a.kill()
