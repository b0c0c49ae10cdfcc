"""Exceptions raised by the protocol layer.

Decoding untrusted bytes raises only :class:`ProtocolError` (or a subclass): a truncated buffer, a length that
points past the end of the frame, a negative non-null length, invalid UTF-8, an unknown API key or version. The
server maps it to Kafka's error response or a closed connection; it never escapes as another exception type.
"""

from __future__ import annotations


class ProtocolError(ValueError):
    """Bytes that are not a valid Kafka protocol message (or a message that cannot be encoded)."""


class FrameTooLarge(ProtocolError):
    """A size prefix above the configured maximum (checked before any buffer is allocated)."""

    def __init__(self, size: int, max_size: int) -> None:
        super().__init__(f"frame size {size} exceeds the maximum of {max_size} bytes")
        self.size = size
        self.max_size = max_size


class UnsupportedVersion(ProtocolError):
    """An API key or version this build does not implement."""

    def __init__(self, api_key: int, version: int, message: str | None = None) -> None:
        super().__init__(message or f"unsupported version {version} of API key {api_key}")
        self.api_key = api_key
        self.version = version
