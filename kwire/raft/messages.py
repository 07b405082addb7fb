"""The KRaft RPCs as plain values, one request/response pair per Kafka API.

These carry exactly what the Raft core needs. A driver maps them onto Kafka's wire formats
(kwire.codec.apis: vote, begin_quorum_epoch, end_quorum_epoch, fetch, fetch_snapshot) for
the ``__cluster_metadata`` partition 0. Fields noted *echo* are not on the wire: the node
that sent the request fills them into the response from the request it sent (an RPC knows
its request), so the core can drop stale or duplicated answers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kwire.errors import ErrorCode
from kwire.value import Value

if TYPE_CHECKING:
    from kwire.raft.log import Entry, OffsetAndEpoch

NONE = ErrorCode.NONE
NOT_LEADER_OR_FOLLOWER = ErrorCode.NOT_LEADER_OR_FOLLOWER
FENCED_LEADER_EPOCH = ErrorCode.FENCED_LEADER_EPOCH
UNKNOWN_LEADER_EPOCH = ErrorCode.UNKNOWN_LEADER_EPOCH
INCONSISTENT_VOTER_SET = ErrorCode.INCONSISTENT_VOTER_SET
SNAPSHOT_NOT_FOUND = ErrorCode.SNAPSHOT_NOT_FOUND
POSITION_OUT_OF_RANGE = ErrorCode.POSITION_OUT_OF_RANGE

# frozen values (kwire.value.Value: a dataclass's fields, equality, hash and repr without
# generating code at import, as @dataclass(frozen=True, slots=True) did: start-up time)


class VoteRequest(Value):
    epoch: int                 # replica_epoch: the candidate's new epoch (for a pre-vote: the epoch it would take)
    candidate_id: int          # replica_id
    last_epoch: int            # last_offset_epoch
    last_offset: int           # the candidate's log end offset
    pre_vote: bool = False


class VoteResponse(Value):
    epoch: int                 # the responder's epoch (leader_epoch)
    leader_id: int             # the responder's known leader of that epoch, or -1
    granted: bool
    error: int = NONE
    pre_vote: bool = False     # echo


class BeginQuorumEpochRequest(Value):
    epoch: int
    leader_id: int


class BeginQuorumEpochResponse(Value):
    epoch: int
    leader_id: int
    error: int = NONE


class EndQuorumEpochRequest(Value):
    epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...] = ()


class EndQuorumEpochResponse(Value):
    epoch: int
    leader_id: int
    error: int = NONE


class FetchRequest(Value):
    epoch: int                 # current_leader_epoch
    replica_id: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int = 0
    fetch_id: int = 0          # the RPC's correlation (not on the wire)


class FetchResponse(Value):
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


class FetchSnapshotRequest(Value):
    epoch: int                 # current_leader_epoch
    replica_id: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 0x7FFFFFFF
    fetch_id: int = 0


class FetchSnapshotResponse(Value):
    epoch: int
    leader_id: int
    error: int = NONE
    snapshot_id: OffsetAndEpoch | None = None
    size: int = 0
    position: int = 0
    data: bytes = b""
    fetch_id: int = 0          # echo


REQUESTS = (VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchSnapshotRequest)
