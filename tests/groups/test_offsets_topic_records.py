"""__consumer_offsets record formats and partitioning."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.coordinator import records as CR
from kwire.errors import CodecError
from kwire.groups import records as R


def kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def test_java_string_hash_matches_java():
    # values of String.hashCode() computed by the JVM
    assert CR.java_string_hash("") == 0
    assert CR.java_string_hash("hello") == 99162322
    assert CR.java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert CR.java_string_hash("Aa") == CR.java_string_hash("BB") == 2112
    assert R.partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    assert R.partition_for("hello", 50) == 99162322 % 50
    assert R.partition_for("hello", 1) == 0


def test_offset_commit_key_and_value_layout():
    key = R.offset_key("grp", "topic", 7)
    assert key == struct.pack(">h", 1) + kstr("grp") + kstr("topic") + struct.pack(">i", 7)
    value = R.offset_value(R.OffsetValue(123, 4, "meta", 1_700_000_000_000))
    assert value == (struct.pack(">hqi", 3, 123, 4) + kstr("meta")
                     + struct.pack(">q", 1_700_000_000_000))
    # with an explicit expire timestamp Kafka writes value version 1
    v1 = R.offset_value(R.OffsetValue(5, -1, "", 10, 20))
    assert v1 == struct.pack(">hq", 1, 5) + kstr("") + struct.pack(">qq", 10, 20)
    assert R.decode_offset_value(v1) == R.OffsetValue(5, -1, "", 10, 20)
    # version 0 (no leader epoch, no expire) decodes too
    v0 = struct.pack(">hq", 0, 9) + kstr("x") + struct.pack(">q", 77)
    assert R.decode_offset_value(v0) == R.OffsetValue(9, -1, "x", 77, -1)
    # key version 0 is an offset key as well
    assert R.decode_key(struct.pack(">h", 0) + kstr("g") + kstr("t") + struct.pack(">i", 1)) \
        == R.OffsetKey("g", "t", 1)


def test_group_metadata_layout():
    assert R.group_key("grp") == struct.pack(">h", 2) + kstr("grp")
    gv = R.GroupValue("consumer", 4, "range", "m1", 99, [
        R.MemberValue("m1", "inst", "client", "/1.2.3.4", 30000, 10000, b"sub", b"asg")])
    raw = R.group_value(gv)
    expect = (struct.pack(">h", 3) + kstr("consumer") + struct.pack(">i", 4) + kstr("range")
              + kstr("m1") + struct.pack(">q", 99) + struct.pack(">i", 1)
              + kstr("m1") + kstr("inst") + kstr("client") + kstr("/1.2.3.4")
              + struct.pack(">ii", 30000, 10000) + struct.pack(">i", 3) + b"sub"
              + struct.pack(">i", 3) + b"asg")
    assert raw == expect
    assert R.decode_group_value(raw) == gv
    empty = R.GroupValue("consumer", 5, None, None, 100, [])
    assert R.decode_group_value(R.group_value(empty)) == empty


def test_unknown_versions_are_refused():
    with pytest.raises(CodecError):
        R.decode_key(struct.pack(">h", 3) + kstr("g"))
    with pytest.raises(CodecError):
        R.decode_offset_value(struct.pack(">h", 9))
    with pytest.raises(CodecError):
        R.decode_key(b"\x00")


names = st.text(max_size=20)


@settings(max_examples=60, deadline=None)
@given(names, names, st.integers(0, 2**31 - 1), st.integers(-1, 2**62), st.integers(-1, 2**31 - 1),
       names, st.integers(0, 2**62))
def test_offset_records_round_trip(group, topic, partition, offset, epoch, meta, ts):
    assert R.decode_key(R.offset_key(group, topic, partition)) == R.OffsetKey(group, topic, partition)
    v = R.OffsetValue(offset, epoch, meta, ts)
    assert R.decode_offset_value(R.offset_value(v)) == v


@settings(max_examples=40, deadline=None)
@given(names, st.integers(0, 2**31 - 1), st.none() | names, st.lists(st.tuples(
    names, st.none() | names, st.binary(max_size=30), st.binary(max_size=30)), max_size=4))
def test_group_records_round_trip(ptype, gen, protocol, members):
    gv = R.GroupValue(ptype, gen, protocol, members[0][0] if members else None, 5,
                      [R.MemberValue(m, i, "c", "h", 3, 4, s, a) for m, i, s, a in members])
    assert R.decode_group_value(R.group_value(gv)) == gv
