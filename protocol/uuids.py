"""Kafka's ``org.apache.kafka.common.Uuid`` as text (sans-IO): the string form of topic ids and member ids.

Kafka prints a Uuid (two signed longs, 16 bytes big-endian) as **URL-safe base64 without padding**
(``Uuid.toString``: ``Base64.getUrlEncoder().withoutPadding()``), 22 characters, e.g. the zero Uuid is
``AAAAAAAAAAAAAAAAAAAAAA``. On the wire a Uuid is the 16 raw bytes (:mod:`protocol.types`, ``uuid.UUID`` in
messages); in records, logs, the assignors' API and the coordinator's maps kgroup keeps the string form, as Kafka
prints it.

Rules mirrored (``clients/.../common/Uuid.java``, Apache Kafka 4.4 as carried by confluentinc/kafka branch ``4.4``,
commit 8d3916cfe15f13a2d878c79d302ba2d63172f0af; ``java.util.Base64`` of the JDK):

* :func:`uuid_from_string` -- ``Uuid.fromString``: a string longer than 24 characters is refused before decoding
  ("Input string with prefix `...` is too long to be decoded as a base64 UUID"); the rest goes through Java's URL
  decoder, which accepts the URL alphabet (``A-Z a-z 0-9 - _``), optional ``=`` padding, and ignores the unused
  low bits of the last character; the result must be 16 bytes ("Input string `s` decoded as N bytes, which is not
  equal to the expected 16 bytes of a base64-encoded UUID").
* :data:`ZERO_UUID` (null / no topic id), :data:`ONE_UUID` (= ``METADATA_TOPIC_ID``): :data:`RESERVED`.
* :func:`random_uuid` -- ``Uuid.randomUuid``: a version-4 UUID (``java.util.UUID.randomUUID``), drawn again while it
  is reserved or its string contains ``-`` (so it never starts a command-line option). The randomness is passed in
  (a :class:`random.Random`): the cores stay deterministic.
"""

from __future__ import annotations

import base64
import random
import uuid

_ALPHABET_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"  # RFC 4648 URL-safe
_ALPHABET_INDEX = {c: i for i, c in enumerate(_ALPHABET_CHARS)}


def uuid_to_string(value: uuid.UUID | bytes) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    if len(raw) != 16:
        raise ValueError(f"a Uuid is 16 bytes, got {len(raw)}")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_string(text: str) -> uuid.UUID:
    """``Uuid.fromString``; raises ``ValueError`` with Kafka's (and ``java.util.Base64``'s) message where Kafka
    throws ``IllegalArgumentException``."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    raw = _java_url_decode(text)
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the expected "
                         "16 bytes of a base64-encoded UUID")
    return uuid.UUID(bytes=raw)


def _java_url_decode(text: str) -> bytes:
    """``Base64.getUrlDecoder().decode``: the URL alphabet, optional ``=`` padding, the unused low bits of a last
    partial unit ignored (``Base64.Decoder.decode0``)."""
    n = len(text)
    if n == 1:
        raise ValueError("Input byte[] should at least have 2 bytes for base64 bytes")
    out = bytearray()
    bits, shift, i = 0, 18, 0
    while i < n:
        c = text[i]
        i += 1
        v = _ALPHABET_INDEX.get(c)
        if v is None:
            if c != "=":
                raise ValueError(f"Illegal base64 character {ord(c):x}")
            if shift == 18 or (shift == 6 and (i == n or text[i] != "=")):
                raise ValueError("Input byte array has wrong 4-byte ending unit")
            if shift == 6:
                i += 1
            break
        bits |= v << shift
        shift -= 6
        if shift < 0:
            out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF, bits & 0xFF))
            bits, shift = 0, 18
    if shift == 6:
        out.append((bits >> 16) & 0xFF)
    elif shift == 0:
        out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF))
    elif shift == 12:
        raise ValueError("Last unit does not have enough valid bits")
    if i < n:
        raise ValueError(f"Input byte array has incorrect ending byte at {i}")
    return bytes(out)


def canonical(text: str) -> str:
    """The string Kafka prints for the Uuid ``text`` parses to (``Uuid.fromString(s).toString()``)."""
    return uuid_to_string(uuid_from_string(text))


def random_uuid(rng: random.Random) -> str:
    """``Uuid.randomUuid().toString()`` with the randomness taken from ``rng``."""
    while True:
        u = uuid.UUID(int=rng.getrandbits(128), version=4)
        s = uuid_to_string(u)
        if s not in RESERVED and "-" not in s:
            return s


#: ``Uuid.ZERO_UUID``: "a null or empty UUID" (a topic without id on the wire).
ZERO_UUID = uuid_to_string(bytes(16))
#: ``Uuid.ONE_UUID`` = ``Uuid.METADATA_TOPIC_ID`` (the KRaft metadata topic).
ONE_UUID = uuid_to_string(bytes(15) + b"\x01")
METADATA_TOPIC_ID = ONE_UUID
#: ``Uuid.RESERVED``: never returned by :func:`random_uuid`.
RESERVED = frozenset({ZERO_UUID, ONE_UUID})
