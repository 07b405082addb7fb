"""Round trip every version of every message in ``APIS``: random values that fit the version
(hypothesis, built from the schema) encode, then decode to an equal value. Fields absent from
a version hold their defaults, so the decoded value equals the generated one exactly."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.codec.apis import APIS
from kwire.codec.schema import _NO_DEFAULT, default_value
from kwire.errors import EncodeError

CASES = [(msg, v) for api in APIS.values() for msg in (api.request, api.response)
         for v in range(msg.valid.lo, msg.valid.hi + 1)]
IDS = [f"{msg.name}-v{v}" for msg, v in CASES]

# Examples per message version: 5 in make test (about 1,700 message versions, fresh values each run,
# derandomize=False); KWIRE_CODEC_EXAMPLES=<n> for a deeper run.
EXAMPLES = int(os.environ.get("KWIRE_CODEC_EXAMPLES", "5"))
ROUNDTRIP = settings(max_examples=EXAMPLES, deadline=None, derandomize=False, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.function_scoped_fixture])


def _absent_fields_hold_defaults(obj, msg, name, fields, v):
    for f in fields:
        val = getattr(obj, f.name)
        if not f.present(v):
            if f.is_struct and not f.is_array and f.default is _NO_DEFAULT:
                assert val == msg.classes[f.elem](), f"{name}.{f.name}"
            else:
                assert val == default_value(f), f"{name}.{f.name} absent in v{v} but {val!r}"
        elif f.is_struct and val is not None:
            items = val if f.is_array else [val]
            for item in items:
                _absent_fields_hold_defaults(item, msg, f.elem, f.fields, v)


@pytest.mark.parametrize(("msg", "version"), CASES, ids=IDS)
@ROUNDTRIP
@given(data=st.data())
def test_roundtrip(msg, version, data, codec_kit):
    value = data.draw(codec_kit.value_strategy(msg, version), label="value")
    encoded = msg.encode(value, version)
    decoded = msg.decode(encoded, version)
    assert decoded == value
    _absent_fields_hold_defaults(decoded, msg, msg.name, msg.fields, version)
    # decoding from a memoryview at an offset gives the same value and consumes it all
    framed = b"\x00\x01\x02" + encoded
    again, end = msg.decode_from(memoryview(framed), version, 3)
    assert again == value and end == len(framed)
    # the parts form is the same bytes
    parts = msg.encode_parts(value, version)
    assert b"".join(bytes(p) for p in parts) == encoded


@pytest.mark.parametrize(("msg", "version"), CASES, ids=IDS)
def test_default_value_roundtrips(msg, version):
    """A freshly constructed value (all defaults) encodes, unless a default is null where the
    version does not allow null, which must then be an EncodeError, never a bad frame."""
    value = msg()
    try:
        encoded = msg.encode(value, version)
    except EncodeError:
        return
    assert msg.decode(encoded, version) == value


@pytest.mark.parametrize(("msg", "version"), CASES, ids=IDS)
def test_truncated_input_raises_codec_error(msg, version, codec_kit):
    """A value with every field set round-trips; every strict prefix of its encoding fails
    with a named codec error (never IndexError or struct.error); with more bytes after it,
    the decoder stops exactly at its end."""
    from kwire.errors import CodecError

    value = codec_kit.sample_value(msg, version)
    encoded = msg.encode(value, version)
    assert msg.decode(encoded, version) == value
    for cut in range(len(encoded)):
        with pytest.raises(CodecError):
            msg.decode(encoded[:cut], version)
    _, end = msg.decode_from(encoded + b"\xff" * 7, version)
    assert end == len(encoded)
