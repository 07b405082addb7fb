"""Malformed frames, removed and unknown versions: does each side answer, with what, or close.

Each case sends its bytes on a fresh connection and records the outcome (an answer decoded with the
request's schema, a close, or nothing within the timeout); when an answer came, a valid Metadata
request follows on the same connection to show whether the connection still serves."""
from __future__ import annotations

import struct

from hypothesis import strategies as st

from kwire.codec import primitives as P
from kwire.codec.apis import APIS, api
from kwire.codec.frame import encode_request

from differential.run import Family
from differential.session import S, Session


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _header(key: int, version: int, corr: int = 1, client_id: str | None = "differential") -> bytes:
    b = bytearray(struct.pack(">hhi", key, version, corr))
    P.write_string(b, client_id)
    return bytes(b)


def _metadata(version: int, topics) -> bytes:
    a = api("Metadata")
    T = a.request.struct("MetadataRequestTopic")
    body = a.request.cls(topics=None if topics is None else [T(name=t) for t in topics])
    return encode_request(a, version, 1, body, client_id="differential")


def _cut(frame: bytes, n: int) -> bytes:
    body = frame[4:-n]
    return _frame(body)


def _grow(frame: bytes, extra: bytes) -> bytes:
    return _frame(frame[4:] + extra)


# (label, bytes, api the answer is decoded as, version)
def frames(topic: str = "t") -> list[tuple[str, bytes, str | None, int]]:
    meta1 = _metadata(1, [topic])
    meta12 = _metadata(12, [topic])
    av3 = encode_request(api("ApiVersions"), 3, 1, api("ApiVersions").request.cls(
        client_software_name="x", client_software_version="1"), client_id="differential")
    out = [
        ("empty-frame", _frame(b""), None, 0),
        ("short-header", _frame(b"\x00\x03\x00"), None, 0),
        ("header-without-client-id", _frame(struct.pack(">hhi", 3, 1, 1)), "Metadata", 1),
        ("client-id-past-end", _frame(struct.pack(">hhih", 3, 1, 1, 500) + b"abc"), "Metadata", 1),
        ("unknown-api-key", _frame(_header(999, 0)), None, 0),
        ("negative-api-key", _frame(_header(-1, 0)), None, 0),
        ("metadata-version-past-max", _frame(_header(3, 99) + b"\x00\x00\x00\x00"), "Metadata", 0),
        ("metadata-v1-truncated", _cut(meta1, 2), "Metadata", 1),
        ("metadata-v1-trailing-bytes", _grow(meta1, b"\x01\x02\x03"), "Metadata", 1),
        ("metadata-v12-truncated", _cut(meta12, 1), "Metadata", 12),
        ("metadata-v12-trailing-bytes", _grow(meta12, b"\xff\xff"), "Metadata", 12),
        ("metadata-v1-negative-array", _frame(_header(3, 1) + struct.pack(">i", -2)), "Metadata", 1),
        ("metadata-v1-huge-array", _frame(_header(3, 1) + struct.pack(">i", 1 << 30)), "Metadata", 1),
        ("metadata-v1-invalid-utf8-topic", _frame(_header(3, 1) + struct.pack(">ih", 1, 2) + b"\xff\xfe"), "Metadata", 1),
        ("metadata-v12-bad-tag-count", _frame(_header(3, 12) + b"\x00" + b"\x01\x00" + b"\x07"), "Metadata", 12),
        ("api-versions-v3-truncated", _cut(av3, 3), "ApiVersions", 0),
        ("api-versions-v3-trailing-bytes", _grow(av3, b"\x00\x00"), "ApiVersions", 3),
        ("negative-size", struct.pack(">i", -5), None, 0),
        ("size-past-limit", struct.pack(">i", 200 * 1024 * 1024), None, 0),
        ("produce-v9-huge-records-length", _frame(_header(0, 9) + b"\x00" + b"\x00" + struct.pack(">hi", -1, 1000)
                                                   + b"\x02" + b"\x02t" + b"\x02" + struct.pack(">i", 0)
                                                   + b"\xff\xff\xff\x7f"), "Produce", 9),
        ("sasl-handshake-on-plaintext", encode_request(api("SaslHandshake"), 1, 1, api("SaslHandshake").request.cls(
            mechanism="PLAIN"), client_id="differential"), "SaslHandshake", 1),
        ("sasl-authenticate-on-plaintext", encode_request(api("SaslAuthenticate"), 2, 1,
                                                          api("SaslAuthenticate").request.cls(auth_bytes=b"\x00u\x00p"),
                                                          client_id="differential"), "SaslAuthenticate", 2),
    ]
    return out


N_FRAMES = len(frames())


def malformed(s: Session, i: int) -> None:
    label, data, api_name, version = frames(s.topic("a"))[i]
    s.raw(label, data, api_name, version)
    last = s.log[-1][3]
    if last.kind == "response":
        T = S("Metadata", "MetadataRequestTopic")
        s.call("Metadata", 12, label=f"{label}-then-metadata", topics=[T(name=s.topic("a"))],
               allow_auto_topic_creation=False)


def versions(s: Session, p) -> None:
    """Every API kwire knows at a version one side does not serve (one Kafka removed, one past both
    maxima): a default body, and what comes back."""
    key, which = p
    a = APIS[key]
    if key in s.side.common:
        version = s.side.common[key][0] - 1 if which == "below" else a.max_version + 1
    else:   # an API only one side serves
        version = a.min_version if which == "below" else a.max_version + 1
    if version < 0:
        return
    enc = version if a.supports(version) else a.max_version
    frame = bytearray(encode_request(a, enc, 1, a.request.cls(), client_id="differential"))
    frame[6:8] = struct.pack(">h", version)
    if key == 18 and not a.supports(version):
        decode_as, decode_version = "ApiVersions", 0   # the v0 UNSUPPORTED_VERSION answer
    else:
        decode_as, decode_version = (a.name, version) if a.supports(version) else (None, 0)
    s.raw(f"{a.name}-v{version}", bytes(frame), decode_as, decode_version)


FAMILIES = [
    Family("malformed", st.integers(0, N_FRAMES - 1), malformed, examples=N_FRAMES * 3,
           ci_examples=N_FRAMES),
    Family("versions", st.tuples(st.sampled_from(sorted(APIS)), st.sampled_from(["below", "above"])), versions,
           examples=150, ci_examples=20),
]
