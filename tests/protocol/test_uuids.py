"""Kafka's Uuid string form (protocol/uuids.py) against Kafka's rules run by a JDK.

``java_oracles/UuidOracle.java`` is Kafka 4.4's ``Uuid.fromString``/``toString`` logic over the JDK's own
``java.util.Base64``; ``ORACLE`` is what it printed on JDK 17 (``javac UuidOracle.java && java UuidOracle <inputs>``).
When a JDK is on PATH the test also runs it live.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from protocol.uuids import (METADATA_TOPIC_ID, ONE_UUID, RESERVED, ZERO_UUID, canonical, random_uuid,
                            uuid_from_string, uuid_to_string)

# input -> "OK <toString of the parsed Uuid>" or "ERR <IllegalArgumentException message>"
ORACLE = {
    "AAAAAAAAAAAAAAAAAAAAAA": "OK AAAAAAAAAAAAAAAAAAAAAA",
    "AAAAAAAAAAAAAAAAAAAAAQ": "OK AAAAAAAAAAAAAAAAAAAAAQ",
    "AAAAAAAAAAAAAAAAAAAAAB": "OK AAAAAAAAAAAAAAAAAAAAAA",  # unused low bits of the last character are ignored
    "AAAAAAAAAAAAAAAAAAAAAP": "OK AAAAAAAAAAAAAAAAAAAAAA",
    "UXyU9i5ARn6W00ON2taeWA": "OK UXyU9i5ARn6W00ON2taeWA",  # UuidTest's literal
    "UXyU9i5ARn6W00ON2taeWA==": "OK UXyU9i5ARn6W00ON2taeWA",
    "UXyU9i5ARn6W00ON2taeWA=": "ERR Input byte array has wrong 4-byte ending unit",
    "AAAAAAAAAAAAAAAAAAAAAAA": "ERR Input string `AAAAAAAAAAAAAAAAAAAAAAA` decoded as 17 bytes, which is not equal "
                               "to the expected 16 bytes of a base64-encoded UUID",
    "AAAAAAAAAAAAAAAAAAAAA": "ERR Last unit does not have enough valid bits",
    "____________________-_": "OK ____________________-w",
    "AAAAAAAAAAAAAAAAAAAAA+": "ERR Illegal base64 character 2b",
    "AAAAAAAAAAAAAAAAAAAAA/": "ERR Illegal base64 character 2f",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAA": "ERR Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long to be "
                                    "decoded as a base64 UUID",
    "AAAAAA": "ERR Input string `AAAAAA` decoded as 4 bytes, which is not equal to the expected 16 bytes of a "
              "base64-encoded UUID",
    "AAAAAAAAAAAAAAAAAAAAAAAAA": "ERR Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long to be "
                                 "decoded as a base64 UUID",
    "AAAAAAAAAAAAAAAAAAAA=A": "ERR Input byte array has wrong 4-byte ending unit",
}


def _ours(text: str) -> str:
    try:
        return "OK " + uuid_to_string(uuid_from_string(text))
    except ValueError as e:
        return f"ERR {e}"


@pytest.mark.parametrize("text", sorted(ORACLE))
def test_from_string_matches_the_jdk(text):
    assert _ours(text) == ORACLE[text]


def test_the_recorded_oracle_is_what_a_jdk_prints(tmp_path):
    javac, java = shutil.which("javac"), shutil.which("java")
    if not (javac and java):
        pytest.skip("no JDK on PATH")
    src = Path(__file__).parent / "java_oracles" / "UuidOracle.java"
    shutil.copy(src, tmp_path / src.name)
    subprocess.run([javac, src.name], cwd=tmp_path, check=True, timeout=120)
    out = subprocess.run([java, "-cp", str(tmp_path), "UuidOracle", *ORACLE], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert dict(line.split("\t", 1) for line in out.splitlines()) == ORACLE


def test_reserved_ids_and_round_trip():
    assert ZERO_UUID == "AAAAAAAAAAAAAAAAAAAAAA" and ONE_UUID == METADATA_TOPIC_ID == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert RESERVED == {ZERO_UUID, ONE_UUID}
    u = uuid.UUID("5178950f-62e4-467e-96d3-438dd6d69e58")
    assert uuid_to_string(u) == "UXiVD2LkRn6W00ON1taeWA"
    assert uuid_from_string(uuid_to_string(u)) == u
    assert canonical("UXyU9i5ARn6W00ON2taeWA==") == "UXyU9i5ARn6W00ON2taeWA"


def test_random_uuid_is_version_4_never_reserved_never_with_a_dash():
    rng = random.Random(7)
    ids = [random_uuid(rng) for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for s in ids:
        u = uuid_from_string(s)
        assert u.version == 4 and u.variant == uuid.RFC_4122
        assert s not in RESERVED and "-" not in s and len(s) == 22
    assert random_uuid(random.Random(7)) == ids[0]  # the randomness is the caller's
