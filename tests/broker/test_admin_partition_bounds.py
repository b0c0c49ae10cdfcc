"""One admin request cannot allocate without bound (issue 14, found by the fuzzer: a CreatePartitions of fuzz-t
with a count of 2^31-1 took the server to 1.3 GB in seconds). Kafka's controller bounds both: a CreateTopics
request creating more than ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH`` (10,000) partitions is refused
whole with POLICY_VIOLATION ("Excessively large number of partitions per request."), and a CreatePartitions
operation writes at most ``QuorumController.MAX_RECORDS_PER_USER_OP`` (10,000) records -- past it the topic that
crosses it fails (``BoundedListTooLongException``, answered by createPartitions' per-topic catch as
UNKNOWN_SERVER_ERROR)."""

from __future__ import annotations

import resource
import time

from protocol.errors import ErrorCode
from protocol.messages import CreatePartitionsRequest, CreateTopicsRequest

from broker_harness import server  # noqa: F401  (the fixture)
from test_admin_apis import call, results, topic

E = ErrorCode
P = CreatePartitionsRequest.Topic


async def test_create_topics_beyond_10000_partitions_is_refused_whole(server) -> None:
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    r = await call(server, CreateTopicsRequest(topics=[topic("small", 3), topic("huge", 2**31 - 1)],
                                               timeout_ms=5000), 7)
    assert results(r) == {n: (E.POLICY_VIOLATION, "Excessively large number of partitions per request.")
                          for n in ("small", "huge")}
    assert "small" not in server.cluster.topics and "huge" not in server.cluster.topics
    assert time.monotonic() - t0 < 5 and resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 50_000
    # the bound is on the request's total (validateTotalNumberOfPartitions), -1 counting num.partitions
    r = await call(server, CreateTopicsRequest(topics=[topic("a", 6000), topic("b", 4001)], timeout_ms=5000), 7)
    assert {n: e for n, (e, _) in results(r).items()} == {"a": E.POLICY_VIOLATION, "b": E.POLICY_VIOLATION}
    r = await call(server, CreateTopicsRequest(topics=[topic("a", 6000), topic("b", 4000)], timeout_ms=5000), 7)
    assert {n: e for n, (e, _) in results(r).items()} == {"a": E.NONE, "b": E.NONE}
    assert len(server.cluster.partitions("a")) == 6000


async def test_create_partitions_beyond_10000_records_fails_the_topic_that_crosses_it(server) -> None:
    r = await call(server, CreateTopicsRequest(topics=[topic("x", 1), topic("y", 1), topic("z", 1)],
                                               timeout_ms=5000), 7)
    assert all(e == E.NONE for e, _ in results(r).values())
    t0 = time.monotonic()
    r = await call(server, CreatePartitionsRequest(timeout_ms=5000, topics=[
        P(name="x", count=6001, assignments=None), P(name="y", count=2**31 - 1, assignments=None),
        P(name="z", count=4001, assignments=None)]), 3)
    got = {t.name: (t.error_code, t.error_message) for t in r.results}
    # x takes 6,000 of the operation's 10,000 records; y would need 2^31-2 more; z's 4,000 still fit
    assert got == {"x": (E.NONE, None), "y": (E.UNKNOWN_SERVER_ERROR, None), "z": (E.NONE, None)}
    assert [len(server.cluster.partitions(n)) for n in "xyz"] == [6001, 1, 4001]
    assert time.monotonic() - t0 < 5
    # one more than the budget in a single topic: refused, nothing added
    r = await call(server, CreatePartitionsRequest(timeout_ms=5000, topics=[P(name="y", count=10_002,
                                                                              assignments=None)]), 3)
    assert [(t.error_code, len(server.cluster.partitions("y"))) for t in r.results] == [(E.UNKNOWN_SERVER_ERROR, 1)]
