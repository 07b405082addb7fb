"""The quorum-state file: the election state a voter must not forget across restarts.

Same content as Kafka's ``quorum-state`` (data_version 0): leaderEpoch, leaderId, votedId
and the current voters. Pure encode/decode; the driver writes the file (write to a temp
file, fsync, rename) whenever :class:`kwire.raft.core.Ready` carries a new state.
"""
from __future__ import annotations

import json

from kwire.value import Value


class QuorumState(Value):   # frozen (kwire.value: no generated code at import)
    leader_epoch: int = 0
    leader_id: int = -1
    voted_id: int = -1
    voters: tuple[int, ...] = ()
    cluster_id: str = ""

    def encode(self) -> bytes:
        return json.dumps({
            "clusterId": self.cluster_id,
            "leaderId": self.leader_id,
            "leaderEpoch": self.leader_epoch,
            "votedId": self.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in self.voters],
            "data_version": 0,
        }, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes | str) -> "QuorumState":
        d = json.loads(data)
        if d.get("data_version", 0) not in (0, 1):
            raise ValueError(f"unknown quorum-state data_version {d.get('data_version')}")
        voters = d.get("currentVoters") or []
        return cls(leader_epoch=int(d["leaderEpoch"]), leader_id=int(d.get("leaderId", -1)),
                   voted_id=int(d.get("votedId", -1)), voters=tuple(int(v["voterId"]) for v in voters),
                   cluster_id=d.get("clusterId") or "")
