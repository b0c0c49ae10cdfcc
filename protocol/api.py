"""The API registry: one :class:`Api` per Kafka API key, each with a request and a response schema.

``Api.min_version``/``max_version`` are the versions kgroup implements *in full* and advertises in ApiVersions.
Clients pick ``min(their max, our max)``; aiokafka implements only discrete versions and fails when an advertised
range contains none of them, so every range starts low (see docs/protocol.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from protocol.schema import Message, Versions, build


class ApiKey(IntEnum):
    """Kafka's API keys (org.apache.kafka.common.protocol.ApiKeys) for the APIs kgroup speaks."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    DESCRIBE_CLUSTER = 60
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69


#: kgroup's private API key for the fault-control channel of ``kgroup serve`` (broker/faults.py,
#: client/control.py): never advertised in ApiVersions; accepted only from loopback peers.
CONTROL_API_KEY = 32123


@dataclass
class Api:
    key: int
    name: str
    request: Message
    response: Message

    @property
    def min_version(self) -> int:
        return self.request.valid.low

    @property
    def max_version(self) -> int:
        return self.request.valid.high

    def supports(self, version: int) -> bool:
        return version in self.request.valid

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, v1 otherwise (Kafka's ApiMessageType.requestHeaderVersion).
        A version above our range is judged by the open-ended flexible range, as Kafka does for KIP-511."""
        return 2 if self.request.flexible.low <= version and not self.request.flexible.empty else 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 for flexible versions, v0 otherwise; ApiVersions always answers with v0 so a client
        that does not know the broker's versions can still parse it (KIP-511)."""
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if version in self.response.flexible else 0


APIS: dict[int, Api] = {}


def define_api(key: int, name: str, valid: str, flexible: str, request_fields, response_fields) -> Api:
    """Register an API: request and response share the valid and flexible version ranges (as in Kafka)."""
    req = build(Message(f"{name}Request", Versions.parse(valid), Versions.parse(flexible), request_fields,
                        api_key=key, kind="request"))
    resp = build(Message(f"{name}Response", Versions.parse(valid), Versions.parse(flexible), response_fields,
                         api_key=key, kind="response"))
    api = Api(key, name, req, resp)
    if key in APIS:
        raise ValueError(f"API key {key} defined twice")
    APIS[key] = api
    return api
