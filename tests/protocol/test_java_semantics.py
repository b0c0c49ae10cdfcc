"""protocol/java.py against the real JDK: String.hashCode/compareTo, UUID hashCode and HashMap/HashSet order.

A small Java program of ours (tests/protocol/java/HashOrder.java) is compiled at test time with every JDK found
(``javac`` on PATH, normally JDK 17, and any JDK >= 19 under /usr/lib/jvm, whose ``new HashSet<>(Collection)``
sizing is the one Kafka 4.x on JDK 21 uses). It replays thousands of random operation sequences -- puts into one
bucket past the treeify thresholds, removals from tree buckets, ``computeIfAbsent``, copies -- and prints the
iteration orders, which must equal :class:`protocol.java.JavaHashMap`'s. Skipped (with the reason) without a JDK;
the JDK 19+ sizing formula is also checked on its own against the documented ``HashMap.newHashMap`` rule.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from tests.protocol.java.jdks import find_jdks
from protocol.java import (JavaHashMap, JavaIntSet, JavaOrderUndefined, compute_if_absent_order,
                           hashmap_copy_capacity, hashmap_order,
                           hashset_copy_capacity, java_sorted, spread, string_hash, table_size_for, uuid_bits,
                           uuid_hash, uuid_string)

HERE = Path(__file__).parent
SOURCE = HERE / "java" / "HashOrder.java"


# --- running the JDKs -----------------------------------------------------------------------------------------------

JDKS = find_jdks()


@pytest.fixture(scope="module", params=["17", "21+"])
def java(request, tmp_path_factory):
    """A function running request lines through HashOrder on one JDK; yields (run, jdk_rules)."""
    if request.param not in JDKS:
        if request.param == "17":
            pytest.skip("no javac found (needs a JDK, e.g. openjdk-17-jdk-headless)")
        pytest.skip("no JDK >= 19 found under /usr/lib/jvm: JDK 19+ HashSet(Collection) sizing is checked by "
                    "its documented formula in test_jdk19_sizing_formula only")
    version, bindir = JDKS[request.param]
    out = tmp_path_factory.mktemp(f"hashorder{version}")
    subprocess.run([os.path.join(bindir, "javac"), "-d", str(out), str(SOURCE)], check=True,
                   capture_output=True, timeout=300)

    def run(lines: list[str]) -> list[str]:
        proc = subprocess.run([os.path.join(bindir, "java"), "-cp", str(out), "HashOrder"],
                              input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split("\n")[:len(lines)]

    return run, (21 if version >= 19 else 17)


# --- key types: how the harness spells them and how protocol.java hashes/compares them -------------------------------

def _hex(s: str) -> str:
    units = s.encode("utf-16-be", "surrogatepass")
    return "".join(f"{(units[i] << 8) | units[i + 1]:04x}" for i in range(0, len(units), 2))


def _unhex(h: str) -> str:
    return b"".join(int(h[i:i + 4], 16).to_bytes(2, "big") for i in range(0, len(h), 4)).decode(
        "utf-16-be", "surrogatepass")


def _fold(k: tuple[int, int]) -> int:
    x = (k[0] ^ k[1]) & (2**64 - 1)
    h = ((x >> 32) ^ x) & 0xFFFFFFFF
    return h - 2**32 if h & 0x80000000 else h


KEY_TYPES = {
    # type: (hash_of, order_key, to_token, from_token)
    "S": (string_hash, lambda s: s.encode("utf-16-be", "surrogatepass"), _hex, _unhex),
    "I": (lambda i: i, lambda i: i, str, int),
    "U": (_fold, lambda k: k, lambda k: f"{k[0]}:{k[1]}", lambda t: tuple(map(int, t.split(":")))),
    "O": (lambda k: k[1], None, lambda k: f"{k[0]}:{k[1]}", lambda t: tuple(map(int, t.split(":")))),
}


def emulate(ktype: str, ops: list[tuple[str, object]], jdk: int, after_each=None) -> list:
    """The keys of the map the ops build, in iteration order; ``after_each(map)`` is called after every op."""
    hash_of, order_key, _, _ = KEY_TYPES[ktype]
    m = None
    for op, arg in ops:
        if op in ("D", "E"):
            m = JavaHashMap(hash_of, order_key)
        elif op == "N":
            m = JavaHashMap(hash_of, order_key, arg)
        elif op == "C":
            m = JavaHashMap.copy_of(m, jdk)
        elif op == "H":
            m = JavaHashMap.hash_set_of(m.keys(), hash_of, order_key, jdk)
        elif op == "L":
            m = JavaHashMap.hash_set_of(arg, hash_of, order_key, jdk)
        elif op == "+":
            m.put(arg)
        elif op == "-":
            m.remove(arg)
        elif op == "^":
            m.compute_if_absent(arg)
        if after_each is not None:
            after_each(m)
    return m.keys()


def request_line(ktype: str, ops: list[tuple[str, object]]) -> str:
    tok = KEY_TYPES[ktype][2]
    parts = ["M", ktype]
    for op, arg in ops:
        if op in ("D", "E", "C", "H"):
            parts.append(op)
        elif op == "N":
            parts.append(f"N{arg}")
        elif op == "L":
            parts.append("L" + ",".join(tok(k) for k in arg))
        else:
            parts.append(op + tok(arg))
    return " ".join(parts)


# --- random cases ---------------------------------------------------------------------------------------------------

def _colliding_strings(rng: random.Random, n: int) -> list[str]:
    """Strings with one hash: concatenations of "Aa"/"BB" (equal hash) blocks -- ties decided by compareTo."""
    width = max(1, (n - 1).bit_length())
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(("Aa", "BB")) for _ in range(width)) + rng.choice(("", "x")))
    return list(out)


def _strings_in_bucket(rng: random.Random, n: int, mask: int, bucket: int) -> list[str]:
    alphabet = "abcXYZ019-_\u00e9\u4e2d\U0001F600"
    out: set[str] = set()
    while len(out) < n:
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        if spread(string_hash(s)) & mask == bucket:
            out.add(s)
    if rng.random() < 0.3:
        out.add("\ud800x")  # a lone surrogate is one UTF-16 unit in Java too
    return list(out)


def _keys(rng: random.Random, ktype: str, n: int) -> list:
    shape = rng.randrange(4)
    if ktype == "I":
        if shape == 0:
            stride = rng.choice((16, 32, 64, 128, 256))
            base = rng.randrange(stride)
            return rng.sample([base + stride * j for j in range(4 * n)], n)
        if shape == 1:
            return rng.sample(range(-50, 3 * n), n)
        if shape == 2:
            return [rng.randrange(-2**31, 2**31) for _ in range(n)]
        return rng.sample([65536 * j + rng.randrange(64) for j in range(8 * n)], n)
    if ktype == "S":
        if shape == 0:
            return _colliding_strings(rng, n)
        if shape == 1:
            return _strings_in_bucket(rng, n, 63, rng.randrange(64))
        if shape == 2:
            return _strings_in_bucket(rng, n, 15, rng.randrange(16)) + _colliding_strings(rng, 3)
        return list({f"member-{rng.randrange(10**6)}" for _ in range(n)})
    if ktype == "U":
        out = set()
        target = rng.randrange(2**32)
        while len(out) < n:
            msb = rng.randrange(-2**63, 2**63)
            if shape == 0:  # one full hash: fold(x) == target
                hi = rng.randrange(2**32)
                x = (hi << 32) | (hi ^ target)
            elif shape == 1:  # one bucket of 64
                hi = rng.randrange(2**32)
                lo = (rng.randrange(2**32) & ~0x3F) | (target & 0x3F)
                x = (hi << 32) | (hi ^ lo)
                x ^= 0  # the fold's low 6 bits are target's
            else:
                x = rng.randrange(2**64)
            lsb = (msb & (2**64 - 1)) ^ x
            lsb = lsb - 2**64 if lsb & (1 << 63) else lsb
            out.add((msb, lsb))
        return list(out)
    # opaque keys: distinct hashes (Java would otherwise fall back to identity hashes), crowded buckets
    hashes = rng.sample(range(2**16), n) if shape else [rng.randrange(2**8) << 12 | 5 for _ in range(n)]
    hashes = list(dict.fromkeys(hashes))
    return [(i, h - 2**31 if shape == 3 else h) for i, h in enumerate(hashes)]


def random_case(rng: random.Random) -> tuple[str, list]:
    ktype = rng.choice("IISSUO")
    universe = _keys(rng, ktype, rng.choice((5, 12, 13, 24, 25, 40, 70, 130)))
    start = rng.randrange(5)
    ops: list[tuple[str, object]] = []
    if start == 0:
        ops.append(("D", None))
    elif start == 1:
        ops.append(("N", rng.choice((0, 1, 2, 3, 7, 16, 17, 50, 64, 100, 200))))
    elif start == 2:
        ops.append(("E", None))
    else:
        ops.append(("L", rng.sample(universe, rng.randrange(len(universe) + 1))))
    is_set = ops[0][0] in ("E", "L")
    present = set(ops[0][1]) if ops[0][0] == "L" else set()
    for _ in range(rng.randrange(2 * len(universe) + 1)):
        r = rng.random()
        if r < 0.55 or not present:
            k = rng.choice(universe)
            if not is_set and rng.random() < 0.35:
                ops.append(("^", k))
            else:
                ops.append(("+", k))
            present.add(k)
        elif r < 0.85:
            k = rng.choice(sorted(present, key=repr))
            ops.append(("-", k))
            present.discard(k)
        elif r < 0.93 and not is_set:
            ops.append(("C", None))
        else:
            ops.append(("H", None))
            is_set = True
    return ktype, ops


CASES = 1500


def test_hashmap_iteration_order_matches_the_jdk(java):
    run, jdk = java
    rng = random.Random(848)
    cases = [random_case(rng) for _ in range(CASES)]
    got = run([request_line(t, ops) for t, ops in cases])
    mismatches = []
    undefined = 0
    for (ktype, ops), line in zip(cases, got):
        tok = KEY_TYPES[ktype][2]
        try:
            mine = " ".join(tok(k) for k in emulate(ktype, ops, jdk))
        except JavaOrderUndefined:
            undefined += 1
            continue
        if mine != line.strip():
            mismatches.append(request_line(ktype, ops))
    assert undefined == 0  # the generators only make equal hashes for Comparable keys
    assert not mismatches, f"{len(mismatches)} of {CASES} differ; first: {mismatches[0][:500]}"


def test_cases_exercise_tree_buckets():
    # The comparison above is only as good as its cases: make sure trees are built, split and removed from.
    rng = random.Random(848)
    seen = []

    def tree_seen(m):
        if m._tab and any(b is not None and type(b) is not list for b in m._tab):
            seen.append(True)

    treeified = 0
    for _ in range(CASES):
        ktype, ops = random_case(rng)
        seen.clear()
        emulate(ktype, ops, 21, tree_seen)
        treeified += bool(seen)
    assert treeified > 100


def test_fast_paths_match_the_jdk(java):
    """hashmap_order (put-only maps), compute_if_absent_order and JavaIntSet (the assignors' partition sets)
    against the JDK."""
    run, jdk = java
    rng = random.Random(4)
    lines, expect = [], []
    for _ in range(300):
        keys = _keys(rng, "S", rng.choice((3, 9, 13, 30, 100, 300, 700)))
        cap = rng.choice((None, 0, 4, 16, 100))
        ops = [("D", None) if cap is None else ("N", cap)] + [("+", k) for k in keys]
        lines.append(request_line("S", ops))
        expect.append(" ".join(map(_hex, hashmap_order(keys, string_hash, cap))))
    for _ in range(200):  # computeIfAbsent-only maps (how Kafka groups partitions by topic)
        keys = _keys(rng, "S", rng.choice((3, 9, 13, 30, 100, 300)))
        calls = [rng.choice(keys[: i + 1]) for i in range(len(keys)) for _ in range(rng.randrange(3))] + keys
        rng.shuffle(calls)
        first = list(dict.fromkeys(calls))
        after_last = calls.index(first[-1]) < len(calls) - 1
        lines.append(request_line("S", [("D", None)] + [("^", k) for k in calls]))
        expect.append(" ".join(map(_hex, compute_if_absent_order(first, after_last))))
    for _ in range(300):
        universe = [k for k in _keys(rng, "I", rng.choice((10, 40, 120, 300))) if k >= 0]
        first = rng.sample(universe, rng.randrange(len(universe) + 1))
        ops: list = [("L", first)]
        s = JavaIntSet.from_collection(first, jdk)
        present = list(dict.fromkeys(first))
        for _ in range(rng.randrange(len(universe))):
            if rng.random() < 0.6 or not present:
                k = rng.choice(universe)
                s.add(k)
                if k not in present:
                    present.append(k)
                ops.append(("+", k))
            elif rng.random() < 0.9:
                k = present.pop(rng.randrange(len(present)))
                s.remove(k)
                ops.append(("-", k))
            else:
                s = s.copy(jdk)
                ops.append(("H", None))
        if rng.random() < 0.5:
            extra = [k for k in universe if k not in s]
            s.add_all(extra)
            ops += [("+", k) for k in extra]
        lines.append(request_line("I", ops))
        expect.append(" ".join(map(str, s.order())))
    got = run(lines)
    bad = [line for line, g, e in zip(lines, got, expect) if g.strip() != e]
    assert not bad, f"{len(bad)} differ; first: {bad[0][:300]}"


def test_string_hash_and_compare_to_match_the_jdk(java):
    run, _ = java
    rng = random.Random(7)
    alphabet = "aZ09 \u00ff\u0100\uffff\ue000\U00010000\U0001F600\ud800\udfff"
    strings = ["", "hello", "polygenelubricants"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(300)]
    got = run([f"HASH S {_hex(s)}" for s in strings] + ["SORT " + " ".join(_hex(s) for s in strings if s)])
    assert [int(g) for g in got[:-1]] == [string_hash(s) for s in strings]
    assert got[-1].split() == [_hex(s) for s in java_sorted(s for s in strings if s)]


def test_uuid_hash_matches_java_util_uuid(java):
    # java.util.UUID.hashCode is documented as the same fold Kafka's Uuid.hashCode computes.
    run, _ = java
    rng = random.Random(9)
    pairs = [(0, 0), (0, 1), (-1, 0), (2**63 - 1, -2**63)] + [
        (rng.randrange(-2**63, 2**63), rng.randrange(-2**63, 2**63)) for _ in range(200)]
    got = run([f"HASH U {a}:{b}" for a, b in pairs])
    assert [int(g) for g in got] == [uuid_hash(uuid_string(a, b)) for a, b in pairs]


# --- rules checked by their documented formulas (no JDK needed) -----------------------------------------------------

def test_jdk19_sizing_formula():
    # JDK 19+ HashSet(Collection): HashMap.newHashMap(max(n, 12)) = new HashMap<>((int) Math.ceil(n / 0.75)).
    import math
    for n in range(0, 2000):
        assert hashset_copy_capacity(n, 21) == math.ceil(max(n, 12) / 0.75)
        assert hashmap_copy_capacity(n, 21) == (table_size_for(math.ceil(n / 0.75)) if n else 0)
    # JDK 17: new HashMap<>(Math.max((int) (n / .75f) + 1, 16)); the two differ where n / 0.75 is a power of 2.
    assert [n for n in range(200) if table_size_for(hashset_copy_capacity(n, 17))
            != table_size_for(hashset_copy_capacity(n, 21))] == [12, 24, 48, 96, 192]


def test_kafka_uuid_strings():
    # Kafka's Uuid.toString is URL-safe base64 without padding; ZERO_UUID and ONE_UUID.
    assert uuid_bits("AAAAAAAAAAAAAAAAAAAAAA") == (0, 0)
    assert uuid_string(0, 1) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_hash("AAAAAAAAAAAAAAAAAAAAAQ") == 1
    t = "T1-A4s3VTwiI5CTbEp6POw"  # a topic id from Kafka's UniformHomogeneousAssignmentBuilderTest
    assert uuid_string(*uuid_bits(t)) == t
    for bad in ("short", "T1-A4s3VTwiI5CTbEp6POwAAAAAAA", "T1-A4s3VTwiI5CTbEp6PO*"):
        with pytest.raises(ValueError):
            uuid_bits(bad)


def test_equal_hashes_without_compare_to_are_refused():
    m = JavaHashMap(lambda k: 0, None, 64)
    with pytest.raises(JavaOrderUndefined):
        for i in range(9):
            m.put(("k", i))
