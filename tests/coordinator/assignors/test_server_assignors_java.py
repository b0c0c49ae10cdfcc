"""The server-side assignors' Java-order decisions against the real JDK.

Where Kafka's result depends on ``HashMap``/``HashSet`` iteration order -- which member is served first, the order
topics are dealt in, which of a member's partitions it keeps when over quota, the order of every output set --
a Java program of ours (java/UniformOracle.java, compiled at test time) computes the uniform (both builders) and
the range assignment with the JDK's own collections. Cases are built to collide: member ids sharing buckets (and
whole hashes), topic ids sharing buckets, partition sets whose members share buckets, several rounds fed back as
Kafka feeds its target-assignment records back. kgroup must agree exactly, order included.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from tests.protocol.java.jdks import find_jdks
from coordinator.assignors import assign_target
from protocol.java import spread, string_hash, uuid_bits, uuid_hash, uuid_string

SOURCE = Path(__file__).parent / "java" / "UniformOracle.java"


JDKS = find_jdks()


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """(run, jdk rules): the oracle on a JDK >= 19 if there is one (Kafka 4.x's JDK 21 rules), else on JDK 17 with
    kgroup switched to JDK 17's HashSet(Collection) sizing for the comparison."""
    slot = "21+" if "21+" in JDKS else "17" if "17" in JDKS else None
    if slot is None:
        pytest.skip("no JDK found (javac/java): the Java-order oracle needs one, e.g. openjdk-17-jdk-headless")
    version, bindir = JDKS[slot]
    javac, java = os.path.join(bindir, "javac"), os.path.join(bindir, "java")
    out = tmp_path_factory.mktemp("oracle")
    subprocess.run([javac, "-d", str(out), str(SOURCE)], check=True, capture_output=True, timeout=300)

    def run(text: str) -> list[list[str]]:
        proc = subprocess.run([java, "-cp", str(out), "UniformOracle"], input=text, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        cases, cur = [], []
        for line in proc.stdout.splitlines():
            if line == "END":
                cases.append(cur)
                cur = []
            else:
                cur.append(line)
        return cases

    return run, (21 if version >= 19 else 17)


def _meta(topics: dict[str, int]) -> dict:
    return {t: {"name": f"topic-{i}", "partitions": n} for i, (t, n) in enumerate(topics.items())}


def _hex(s: str) -> str:
    b = s.encode("utf-16-be", "surrogatepass")
    return "".join(f"{(b[i] << 8) | b[i + 1]:04x}" for i in range(0, len(b), 2))


def _colliding_topic_ids(rng: random.Random, n: int) -> list[str]:
    """Topic ids most of which share a bucket of a 16-table (some share the whole hash)."""
    out: list[str] = []
    target = rng.randrange(16)
    while len(out) < n:
        msb = rng.randrange(-2**63, 2**63)
        lsb = rng.randrange(-2**63, 2**63)
        t = uuid_string(msb, lsb)
        if rng.random() < 0.7 and spread(uuid_hash(t)) & 15 != target:
            continue
        if t not in out:
            out.append(t)
    return out


def _colliding_member_ids(rng: random.Random, n: int) -> list[str]:
    pool = ["".join(rng.choice(("Aa", "BB")) for _ in range(3)) + str(rng.randrange(3)) for _ in range(3 * n)]
    pool += [f"consumer-{rng.randrange(40)}" for _ in range(n)]
    target = rng.randrange(16)
    pool += [s for s in (f"m{rng.randrange(10**5)}" for _ in range(400)) if spread(string_hash(s)) & 15 == target]
    out = list(dict.fromkeys(pool))
    rng.shuffle(out)
    return out[:n]


def _random_current(rng, topics, members, subscribed):
    """Non-overlapping previous assignments, often over quota, partitions chosen to collide in small tables."""
    owner: dict = {}
    current = {m: {} for m in members}
    for t, n in topics.items():
        parts = list(range(n))
        rng.shuffle(parts)
        heavy = members[: max(1, len(members) // 3)]  # skewed: some members hold far more than their quota
        for p in parts[: rng.randrange(n + 1)]:
            m = rng.choice(heavy) if rng.random() < 0.7 else rng.choice(members)
            current[m].setdefault(t, []).append(p)
            owner[(t, p)] = m
    # now and then a topic the member no longer subscribes to, or one that was deleted
    for m in members:
        if rng.random() < 0.2:
            current[m][uuid_string(rng.randrange(2**62), 7)] = [0, 1]
    return current


def _case(rng: random.Random):
    n_topics = rng.randint(1, 6)
    tids = _colliding_topic_ids(rng, n_topics)
    stride = rng.choice((1, 16, 17, 32))
    topics = {t: rng.choice((1, 3, 8, 16, 40, 70, 130)) if stride == 1 else rng.randint(20, 90) for t in tids}
    member_ids = _colliding_member_ids(rng, rng.randint(1, 12))
    subs = rng.sample(tids, rng.randint(0, len(tids)))
    rng.shuffle(subs)
    current = _random_current(rng, topics, member_ids, subs)
    return topics, member_ids, subs, current


def _request(kind, topics, members_in_order, subs_of, current_of, instance_of) -> str:
    """The oracle's input; topic ids in a record but not in the metadata (deleted topics) are numbered after the
    known ones with partition count -1 (the oracle, like Kafka, drops them: nobody subscribes to them)."""
    numbers = {t: i for i, t in enumerate(topics)}
    lines = [f"CASE {kind}"]
    for t, n in topics.items():
        msb, lsb = uuid_bits(t)
        lines.append(f"T {msb} {lsb} {n}")
    for m in members_in_order:
        for t in current_of[m]:
            if t not in numbers:
                numbers[t] = len(numbers)
                msb, lsb = uuid_bits(t)
                lines.append(f"T {msb} {lsb} -1")
    for m in members_in_order:
        subs = ",".join(str(numbers[t]) for t in subs_of[m]) or "-"
        rec = "/".join(f"{numbers[t]}:{'.'.join(map(str, ps))}" for t, ps in current_of[m].items())
        inst = _hex(instance_of[m]) if instance_of.get(m) is not None else "-"
        lines.append(f"M {_hex(m)} {inst} {subs} {rec or '-'}")
    lines.append("END")
    return "\n".join(lines)


def _render(topics, result) -> list[str]:
    numbers = {t: i for i, t in enumerate(topics)}  # results never hold deleted topics
    return [_hex(m) + " " + "".join(f"{numbers[t]}:{','.join(map(str, ps))};" for t, ps in a.items())
            for m, a in result.items()]


def _rounds(rng: random.Random, jdk: int, cases: int, stype: str) -> tuple[list[str], list[list[str]]]:
    """Oracle requests and kgroup's rendered results for ``cases`` random groups, three rounds each: the result is
    the next round's record; some members leave, others join (appended, as Kafka puts a new member after the
    existing ones); now and then partitions are added."""
    kind = "uniform" if stype == "homogeneous" else "hetero"
    requests, expected = [], []
    for _ in range(cases):
        topics, member_ids, subs, current = _case(rng)
        for _rnd in range(3):
            if stype == "homogeneous":
                subs_of = {m: subs for m in member_ids}
            else:
                subs_of = {m: rng.sample(list(topics), rng.randint(0, len(topics))) for m in member_ids}
            records = {m: current.get(m, {}) for m in member_ids}
            members = {m: {"subscribed_topic_ids": subs_of[m], "current": records[m]} for m in member_ids}
            result = assign_target("uniform", members, _meta(topics), subscription_type=stype, jdk=jdk)
            requests.append(_request(kind, topics, member_ids, subs_of, records, {}))
            expected.append(_render(topics, result))
            current = result
            member_ids = [m for m in member_ids if rng.random() > 0.25] + _colliding_member_ids(rng, rng.randint(0, 3))
            member_ids = list(dict.fromkeys(member_ids)) or ["solo"]
            if rng.random() < 0.3:
                for t in topics:
                    topics[t] += rng.choice((0, 1, 5))
    return requests, expected


def _agree(oracle, requests: list[str], expected: list[list[str]]) -> None:
    got = oracle("\n".join(requests) + "\n")
    assert len(got) == len(expected)
    bad = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert not bad, f"{len(bad)} of {len(expected)} differ; first:\n{requests[bad[0]]}\njava: {got[bad[0]]}\n" \
                    f"kgroup: {expected[bad[0]]}"


def test_homogeneous_uniform_matches_java_collections(oracle):
    oracle, jdk = oracle
    _agree(oracle, *_rounds(random.Random(848), jdk, 250, "homogeneous"))


def test_heterogeneous_uniform_matches_java_collections(oracle):
    # The heterogeneous builder decides by member index (HashMap order) and sorted topics; its output sets are
    # built with Kafka's capacity estimate and changed by every move of the balancing passes.
    oracle, jdk = oracle
    _agree(oracle, *_rounds(random.Random(4848), jdk, 200, "heterogeneous"))


def test_cases_collide_and_revoke():
    # The comparison is only meaningful if members really collide and really give partitions back.
    from protocol.java import hashmap_order
    rng = random.Random(848)
    collisions = overquota = 0
    for _ in range(250):
        topics, member_ids, subs, current = _case(rng)
        buckets = [spread(string_hash(m)) & 15 for m in member_ids]
        collisions += len(buckets) != len(set(buckets))
        total = sum(topics[t] for t in subs)
        quota = -(-total // max(1, len(member_ids)))
        overquota += any(sum(len(ps) for t, ps in current[m].items() if t in subs) > quota for m in member_ids)
        assert hashmap_order(member_ids)  # exercised
    assert collisions > 100 and overquota > 100


def test_range_matches_java_collections(oracle):
    oracle, jdk = oracle
    rng = random.Random(9)
    requests, expected = [], []
    for _ in range(200):
        topics, member_ids, subs, _ = _case(rng)
        subs_of = {m: rng.sample(list(topics), rng.randint(0, len(topics))) for m in member_ids}
        instance_of = {m: (None if rng.random() < 0.5 else rng.choice(("i1", "i2", "\U0001F600", "\uffff", m)))
                       for m in member_ids}
        if len({i for i in instance_of.values() if i is not None}) < sum(i is not None for i in instance_of.values()):
            instance_of = {m: None for m in member_ids}  # instance ids are unique in a group
        members = {m: {"subscribed_topic_ids": subs_of[m], "instance_id": instance_of[m]} for m in member_ids}
        result = assign_target("range", members, _meta(topics), subscription_type="heterogeneous", jdk=jdk)
        requests.append(_request("range", topics, member_ids, subs_of, {m: {} for m in member_ids}, instance_of))
        expected.append(_render(topics, result))
    _agree(oracle, requests, expected)
