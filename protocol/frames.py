"""Framing and headers (sans-IO).

Every Kafka message on the wire is ``INT32 size`` followed by ``size`` bytes: a header, then the body.

* Request header v1: api_key INT16, api_version INT16, correlation_id INT32, client_id NULLABLE_STRING.
  v2 (used for flexible request versions) adds a tagged-field section; client_id stays a *non-compact* nullable
  string even in v2 (Kafka's RequestHeader.json marks it ``flexibleVersions: none``). v0 (no client_id) is only
  used by ControlledShutdown v0, which kgroup does not speak.
* Response header v0: correlation_id INT32; v1 adds a tagged-field section. ApiVersions responses always use v0.

:class:`FrameReader` turns a byte stream into frames incrementally: feed it whatever the socket returned and it
yields complete frames. It rejects a size prefix above ``max_frame_bytes`` as soon as the 4 prefix bytes are
seen, *before* buffering the body, so a hostile peer cannot make us allocate. The rest of this module encodes and
decodes complete requests and responses through the API registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol import types as T
from protocol.api import APIS, Api
from protocol.exceptions import FrameTooLarge, ProtocolError, UnsupportedVersion

DEFAULT_MAX_FRAME_BYTES = 104857600  # Kafka's socket.request.max.bytes default (100 MiB)
_HEADER_SIZE = T.INT32
_KEY_VERSION_CORRELATION = __import__("struct").Struct(">hhi")


@dataclass
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int = 1
    unknown_tagged_fields: dict[int, bytes] | None = field(default=None, compare=False)


class FrameReader:
    """Incremental reader of size-prefixed frames; handles partial reads and several frames per read."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes <= 0:
            raise ValueError("max_frame_bytes must be positive")
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._need: int | None = None  # body size of the frame being read, once its prefix is known

    def feed(self, data: bytes) -> list[bytes]:
        """Add bytes; return every frame (without its size prefix) completed by them. Raises FrameTooLarge or
        ProtocolError (negative size); after that the stream is unusable and the connection should be closed."""
        if not self._buf and self._need is None and len(data) >= 4:
            # Fast path: nothing buffered; if `data` is exactly one frame, hand it out without copying twice.
            size = _HEADER_SIZE.unpack_from(data, 0)[0]
            if 0 <= size <= self.max_frame_bytes and len(data) == size + 4:
                return [bytes(data[4:])]
        self._buf += data
        frames: list[bytes] = []
        buf = self._buf
        pos = 0
        while True:
            if self._need is None:
                if len(buf) - pos < 4:
                    break
                size = _HEADER_SIZE.unpack_from(buf, pos)[0]
                if size < 0:
                    raise ProtocolError(f"negative frame size {size}")
                if size > self.max_frame_bytes:
                    raise FrameTooLarge(size, self.max_frame_bytes)
                pos += 4
                self._need = size
            if len(buf) - pos < self._need:
                break
            frames.append(bytes(buf[pos:pos + self._need]))
            pos += self._need
            self._need = None
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def pending_frame_size(self) -> int | None:
        """Size announced by the prefix of the frame currently being read (None between frames)."""
        return self._need


def frame(payload: bytes | bytearray) -> bytes:
    return T.INT32.pack(len(payload)) + bytes(payload)


def get_api(api_key: int) -> Api:
    api = APIS.get(api_key)
    if api is None:
        raise UnsupportedVersion(api_key, -1, f"unknown API key {api_key}")
    return api


# --- requests ---------------------------------------------------------------------------------------------------

def decode_request_header(data: bytes) -> tuple[RequestHeader, int]:
    """Parse the header of a request frame; returns (header, offset of the body).

    For an unknown API key or an unsupported version the header is still returned (the server needs the
    correlation id to answer); the caller decides. The header version of a version above our range follows the
    API's open-ended flexible range (so an ApiVersions v5 request is read with header v2, as Kafka does)."""
    if len(data) < 8:
        raise ProtocolError(f"request of {len(data)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(data, 0)
    client_id, pos = T.read_nullable_string(data, 8)
    api = APIS.get(api_key)
    hv = api.request_header_version(api_version) if api is not None else 1
    tagged = None
    if hv >= 2:
        tagged, pos = T.read_tagged_fields(data, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, hv, tagged or None), pos


def decode_request(data: bytes) -> tuple[RequestHeader, Any]:
    """Decode a whole request frame (without size prefix). Raises UnsupportedVersion for an unknown key or
    version (with ``.header`` set) and ProtocolError for malformed bytes. Trailing bytes after the body are
    ignored, as Kafka's broker does."""
    header, pos = decode_request_header(data)
    api = APIS.get(header.api_key)
    if api is None or not api.supports(header.api_version):
        err = UnsupportedVersion(header.api_key, header.api_version,
                                 f"unknown API key {header.api_key}" if api is None else
                                 f"{api.name} v{header.api_version} is not supported "
                                 f"(supported: {api.min_version}-{api.max_version})")
        err.header = header  # type: ignore[attr-defined]
        raise err
    body, _ = api.request.decode_from(data, header.api_version, pos)
    return header, body


def encode_request_header(api: Api, api_version: int, correlation_id: int, client_id: str | None,
                          out: bytearray | None = None) -> bytearray:
    if out is None:
        out = bytearray()
    out += _KEY_VERSION_CORRELATION.pack(api.key, api_version, correlation_id)
    T.write_string(out, client_id)
    if api.request_header_version(api_version) >= 2:
        out.append(0)  # empty tagged fields
    return out


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any) -> bytes:
    """A complete request frame, size prefix included."""
    api = get_api(api_key)
    if not api.supports(api_version):
        raise UnsupportedVersion(api_key, api_version)
    out = encode_request_header(api, api_version, correlation_id, client_id, bytearray(4))
    enc, _ = api.request.codec(api_version)
    try:
        enc(body, out)
    except ProtocolError:
        raise
    except Exception as exc:  # noqa: BLE001 - report any encoding failure in one type
        raise ProtocolError(f"cannot encode {api.name} request v{api_version}: {exc}") from exc
    return _seal(out)


def _seal(out: bytearray) -> bytes:
    """Fill in the size prefix reserved at the start of ``out`` (saves copying the payload once more)."""
    _HEADER_SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


# --- responses --------------------------------------------------------------------------------------------------

def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A complete response frame, size prefix included."""
    api = get_api(api_key)
    out = bytearray(4)
    out += T.INT32.pack(correlation_id)
    if api.response_header_version(api_version) >= 1:
        out.append(0)
    enc, _ = api.response.codec(api_version)
    try:
        enc(body, out)
    except ProtocolError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ProtocolError(f"cannot encode {api.name} response v{api_version}: {exc}") from exc
    return _seal(out)


def decode_response(api_key: int, api_version: int, data: bytes) -> tuple[int, Any]:
    """Decode a response frame (without size prefix) for the request we sent; returns (correlation_id, body)."""
    api = get_api(api_key)
    correlation_id, pos = T.read_int32(data, 0)
    if api.response_header_version(api_version) >= 1:
        _, pos = T.read_tagged_fields(data, pos)
    body, _ = api.response.decode_from(data, api_version, pos)
    return correlation_id, body


def peek_correlation_id(data: bytes) -> int:
    return T.read_int32(data, 0)[0]
