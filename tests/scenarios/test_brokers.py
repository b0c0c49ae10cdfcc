"""The simulated brokers (scenarios/brokers.py) answer as ``kgroup serve`` does: the ApiVersions and Metadata answers
the simulated consumers bootstrap from equal those of a real server over TCP for the same cluster, and they change
when the simulator changes the topics."""

from __future__ import annotations

from broker.server import KGroupServer, ServerSettings
from client.wire import WireClient
from coordinator.config import CoordinatorConfig
from protocol.api import ApiKey
from protocol.messages import ApiVersionsRequest, MetadataRequest
from scenarios.model import parse_scenario
from scenarios.runner import run_scenario
from scenarios.world import Simulation

from scenario_helpers import small_scenario

TIMEOUT = 5.0


def sim_of(d: dict) -> Simulation:
    return Simulation(parse_scenario(d, "test"), 1)


async def tcp_answers(topics: list[tuple[str, int, int]]) -> tuple[dict, dict]:
    """ApiVersions v3 and Metadata v12 (every topic) from a 3-broker ``kgroup serve`` over loopback."""
    settings = ServerSettings(brokers=3, host="127.0.0.1", port=0, topics=topics, seed=1,
                              config=CoordinatorConfig.create({}))
    srv = await KGroupServer(settings).start()
    try:
        c = await WireClient.connect(*srv.address(0), client_id="test", timeout=TIMEOUT)
        try:
            versions = await c.call(ApiVersionsRequest(client_software_name="kgroup-test",
                                                       client_software_version="1.0"), 3, timeout=TIMEOUT)
            meta = await c.call(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12, timeout=TIMEOUT)
        finally:
            await c.close()
    finally:
        await srv.close()
    return ({k.api_key: (k.min_version, k.max_version) for k in versions.api_keys},
            {t.name: len(t.partitions) for t in meta.topics if not t.is_internal})


async def test_consumers_bootstrap_from_the_answers_of_kgroup_serve():
    d = small_scenario()
    d["cluster"]["topics"].append({"name": "u", "partitions": 2})
    sim = sim_of(d)
    served, counts = await tcp_answers([("t", 4, 2), ("u", 2, 1)])
    given = {k.api_key: (k.min_version, k.max_version) for k in sim.brokers.api_versions.api_keys}
    assert given == served
    # the simulated brokers serve KIP-848's APIs at the versions Kafka 4.4 has (ConsumerGroupHeartbeat and
    # ConsumerGroupDescribe v0-1), as kgroup serve does
    assert given[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
    assert given[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 1)
    assert sim.brokers.metadata == counts == {"t": 4, "u": 2}


def test_consumers_see_added_partitions_through_the_metadata_answer():
    d = small_scenario(timeline=[{"at": "3s", "action": "add_partitions", "topic": "t", "partitions": 6}])
    res = run_scenario(parse_scenario(d, "test"), 1)
    assert res.sim.brokers.metadata == {"t": 6}
    # and the consumers assigned from it: all six partitions are owned at the end
    owned = sorted(p for parts in res.summary["groups"]["g"]["assignment"].values() for p in parts)
    assert owned == [f"t-{i}" for i in range(6)]
