"""Structure-aware fuzzing of the Kafka wire protocol as ``kgroup serve`` reads it (issue 14): the frame generator
and the client that throws frames at a running server and classifies what comes back.

Frames come from the protocol schemas (``protocol/messages``: every API and version the server advertises):

1. **A valid request** is generated field by field from the schema, with values a real client would send (group
   ids and topics from a small fuzz set, so that requests reach real groups and partitions; timeouts in range).
2. It is encoded by a schema walker (:func:`encode_with_layout`) that also records where every field, length
   prefix, array count and tagged-field section sits in the bytes (the walker reproduces the codec's bytes
   exactly: tests/broker/test_fuzz_server.py checks it for every API and version).
3. **A mutation** is applied at a structural position: an integer field set to a boundary value; a string, bytes
   or array length prefix set to -1, -2, huge, one too many, or a varint that never ends; a string's bytes made
   invalid UTF-8; the frame truncated at a field boundary (its size prefix fixed, so the server sees a complete
   frame whose body ends early); bits flipped; bytes spliced; the header's API key or version changed (unknown
   keys, unserved keys, versions out of range); a valid array blown up to thousands of elements (e.g. one
   ListOffsets naming a partition 3,000 times with MAX_TIMESTAMP); or random bytes.

Every frame is sent on a connection and classified (:class:`Outcome`): **answered** (a whole response frame with
the request's correlation id), **closed** (Kafka closes the connection on an invalid request), **waiting** (a
well-formed request that Kafka too may leave unanswered for a while: a JoinGroup or SyncGroup parked in a
rebalance, a Fetch waiting for data, a Produce with acks=0) or **hang** (none of these within the deadline:
a failure). Nothing here reads the server's state: the verdicts are the bytes on the wire.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import protocol.messages  # noqa: F401  (registers every API)
from protocol import types as T
from protocol.api import APIS, CONTROL_API_KEY, ApiKey
from protocol.consumer_protocol import (ConsumerProtocolAssignment, ConsumerProtocolSubscription, encode_assignment,
                                        encode_subscription)
from protocol.records import Record, RecordBatch, encode_batch
from protocol.schema import Field

_FIXED = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H", "float64": ">d", "bool": ">?"}
_FIXED_SIZE = {k: struct.calcsize(v) for k, v in _FIXED.items()}
_INT_BOUNDS = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
               "int64": (-2**63, 2**63 - 1), "uint16": (0, 2**16 - 1)}
#: APIs whose well-formed requests Kafka may leave unanswered for a while (parked or waiting)
MAY_WAIT = {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.FETCH, ApiKey.PRODUCE}


class Span(NamedTuple):
    """Where one encoded item sits in a request body: ``kind`` is ``int`` (a fixed-width number, ``width`` bytes),
    ``len`` (a string/bytes/array length prefix: ``width`` 2 or 4, 0 for an unsigned varint), ``str``/``bytes``
    (their content), ``uuid``, ``tags`` (a tagged-field section) or ``elem`` (one array element)."""

    kind: str
    start: int
    end: int
    width: int
    name: str


# --- the schema walker: bytes + layout ---------------------------------------------------------------------------

def encode_with_layout(message: Any, version: int, obj: Any) -> tuple[bytes, list[Span]]:
    """Encode ``obj`` (a request of ``message`` at ``version``, tagged fields at their defaults) and record where
    every item is."""
    out = bytearray()
    spans: list[Span] = []
    _walk_struct(message.fields, obj, version, version in message.flexible, out, spans)
    return bytes(out), spans


def _walk_struct(fields: list[Field], obj: Any, version: int, flexible: bool, out: bytearray,
                 spans: list[Span]) -> None:
    for f in fields:
        if f.tag is None and f.present(version):
            _walk_field(f, getattr(obj, f.name), version, flexible, out, spans)
    if flexible:
        start = len(out)
        out.append(0)  # no tagged fields
        spans.append(Span("tags", start, len(out), 0, "tags"))


def _walk_field(f: Field, v: Any, version: int, flexible: bool, out: bytearray, spans: list[Span]) -> None:
    nullable = version in f.nullable
    if f.is_array:
        start = len(out)
        if v is None:
            out += b"\x00" if flexible else b"\xff\xff\xff\xff"
        elif flexible:
            T.write_unsigned_varint(out, len(v) + 1)
        else:
            out += struct.pack(">i", len(v))
        spans.append(Span("len", start, len(out), 0 if flexible else 4, f.name))
        for x in v or ():
            es = len(out)
            if f.is_struct:
                _walk_struct(f.fields, x, version, flexible, out, spans)
            else:
                _walk_scalar(f.elem_type, x, False, flexible, out, spans, f.name)
            spans.append(Span("elem", es, len(out), 0, f.name))
        return
    if f.is_struct:
        if nullable:
            start = len(out)
            out.append(0xFF if v is None else 1)
            spans.append(Span("int", start, len(out), 1, f.name))
            if v is None:
                return
        _walk_struct(f.fields, v, version, flexible, out, spans)
        return
    _walk_scalar(f.type, v, nullable, flexible, out, spans, f.name)


def _walk_scalar(t: str, v: Any, nullable: bool, flexible: bool, out: bytearray, spans: list[Span],
                 name: str) -> None:
    start = len(out)
    if t in _FIXED:
        out += struct.pack(_FIXED[t], v)
        spans.append(Span("int" if t not in ("float64", "bool") else t, start, len(out), _FIXED_SIZE[t], name))
        return
    if t == "uuid":
        out += (v or T.ZERO_UUID).bytes
        spans.append(Span("uuid", start, len(out), 16, name))
        return
    raw = None if v is None else (v.encode() if t == "string" else bytes(v))
    if flexible:
        if raw is None:
            out.append(0)
        else:
            T.write_unsigned_varint(out, len(raw) + 1)
        width = 0
    elif t == "string":
        out += struct.pack(">h", -1 if raw is None else len(raw))
        width = 2
    else:
        out += struct.pack(">i", -1 if raw is None else len(raw))
        width = 4
    spans.append(Span("len", start, len(out), width, name))
    if raw:
        s = len(out)
        out += raw
        spans.append(Span("str" if t == "string" else "bytes", s, len(out), 0, name))


def header(api_key: int, version: int, corr: int, client_id: bytes | None, v2: bool) -> bytes:
    h = struct.pack(">hhi", api_key, version, corr)
    h += b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return h + (b"\x00" if v2 else b"")


# --- valid requests ------------------------------------------------------------------------------------------------

class RequestGenerator:
    """Valid requests of every (API, version) a server advertises, with a client's values."""

    def __init__(self, rng: random.Random, groups: list[str], topics: dict[str, int]) -> None:
        self.rng = rng
        self.groups = groups
        self.topics = topics
        self.member_ids: list[str] = []  # learned from answers (MEMBER_ID_REQUIRED)
        self._sub = encode_subscription(ConsumerProtocolSubscription(topics=list(topics)))
        self._assign = encode_assignment(ConsumerProtocolAssignment(
            assigned_partitions=[(t, [0]) for t in topics]))
        self._records = [encode_batch(RecordBatch(records=[Record(offset=i, timestamp=1_700_000_000_000 + i,
                                                                  key=b"k%d" % i, value=b"v" * (i * 7))
                                                           for i in range(n)]))
                         for n in (1, 3)]

    def request(self, api: Any, version: int) -> Any:
        return self._struct(api.request.cls, api.request.fields, version, api.name)

    def _struct(self, cls: type, fields: list[Field], version: int, owner: str) -> Any:
        kw = {}
        for f in fields:
            if f.tag is None and f.present(version):
                kw[f.name] = self._value(cls, f, version, owner)
        return cls(**kw)

    def _value(self, cls: type, f: Field, version: int, owner: str) -> Any:
        r = self.rng
        if version in f.nullable and r.random() < 0.1:
            return None
        if f.is_array:
            n = r.choice((0, 1, 1, 1, 2, 3))
            if f.is_struct:
                sub = getattr(cls, f.elem_type)
                return [self._struct(sub, f.fields, version, f.elem_type) for _ in range(n)]
            return [self._scalar(f.elem_type, f.name, owner) for _ in range(n)]
        if f.is_struct:
            return self._struct(getattr(cls, f.elem_type), f.fields, version, f.elem_type)
        return self._scalar(f.type, f.name, owner)

    def _scalar(self, t: str, name: str, owner: str) -> Any:
        r = self.rng
        n = name.lower()
        o = owner.lower()
        if t == "string":
            if "group" in n or n in ("key", "coordinator_keys") or (n == "groups" and "group" in o):
                return r.choice(self.groups)
            if n in ("topic", "topics") or (n == "name" and "topic" in o):
                return r.choice(list(self.topics) + ["unknown-topic"])
            if n == "member_id":
                return r.choice([""] + self.member_ids[-20:]) if self.member_ids else ""
            if n == "protocol_type":
                return "consumer"
            if n in ("protocol_name", "assignor") or (n == "name" and "protocol" in o):
                return r.choice(("range", "roundrobin"))
            if "software" in n:
                return r.choice(("fuzz", "1.0"))
            if n in ("group_instance_id", "transactional_id", "rack_id", "reason"):
                return r.choice(("", "x")) if n != "transactional_id" else None
            return "".join(r.choice("abcdefgh-._") for _ in range(r.randint(0, 12)))
        if t in ("bytes", "records"):
            if t == "records":
                return r.choice(self._records + [None])
            if n == "metadata":
                return self._sub
            if n == "assignment":
                return self._assign
            return r.randbytes(r.randint(0, 24))
        if t == "uuid":
            return r.choice((T.ZERO_UUID, uuid.UUID(int=r.getrandbits(128))))
        if t == "bool":
            return r.random() < 0.5
        if t == "float64":
            return r.random()
        lo, hi = _INT_BOUNDS[t]
        if "timeout" in n:
            v = r.randint(6000, 10000) if "session" in n else r.randint(0, 1000)
        elif n in ("max_wait_ms",):
            v = r.randint(0, 50)
        elif n in ("min_bytes",):
            v = r.randint(0, 1)
        elif "partition" in n or n == "index":
            v = r.choice((0, 1, 2, 3, 99))
        elif n == "acks":
            v = r.choice((-1, 1))
        elif n == "timestamp":
            v = r.choice((-1, -2, -3, 1_700_000_000_000, 0))
        elif "generation" in n or "epoch" in n:
            v = r.randint(-1, 3)
        elif n in ("replica_id", "producer_id"):
            v = -1
        elif "bytes" in n:
            v = r.randint(1, 1 << 20)
        else:
            v = r.randint(-1, 100)
        return max(lo, min(hi, v))


# --- mutations -----------------------------------------------------------------------------------------------------

_HOSTILE_INTS = (0, -1, 1, 2**7 - 1, -2**7, 2**15 - 1, -2**15, 2**31 - 1, -2**31, 2**63 - 1, -2**63, 2**16 - 1)
_HOSTILE_LENS = (-1, -2, -100, 0, 1, 0x7FFF, 0x7FFFFFFF, 0x10000, 100_000)


@dataclass
class Frame:
    data: bytes          # the frame without its size prefix
    api_key: int
    version: int
    corr: int
    kind: str            # the mutation
    header_intact: bool  # the correlation id is where a server reads it
    valid: bool          # unmutated: a well-formed request


class FrameFactory:
    """Frames for the fuzzer: a valid request per (API, version) served, then one mutation."""

    def __init__(self, rng: random.Random, served: dict[int, tuple[int, int]], groups: list[str],
                 topics: dict[str, int]) -> None:
        self.rng = rng
        self.gen = RequestGenerator(rng, groups, topics)
        self.pairs = [(k, v) for k, (lo, hi) in sorted(served.items()) if k in APIS
                      for v in range(max(lo, APIS[k].min_version), min(hi, APIS[k].max_version) + 1)]
        self.corr = 0
        self.kinds = [("valid", 8), ("int", 14), ("len", 14), ("string", 6), ("truncate", 10), ("flip", 10),
                      ("splice", 6), ("header", 12), ("random", 6), ("blowup", 2), ("tags", 4), ("dup-list", 0.2)]
        self._kinds, self._weights = zip(*self.kinds)
        self._pool: dict[tuple[int, int], list[tuple[bytes, list[Span]]]] = {}

    def next(self) -> Frame:
        r = self.rng
        self.corr = (self.corr + 1) & 0x7FFFFFFF
        corr = self.corr
        kind = r.choices(self._kinds, self._weights)[0]
        if kind == "random":
            return Frame(r.randbytes(r.randint(0, 96)), -1, -1, corr, kind, False, False)
        key, version = r.choice(self.pairs)
        if kind == "dup-list":
            key, version = ApiKey.LIST_OFFSETS, r.randint(1, APIS[ApiKey.LIST_OFFSETS].max_version)
        api = APIS[key]
        v2 = api.request_header_version(version) >= 2
        hdr = header(key, version, corr, b"fuzz", v2)
        if kind == "blowup" or kind == "dup-list":
            obj = self.gen.request(api, version)
            self._blow_up(obj, api, version, kind == "dup-list")
            return Frame(hdr + api.request.encode(obj, version), key, version, corr, kind, True, True)
        body, spans = self._valid(api, version)
        if kind == "valid":
            return Frame(hdr + body, key, version, corr, kind, True, True)
        if kind == "header":
            return self._header_mutation(key, version, corr, v2, body)
        body = bytearray(body)
        intact = True
        if kind == "int":
            cands = [s for s in spans if s.kind == "int"]
            if cands:
                s = r.choice(cands)
                lo, hi = {1: (-128, 127), 2: (-2**15, 2**15 - 1), 4: (-2**31, 2**31 - 1),
                          8: (-2**63, 2**63 - 1)}[s.width]
                v = max(lo, min(hi, r.choice(_HOSTILE_INTS + (r.randint(lo, hi),))))
                body[s.start:s.end] = v.to_bytes(s.width, "big", signed=True)
        elif kind == "len":
            cands = [s for s in spans if s.kind == "len"]
            if cands:
                s = r.choice(cands)
                v = r.choice(_HOSTILE_LENS)
                if s.width == 0:
                    enc = bytearray()
                    if r.random() < 0.15:
                        enc += b"\xff" * r.randint(5, 12)  # a varint that never ends
                    else:
                        T.write_unsigned_varint(enc, v & 0xFFFFFFFF)
                    body[s.start:s.end] = enc
                else:
                    lo, hi = (-2**15, 2**15 - 1) if s.width == 2 else (-2**31, 2**31 - 1)
                    body[s.start:s.end] = max(lo, min(hi, v)).to_bytes(s.width, "big", signed=True)
        elif kind == "string":
            cands = [s for s in spans if s.kind in ("str", "bytes")]
            if cands:
                s = r.choice(cands)
                body[s.start:s.end] = r.choice((b"\xff" * (s.end - s.start), b"\xc3\x28" * ((s.end - s.start) // 2),
                                                r.randbytes(s.end - s.start), b"\xed\xa0\x80" + b"x" * 5))
        elif kind == "truncate":
            cut = r.choice([s.start for s in spans] + [r.randint(0, max(0, len(body) - 1))]) if spans else 0
            del body[cut:]
        elif kind == "flip":
            for _ in range(r.randint(1, 8)):
                if body:
                    i = r.randrange(len(body))
                    body[i] ^= 1 << r.randrange(8)
        elif kind == "splice":
            i = r.randint(0, len(body))
            if r.random() < 0.5:
                body[i:i] = r.randbytes(r.randint(1, 16))
            else:
                del body[i:i + r.randint(1, 16)]
        elif kind == "tags":
            cands = [s for s in spans if s.kind == "tags"]
            if cands:
                s = r.choice(cands)
                junk = bytearray()
                n = r.choice((1, 2, 3, 0x7FFFFFFF))
                T.write_unsigned_varint(junk, n)
                for t in range(min(n, 3)):
                    T.write_unsigned_varint(junk, r.choice((t, 0, 0x7FFFFFFF)))
                    size = r.choice((0, 3, 0x7FFFFFFF))
                    T.write_unsigned_varint(junk, size)
                    junk += r.randbytes(min(size, 3))
                body[s.start:s.end] = junk
            else:
                body += r.randbytes(4)
        return Frame(hdr + bytes(body), key, version, corr, kind, intact, False)

    def _valid(self, api: Any, version: int) -> tuple[bytes, list[Span]]:
        """A valid request body and its layout: from a small pool per (API, version), refreshed now and then (the
        walker is slow; mutations are not)."""
        pool = self._pool.setdefault((api.key, version), [])
        if len(pool) < 6 or self.rng.random() < 0.1:
            item = encode_with_layout(api.request, version, self.gen.request(api, version))
            if len(pool) < 6:
                pool.append(item)
            else:
                pool[self.rng.randrange(6)] = item
            return item
        return self.rng.choice(pool)

    def _header_mutation(self, key: int, version: int, corr: int, v2: bool, body: bytes) -> Frame:
        r = self.rng
        choice = r.randrange(6)
        if choice == 0:  # an unknown or unserved API key
            key = r.choice((4, 5, 6, 7, 17, 19, 20, 21, 24, 32, 36, 50, 57, 60, 68, 69, 1000, -1, 32767))
        elif choice == 1:  # a version out of range
            version = r.choice((-1, -32768, APIS[key].max_version + 1, 99, 32767))
        elif choice == 2:  # a client id length that lies
            h = struct.pack(">hhih", key, version, corr, r.choice((-2, 300, 0x7FFF))) + b"fuzz"
            return Frame(h + body, key, version, corr, "header", True, False)
        elif choice == 3:  # header tagged fields that lie
            h = struct.pack(">hhih", key, version, corr, 4) + b"fuzz" + (b"\x05\x01\xff" if v2 else b"")
            return Frame(h + body, key, version, corr, "header", True, False)
        elif choice == 4:  # a frame shorter than a header
            return Frame(struct.pack(">hh", key, version)[:r.randint(0, 4)], key, version, corr, "header", False,
                         False)
        else:  # another API's body under this header
            other = r.choice(list(APIS))
            key = other if r.random() < 0.5 else key
        return Frame(header(key, version, corr, b"fuzz", v2) + body, key, version, corr, "header", True, False)

    def _blow_up(self, obj: Any, api: Any, version: int, duplicate: bool) -> None:
        """Make one array of the request huge (thousands of copies of its first element)."""
        r = self.rng
        if duplicate:  # the prober's stall: one partition named thousands of times, MAX_TIMESTAMP
            P = type(obj).Topic.Partition
            obj.topics = [type(obj).Topic(name=r.choice(list(self.gen.topics)),
                                          partitions=[P(partition_index=0, timestamp=-3)] * 3000)]
            return
        arrays = []

        def collect(o: Any, fields: list[Field]) -> None:
            for f in fields:
                if f.tag is None and f.present(version) and f.is_array:
                    v = getattr(o, f.name)
                    if v:
                        arrays.append((o, f.name, v))
                        if f.is_struct:
                            for x in v[:1]:
                                collect(x, f.fields)
        collect(obj, api.request.fields)
        if arrays:
            o, name, v = r.choice(arrays)
            setattr(o, name, v[:1] * r.choice((500, 2000, 5000)))


# --- the client --------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    answered: int = 0
    closed: int = 0
    waiting: int = 0
    hangs: int = 0
    corr_mismatch: int = 0
    connect_errors: int = 0
    by_kind: Counter = field(default_factory=Counter)
    hang_examples: list[str] = field(default_factory=list)

    @property
    def frames(self) -> int:
        return self.answered + self.closed + self.waiting + self.hangs


def is_well_formed(fr: Frame) -> bool:
    """Whether the frame is a request a broker would decode (kgroup's codec: used only to tell a request that may
    legitimately wait from a hang)."""
    if fr.api_key not in APIS or fr.api_key not in MAY_WAIT:
        return False
    api = APIS[fr.api_key]
    if not api.supports(fr.version):
        return False
    try:
        from protocol.frames import decode_request_header
        _, pos = decode_request_header(fr.data)
        api.request.decode(fr.data, fr.version, pos, exact=False)
        return True
    except Exception:  # noqa: BLE001
        return False


class FuzzClient:
    """Sends frames on ``concurrency`` connections, one at a time per connection, and classifies the outcomes."""

    def __init__(self, addresses: list[tuple[str, int]], factory: FrameFactory, *, deadline_s: float = 1.0,
                 concurrency: int = 64) -> None:
        self.addresses = addresses
        self.factory = factory
        self.deadline_s = deadline_s
        self.concurrency = concurrency
        self.outcome = Outcome()

    async def run(self, frames: int, progress: Any = None) -> Outcome:
        self._left = frames
        workers = [asyncio.create_task(self._worker(i)) for i in range(self.concurrency)]
        try:
            while not all(w.done() for w in workers):
                await asyncio.sleep(0.5)
                if progress is not None:
                    progress(self.outcome)
            for w in workers:
                w.result()
        finally:
            for w in workers:
                w.cancel()
        return self.outcome

    def _take(self) -> bool:
        if self._left <= 0:
            return False
        self._left -= 1
        return True

    async def _worker(self, i: int) -> None:
        out = self.outcome
        reader = writer = None
        while self._take():
            fr = self.factory.next()
            if writer is None:
                host, port = self.addresses[(i + out.frames) % len(self.addresses)]
                try:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
                except (OSError, asyncio.TimeoutError):
                    out.connect_errors += 1
                    await asyncio.sleep(0.1)
                    continue
            verdict = await self._send(reader, writer, fr)
            out.by_kind[(fr.kind, verdict)] += 1
            if verdict != "answered":
                writer.transport.abort()
                reader = writer = None
        if writer is not None:
            writer.transport.abort()

    async def _send(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, fr: Frame) -> str:
        out = self.outcome
        try:
            writer.write(struct.pack(">i", len(fr.data)) + fr.data)
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), self.deadline_s))[0]
            body = await asyncio.wait_for(reader.readexactly(size), self.deadline_s)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            out.closed += 1
            return "closed"
        except asyncio.TimeoutError:
            if is_well_formed(fr):
                out.waiting += 1
                return "waiting"
            out.hangs += 1
            if len(out.hang_examples) < 20:
                out.hang_examples.append(f"{fr.kind} api={fr.api_key} v={fr.version} {fr.data[:80].hex()}")
            return "hang"
        out.answered += 1
        if fr.header_intact and len(body) >= 4 and struct.unpack_from(">i", body)[0] != fr.corr:
            out.corr_mismatch += 1
        if fr.valid and fr.api_key == ApiKey.JOIN_GROUP:
            self._learn(fr, body)
        return "answered"

    def _learn(self, fr: Frame, body: bytes) -> None:
        try:
            api = APIS[fr.api_key]
            pos = 4
            if api.response_header_version(fr.version) >= 1:
                _, pos = T.read_tagged_fields(body, pos)
            resp = api.response.decode(body, fr.version, pos, exact=False)
            if resp.member_id:
                ids = self.factory.gen.member_ids
                ids.append(resp.member_id)
                del ids[:-100]
        except Exception:  # noqa: BLE001
            pass


def served_versions(bootstrap: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """The server's ApiVersions (blocking; before the fuzzing starts)."""
    import socket
    from protocol.frames import decode_response, encode_request
    from protocol.messages import ApiVersionsRequest
    with socket.create_connection(bootstrap, timeout=10) as s:
        s.sendall(encode_request(18, 3, 1, "fuzz", ApiVersionsRequest(client_software_name="fuzz",
                                                                      client_software_version="1.0")))
        size = struct.unpack(">i", _recv(s, 4))[0]
        resp = decode_response(18, 3, _recv(s, size))[1]
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys if k.api_key != CONTROL_API_KEY}


def _recv(s: Any, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def now() -> float:
    return time.monotonic()
