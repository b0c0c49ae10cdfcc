"""Regenerate the Java-oracle fixtures of the consumer-group tests (run by hand, not by pytest).

    python tests/coordinator/consumer_group/java_oracles/generate.py KAFKA_GIT_DIR

KAFKA_GIT_DIR: a git directory of Apache Kafka with branch 4.4 (e.g. /work/.mirror/confluentinc+kafka/repo). The
script extracts Kafka's own timeline classes (server-common/.../timeline: BaseHashTable, SnapshottableHashTable,
TimelineHashMap, SnapshotRegistry, Snapshot, Delta, Revertable) into a temporary directory with two-line stubs for
slf4j's Logger and Kafka's LogContext, compiles them with TimelineOrder.java and PreferredAssignor.java (ours), runs
seeded random operation sequences through them and writes timeline_vectors.json next to this file.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMELINE = ("BaseHashTable", "SnapshottableHashTable", "TimelineHashMap", "SnapshotRegistry", "Snapshot", "Delta",
            "Revertable")
STUBS = {
    "org/slf4j/Logger.java": "package org.slf4j;\npublic interface Logger { default void debug(String f, Object... a) {}"
                             " default void error(String f, Object... a) {} }\n",
    "org/apache/kafka/common/utils/internals/LogContext.java":
        "package org.apache.kafka.common.utils.internals;\nimport org.slf4j.Logger;\n"
        "public class LogContext { public Logger logger(Class<?> c) { return new Logger() {}; } }\n",
}


def _build(git_dir: str, work: Path) -> Path:
    src = work / "src"
    for name in TIMELINE:
        path = src / "org/apache/kafka/timeline" / f"{name}.java"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(subprocess.run(
            ["git", "-C", git_dir, "show", f"4.4:server-common/src/main/java/org/apache/kafka/timeline/{name}.java"],
            check=True, capture_output=True).stdout)
    for rel, text in STUBS.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    for name in ("TimelineOrder.java", "PreferredAssignor.java"):
        (src / name).write_text((HERE / name).read_text())
    out = work / "out"
    subprocess.run(["javac", "-d", str(out), *map(str, src.rglob("*.java"))], check=True)
    return out


def _member_id(rng: random.Random) -> str:
    import base64
    if rng.random() < 0.7:  # a client-generated Uuid string (KIP-1082)
        return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")
    return f"member-{rng.randrange(40)}"


def timeline_sequences(rng: random.Random, n: int) -> list[list[str]]:
    seqs = []
    for _ in range(n):
        keys: list[str] = []
        ops: list[str] = []
        for step in range(rng.randrange(20, 100)):
            r = rng.random()
            if keys and r < 0.3:
                ops.append(f"remove {keys.pop(rng.randrange(len(keys)))}")
            elif keys and r < 0.45:
                ops.append(f"put {rng.choice(keys)}")  # a replacement
            else:
                k = _member_id(rng)
                if k not in keys:
                    keys.append(k)
                ops.append(f"put {k}")
            if rng.random() < 0.2:
                ops.append(f"snapshot {step}")
            if rng.random() < 0.15:
                ops.append("print")
        seqs.append(ops + ["print"])
    return seqs


def main(git_dir: str) -> None:
    rng = random.Random(848)
    with tempfile.TemporaryDirectory() as tmp:
        out = _build(git_dir, Path(tmp))
        timeline = []
        for ops in timeline_sequences(rng, 10):
            printed = subprocess.run(["java", "-cp", str(out), "TimelineOrder"], input="\n".join(ops) + "\n",
                                     capture_output=True, text=True, check=True).stdout.splitlines()
            timeline.append({"ops": ops, "orders": [line.split("\t") if line else [] for line in printed]})
        names = ["uniform", "range"]
        lines, cases = [], []
        for _ in range(200):
            # the group's counts in its TimelineHashMap order, which is "uniform" before "range" at any capacity
            base = [(n, rng.randrange(1, 4)) for n in names if rng.random() < 0.7]
            old = rng.choice(["-", *[n for n, _ in base]]) if base else "-"
            new = rng.choice(["-", *names])
            cases.append({"counts": base, "old": old, "new": new})
            lines.append(",".join(f"{n}={c}" for n, c in base) + f" | {old} | {new}")
        printed = subprocess.run(["java", "-cp", str(out), "PreferredAssignor"], input="\n".join(lines) + "\n",
                                 capture_output=True, text=True, check=True).stdout.splitlines()
        for case, best in zip(cases, printed):
            case["preferred"] = None if best == "-" else best
        java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    (HERE / "timeline_vectors.json").write_text(json.dumps(
        {"generated_by": "generate.py with Kafka 4.4 timeline classes", "jdk": java,
         "timeline": timeline, "preferred_assignor": cases}, indent=None, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
