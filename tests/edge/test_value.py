"""kwire.value.Value behaves as the @dataclass(frozen=True) it replaces on kwire serve's start
path: construction, defaults, immutability, equality, hashing, repr, copy and pickle."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from kwire.raft.log import OffsetAndEpoch
from kwire.value import Value


class Point(Value):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class DPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


CASES = [((1,), {}), ((1, 2), {}), ((), {"x": 3, "tags": ("a",)}), ((4,), {"y": 5})]


@pytest.mark.parametrize("args,kw", CASES)
def test_as_a_frozen_dataclass(args, kw):
    v, d = Point(*args, **kw), DPoint(*args, **kw)
    assert (v.x, v.y, v.tags) == (d.x, d.y, d.tags)
    assert repr(v) == repr(d).replace("DPoint", "Point")
    assert hash(v) == hash(d)
    assert v == Point(*args, **kw) and not v != Point(*args, **kw)
    assert v != Point(99) and v != d     # another class is never equal, as a dataclass
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.x = 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        del v.y
    with pytest.raises(AttributeError):
        v.__dict__   # noqa: B018 - slotted
    assert copy.copy(v) == v and copy.deepcopy(v) == v and pickle.loads(pickle.dumps(v)) == v
    assert Point.__match_args__ == DPoint.__match_args__


def test_bad_calls_are_refused_as_a_dataclass_refuses_them():
    for args, kw in [((), {}), ((1, 2, (), 4), {}), ((1,), {"x": 2}), ((1,), {"z": 2})]:
        with pytest.raises(TypeError):
            DPoint(*args, **kw)
        with pytest.raises(TypeError):
            Point(*args, **kw)


def test_what_it_does_not_do_fails_at_class_creation():
    with pytest.raises(TypeError):
        class _Bad(Value):
            a: int = 1
            b: int
    with pytest.raises(TypeError):
        class _Sub(Point):
            z: int = 0


def test_the_raft_values_keep_their_fields():
    a = OffsetAndEpoch(offset=5, epoch=2)
    assert a == OffsetAndEpoch(5, 2) and {a: 1}[OffsetAndEpoch(5, 2)] == 1
    assert a.__slots__ == ("offset", "epoch") and repr(a) == "OffsetAndEpoch(offset=5, epoch=2)"
