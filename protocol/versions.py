"""Version negotiation: what kgroup advertises in ApiVersions, and Kafka's KIP-511 answer to a client that asks
for an ApiVersions version above ours.

A client sends ApiVersions with its newest version. If the broker does not support that version, Kafka
(``RequestContext.parseRequest`` and ``ApiVersionsRequest.getErrorResponse``) does not fail the connection: it
answers with response header v0 and a **v0-format** body carrying ``UNSUPPORTED_VERSION`` and a single
``api_keys`` entry, the broker's ApiVersions range, so the client retries with a version it knows both speak.
librdkafka does exactly that (v3, then v0 against old brokers).
"""

from __future__ import annotations

from typing import Iterable

from protocol.api import APIS, ApiKey
from protocol.frames import encode_response
import protocol.messages  # noqa: F401  (registers every API)
from protocol.messages import ApiVersionsResponse

UNSUPPORTED_VERSION = 35  # ErrorCode.UNSUPPORTED_VERSION


def advertised_api_versions(keys: Iterable[int] | None = None) -> list[ApiVersionsResponse.ApiVersion]:
    """One entry per implemented API, in API-key order: every advertised version is implemented in full.

    ``keys`` restricts the list to the APIs a server actually serves (e.g. ``kgroup serve`` leaves out the data
    path); ``None`` (the default) lists every API in the registry. Unknown keys are ignored."""
    wanted = None if keys is None else {int(k) for k in keys}
    return [ApiVersionsResponse.ApiVersion(api_key=api.key, min_version=api.min_version, max_version=api.max_version)
            for api in sorted(APIS.values(), key=lambda a: a.key) if wanted is None or api.key in wanted]


def api_versions_response(error_code: int = 0, keys: Iterable[int] | None = None) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=error_code, api_keys=advertised_api_versions(keys))


def unsupported_api_versions_frame(correlation_id: int) -> bytes:
    """The complete KIP-511 fallback frame: header v0, v0 body, UNSUPPORTED_VERSION, ApiVersions' own range."""
    api = APIS[ApiKey.API_VERSIONS]
    body = ApiVersionsResponse(error_code=UNSUPPORTED_VERSION, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=api.key, min_version=api.min_version, max_version=api.max_version)])
    return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, body)
