"""kafka-python as an independent oracle for the wire format.

kafka-python 3.0 generates its codecs from its own copy of Kafka's JSON message specs
(``kafka/protocol/schemas/resources/*.json``) with its own encoder/decoder, so agreeing with it is evidence that
kgroup's hand-written declarative schemas match Kafka's. For every (API, version) that both implement, for
requests and responses:

* kgroup encodes -> kafka-python decodes -> every field kgroup knows in that version (tagged fields and unknown
  tagged fields included) has the same value;
* kafka-python encodes the same object -> the bytes are *identical* to kgroup's, and kgroup decodes them back
  to the object;
* whole frames: kgroup's request/response frames (size prefix + header v0/v1/v2 + body) are parsed by
  kafka-python's header/frame parsing, and kafka-python's frames are parsed by kgroup's FrameReader and
  decode_request / decode_response.

Field names are matched by name (both use Kafka's field names in snake_case); a kgroup field that kafka-python
does not have in a version fails the test, which is how a misspelt or misplaced field is caught.

Known places where kafka-python deviates from Kafka (Kafka's JSON spec and Java client are the reference) --
each is excluded narrowly, with the reason next to the code:

1. kafka-python decodes a *tagged* struct field (e.g. FetchResponse.Partition.DivergingEpoch) with the nested
   tagged section forced empty (``tagged=None``: ``TaggedFields.decode_empty`` asserts a count of 0). Kafka's
   generated code reads the nested struct's own tagged section, unknown tags included. So no unknown tags are generated *inside* tagged struct values
   for the kafka-python direction (they are covered by the kgroup round trip).
2. kafka-python decodes any ApiVersionsResponse whose error_code is non-zero as version 0
   (``ApiVersionsResponse.decode``); Kafka's Java client first parses with the requested version and falls back
   to v0 only if that fails. The error_code of ApiVersionsResponse v1+ is therefore 0 in the generic test; the
   KIP-511 case (a v0 body answering a higher version) has its own test below.
3. kafka-python never *encodes* unknown tagged fields (it keeps them on decode only), so the
   kafka-python -> kgroup direction is checked on objects without unknown tags.
4. A tagged struct field that is absent from the message (e.g. FetchResponse v12 DivergingEpoch) is ``None`` in
   kafka-python, and kafka-python writes it whenever it is not None; Kafka's generated code uses a default
   struct and writes it only when it differs from the default. Compared as Kafka does: kafka-python's None is
   read as the default struct, and a default-valued tagged struct is not handed to kafka-python's encoder.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import protocol  # noqa: F401
from protocol import frames
from protocol.api import APIS
from protocol.schema import Message, Struct
from protocol.types import ZERO_UUID

sys.path.insert(0, os.path.dirname(__file__))
from test_schemas_roundtrip import MESSAGES, message_objects, struct_objects  # noqa: E402

kafka_protocol = pytest.importorskip("kafka.protocol.api_message")


def _kafka_python_classes() -> dict[tuple[int, str], type]:
    """{(api_key, 'request'|'response'): kafka-python ApiMessage class} for every class kafka-python defines."""
    for sub in ("consumer", "metadata", "producer", "admin"):
        try:
            pkg = importlib.import_module(f"kafka.protocol.{sub}")
        except ImportError:  # pragma: no cover - package layout changed
            continue
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"kafka.protocol.{sub}.{info.name}")
    base = kafka_protocol.ApiMessage
    found: dict[tuple[int, str], type] = {}
    stack = list(base.__subclasses__())
    while stack:
        c = stack.pop()
        stack.extend(c.__subclasses__())
        if getattr(c, "_class_version", None) is None and c.__dict__.get("_json") is not None:
            found[(c.API_KEY, c.type)] = c
    return found


KP = _kafka_python_classes()


def _kp_supports(kp_cls: type, version: int) -> bool:
    lo, hi = kp_cls._valid_versions
    return lo <= version <= hi


def _cases():
    cases, skipped = [], []
    for key in sorted(APIS):
        api = APIS[key]
        for message, kind in ((api.request, "request"), (api.response, "response")):
            kp_cls = KP.get((key, kind))
            for v in range(message.valid.low, message.valid.high + 1):
                if kp_cls is not None and _kp_supports(kp_cls, v):
                    cases.append((f"{message.name}-v{v}", message, kp_cls, v))
                else:
                    skipped.append(f"{message.name}-v{v}")
    return cases, skipped


CASES, NOT_IN_KAFKA_PYTHON = _cases()
IDS = [c[0] for c in CASES]
ORACLE = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


# (API, version) pairs kgroup implements but kafka-python's JSON specs do not define -- not disagreements:
# Kafka 4.0 removed these versions from its specs (KIP-896) and kafka-python copies Kafka 4.x's specs. They are
# cross-checked against kafka-python's pre-JSON ("old") hand-written classes instead, below.
NOT_IN_KAFKA_PYTHON_JSON = {
    "ListOffsetsRequest-v0": "removed from Kafka's spec in 4.0; checked with kafka.protocol.old.list_offsets",
    "ListOffsetsResponse-v0": "removed from Kafka's spec in 4.0; checked with kafka.protocol.old.list_offsets",
    **{f"ConsumerGroup{api}{kind}-v{v}": "KIP-848: kafka-python has no such API; checked against Kafka's own JSON "
                                         "spec (test_spec_conformance.py, kafka_specs/)"
       for api in ("Heartbeat", "Describe") for kind in ("Request", "Response") for v in (0, 1)},
}


def test_oracle_covers_every_registered_api():
    """kafka-python 3.0 knows every API kgroup registers, at every version kgroup implements, except the
    versions Kafka 4.0 removed and the KIP-848 APIs it lacks (listed above, with where they are checked
    instead)."""
    assert CASES
    assert sorted(NOT_IN_KAFKA_PYTHON) == sorted(k for k in NOT_IN_KAFKA_PYTHON_JSON
                                                 if k.split("-v")[0] in {m.name for _, m, _ in MESSAGES})


# --- conversion between the two object models --------------------------------------------------------------------

# kafka-python renames two Kafka fields and exposes them as a set of bit numbers (``json_patch`` of
# MetadataResponse / DescribeGroupsResponse, type "bitfield", INT32_MIN <-> None). Same INT32 on the wire.
_KP_ALIASES = {"cluster_authorized_operations": "authorized_operations",
               "topic_authorized_operations": "authorized_operations"}
INT32_MIN = -(1 << 31)


def _kp_name(kp_struct, name: str, where: str) -> str:
    fields = kp_struct.fields
    if name not in fields and _KP_ALIASES.get(name) in fields:
        name = _KP_ALIASES[name]
    assert name in fields, f"kafka-python has no field {name!r} in {where} (has {list(fields)})"
    return name


def _kp_field(kp_struct, name: str, where: str):
    return kp_struct.fields[_kp_name(kp_struct, name, where)]


def _is_bitfield(kp_field) -> bool:
    return getattr(kp_field, "_type_str", None) == "bitfield"


def _to_bits(value: int):
    if value == INT32_MIN:
        return None
    return {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}


def _from_bits(bits) -> int:
    if bits is None:
        return INT32_MIN
    value = sum(1 << b for b in bits)
    return value - (1 << 32) if value >= 1 << 31 else value


def to_kafka_python(obj: Struct, kp_cls: type, version: int):
    """The same values as a kafka-python object (fields absent in ``version`` are left out)."""
    kwargs = {}
    for f in obj._fields:
        if not f.present(version):
            continue
        value = getattr(obj, f.name)
        kp_field = _kp_field(kp_cls._struct, f.name, kp_cls.__name__)
        if f.tag is not None and f.is_struct and not f.is_array and value == getattr(obj, f.elem_type)():
            continue  # deviation 4: an absent tagged struct is None in kafka-python, which writes any non-None
        if f.is_struct and value is not None:
            dc = kp_field.data_class
            value = [to_kafka_python(x, dc, version) for x in value] if f.is_array else \
                to_kafka_python(value, dc, version)
        elif _is_bitfield(kp_field):
            value = _to_bits(value)
        kwargs[kp_field.name] = value
    return kp_cls(**kwargs)


def kgroup_plain(obj: Struct, version: int, unknown: bool = True):
    """Fields present in ``version`` (and unknown tags) as plain data."""
    d = {}
    for f in obj._fields:
        if not f.present(version):
            continue
        value = getattr(obj, f.name)
        if f.is_struct and value is not None:
            value = [kgroup_plain(x, version, unknown) for x in value] if f.is_array else \
                kgroup_plain(value, version, unknown)
        elif f.elem_type == "uuid":
            value = [x or ZERO_UUID for x in value] if f.is_array and value is not None else (value or ZERO_UUID)
        d[f.name] = value
    if unknown:
        d["<unknown tags>"] = obj.unknown_tagged_fields or None
    return d


def kafka_python_plain(kp_obj, cls: type, version: int):
    """A kafka-python object read through kgroup's field list for ``version``, as plain data."""
    d = {}
    for f in cls._fields:
        if not f.present(version):
            continue
        kp_field = _kp_field(kp_obj._struct, f.name, type(kp_obj).__name__)
        value = getattr(kp_obj, kp_field.name)
        if _is_bitfield(kp_field):
            value = _from_bits(value)
        elif f.is_struct and not f.is_array and value is None and version not in f.nullable:
            # deviation 4: kafka-python leaves an absent (tagged) struct as None; Kafka uses the default struct
            value = kgroup_plain(getattr(cls, f.elem_type)(), version)
        elif f.is_struct and value is not None:
            sub = getattr(cls, f.elem_type)
            value = [kafka_python_plain(x, sub, version) for x in value] if f.is_array else \
                kafka_python_plain(value, sub, version)
        elif f.elem_type == "uuid":  # kafka-python decodes Kafka's ZERO_UUID as None
            value = [x or ZERO_UUID for x in value] if f.is_array and value is not None else (value or ZERO_UUID)
        elif isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        d[f.name] = value
    unknown = getattr(kp_obj, "unknown_tags", None)
    d["<unknown tags>"] = {int(k[1:]): bytes(v) for k, v in unknown.items()} if unknown else None
    return d


def _strip_unknown(plain):
    if isinstance(plain, dict):
        return {k: _strip_unknown(v) for k, v in plain.items() if k != "<unknown tags>"}
    if isinstance(plain, list):
        return [_strip_unknown(x) for x in plain]
    return plain


# --- objects for the oracle --------------------------------------------------------------------------------------

def oracle_objects(message: Message, version: int) -> st.SearchStrategy:
    flexible = message.is_flexible(version)
    strategy = struct_objects(message.cls, version, flexible, with_unknown=True)
    strategy = strategy.map(lambda o: _no_unknown_inside_tagged(o, version))
    if message.api_key == 18 and message.kind == "response" and version > 0:
        strategy = strategy.map(_api_versions_ok)  # deviation 2 (module docstring)
    return strategy


def _api_versions_ok(obj):
    obj.error_code = 0
    return obj


def _drop_unknown(value):
    if isinstance(value, Struct):
        value.unknown_tagged_fields = None
        for n, _ in value._defaults:
            _drop_unknown(getattr(value, n))
    elif isinstance(value, list):
        for x in value:
            _drop_unknown(x)
    return value


def _no_unknown_inside_tagged(obj: Struct, version: int):
    """Deviation 1: kafka-python cannot read unknown tags nested inside a tagged struct value."""
    for f in obj._fields:
        if not f.present(version) or not f.is_struct:
            continue
        value = getattr(obj, f.name)
        for x in (value if f.is_array and value is not None else [value] if value is not None else []):
            if f.tag is not None:
                _drop_unknown(x)
            else:
                _no_unknown_inside_tagged(x, version)
    return obj


# --- bodies: both directions -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,message,kp_cls,version", CASES, ids=IDS)
@ORACLE
@given(data=st.data())
def test_body_oracle(name, message, kp_cls, version, data):
    obj = data.draw(oracle_objects(message, version))
    raw = message.encode(obj, version)

    # kgroup -> kafka-python (unknown tagged fields included: kafka-python keeps them as '_<tag>')
    kp_obj = kp_cls.decode(raw, version=version)
    assert kafka_python_plain(kp_obj, message.cls, version) == kgroup_plain(obj, version)

    # kafka-python -> kgroup, on the same values without unknown tags (deviation 3)
    _drop_unknown(obj)
    raw_no_unknown = message.encode(obj, version)
    kp_raw = to_kafka_python(obj, kp_cls, version).encode(version=version)
    assert bytes(kp_raw) == raw_no_unknown
    back = message.decode(bytes(kp_raw), version)
    assert kgroup_plain(back, version) == kgroup_plain(obj, version)


# --- whole frames: headers -----------------------------------------------------------------------------------------

CLIENT_IDS = [None, "", "consumer-1", "kgroup-\u00e9\U0001f600", "x" * 200]


def _request_cases():
    return [c for c in CASES if c[1].kind == "request"]


def _response_cases():
    return [c for c in CASES if c[1].kind == "response"]


@pytest.mark.parametrize("name,message,kp_cls,version", _request_cases(), ids=[c[0] for c in _request_cases()])
def test_request_frames(name, message, kp_cls, version):
    api = APIS[message.api_key]
    header_version = 2 if message.is_flexible(version) else 1
    assert api.request_header_version(version) == header_version
    body = message.cls()
    for i, client_id in enumerate(CLIENT_IDS):
        correlation_id = [0, 1, -1, 2**31 - 1, -(2**31)][i]
        # kgroup frame -> kafka-python: header (v1, or v2 with tagged fields and a NON-compact client_id) and body
        frame = frames.encode_request(api.key, version, correlation_id, client_id, body)
        kp_obj = kp_cls.decode(frame, version=version, header=True, framed=True)
        hdr = kp_obj.header
        assert (hdr.request_api_key, hdr.request_api_version, hdr.correlation_id, hdr.client_id) == \
            (api.key, version, correlation_id, client_id)
        assert kafka_python_plain(kp_obj, message.cls, version) == kgroup_plain(body, version)

        # kafka-python frame -> kgroup FrameReader + decode_request
        kp_req = to_kafka_python(body, kp_cls, version)
        kp_req.with_header(correlation_id=correlation_id, client_id=client_id)
        kp_frame = bytes(kp_req.encode(version=version, header=True, framed=True))
        assert kp_frame == frame
        reader = frames.FrameReader()
        [payload] = reader.feed(kp_frame)
        header, decoded = frames.decode_request(payload)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id,
                header.header_version) == (api.key, version, correlation_id, client_id, header_version)
        assert decoded == body


@pytest.mark.parametrize("name,message,kp_cls,version", _response_cases(), ids=[c[0] for c in _response_cases()])
def test_response_frames(name, message, kp_cls, version):
    api = APIS[message.api_key]
    # ApiVersions always answers with response header v0 (KIP-511); others use v1 in flexible versions
    header_version = 0 if api.key == 18 else (1 if message.is_flexible(version) else 0)
    assert api.response_header_version(version) == header_version
    body = message.cls()
    for correlation_id in (0, 7, -1, 2**31 - 1):
        frame = frames.encode_response(api.key, version, correlation_id, body)
        kp_obj = kp_cls.decode(frame, version=version, header=True, framed=True)
        assert kp_obj.header.correlation_id == correlation_id
        assert kafka_python_plain(kp_obj, message.cls, version) == kgroup_plain(body, version)

        kp_resp = to_kafka_python(body, kp_cls, version)
        # (kafka-python's encode(version=...) would set request_api_version on a *response* header and fail, so
        # the version is set before the header exists)
        kp_resp.API_VERSION = version
        kp_resp.with_header(correlation_id=correlation_id)
        kp_frame = bytes(kp_resp.encode(header=True, framed=True))
        assert kp_frame == frame
        [payload] = frames.FrameReader().feed(kp_frame)
        got_id, decoded = frames.decode_response(api.key, version, payload)
        assert got_id == correlation_id and decoded == body


def test_api_versions_kip511_fallback_understood_by_kafka_python():
    """Asked ApiVersions v3 by a client, a broker that only knows lower versions answers with a v0 body carrying
    UNSUPPORTED_VERSION (35) and header v0; kafka-python, expecting v3, must read it (and retry lower)."""
    api = APIS[18]
    kp_cls = KP[(18, "response")]
    R = api.response.cls
    body = R(error_code=35, api_keys=[R.ApiVersion(api_key=18, min_version=0, max_version=api.max_version)])
    frame = frames.encode_response(18, 0, 42, body)
    kp_obj = kp_cls.decode(frame, version=3, header=True, framed=True)
    assert kp_obj.header.correlation_id == 42
    assert kp_obj.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in kp_obj.api_keys] == [(18, 0, api.max_version)]


def test_kafka_python_api_versions_request_v4_header():
    """The exact frame kafka-python 3.0 sends first (ApiVersions v4, header v2): kgroup reads it."""
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    req = ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3.0")
    req.with_header(correlation_id=1, client_id="kafka-python-3.0")
    frame = bytes(req.encode(version=4, header=True, framed=True))
    [payload] = frames.FrameReader().feed(frame)
    header, body = frames.decode_request(payload)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id, header.header_version) \
        == (18, 4, 1, "kafka-python-3.0", 2)
    assert (body.client_software_name, body.client_software_version) == ("kafka-python", "3.0")


def test_uuid_fields_compare_with_kafka_python_zero_uuid():
    """Sanity of the comparison helper: kafka-python's None UUID is Kafka's ZERO_UUID."""
    assert (None or ZERO_UUID) == uuid.UUID(int=0)


# --- versions only kafka-python's old hand-written classes know ----------------------------------------------------

def wire_tuple(obj: Struct, version: int):
    """Values of the fields present in ``version``, in wire order, nested as kafka-python's old Schema decodes
    them (structs as tuples, arrays as lists)."""
    out = []
    for f in obj._fields:
        if not f.present(version):
            continue
        value = getattr(obj, f.name)
        if f.is_struct and value is not None:
            value = [wire_tuple(x, version) for x in value] if f.is_array else wire_tuple(value, version)
        out.append(value)
    return tuple(out)


def _old_cases():
    import kafka.protocol.old.list_offsets as old

    cases = []
    if 2 in APIS and APIS[2].supports(0):
        cases.append(("ListOffsetsRequest-v0", APIS[2].request, old.ListOffsetsRequest_v0, 0))
        cases.append(("ListOffsetsResponse-v0", APIS[2].response, old.ListOffsetsResponse_v0, 0))
    return cases


@pytest.mark.parametrize("name,message,old_cls,version", _old_cases(), ids=[c[0] for c in _old_cases()])
@ORACLE
@given(data=st.data())
def test_body_oracle_old_classes(name, message, old_cls, version, data):
    from io import BytesIO

    obj = data.draw(message_objects(message, version, with_unknown=False))
    raw = message.encode(obj, version)
    assert old_cls.SCHEMA.decode(BytesIO(raw)) == wire_tuple(obj, version)
    old_raw = old_cls.SCHEMA.encode(wire_tuple(obj, version))
    assert bytes(old_raw) == raw
    assert message.decode(bytes(old_raw), version) == obj
