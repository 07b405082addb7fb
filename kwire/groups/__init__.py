"""Group coordinator: a pure state machine (clock passed in, no I/O) and its durable form.

The edge calls ``GroupCoordinator``'s methods from the group API handlers; see coordinator.py.
"""
import importlib

# name -> submodule: resolved on first use (PEP 562), so importing a light submodule such as
# kwire.groups.records (the handlers need its constants at start) does not load the whole
# coordinator, which a broker builds only once a group is used
_WHERE = {
    "CommitOffset": "coordinator", "GroupCoordinator": "coordinator", "commit_error": "coordinator",
    "Group": "group", "GroupState": "group", "Member": "group",
    "GroupConfig": "membership", "Record": "membership", "Writer": "membership", "immediate_writer": "membership",
    **{n: "results" for n in ("CommitResult", "FetchedOffset", "FetchResult", "GroupDescription", "GroupListing",
                              "JoinMember", "JoinResult", "LeaveMemberResult", "LeaveResult", "MemberDescription",
                              "OffsetDeleteResult", "SyncResult")},
}


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CommitOffset", "CommitResult", "FetchResult", "FetchedOffset", "Group", "GroupConfig",
    "GroupCoordinator", "GroupDescription", "GroupListing", "GroupState", "JoinMember",
    "JoinResult", "LeaveMemberResult", "LeaveResult", "Member", "MemberDescription",
    "OffsetDeleteResult", "Record", "SyncResult", "Writer", "commit_error",
    "immediate_writer",
]
