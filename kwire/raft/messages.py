"""The KRaft RPCs as plain values, one request/response pair per Kafka API.

These carry exactly what the Raft core needs. A driver maps them onto Kafka's wire formats
(kwire.codec.apis: vote, begin_quorum_epoch, end_quorum_epoch, fetch, fetch_snapshot) for
the ``__cluster_metadata`` partition 0. Fields noted *echo* are not on the wire: the node
that sent the request fills them into the response from the request it sent (an RPC knows
its request), so the core can drop stale or duplicated answers.
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING

from kwire.errors import ErrorCode

if TYPE_CHECKING:
    from kwire.raft.log import Entry, OffsetAndEpoch

NONE = ErrorCode.NONE
NOT_LEADER_OR_FOLLOWER = ErrorCode.NOT_LEADER_OR_FOLLOWER
FENCED_LEADER_EPOCH = ErrorCode.FENCED_LEADER_EPOCH
UNKNOWN_LEADER_EPOCH = ErrorCode.UNKNOWN_LEADER_EPOCH
INCONSISTENT_VOTER_SET = ErrorCode.INCONSISTENT_VOTER_SET
SNAPSHOT_NOT_FOUND = ErrorCode.SNAPSHOT_NOT_FOUND
POSITION_OUT_OF_RANGE = ErrorCode.POSITION_OUT_OF_RANGE



class _MessageType(type):
    """Makes each class body below a frozen, slotted value with its annotated fields (the
    assigned ones are defaults), as ``@dataclass(frozen=True, slots=True)`` did, but without
    generating and compiling code for each class at import: the ten dataclasses were ~2.5% of
    ``kwire serve``'s start-up instructions (issue 29's budget), and these are built once per
    RPC, where the shared ``__init__`` below costs about a microsecond more."""

    def __new__(mcls, name, bases, ns):
        fields = tuple(ns.get("__annotations__", ()))
        defaults = {f: ns.pop(f) for f in fields if f in ns}
        ns.update(__slots__=fields, __match_args__=fields, _fields=fields, _defaults=defaults)
        return super().__new__(mcls, name, bases, ns)


class _Message(metaclass=_MessageType):
    """Construction by position or keyword with defaults, immutability, equality and hashing
    by type and fields, and the dataclass repr."""

    def __init__(self, *args, **kw):
        fields, defaults = self._fields, self._defaults
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} positional arguments, got {len(args)}")
        values = dict(zip(fields, args))
        for k, v in kw.items():
            if k not in fields or k in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated argument {k!r}")
            values[k] = v
        for f in fields:
            try:
                v = values[f] if f in values else defaults[f]
            except KeyError:
                raise TypeError(f"{type(self).__name__}() missing required argument: {f!r}") from None
            object.__setattr__(self, f, v)

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields) + ")"

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")


class VoteRequest(_Message):
    epoch: int                 # replica_epoch: the candidate's new epoch (for a pre-vote: the epoch it would take)
    candidate_id: int          # replica_id
    last_epoch: int            # last_offset_epoch
    last_offset: int           # the candidate's log end offset
    pre_vote: bool = False


class VoteResponse(_Message):
    epoch: int                 # the responder's epoch (leader_epoch)
    leader_id: int             # the responder's known leader of that epoch, or -1
    granted: bool
    error: int = NONE
    pre_vote: bool = False     # echo


class BeginQuorumEpochRequest(_Message):
    epoch: int
    leader_id: int


class BeginQuorumEpochResponse(_Message):
    epoch: int
    leader_id: int
    error: int = NONE


class EndQuorumEpochRequest(_Message):
    epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...] = ()


class EndQuorumEpochResponse(_Message):
    epoch: int
    leader_id: int
    error: int = NONE


class FetchRequest(_Message):
    epoch: int                 # current_leader_epoch
    replica_id: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int = 0
    fetch_id: int = 0          # the RPC's correlation (not on the wire)


class FetchResponse(_Message):
    epoch: int                 # current_leader.leader_epoch
    leader_id: int             # current_leader.leader_id
    error: int = NONE
    high_watermark: int = -1
    log_start_offset: int = 0
    entries: tuple[Entry, ...] = ()
    diverging_epoch: OffsetAndEpoch | None = None   # end offset of that epoch in the leader's log
    snapshot_id: OffsetAndEpoch | None = None       # fetch offset below log start: get this snapshot
    fetch_offset: int = -1     # echo
    last_fetched_epoch: int = -1  # echo
    fetch_id: int = 0          # echo


class FetchSnapshotRequest(_Message):
    epoch: int                 # current_leader_epoch
    replica_id: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 0x7FFFFFFF
    fetch_id: int = 0


class FetchSnapshotResponse(_Message):
    epoch: int
    leader_id: int
    error: int = NONE
    snapshot_id: OffsetAndEpoch | None = None
    size: int = 0
    position: int = 0
    data: bytes = b""
    fetch_id: int = 0          # echo


REQUESTS = (VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchSnapshotRequest)
