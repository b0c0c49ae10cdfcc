"""Declarative message schemas and the codecs compiled from them (sans-IO).

Theory of operation
-------------------
Every Kafka API is described once, as data, in the spirit of Kafka's JSON message specs
(``clients/src/main/resources/common/message/*.json``): a :class:`Message` lists its valid versions, the versions
that are *flexible* (KIP-482: compact strings/bytes/arrays and a tagged-field section at the end of every struct),
and its :class:`Field` s. A field names its type (``int8`` ... ``int64``, ``uint16``, ``float64``, ``bool``,
``uuid``, ``string``, ``bytes``, ``records``, a nested struct, or ``[]T`` for an array), the versions in which it
exists, the versions in which it may be null, its default, and optionally a tag (tagged fields are written only
when they differ from their default, in the tagged section of flexible versions).

From a message we build

* one Python class per struct (``JoinGroupRequest``, ``JoinGroupRequest.Protocol`` ...), with ``__slots__``
  for the union of fields over all versions; a field that does not exist in a version takes its default; and
* one encoder and one decoder per (struct, version), generated as Python source and compiled once, lazily.
  Consecutive fixed-width fields are packed with a single ``struct.Struct``; nothing is interpreted per field at
  run time, which is what makes this codec several times faster than a generic field walker.

Decoders are written for hostile input: every length is checked against the end of the frame before anything is
allocated, arrays are bounded by ``remaining_bytes // min_element_size``, and any failure surfaces as
:class:`~protocol.exceptions.ProtocolError`. Unknown tagged fields are kept (``unknown_tagged_fields``) and
written back, as Kafka's generated classes do.

Encoding a field that does not exist in the target version is silently skipped (Kafka would throw for a
non-ignorable field with a non-default value; a server must be lenient about what it sends back and the callers
here set only what the version supports).
"""

from __future__ import annotations

import struct
import uuid as _uuid
from dataclasses import dataclass, field as _dc_field
from typing import Any, Callable

from protocol import types as T
from protocol.exceptions import ProtocolError

# --- version ranges ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``Versions.parse("3+")``, ``"0-4"``, ``"5"``, ``"none"``."""

    low: int
    high: int  # inclusive; 0x7FFF for open-ended

    OPEN = 0x7FFF

    @classmethod
    def parse(cls, spec: str | "Versions" | None) -> "Versions":
        if isinstance(spec, Versions):
            return spec
        if spec is None or spec == "none":
            return cls(1, 0)  # empty
        spec = spec.strip()
        if spec.endswith("+"):
            return cls(int(spec[:-1]), cls.OPEN)
        if "-" in spec:
            lo, hi = spec.split("-")
            return cls(int(lo), int(hi))
        v = int(spec)
        return cls(v, v)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == self.OPEN:
            return f"{self.low}+"
        return f"{self.low}" if self.low == self.high else f"{self.low}-{self.high}"


# --- schema description ------------------------------------------------------------------------------------------

PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "float64", "bool", "uuid", "string", "bytes", "records"}
_FIXED = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "float64": "d", "bool": "?"}
_FIXED_SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "float64": 8, "bool": 1, "uuid": 16}
_NO_DEFAULT = object()


@dataclass
class Field:
    """One field of a struct. ``type`` is a primitive name, ``"[]" + elem`` for an array, or a struct name when
    ``fields`` is given (``"[]Name"`` with fields for an array of structs)."""

    name: str
    type: str
    versions: Versions
    nullable: Versions = _dc_field(default_factory=lambda: Versions.parse("none"))
    default: Any = _NO_DEFAULT
    tag: int | None = None
    tagged: Versions = _dc_field(default_factory=lambda: Versions.parse("none"))
    fields: list["Field"] | None = None
    about: str = ""

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def elem_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.fields is not None

    def present(self, version: int) -> bool:
        if self.tag is not None:
            return version in self.tagged
        return version in self.versions

    def default_value(self, struct_cls: type | None = None) -> Any:
        if self.default is not _NO_DEFAULT:
            return list(self.default) if isinstance(self.default, list) else self.default
        if self.is_array:
            return []
        if self.is_struct:
            return struct_cls() if struct_cls is not None else None
        t = self.type
        if t in ("int8", "int16", "int32", "int64", "uint16"):
            return 0
        if t == "float64":
            return 0.0
        if t == "bool":
            return False
        if t == "string":
            return ""
        if t == "bytes":
            return b""
        if t == "records":
            return None
        if t == "uuid":
            return T.ZERO_UUID
        raise ValueError(f"no default for type {t}")


def F(name: str, type: str, versions: str = "0+", *, nullable: str = "none", default: Any = _NO_DEFAULT,
      tag: int | None = None, tagged: str | None = None, fields: list[Field] | None = None, about: str = "") -> Field:
    """Shorthand used by the API schema modules: ``F("group_id", "string", "0+")``."""
    vs = Versions.parse(versions)
    return Field(name=name, type=type, versions=vs, nullable=Versions.parse(nullable), default=default, tag=tag,
                 tagged=Versions.parse(tagged) if tagged is not None else (vs if tag is not None else
                                                                          Versions.parse("none")),
                 fields=fields, about=about)


@dataclass
class Message:
    """A request, response or data message: the top-level struct plus its version metadata."""

    name: str
    valid: Versions
    flexible: Versions
    fields: list[Field]
    api_key: int | None = None
    kind: str = "data"  # "request" | "response" | "header" | "data"
    cls: type = None  # type: ignore[assignment]  (the generated top-level class, set by build())
    _codecs: dict = _dc_field(default_factory=dict, repr=False)

    def codec(self, version: int) -> tuple[Callable, Callable]:
        """(encode(obj, out: bytearray), decode(buf, pos) -> (obj, pos)) for one version, compiled on first use."""
        c = self._codecs.get(version)
        if c is None:
            if version not in self.valid:
                raise ProtocolError(f"{self.name} has no version {version} (valid: {self.valid})")
            c = self._codecs[version] = _compile(self, version)
        return c

    def encode(self, obj: Any, version: int) -> bytes:
        enc, _ = self.codec(version)
        out = bytearray()
        try:
            enc(obj, out)
        except ProtocolError:
            raise
        except (struct.error, AttributeError, TypeError, ValueError, OverflowError) as exc:
            raise ProtocolError(f"cannot encode {self.name} v{version}: {exc}") from exc
        return bytes(out)

    def decode(self, buf: bytes | bytearray | memoryview, version: int, pos: int = 0, *,
               exact: bool = True) -> Any:
        """Decode one message; with ``exact`` trailing bytes are an error (Kafka ignores them for requests, but a
        codec test wants to know)."""
        obj, end = self.decode_from(buf, version, pos)
        if exact and end != len(buf):
            raise ProtocolError(f"{len(buf) - end} trailing bytes after {self.name} v{version}")
        return obj

    def decode_from(self, buf, version: int, pos: int = 0) -> tuple[Any, int]:
        _, dec = self.codec(version)
        if type(buf) is not bytes:  # the generated decoders slice and .decode() bytes (memoryview has no .decode)
            buf = bytes(buf)
        try:
            return dec(buf, pos)
        except ProtocolError:
            raise
        except (struct.error, IndexError, ValueError, TypeError, OverflowError, MemoryError, RecursionError) as exc:
            raise ProtocolError(f"malformed {self.name} v{version}: {exc}") from exc

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


# --- generated struct classes ------------------------------------------------------------------------------------


class Struct:
    """Base of generated message classes: slots, keyword construction with defaults, equality and repr."""

    __slots__ = ("unknown_tagged_fields",)
    _fields: tuple[Field, ...] = ()
    _defaults: tuple[tuple[str, Callable[[], Any]], ...] = ()

    def __init__(self, **kwargs: Any) -> None:
        for name, make in self._defaults:
            if name in kwargs:
                object.__setattr__(self, name, kwargs.pop(name))
            else:
                object.__setattr__(self, name, make())
        self.unknown_tagged_fields = kwargs.pop("unknown_tagged_fields", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(sorted(kwargs))}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n, _ in self._defaults)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self._defaults)
        return f"{type(self).__qualname__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (nested structs become dicts) for logs, JSON and tests."""
        def conv(v: Any) -> Any:
            if isinstance(v, Struct):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, _uuid.UUID):
                return str(v)
            return v
        return {n: conv(getattr(self, n)) for n, _ in self._defaults}


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


_IMMUTABLE_DEFAULTS = (int, float, str, bytes, bool, type(None), _uuid.UUID)


def _make_init(qualname: str, defaults: list[tuple[str, Callable[[], Any]]]) -> Callable[..., None]:
    """A keyword-only ``__init__`` written out for one struct, the way ``dataclasses`` does it: messages are built
    on every request and response, and the generic ``Struct.__init__`` loop costs ~4x more. Immutable defaults
    become parameter defaults; lists and nested structs are made fresh per instance."""
    params, body, env = [], [], {}
    for i, (name, make) in enumerate(defaults):
        value = make()
        if type(value) in _IMMUTABLE_DEFAULTS:
            env[f"_d{i}"] = value
            params.append(f"{name}=_d{i}")
            body.append(f"    self.{name} = {name}")
        else:
            env[f"_m{i}"] = make
            params.append(f"{name}=_MISSING")
            body.append(f"    self.{name} = _m{i}() if {name} is _MISSING else {name}")
    params.append("unknown_tagged_fields=None")
    body.append("    self.unknown_tagged_fields = unknown_tagged_fields")
    env["_MISSING"] = _MISSING
    src = f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(src, f"<init {qualname}>", "exec"), env)
    fn = env["__init__"]
    fn.__qualname__ = f"{qualname}.__init__"
    return fn


_MISSING = object()


def _build_class(qualname: str, short: str, fields: list[Field], owner: dict[str, type]) -> type:
    """Create the class for a struct and, recursively, its nested struct classes (as class attributes)."""
    nested: dict[str, type] = {}
    for f in fields:
        if f.is_struct:
            sub_short = f.elem_type
            nested[sub_short] = _build_class(f"{qualname}.{sub_short}", sub_short, f.fields, owner)
    defaults = []
    for f in fields:
        if f.is_struct and not f.is_array and f.default is _NO_DEFAULT:
            defaults.append((f.name, nested[f.elem_type]))  # a fresh struct (a nullable one may default to null)
        else:
            d = f.default_value()
            if isinstance(d, list):
                defaults.append((f.name, (lambda d=d: list(d))))
            else:
                defaults.append((f.name, (lambda d=d: d)))
    ns: dict[str, Any] = {
        "__slots__": tuple(f.name for f in fields),
        "_fields": tuple(fields),
        "_defaults": tuple(defaults),
        "__qualname__": qualname,
        "__module__": "protocol.messages",
        "__init__": _make_init(qualname, defaults),
    }
    ns.update(nested)
    cls = type(short, (Struct,), ns)
    owner[qualname] = cls
    return cls


def build(message: Message) -> Message:
    """Attach the generated top-level class to ``message`` (and index nested classes by qualified name)."""
    registry: dict[str, type] = {}
    message.cls = _build_class(message.name, message.name, message.fields, registry)
    return message


# --- codec compiler ----------------------------------------------------------------------------------------------


class _Gen:
    """Accumulates generated source for one (message, version)."""

    def __init__(self, version: int, flexible: bool) -> None:
        self.version = version
        self.flexible = flexible
        self.lines: list[str] = []
        self.env: dict[str, Any] = {
            "T": T, "ProtocolError": ProtocolError, "_uuid": _uuid,
            "_nouv": T.read_unsigned_varint, "_wuv": T.write_unsigned_varint, "_unk": _carries_unknown_tags,
            "_I16": T.INT16, "_I32": T.INT32,
        }
        self.counter = 0
        self.funcs: dict[int, tuple[str, str]] = {}  # id(fields) -> (enc name, dec name)

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, prefix: str, value: Any) -> str:
        n = self.name(prefix)
        self.env[n] = value
        return n


def _carries_unknown_tags(value: Any) -> bool:
    """True if a struct (or a struct nested in it, or in its arrays) holds unknown tagged fields."""
    if isinstance(value, Struct):
        return bool(value.unknown_tagged_fields) or any(_carries_unknown_tags(getattr(value, n))
                                                        for n, _ in value._defaults)
    if isinstance(value, list):
        return any(_carries_unknown_tags(v) for v in value)
    return False


def _min_size(f: Field, version: int, flexible: bool) -> int:
    """Smallest encoded size of one element of ``f``'s element type (bounds hostile array counts)."""
    t = f.elem_type
    if f.is_struct:
        total = 1 if flexible else 0
        for sub in f.fields:
            if sub.tag is None and sub.present(version):
                total += _min_size(sub, version, flexible) if not sub.is_array else (1 if flexible else 4)
        return max(total, 1)
    if t in _FIXED_SIZE:
        return _FIXED_SIZE[t]
    if t in ("string",):
        return 1 if flexible else 2
    if t in ("bytes", "records"):
        return 1 if flexible else 4
    return 1


def _compile(message: Message, version: int) -> tuple[Callable, Callable]:
    flexible = version in message.flexible
    g = _Gen(version, flexible)
    enc_name, dec_name = _gen_struct(g, message.cls, message.fields, version, flexible)
    src = "\n".join(g.lines)
    code = compile(src, f"<kgroup codec {message.name} v{version}>", "exec")
    exec(code, g.env)
    return g.env[enc_name], g.env[dec_name]


def _gen_struct(g: _Gen, cls: type, fields: list[Field], version: int, flexible: bool) -> tuple[str, str]:
    key = id(fields)
    if key in g.funcs:
        return g.funcs[key]
    enc = g.name("_enc")
    dec = g.name("_dec")
    g.funcs[key] = (enc, dec)
    cls_ref = g.const("_C", cls)

    # Nested struct codecs first (they are module-level functions of the generated source).
    for f in fields:
        if f.is_struct and f.present(version):
            _gen_struct(g, getattr(cls, f.elem_type), f.fields, version, flexible)

    regular = [f for f in fields if f.tag is None and f.present(version)]
    tagged = sorted((f for f in fields if f.tag is not None and f.present(version)), key=lambda f: f.tag)
    absent = [f for f in fields if not f.present(version)]

    # ---- encoder
    e: list[str] = [f"def {enc}(o, out):"]
    i = 0
    while i < len(regular):
        f = regular[i]
        if f.type in _FIXED and not f.is_array:
            run = [f]
            while i + 1 < len(regular) and regular[i + 1].type in _FIXED and not regular[i + 1].is_array:
                i += 1
                run.append(regular[i])
            st = g.const("_S", struct.Struct(">" + "".join(_FIXED[x.type] for x in run)))
            e.append(f"    out += {st}.pack({', '.join('o.' + x.name for x in run)})")
        else:
            e.extend(_enc_field(g, f, f"o.{f.name}", version, flexible, "    "))
        i += 1
    if flexible:
        if tagged:
            e.append("    tf = dict(o.unknown_tagged_fields) if o.unknown_tagged_fields else {}")
            for f in tagged:
                dflt = g.const("_D", f.default_value(getattr(cls, f.elem_type) if f.is_struct else None))
                if f.is_struct and not f.is_array:
                    # Struct.__eq__ ignores unknown tagged fields; Kafka's generated equals() does not, so a
                    # tagged struct at its default values that carries unknown tags is still written.
                    e.append(f"    if o.{f.name} != {dflt} or _unk(o.{f.name}):")
                else:
                    e.append(f"    if o.{f.name} != {dflt}:")
                e.append("        tb = bytearray()")
                e.extend(_enc_field(g, f, f"o.{f.name}", version, flexible, "        ", out="tb"))
                e.append(f"        tf[{f.tag}] = bytes(tb)")
            e.append("    T.write_tagged_fields(out, tf)")
        else:
            e.append("    T.write_tagged_fields(out, o.unknown_tagged_fields)")
    if len(e) == 1:
        e.append("    pass")
    g.lines.extend(e)

    # ---- decoder
    # _bl: length of the frame, computed once per struct (the checks below compare every read against it)
    d: list[str] = [f"def {dec}(buf, pos):", f"    o = {cls_ref}.__new__({cls_ref})", "    _bl = len(buf)"]
    for f in absent + [t for t in tagged]:
        dflt_cls = getattr(cls, f.elem_type) if f.is_struct else None
        if f.is_struct and not f.is_array:
            d.append(f"    o.{f.name} = {cls_ref}.{f.elem_type}()")
        else:
            dv = f.default_value(dflt_cls)
            if isinstance(dv, list):
                d.append(f"    o.{f.name} = []")
            else:
                d.append(f"    o.{f.name} = {g.const('_D', dv)}")
    i = 0
    while i < len(regular):
        f = regular[i]
        if f.type in _FIXED and not f.is_array:
            run = [f]
            while i + 1 < len(regular) and regular[i + 1].type in _FIXED and not regular[i + 1].is_array:
                i += 1
                run.append(regular[i])
            s = struct.Struct(">" + "".join(_FIXED[x.type] for x in run))
            st = g.const("_S", s)
            d.append(f"    if pos + {s.size} > _bl: raise ProtocolError('truncated {cls.__qualname__}"
                     f" at offset %d' % pos)")
            targets = ", ".join("o." + x.name for x in run)
            d.append(f"    {targets}{',' if len(run) == 1 else ''} = {st}.unpack_from(buf, pos)")
            d.append(f"    pos += {s.size}")
        else:
            d.extend(_dec_field(g, f, f"o.{f.name}", version, flexible, "    ", cls))
        i += 1
    if flexible:
        d.append("    tf, pos = T.read_tagged_fields(buf, pos)")
        if tagged:
            for f in tagged:
                d.append(f"    raw = tf.pop({f.tag}, None)")
                d.append("    if raw is not None:")
                d.extend(_dec_field(g, f, f"o.{f.name}", version, flexible, "        ", cls, buf="raw", pos="tp",
                                    init_pos=True))
        d.append("    o.unknown_tagged_fields = tf or None")
    else:
        d.append("    o.unknown_tagged_fields = None")
    d.append("    return o, pos")
    g.lines.extend(d)
    return enc, dec


def _enc_scalar(g: _Gen, t: str, expr: str, nullable: bool, flexible: bool, ind: str, out: str,
                what: str) -> list[str]:
    if t in _FIXED:
        return [f"{ind}{out} += {g.const('_S', struct.Struct('>' + _FIXED[t]))}.pack({expr})"]
    if t == "uuid":
        return [f"{ind}T.write_uuid({out}, {expr})"]
    if t not in ("string", "bytes", "records"):
        raise ValueError(f"unknown type {t}")
    # Strings and bytes are written inline (no helper calls): this is where a message spends its encode time.
    # A str that is not valid UTF-8 (lone surrogate) raises UnicodeEncodeError, which Message.encode reports
    # as ProtocolError, like T.write_string does.
    v = g.name("_v")
    r = g.name("_r")
    lines = [f"{ind}{v} = {expr}", f"{ind}if {v} is None:"]
    if nullable:
        null = "b'\\xff\\xff'" if t == "string" else "b'\\xff\\xff\\xff\\xff'"
        lines.append(f"{ind}    {out}.append(0)" if flexible else f"{ind}    {out} += {null}")
    else:
        lines.append(f"{ind}    raise ProtocolError('{what} is not nullable in this version')")
    lines.append(f"{ind}else:")
    if t == "string":
        lines.append(f"{ind}    {r} = {v}.encode('utf-8')")
        lines.append(f"{ind}    if len({r}) > 0x7FFF: raise ProtocolError('{what}: string of %d bytes is longer "
                     f"than 32767' % len({r}))")
    else:
        lines.append(f"{ind}    {r} = {v}")
    if flexible:
        n = g.name("_n")
        lines += [f"{ind}    {n} = len({r}) + 1",
                  f"{ind}    if {n} < 0x80: {out}.append({n})",
                  f"{ind}    else: _wuv({out}, {n})"]
    elif t == "string":
        lines.append(f"{ind}    {out} += _I16.pack(len({r}))")
    else:
        lines.append(f"{ind}    {out} += _I32.pack(len({r}))")
    lines.append(f"{ind}    {out} += {r}")
    return lines


def _enc_field(g: _Gen, f: Field, expr: str, version: int, flexible: bool, ind: str,
               out: str = "out") -> list[str]:
    nullable = version in f.nullable
    if f.is_array:
        v = g.name("_a")
        lines = [f"{ind}{v} = {expr}"]
        if nullable:
            lines.append(f"{ind}if {v} is None:")
            lines.append(f"{ind}    {out}.append(0)" if flexible else f"{ind}    {out} += b'\\xff\\xff\\xff\\xff'")
            lines.append(f"{ind}else:")
            ind2 = ind + "    "
        else:
            lines.append(f"{ind}if {v} is None: raise ProtocolError('{f.name} is not nullable in this version')")
            ind2 = ind
        if flexible:
            lines.append(f"{ind2}_wuv({out}, len({v}) + 1)")
        else:
            lines.append(f"{ind2}{out} += T.INT32.pack(len({v}))")
        x = g.name("_x")
        if f.is_struct:
            enc_fn, _ = g.funcs[id(f.fields)]
            lines.append(f"{ind2}for {x} in {v}: {enc_fn}({x}, {out})")
        else:
            lines.append(f"{ind2}for {x} in {v}:")
            lines.extend(_enc_scalar(g, f.elem_type, x, False, flexible, ind2 + "    ", out, f.name + "[]"))
        return lines
    if f.is_struct:
        enc_fn, _ = g.funcs[id(f.fields)]
        if nullable:  # nullable struct: int8 -1 / 1 marker (Kafka's nullable structs)
            return [f"{ind}if {expr} is None: {out}.append(0xff)",
                    f"{ind}else:", f"{ind}    {out}.append(1)", f"{ind}    {enc_fn}({expr}, {out})"]
        return [f"{ind}{enc_fn}({expr}, {out})"]
    return _enc_scalar(g, f.type, expr, nullable, flexible, ind, out, f.name)


def _dec_scalar(g: _Gen, t: str, target: str, nullable: bool, flexible: bool, ind: str, buf: str, pos: str,
                what: str) -> list[str]:
    blen = "_bl" if buf == "buf" else f"len({buf})"  # _bl is set at the top of every struct decoder
    if t in _FIXED:
        s = struct.Struct(">" + _FIXED[t])
        st = g.const("_S", s)
        return [f"{ind}if {pos} + {s.size} > {blen}: raise ProtocolError('truncated {what}')",
                f"{ind}{target}, = {st}.unpack_from({buf}, {pos})", f"{ind}{pos} += {s.size}"]
    if t == "uuid":
        return [f"{ind}{target}, {pos} = T.read_uuid({buf}, {pos})"]
    if t not in ("string", "bytes", "records"):
        raise ValueError(f"unknown type {t}")
    # Inline reads (no helper calls), with the same checks as T.read_*: the length is checked against the end
    # of the buffer before slicing; invalid UTF-8 raises UnicodeDecodeError, reported as ProtocolError by
    # Message.decode_from. Records are always nullable on read, as before.
    nullable = nullable or t == "records"
    n = g.name("_n")
    e = g.name("_e")
    # decode_from hands the generated decoders a ``bytes`` object, so a slice is already bytes and has .decode()
    conv = (lambda a: f"{buf}[{a}:{e}].decode()") if t == "string" else (lambda a: f"{buf}[{a}:{e}]")
    if flexible:
        lines = [f"{ind}if {pos} >= {blen}: raise ProtocolError('truncated {what}')",
                 f"{ind}{n} = {buf}[{pos}]",
                 f"{ind}if {n} < 0x80: {pos} += 1",
                 f"{ind}else: {n}, {pos} = _nouv({buf}, {pos})",
                 f"{ind}if {n} == 0:"]
        lines.append(f"{ind}    {target} = None" if nullable else
                     f"{ind}    raise ProtocolError('null value for non-nullable {what}')")
        lines += [f"{ind}else:",
                  f"{ind}    {e} = {pos} + {n} - 1",
                  f"{ind}    if {e} > {blen}:",
                  f"{ind}        raise ProtocolError('truncated {what}: %d bytes announced' % ({e} - {pos}))",
                  f"{ind}    {target} = {conv(pos)}",
                  f"{ind}    {pos} = {e}"]
        return lines
    size = 2 if t == "string" else 4
    lines = [f"{ind}if {pos} + {size} > {blen}: raise ProtocolError('truncated {what}')",
             f"{ind}{n}, = {'_I16' if t == 'string' else '_I32'}.unpack_from({buf}, {pos})",
             f"{ind}{e} = {pos} + {size} + {n}"]
    if nullable:
        lines += [f"{ind}if {n} < 0:",
                  f"{ind}    if {n} != -1: raise ProtocolError('negative length %d for {what}' % {n})",
                  f"{ind}    {target} = None",
                  f"{ind}    {pos} += {size}",
                  f"{ind}else:",
                  f"{ind}    if {e} > {blen}: raise ProtocolError('truncated {what}: %d bytes announced' % {n})",
                  f"{ind}    {target} = {conv(f'{pos} + {size}')}",
                  f"{ind}    {pos} = {e}"]
    else:
        lines += [f"{ind}if {n} < 0 or {e} > {blen}:",
                  f"{ind}    raise ProtocolError('invalid length %d for non-nullable {what}' % {n})",
                  f"{ind}{target} = {conv(f'{pos} + {size}')}",
                  f"{ind}{pos} = {e}"]
    return lines


def _dec_field(g: _Gen, f: Field, target: str, version: int, flexible: bool, ind: str, owner: type,
               buf: str = "buf", pos: str = "pos", init_pos: bool = False) -> list[str]:
    nullable = version in f.nullable
    lines = [f"{ind}{pos} = 0"] if init_pos else []
    if f.is_array:
        n = g.name("_n")
        ms = _min_size(f, version, flexible)
        fn = "read_compact_array_length" if flexible else "read_array_length"
        lines.append(f"{ind}{n}, {pos} = T.{fn}({buf}, {pos}, {ms})")
        lines.append(f"{ind}if {n} < 0:")
        if nullable:
            lines.append(f"{ind}    {target} = None")
        else:
            lines.append(f"{ind}    raise ProtocolError('null array for non-nullable field {f.name}')")
        lines.append(f"{ind}else:")
        lst = g.name("_l")
        lines.append(f"{ind}    {lst} = []")
        if f.is_struct:
            _, dec_fn = g.funcs[id(f.fields)]
            x = g.name("_x")
            lines.append(f"{ind}    for _ in range({n}):")
            lines.append(f"{ind}        {x}, {pos} = {dec_fn}({buf}, {pos})")
            lines.append(f"{ind}        {lst}.append({x})")
        elif f.elem_type in _FIXED and buf == "buf":
            # Whole run of fixed-width elements in one unpack.
            code = _FIXED[f.elem_type]
            size = _FIXED_SIZE[f.elem_type]
            lines.append(f"{ind}    if {pos} + {n} * {size} > len({buf}): raise ProtocolError('truncated {f.name}')")
            lines.append(f"{ind}    {lst} = list(struct.unpack_from('>%d{code}' % {n}, {buf}, {pos}))")
            lines.append(f"{ind}    {pos} += {n} * {size}")
            g.env["struct"] = struct
        else:
            x = g.name("_x")
            lines.append(f"{ind}    for _ in range({n}):")
            lines.extend(_dec_scalar(g, f.elem_type, x, False, flexible, ind + "        ", buf, pos, f.name))
            lines.append(f"{ind}        {lst}.append({x})")
        lines.append(f"{ind}    {target} = {lst}")
        return lines
    if f.is_struct:
        _, dec_fn = g.funcs[id(f.fields)]
        if nullable:
            lines += [f"{ind}if {pos} >= len({buf}): raise ProtocolError('truncated {f.name}')",
                      f"{ind}if {buf}[{pos}] == 0xff:", f"{ind}    {target} = None; {pos} += 1",
                      f"{ind}else:", f"{ind}    {target}, {pos} = {dec_fn}({buf}, {pos} + 1)"]
        else:
            lines.append(f"{ind}{target}, {pos} = {dec_fn}({buf}, {pos})")
        return lines
    return lines + _dec_scalar(g, f.type, target, nullable, flexible, ind, buf, pos, f.name)
