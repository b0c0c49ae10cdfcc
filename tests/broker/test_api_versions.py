"""ApiVersions over TCP (KafkaApis.handleApiVersionsRequest, RequestContext.parseRequest; broker/apis.py): the
served APIs at every version, the KIP-511 fallback for a version above ours, the client software name check, and
the wire client's negotiation."""

from __future__ import annotations

import asyncio
import struct

import pytest

from broker.apis import FALLBACK, SERVED_APIS, BrokerApis
from broker.server import KGroupServer
from coordinator import GroupCoordinatorService
from protocol.api import APIS, ApiKey
from protocol.errors import ErrorCode
from protocol.frames import decode_response, encode_request
from protocol.messages import ApiVersionsRequest
from broker_harness import TIMEOUT, connect

E = ErrorCode


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_api_versions_each_version_lists_only_served_apis(server: KGroupServer, version: int) -> None:
    c = await connect(server)
    try:
        req = ApiVersionsRequest(client_software_name="kgroup-test", client_software_version="1.0")
        r = await c.call(req, version, timeout=TIMEOUT)
    finally:
        await c.close()
    assert r.error_code == 0
    got = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert got == {int(k): (APIS[k].min_version, APIS[k].max_version) for k in SERVED_APIS}
    # the data path is served (broker/datapath.py, issue 8), so it is advertised
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.INIT_PRODUCER_ID):
        assert key in got
    assert [k.api_key for k in r.api_keys] == sorted(got)


def _raw_request(api_key: int, version: int, corr: int, body: bytes = b"", client_id: bytes = b"t",
                 flexible_header: bool = True) -> bytes:
    hdr = struct.pack(">hhi", api_key, version, corr) + struct.pack(">h", len(client_id)) + client_id
    if flexible_header:
        hdr += b"\x00"  # empty tagged fields (request header v2)
    payload = hdr + body
    return struct.pack(">i", len(payload)) + payload


async def test_api_versions_v5_gets_kip511_fallback_and_connection_stays_open(server: KGroupServer) -> None:
    reader, writer = await asyncio.open_connection(*server.address(1))
    try:
        # ApiVersions v5 (above our 0-4): body = compact strings "x", "1" + tagged fields
        writer.write(_raw_request(18, 5, 4242, b"\x02x\x021\x00"))
        await writer.drain()
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
        data = await asyncio.wait_for(reader.readexactly(size), TIMEOUT)
        corr, body = decode_response(18, 0, data)  # header v0, v0 body
        assert corr == 4242
        assert body.error_code == E.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]
        # the client retries at a version both speak, on the same connection
        writer.write(encode_request(18, 3, 4243, "t", ApiVersionsRequest(client_software_name="x",
                                                                           client_software_version="1")))
        await writer.drain()
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
        corr, body = decode_response(18, 3, await asyncio.wait_for(reader.readexactly(size), TIMEOUT))
        assert corr == 4243 and body.error_code == 0 and len(body.api_keys) == len(SERVED_APIS)
    finally:
        writer.close()


async def test_wire_client_negotiates_versions(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        versions = await c.negotiate(version=3, timeout=TIMEOUT)
        assert versions[ApiKey.JOIN_GROUP] == (0, 9)
        assert c.version_for(ApiKey.HEARTBEAT) == 4
    finally:
        await c.close()


async def test_api_versions_invalid_software_name_gets_invalid_request(server: KGroupServer) -> None:
    c = await connect(server)
    try:
        r = await c.call(ApiVersionsRequest(client_software_name="-bad name-", client_software_version="1"), 3,
                         timeout=TIMEOUT)
        assert r.error_code == E.INVALID_REQUEST and r.api_keys == []
        # KafkaApis answers and keeps the connection
        r = await c.call(ApiVersionsRequest(), 0, timeout=TIMEOUT)
        assert r.error_code == 0
    finally:
        await c.close()


def test_check_version_verdicts() -> None:
    """SocketServer.parseRequestHeader / RequestContext.parseRequest: an unknown key, an API not enabled on the
    listener, or an unsupported version is an InvalidRequestException (the connection is closed, with a reason to
    log); ApiVersions at any version is accepted (ApiKeys.isVersionEnabled), above ours with the KIP-511 fallback."""
    apis = BrokerApis(GroupCoordinatorService(num_brokers=1))
    assert apis.check_version(ApiKey.HEARTBEAT, 4) is None
    assert apis.check_version(ApiKey.API_VERSIONS, APIS[ApiKey.API_VERSIONS].max_version + 1) is FALLBACK
    assert "not supported" in apis.check_version(ApiKey.HEARTBEAT, 99)
    assert "unknown API key" in apis.check_version(999, 0)
    narrow = BrokerApis(GroupCoordinatorService(num_brokers=1), served=(ApiKey.API_VERSIONS, ApiKey.METADATA))
    assert "not served" in narrow.check_version(ApiKey.HEARTBEAT, 4)
    # and ApiVersions advertises exactly what is served
    r = narrow.api_versions(0, ApiVersionsRequest(), 0)
    assert [k.api_key for k in r.api_keys] == [ApiKey.METADATA, ApiKey.API_VERSIONS]

