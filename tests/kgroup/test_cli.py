"""The `kgroup` command line: exit codes and what the hashing commands print (Kafka's rules as oracle)."""

from __future__ import annotations

import json
import subprocess
import sys

from kgroup.cli import main


def test_no_command_prints_help_and_exits_2(capsys) -> None:
    assert main([]) == 2
    assert "usage: kgroup" in capsys.readouterr().out


def test_hash_group_uses_kafka_utils_abs(capsys) -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Kafka's Utils.abs maps it to 0 -> partition 0.
    assert main(["hash", "--json", "polygenelubricants", "a"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_id = {g["group_id"]: g for g in out["groups"]}
    assert by_id["polygenelubricants"]["java_hash"] == -2147483648
    assert by_id["polygenelubricants"]["partition"] == 0
    # "a".hashCode() == 97 -> 97 % 50 == 47
    assert by_id["a"]["java_hash"] == 97 and by_id["a"]["partition"] == 47


def test_hash_key_matches_kafka_python_partitioner(capsys) -> None:
    from kafka.partitioner.default import murmur2  # kafka-python's independent port of Kafka's Utils.murmur2

    assert main(["hash", "--json", "--key", "user-1", "--key", "k2", "--partitions", "7"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in out["keys"]:
        assert k["partition"] == (murmur2(k["key"].encode()) & 0x7FFFFFFF) % 7  # DefaultPartitioner's rule


def test_hash_rejects_bad_input(capsys) -> None:
    assert main(["hash"]) == 2
    assert main(["hash", "g", "--offsets-partitions", "0"]) == 2


def test_demo_runs_as_a_module() -> None:
    proc = subprocess.run([sys.executable, "-m", "kgroup", "demo"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "FIND_COORDINATOR" in proc.stdout
    assert "partition 0" in proc.stdout  # the Integer.MIN_VALUE group
