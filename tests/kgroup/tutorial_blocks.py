"""The console examples of docs/tutorial.md and docs/tutorial.zh.md: parsing, running, comparing.

A block is a fenced ```console block: ``$ kgroup ...`` lines, each followed by the output it prints. A line that
is exactly ``...`` stands for any number of output lines (the tutorial shows the part that matters). A command
may end with ``> FILE`` (its output goes to FILE, relative to the tutorial's working directory). Commands run in
order, in one working directory where ``scenarios/`` and ``docs/`` are the repository's, so that one example can read what an
earlier one wrote.

Normalisation (both sides), and nothing else: member-id UUIDs (classic and KIP-848), wall-clock times (the ``wall`` time of a run; every
time and duration of ``kgroup demo``, which runs in real time) and ephemeral ports.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Example:
    doc: str
    line: int
    command: str
    expected: list[str] = field(default_factory=list)


def parse(path: Path) -> list[Example]:
    out: list[Example] = []
    in_block = False
    current: Example | None = None
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if raw.startswith("```"):
            if not in_block and raw.strip() == "```console":
                in_block = True
            elif in_block:
                in_block = False
                current = None
            continue
        if not in_block:
            continue
        if raw.startswith("$ "):
            current = Example(path.name, n, raw[2:].strip())
            out.append(current)
        elif current is not None:
            current.expected.append(raw)
    return out


UUID_TAIL = re.compile(r"-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")
SHORT_ID = re.compile(r"-[0-9a-f]{8}…")
# KIP-848 member ids are client-generated Uuids (KIP-1082), shown as client/first 8 base64url characters…
CG_ID = re.compile(r"/[A-Za-z0-9_-]{8}…")
PORT = re.compile(r"127\.0\.0\.1:\d{2,5}")
WALL = re.compile(r"in \d+\.\d+ s wall")
# kgroup demo runs in real time: its timestamps, durations (with their alignment padding) and the number of
# initial-delay windows depend on the machine's timing
DEMO_TIME = [(re.compile(r"\[\s*\d+\.\d{3}s\]"), "[T]"), (re.compile(r" *\b\d+ ms\b"), " N ms"),
             (re.compile(r"\b\d+ x N ms"), "K x N ms"), (re.compile(r"\b\d+\.\d+ s\b"), "N s"),
             (re.compile(r"\d+\.\d+ 秒"), "N 秒"), (re.compile(r"用时 \d+\.\d+"), "用时 N")]


def normalise(lines: list[str], command: str) -> list[str]:
    demo = command.split()[1:2] == ["demo"]
    out = []
    for line in lines:
        line = UUID_TAIL.sub("-<uuid>", line.rstrip())
        line = SHORT_ID.sub("-<id>…", line)
        line = CG_ID.sub("/<id>…", line)
        line = PORT.sub("127.0.0.1:<port>", line)
        line = WALL.sub("in <t> s wall", line)
        if demo:
            for pattern, repl in DEMO_TIME:
                line = pattern.sub(repl, line)
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` (with ``...`` lines) against ``actual``: each run of lines between ``...`` appears in order."""
    parts: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == "...":
            parts.append([])
        else:
            parts[-1].append(line)
    pos = 0
    for i, part in enumerate(parts):
        if not part:
            continue
        first, last = i == 0, i == len(parts) - 1
        if first:
            if actual[:len(part)] != part:
                return False
            pos = len(part)
            if last and pos != len(actual):
                return False
            continue
        if last:
            return len(actual) - len(part) >= pos and actual[len(actual) - len(part):] == part
        found = next((j for j in range(pos, len(actual) - len(part) + 1) if actual[j:j + len(part)] == part), None)
        if found is None:
            return False
        pos = found + len(part)
    return len(parts) > 1 or pos == len(actual)


def run(example: Example, workdir: Path, timeout: float = 180) -> list[str]:
    args = shlex.split(example.command)
    target = None
    if ">" in args:
        i = args.index(">")
        args, target = args[:i], args[i + 1]
    assert args[0] == "kgroup", f"{example.doc}:{example.line}: only kgroup commands run here: {example.command}"
    proc = subprocess.run([sys.executable, "-m", "kgroup", *args[1:]], cwd=workdir, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONHASHSEED": "0"})
    assert proc.returncode == 0, f"{example.doc}:{example.line}: {example.command} exited {proc.returncode}\n" \
                                 f"{proc.stderr[-3000:]}"
    if target is not None:
        (workdir / target).write_text(proc.stdout, encoding="utf-8")
        return []
    return proc.stdout.splitlines()


def workdir_for(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("scenarios", "docs"):
        link = tmp / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    return tmp
