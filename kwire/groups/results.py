"""Plain answers of the coordinator; the handlers turn them into wire responses."""
from __future__ import annotations

from dataclasses import dataclass, field

from kwire.errors import ErrorCode


@dataclass(slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None  # None: none chosen (v0-v6 responses send "")
    leader: str = ""
    skip_assignment: bool = False
    members: list[JoinMember] = field(default_factory=list)  # only the leader gets them


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(slots=True)
class LeaveResult:
    error: ErrorCode
    members: list[LeaveMemberResult] = field(default_factory=list)


@dataclass(slots=True)
class CommitResult:
    """Per-partition errors of an OffsetCommit, in request order."""
    errors: dict[tuple[str, int], ErrorCode]


@dataclass(slots=True)
class FetchedOffset:
    offset: int = -1
    leader_epoch: int = -1
    metadata: str | None = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(slots=True)
class FetchResult:
    error: ErrorCode
    offsets: dict[tuple[str, int], FetchedOffset] = field(default_factory=dict)


@dataclass(slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription] = field(default_factory=list)
    error_message: str | None = None   # DescribeGroups v6+


@dataclass(slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(slots=True)
class OffsetDeleteResult:
    error: ErrorCode
    partitions: dict[tuple[str, int], ErrorCode] = field(default_factory=dict)
