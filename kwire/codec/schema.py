"""kwire's declarative message schema DSL, compiled to straight-line Python per version.

A schema module describes one API's request and response as data::

    REQUEST = Message("MetadataRequest", api_key=3, kind="request", valid="0-12", flexible="9+", fields=[
        F("topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
            F("topic_id", "uuid", "10+"),
            F("name", "string", "0+", nullable="10+"),
        ]),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
    ])

Types use Kafka's own spellings (int8 .. int64, uint16, uint32, float64, bool, string, bytes,
records, uuid, ``[]T``, or a struct name with ``fields=``). Field names are Kafka's names in
snake_case. For every version a message is compiled (lazily, once) into a decoder and an
encoder built from generated source, so the hot path is plain attribute access and
``struct.unpack_from`` calls on runs of fixed-width fields.

Decoded values are instances of generated classes (one per struct type, ``__slots__`` of every
field across versions); fields absent from a version hold their defaults.
"""
from __future__ import annotations

import keyword
import re
import struct
import uuid as _uuid
from dataclasses import dataclass, field as dc_field
from typing import Any

from kwire.codec import primitives as P
from kwire.errors import EncodeError, InvalidLength, TrailingBytes, TruncatedData
from kwire.value import Value

MAX_VERSION = 0x7FFF

FIXED = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "bool": "?",
}
PRIMITIVES = set(FIXED) | {"string", "bytes", "records", "uuid"}


class Versions(Value):   # frozen (kwire.value: no generated code at import)
    lo: int
    hi: int  # inclusive; -1 with lo 0 means "none"

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        """A range from its text ("0+", "3-5", "7", "none"); one shared (immutable) value per
        text: the API schemas parse ~2,800 of them at import."""
        got = _PARSED.get(text)
        if got is None:
            got = _PARSED[text] = cls._parse(text)
        return got

    @classmethod
    def _parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none" or text == "":
            return cls(0, -1)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        v = int(text)
        return cls(v, v)

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    @property
    def empty(self) -> bool:
        return self.hi < self.lo

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


_PARSED: dict[str | None, Versions] = {}
_NO_DEFAULT = object()


class F:
    """One field of a message or struct."""

    __slots__ = ("name", "type", "versions", "nullable", "tag", "tagged", "default", "fields",
                 "ignorable", "map_key", "elem", "is_array", "is_struct")

    def __init__(self, name: str, type: str, versions: str = "0+", *, nullable: str | None = None,
                 tag: int | None = None, tagged: str | None = None, default: Any = _NO_DEFAULT,
                 fields: list["F"] | None = None, ignorable: bool = False, map_key: bool = False):
        self.name = name
        self.type = type
        self.versions = Versions.parse(versions)
        self.nullable = Versions.parse(nullable)
        self.tag = tag
        self.tagged = Versions.parse(tagged) if tag is not None else Versions.parse(None)
        if tag is not None and tagged is None:
            self.tagged = self.versions
        self.default = default
        self.fields = fields
        self.ignorable = ignorable
        self.map_key = map_key
        self.is_array = type.startswith("[]")
        self.elem = type[2:] if self.is_array else type
        self.is_struct = self.elem not in PRIMITIVES
        if self.is_struct and fields is None:
            raise ValueError(f"struct field {name} of type {type} needs fields=")
        if keyword.iskeyword(name) or not name.isidentifier():
            raise ValueError(f"bad field name {name!r}")

    def present(self, v: int) -> bool:
        return v in self.versions

    def is_tagged(self, v: int, flexible: bool) -> bool:
        return flexible and self.tag is not None and v in self.tagged


class Message:
    """A request or response (or a standalone struct such as a header)."""

    def __init__(self, name: str, *, api_key: int | None = None, kind: str = "request",
                 valid: str = "0+", flexible: str = "none", fields: list[F]):
        self.name = name
        self.api_key = api_key
        self.kind = kind
        self.valid = Versions.parse(valid)
        self.flexible = Versions.parse(flexible)
        self.fields = fields
        self._classes: dict[str, type] | None = None   # built on first use: imports stay cheap
        self._structs: dict[str, list[F]] = {}
        self._decoders: dict[int, Any] = {}
        self._encoders: dict[int, Any] = {}

    # -- classes ------------------------------------------------------------------------
    @property
    def classes(self) -> dict[str, type]:
        """Struct name -> generated class, made on first use (making every API's classes at
        import would cost tens of ms of start-up for APIs a process may never see)."""
        if self._classes is None:
            self._classes = {}
            try:
                self._register_struct(self.name, self.fields)
            except BaseException:
                self._classes = None
                self._structs = {}
                raise
        return self._classes

    @property
    def cls(self) -> type:
        return self.classes[self.name]

    def _register_struct(self, name: str, fields: list[F]) -> None:
        if name in self._structs:
            if [f.name for f in self._structs[name]] != [f.name for f in fields]:
                raise ValueError(f"struct {name} defined twice with different fields")
            return
        self._structs[name] = fields
        for f in fields:
            if f.is_struct:
                self._register_struct(f.elem, f.fields)
        self._classes[name] = _make_class(name, fields, self)

    def struct(self, name: str) -> type:
        return self.classes[name]

    def __call__(self, **kw):
        return self.cls(**kw)

    # -- versions -----------------------------------------------------------------------
    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def check_version(self, version: int) -> None:
        if version not in self.valid:
            raise EncodeError(f"{self.name} has no version {version}")

    # -- codec --------------------------------------------------------------------------
    def decoder(self, version: int):
        d = self._decoders.get(version)
        if d is None:
            self.check_version(version)
            d = self._decoders[version] = _Compiler(self, version).decoder()
        return d

    def encoder(self, version: int):
        e = self._encoders.get(version)
        if e is None:
            self.check_version(version)
            e = self._encoders[version] = _Compiler(self, version).encoder()
        return e

    def decode(self, buf, version: int, pos: int = 0, *, exact: bool = True):
        """Decode one message; with ``exact`` the message must end where ``buf`` ends."""
        obj, end = self.decoder(version)(buf, pos)
        if exact and end != len(buf):
            raise TrailingBytes(f"{self.name} v{version}: {len(buf) - end} bytes left over")
        return obj

    def decode_from(self, buf, version: int, pos: int = 0):
        return self.decoder(version)(buf, pos)

    def encode_into(self, obj, version: int, out: bytearray, parts: list):
        return self.encoder(version)(obj, out, parts)

    def encode_parts(self, obj, version: int) -> list:
        """Encode to a list of parts: bytearrays, and records values kept as given."""
        parts: list = []
        b = self.encoder(version)(obj, bytearray(), parts)
        if b:
            parts.append(b)
        return parts

    def encode(self, obj, version: int) -> bytes:
        parts = self.encode_parts(obj, version)
        return b"".join(p if isinstance(p, (bytes, bytearray, memoryview)) else bytes(p)
                        for p in parts)

    def __repr__(self) -> str:
        return f"<Message {self.name} v{self.valid}>"


# --- generated classes -----------------------------------------------------------------
def default_value(f: F):
    """Kafka's default for a field: declared default, else zero, empty or null."""
    if f.default is not _NO_DEFAULT:
        return f.default
    if f.is_array:
        return []
    if f.is_struct:
        return None  # replaced by a fresh instance by the class
    t = f.type
    if t in FIXED:
        return False if t == "bool" else (0.0 if t == "float64" else 0)
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    if t == "records":
        return None
    if t == "uuid":
        return P.ZERO_UUID
    raise ValueError(t)


class StructBase:
    __slots__ = ()
    _fields: tuple = ()

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._fields)

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"

    def to_dict(self):
        def conv(v):
            if isinstance(v, StructBase):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            return v
        return {n: conv(getattr(self, n)) for n in self._fields}


_MUTABLE = object()


def _make_class(name: str, fields: list[F], msg: Message) -> type:
    names = tuple(f.name for f in fields)
    ns: dict[str, Any] = {"_MUT": _MUTABLE}
    params, body = [], []
    for f in fields:
        d = default_value(f)
        if f.is_struct and not f.is_array and f.default is _NO_DEFAULT:
            ns[f"_C_{f.name}"] = f.elem
            params.append(f"{f.name}=_MUT")
            body.append(f"    self.{f.name} = _CLS[{f.elem!r}]() if {f.name} is _MUT else {f.name}")
        elif isinstance(d, list):
            params.append(f"{f.name}=_MUT")
            body.append(f"    self.{f.name} = [] if {f.name} is _MUT else {f.name}")
        else:
            ns[f"_D_{f.name}"] = d
            params.append(f"{f.name}=_D_{f.name}")
            body.append(f"    self.{f.name} = {f.name}")
    ns["_CLS"] = msg._classes
    src = "def __init__(self, *, " + ", ".join(params) + "):\n" + ("\n".join(body) or "    pass") \
        if params else "def __init__(self):\n    pass"
    exec(src, ns)  # noqa: S102 - our own generated source
    cls = type(name, (StructBase,), {"__slots__": names, "_fields": names, "__init__": ns["__init__"],
                                     "__module__": "kwire.codec.messages", "_schema": fields})
    return cls


# --- the compiler ----------------------------------------------------------------------
def _fixed_runs(fields: list[F]):
    """The fields in order, with each run of consecutive fixed-width fields as one list."""
    run: list[F] = []
    for f in fields:
        if f.type in FIXED:
            run.append(f)
            continue
        if run:
            yield run
            run = []
        yield f
    if run:
        yield run


class _Compiler:
    def __init__(self, msg: Message, version: int):
        self.msg = msg
        self.v = version
        self.flex = msg.is_flexible(version)
        self.ns: dict[str, Any] = {
            "P": P, "TruncatedData": TruncatedData, "InvalidLength": InvalidLength,
            "EncodeError": EncodeError, "struct": struct, "CLS": msg.classes,
            "INT32": P.INT32, "INT16": P.INT16, "len": len, "bytes": bytes,
            "put_records": put_records, "UUID": _uuid.UUID, "ZERO_UUID": P.ZERO_UUID,
        }
        self.lines: list[str] = []
        self.done: set[str] = set()
        self.counter = 0

    def _sym(self, prefix: str, value) -> str:
        self.counter += 1
        name = f"{prefix}{self.counter}"
        self.ns[name] = value
        return name

    def _finish(self, entry: str):
        src = "\n".join(self.lines)
        code = compile(src, f"<kwire schema {self.msg.name} v{self.v}>", "exec")
        exec(code, self.ns)  # noqa: S102 - our own generated source
        fn = self.ns[entry]
        fn.__source__ = src
        return fn

    # ---------------------------------------------------------------- decoder
    def decoder(self):
        self._gen_decode_struct(self.msg.name, self.msg.fields)
        return self._finish(f"dec_{self.msg.name}")

    def _gen_decode_struct(self, name: str, fields: list[F]) -> None:
        fname = f"dec_{name}"
        if fname in self.done:
            return
        self.done.add(fname)
        for f in fields:
            if f.is_struct and f.present(self.v):
                self._gen_decode_struct(f.elem, f.fields)
        v, flex = self.v, self.flex
        L = [f"def {fname}(buf, pos):", f"    o = CLS[{name!r}].__new__(CLS[{name!r}])"]
        regular = [f for f in fields if f.present(v) and not f.is_tagged(v, flex)]
        tagged = [f for f in fields if f.present(v) and f.is_tagged(v, flex)]
        absent = [f for f in fields if not f.present(v)] + tagged
        for f in absent:
            L.append(f"    o.{f.name} = {self._default_expr(f)}")
        for item in _fixed_runs(regular):
            if isinstance(item, list):  # consecutive fixed-width fields: one unpack
                st = struct.Struct(">" + "".join(FIXED[x.type] for x in item))
                sym = self._sym("S", st)
                L.append(f"    if pos + {st.size} > len(buf): raise TruncatedData('{name}: truncated at ' + str(pos))")
                targets = ", ".join(f"o.{x.name}" for x in item)
                L.append(f"    {targets}{',' if len(item) == 1 else ''} = {sym}.unpack_from(buf, pos)")
                L.append(f"    pos += {st.size}")
            else:
                L.extend("    " + ln for ln in self._decode_field(item, f"o.{item.name}"))
        if flex:
            if not tagged:
                L.append("    pos = P.skip_tagged_fields(buf, pos)")
            else:
                L.append("    ntag, pos = P.read_uvarint(buf, pos)")
                L.append("    last = -1")
                L.append("    for _ in range(ntag):")
                L.append("        tag, pos = P.read_uvarint(buf, pos)")
                L.append("        if tag <= last: raise InvalidLength('tagged fields out of order')")
                L.append("        last = tag")
                L.append("        size, pos = P.read_uvarint(buf, pos)")
                L.append("        end = pos + size")
                L.append("        if end > len(buf): raise InvalidLength('tagged field runs past the input')")
                first = True
                for f in sorted(tagged, key=lambda x: x.tag):
                    kw = "if" if first else "elif"
                    first = False
                    L.append(f"        {kw} tag == {f.tag}:")
                    L.append("            p = pos")
                    for ln in self._decode_field(f, f"o.{f.name}", pos="p"):
                        L.append("            " + ln)
                    L.append("            if p != end: raise InvalidLength('tagged field size mismatch')")
                L.append("        pos = end")
        L.append("    return o, pos")
        self.lines.extend(L)
        self.lines.append("")

    def _default_expr(self, f: F) -> str:
        d = default_value(f)
        if f.is_struct and not f.is_array and f.default is _NO_DEFAULT:
            return f"CLS[{f.elem!r}]()"
        if isinstance(d, list):
            return "[]"
        if d is None or isinstance(d, (bool, int, float, str, bytes)):
            return repr(d)
        return self._sym("D", d)

    def _nullable(self, f: F) -> bool:
        return self.v in f.nullable

    def _decode_field(self, f: F, target: str, buf: str = "buf", pos: str = "pos") -> list[str]:
        flex, v = self.flex, self.v
        out: list[str] = []
        null_check = (f"if {target} is None: raise InvalidLength('non-nullable field {f.name} is null')"
                      if not self._nullable(f) else None)
        if f.is_array:
            rd = "P.read_compact_array_len" if flex else "P.read_array_len"
            out.append(f"n, {pos} = {rd}({buf}, {pos})")
            out.append("if n < 0:")
            if self._nullable(f):
                out.append(f"    {target} = None")
            else:
                out.append(f"    raise InvalidLength('non-nullable array {f.name} is null')")
            out.append("else:")
            if f.elem in FIXED:  # one unpack for the whole array
                size = struct.calcsize(">" + FIXED[f.elem])
                out.append(f"    end = {pos} + n * {size}")
                out.append(f"    if end > len({buf}): raise TruncatedData('{f.name}: array runs past the input')")
                c = FIXED[f.elem]
                ac = self._sym("AC", P.ARRAY_STRUCTS[c])
                out.append(f"    {target} = list(({ac}.get(n) or P.array_struct('{c}', n)).unpack_from({buf}, {pos}))")
                out.append(f"    {pos} = end")
                return out
            out.append("    lst = []")
            out.append("    app = lst.append")
            out.append("    for _ in range(n):")
            if f.is_struct:
                out.append(f"        item, {pos} = dec_{f.elem}({buf}, {pos})")
            else:
                out.extend("        " + ln for ln in self._decode_prim(f.elem, "item", buf, pos, True))
            out.append("        app(item)")
            out.append(f"    {target} = lst")
            return out
        if f.is_struct:
            if self._nullable(f):
                out.append(f"m, {pos} = P.read_int8({buf}, {pos})")
                out.append(f"if m < 0: {target} = None")
                out.append(f"else: {target}, {pos} = dec_{f.elem}({buf}, {pos})")
            else:
                out.append(f"{target}, {pos} = dec_{f.elem}({buf}, {pos})")
            return out
        out.extend(self._decode_prim(f.type, target, buf, pos, self._nullable(f)))
        if null_check and f.type in ("string", "bytes", "records"):
            out.append(null_check)
        return out

    def _decode_prim(self, t: str, target: str, buf: str, pos: str, nullable: bool) -> list[str]:
        flex = self.flex
        if t in FIXED:
            return [f"{target}, {pos} = P.read_{t}({buf}, {pos})"]
        if t == "string":
            return [f"{target}, {pos} = P.read_{'compact_' if flex else ''}string({buf}, {pos})"]
        if t == "bytes":
            return [f"{target}, {pos} = P.read_{'compact_' if flex else ''}bytes({buf}, {pos})"]
        if t == "records":  # a view of the request, not a copy (the log writes it as it is)
            return [f"{target}, {pos} = P.read_{'compact_' if flex else ''}records({buf}, {pos})"]
        if t == "uuid":
            return [f"{target}, {pos} = P.read_uuid({buf}, {pos})"]
        raise ValueError(t)

    # ---------------------------------------------------------------- encoder
    def encoder(self):
        self._gen_encode_struct(self.msg.name, self.msg.fields)
        return self._finish(f"enc_{self.msg.name}")

    def _gen_encode_struct(self, name: str, fields: list[F]) -> None:
        fname = f"enc_{name}"
        if fname in self.done:
            return
        self.done.add(fname)
        for f in fields:
            if f.is_struct and f.present(self.v):
                self._gen_encode_struct(f.elem, f.fields)
        v, flex = self.v, self.flex
        L = [f"def {fname}(o, b, parts):"]
        regular = [f for f in fields if f.present(v) and not f.is_tagged(v, flex)]
        tagged = [f for f in fields if f.present(v) and f.is_tagged(v, flex)]
        for item in _fixed_runs(regular):
            if isinstance(item, list):  # consecutive fixed-width fields: one pack
                sym = self._sym("S", struct.Struct(">" + "".join(FIXED[x.type] for x in item)))
                args = ", ".join(f"o.{x.name}" for x in item)
                L.append(f"    b += {sym}.pack({args})")
            else:
                L.extend("    " + ln for ln in self._encode_field(item, f"o.{item.name}", "b"))
        if flex:
            if not tagged:
                L.append("    b.append(0)")
            else:
                L.append("    tags = []")
                for f in sorted(tagged, key=lambda x: x.tag):
                    dflt = self._sym("TD", default_value(f) if not (f.is_struct and not f.is_array) else None)
                    if f.is_struct and not f.is_array and f.default is _NO_DEFAULT:
                        cond = f"o.{f.name} is not None and o.{f.name} != CLS[{f.elem!r}]()"
                    else:
                        cond = f"o.{f.name} != {dflt}"
                    L.append(f"    if {cond}:")
                    L.append("        t = bytearray()")
                    for ln in self._encode_field(f, f"o.{f.name}", "t", tagged=True):
                        L.append("        " + ln)
                    L.append(f"        tags.append(({f.tag}, t))")
                L.append("    P.write_uvarint(b, len(tags))")
                L.append("    for tag, t in tags:")
                L.append("        P.write_uvarint(b, tag)")
                L.append("        P.write_uvarint(b, len(t))")
                L.append("        b += t")
        L.append("    return b")
        self.lines.extend(L)
        self.lines.append("")

    def _encode_field(self, f: F, val: str, b: str, tagged: bool = False) -> list[str]:
        flex = self.flex
        out: list[str] = []
        nullable = self._nullable(f)
        if f.is_array:
            out.append(f"v = {val}")
            out.append("if v is None:")
            if nullable:
                out.append(f"    {b}.append(0)" if flex else f"    {b} += b'\\xff\\xff\\xff\\xff'")
            else:
                out.append(f"    raise EncodeError('{f.name} is not nullable in v{self.v}')")
            out.append("else:")
            out.append(f"    P.write_uvarint({b}, len(v) + 1)" if flex else f"    {b} += INT32.pack(len(v))")
            if f.elem in FIXED:  # one pack for the whole array
                c = FIXED[f.elem]
                ac = self._sym("AC", P.ARRAY_STRUCTS[c])
                out.append("    if v:")
                out.append(f"        {b} += ({ac}.get(len(v)) or P.array_struct('{c}', len(v))).pack(*v)")
                return out
            out.append("    for item in v:")
            if f.is_struct:
                out.append(f"        {b} = enc_{f.elem}(item, {b}, parts)")
            else:
                out.extend("        " + ln for ln in self._encode_prim(f.elem, "item", b, True))
            return out
        if f.is_struct:
            if nullable:
                out.append(f"if {val} is None: {b}.append(255)")
                out.append(f"else:")
                out.append(f"    {b}.append(1)")
                out.append(f"    {b} = enc_{f.elem}({val}, {b}, parts)")
            else:
                out.append(f"{b} = enc_{f.elem}({val}, {b}, parts)")
            return out
        if not nullable and f.type in ("string", "bytes", "records"):
            out.append(f"if {val} is None: raise EncodeError('{f.name} is not nullable in v{self.v}')")
        out.extend(self._encode_prim(f.type, val, b, nullable, tagged))
        return out

    def _encode_prim(self, t: str, val: str, b: str, nullable: bool, tagged: bool = False) -> list[str]:
        flex = self.flex
        if t in FIXED:
            s = self._sym("S", struct.Struct(">" + FIXED[t]))
            return [f"{b} += {s}.pack({val})"]
        if t == "string":
            return [f"P.write_{'compact_' if flex else ''}string({b}, {val})"]
        if t == "bytes":
            return [f"P.write_{'compact_' if flex else ''}bytes({b}, {val})"]
        if t == "records":
            if tagged:
                return [f"P.write_{'compact_' if flex else ''}bytes({b}, bytes({val}) if {val} is not None else None)"]
            return [f"{b} = put_records({b}, parts, {val}, {flex})"]
        if t == "uuid":
            return [f"P.write_uuid({b}, {val})"]
        raise ValueError(t)


# --- records values --------------------------------------------------------------------
INLINE_RECORDS_LIMIT = 16 * 1024


def put_records(b: bytearray, parts: list, value, flexible: bool) -> bytearray:
    """Write a records field. Small bytes values are copied inline; anything large, or any
    non-bytes records value (file regions for zero-copy fetch), becomes its own part."""
    if value is None:
        if flexible:
            b.append(0)
        else:
            b += b"\xff\xff\xff\xff"
        return b
    n = len(value)
    if flexible:
        P.write_uvarint(b, n + 1)
    else:
        b += P.INT32.pack(n)
    if n == 0:
        return b
    if n <= INLINE_RECORDS_LIMIT and isinstance(value, (bytes, bytearray, memoryview)):
        b += value
        return b
    parts.append(b)
    parts.append(value)
    return bytearray()


# --- names -----------------------------------------------------------------------------
def snake(name: str) -> str:
    """Kafka's CamelCase field name in snake_case (``ThrottleTimeMs`` -> ``throttle_time_ms``)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()
