"""A small asyncio Kafka wire client: connect, send requests with kgroup's codec, await responses by correlation id.

Used by the server tests, the benchmarks, the demo and the interop scenarios. It is deliberately thin -- no
retries, no metadata cache, no coordinator logic (that is ``consumer/``'s job):

```python
async with await WireClient.connect("127.0.0.1", 9092) as c:
    await c.negotiate()                                   # ApiVersions; later calls pick min(ours, broker's)
    resp = await c.call(FindCoordinatorRequest(key="g", key_type=0, coordinator_keys=["g"]))
    fut = c.send(HeartbeatRequest(...), version=4)        # pipelining: send now, await later
```

Responses are matched by correlation id (a Kafka broker answers a connection's requests in order, but the client
does not rely on it). When the connection closes, every outstanding request fails with :class:`ConnectionClosed`.
Every wait has a timeout (``timeout`` per call, default :attr:`WireClient.default_timeout`).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import protocol.messages  # noqa: F401  (registers every API)
from protocol.api import APIS, ApiKey
from protocol.frames import decode_response, encode_request, frame
from protocol.messages import ApiVersionsRequest

_KEY_BY_CLASS = {api.request.cls: api.key for api in APIS.values()}


class ConnectionClosed(ConnectionError):
    """The broker closed the connection (or it was closed locally) before the response arrived."""


class KafkaResponseError(RuntimeError):
    pass


def api_key_of(request: Any) -> int:
    try:
        return _KEY_BY_CLASS[type(request)]
    except KeyError:
        raise TypeError(f"{type(request).__name__} is not a request of a registered API") from None


class WireClient:
    default_timeout = 10.0

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str = "kgroup-wire",
                 host: str = "", port: int = 0) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.host, self.port = host, port
        self.versions: dict[int, tuple[int, int]] = {}  # broker's ApiVersions ranges, after negotiate()
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int, asyncio.Future]] = {}
        self._closed_exc: BaseException | None = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(cls, host: str, port: int, *, client_id: str = "kgroup-wire",
                      timeout: float | None = None) -> "WireClient":
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                timeout or cls.default_timeout)
        return cls(reader, writer, client_id, host, port)

    # --- sending ---------------------------------------------------------------------------------------------

    def version_for(self, api_key: int) -> int:
        """The version to use: min(ours, broker's) once negotiated, else our highest."""
        api = APIS[api_key]
        if api_key in self.versions:
            lo, hi = self.versions[api_key]
            v = min(api.max_version, hi)
            if v < max(api.min_version, lo):
                raise KafkaResponseError(f"no common version of {api.name}: ours {api.min_version}-"
                                         f"{api.max_version}, broker's {lo}-{hi}")
            return v
        return api.max_version

    def send(self, request: Any, version: int | None = None, *, api_key: int | None = None,
             correlation_id: int | None = None) -> asyncio.Future:
        """Write one request now; return a future of its decoded response body."""
        if self._closed_exc is not None:
            raise ConnectionClosed(str(self._closed_exc))
        key = api_key if api_key is not None else api_key_of(request)
        v = self.version_for(key) if version is None else version
        corr = next(self._corr) if correlation_id is None else correlation_id
        data = encode_request(key, v, corr, self.client_id, request)
        fut = asyncio.get_running_loop().create_future()
        self._pending[corr] = (key, v, fut)
        self.writer.write(data)
        return fut

    async def call(self, request: Any, version: int | None = None, *, timeout: float | None = None) -> Any:
        """Send a request and await its response body."""
        fut = self.send(request, version)
        await self.writer.drain()
        return await asyncio.wait_for(fut, timeout or self.default_timeout)

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests of bad input)."""
        self.writer.write(data)
        await self.writer.drain()

    async def request_raw(self, payload: bytes, *, timeout: float | None = None) -> bytes:
        """Send one framed payload and return the next response frame's bytes (no decoding)."""
        if self._pending:
            raise RuntimeError("request_raw needs a connection with nothing outstanding")
        fut = asyncio.get_running_loop().create_future()
        self._pending[-1] = (-1, -1, fut)  # the next frame, whatever its correlation id
        self.writer.write(frame(payload))
        await self.writer.drain()
        return await asyncio.wait_for(fut, timeout or self.default_timeout)

    async def negotiate(self, version: int = 3, *, timeout: float | None = None) -> dict[int, tuple[int, int]]:
        """ApiVersions (KIP-511: falls back to v0 if the broker answers UNSUPPORTED_VERSION)."""
        req = ApiVersionsRequest(client_software_name="kgroup", client_software_version="0.1.0")
        resp = await self.call(req, version, timeout=timeout)
        if resp.error_code == 35 and version != 0:
            resp = await self.call(ApiVersionsRequest(), 0, timeout=timeout)
        if resp.error_code != 0:
            raise KafkaResponseError(f"ApiVersions failed with error {resp.error_code}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        return self.versions

    # --- receiving -------------------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        exc: BaseException = ConnectionClosed("connection closed by the broker")
        try:
            while True:
                size = int.from_bytes(await self.reader.readexactly(4), "big", signed=True)
                data = await self.reader.readexactly(size)
                corr = int.from_bytes(data[:4], "big", signed=True)
                entry = self._pending.pop(corr, None)
                if entry is None and -1 in self._pending:
                    entry = self._pending.pop(-1)
                    entry[2].set_result(data) if not entry[2].done() else None
                    continue
                if entry is None:
                    continue  # an answer to nothing we asked (ignored)
                key, v, fut = entry
                if fut.done():
                    continue
                try:
                    try:
                        _, body = decode_response(key, v, data)
                    except Exception:
                        if key != ApiKey.API_VERSIONS or v == 0:
                            raise
                        # KIP-511: a broker that does not know our ApiVersions version answers in a v0 body
                        # (the Java client's ApiVersionsResponse.parse retries as v0 the same way).
                        _, body = decode_response(key, 0, data)
                except Exception as e:  # noqa: BLE001
                    fut.set_exception(e)
                else:
                    fut.set_result(body)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            exc = ConnectionClosed(f"connection closed: {e!r}")
        except asyncio.CancelledError:
            exc = ConnectionClosed("connection closed locally")
        finally:
            self._closed_exc = exc
            for _, _, fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionClosed(str(exc)))
            self._pending.clear()

    @property
    def closed(self) -> bool:
        return self._closed_exc is not None

    async def wait_closed(self, timeout: float | None = None) -> None:
        """Wait until the broker closes the connection."""
        await asyncio.wait_for(asyncio.shield(self._read_task), timeout or self.default_timeout)

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 2.0)
        except (OSError, asyncio.TimeoutError):
            pass
        self._read_task.cancel()
        try:
            await self._read_task
        except asyncio.CancelledError:
            pass

    async def __aenter__(self) -> "WireClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
