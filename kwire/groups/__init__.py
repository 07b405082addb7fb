"""Group coordinator: a pure state machine (clock passed in, no I/O) and its durable form.

The edge calls ``GroupCoordinator``'s methods from the group API handlers; see coordinator.py.
"""
from kwire.groups.coordinator import CommitOffset, GroupCoordinator, commit_error
from kwire.groups.group import Group, GroupState, Member
from kwire.groups.membership import GroupConfig, Record, Writer, immediate_writer
from kwire.groups.pending import Pending
from kwire.groups.results import (CommitResult, FetchedOffset, FetchResult, GroupDescription,
                                  GroupListing, JoinMember, JoinResult, LeaveMemberResult,
                                  LeaveResult, MemberDescription, OffsetDeleteResult, SyncResult)

__all__ = [
    "CommitOffset", "CommitResult", "FetchResult", "FetchedOffset", "Group", "GroupConfig",
    "GroupCoordinator", "GroupDescription", "GroupListing", "GroupState", "JoinMember",
    "JoinResult", "LeaveMemberResult", "LeaveResult", "Member", "MemberDescription",
    "OffsetDeleteResult", "Pending", "Record", "SyncResult", "Writer", "commit_error",
    "immediate_writer",
]
