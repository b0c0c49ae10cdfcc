"""kgroup's Kafka wire protocol: primitives, framing, one declarative schema per API, error codes, the consumer
protocol's embedded bytes, RecordBatch v2 and Kafka's hash functions. No I/O; imports nothing else of ours."""

from protocol.api import APIS, Api, ApiKey
from protocol.exceptions import FrameTooLarge, ProtocolError, UnsupportedVersion
from protocol.frames import (FrameReader, RequestHeader, decode_request, decode_request_header, decode_response,
                             encode_request, encode_response)
import protocol.messages  # noqa: F401  (registers every API)

__all__ = ["APIS", "Api", "ApiKey", "FrameReader", "FrameTooLarge", "ProtocolError", "RequestHeader",
           "UnsupportedVersion", "decode_request", "decode_request_header", "decode_response", "encode_request",
           "encode_response"]
