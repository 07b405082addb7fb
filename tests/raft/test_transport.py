"""The core's messages survive the trip through Kafka's wire formats (encode, frame, decode),
with the echo fields restored from the request the response answers."""
from __future__ import annotations

from kwire.codec import frame as FR
from kwire.raft import messages as M
from kwire.raft.log import Entry, OffsetAndEpoch
from kwire.raft.transport import (request_from_wire, request_to_wire, response_from_wire,
                                  response_to_wire)

REQUESTS = [
    M.VoteRequest(epoch=7, candidate_id=2, last_epoch=6, last_offset=41, pre_vote=True),
    M.VoteRequest(epoch=7, candidate_id=3, last_epoch=5, last_offset=40, pre_vote=False),
    M.BeginQuorumEpochRequest(epoch=7, leader_id=2),
    M.EndQuorumEpochRequest(epoch=7, leader_id=2, preferred_successors=(3, 1)),
    M.FetchRequest(epoch=7, replica_id=3, fetch_offset=12, last_fetched_epoch=6, max_wait_ms=500, fetch_id=99),
    M.FetchSnapshotRequest(epoch=7, replica_id=3, snapshot_id=OffsetAndEpoch(100, 6), position=4096,
                           max_bytes=1 << 20, fetch_id=5),
]


def _wire_request(msg):
    a, v, body = request_to_wire(msg, "cluster-x")
    req = FR.decode_request(FR.encode_request(a, v, 1, body)[4:])
    assert req.api.key == a.key and req.header.api_version == v
    return a, v, req


def test_requests_round_trip():
    for msg in REQUESTS:
        a, v, req = _wire_request(msg)
        src, back = request_from_wire(a.key, req.body, getattr(msg, "fetch_id", 0))
        assert back == msg
        assert src == getattr(msg, "candidate_id", None) or src == getattr(msg, "leader_id", None) \
            or src == getattr(msg, "replica_id", None)


def _response_trip(req_msg, resp_msg):
    a, v, req = _wire_request(req_msg)
    body = response_to_wire(a.key, resp_msg)
    frame = FR.join_parts(FR.encode_response(a, v, 17, body))
    corr, decoded = FR.decode_response(a, v, frame[4:])
    assert corr == 17
    return response_from_wire(req_msg, decoded)


def test_responses_round_trip_with_echo_fields():
    vote = REQUESTS[0]
    r = M.VoteResponse(epoch=7, leader_id=-1, granted=True, pre_vote=True)
    assert _response_trip(vote, r) == r
    r = M.BeginQuorumEpochResponse(epoch=7, leader_id=2)
    assert _response_trip(REQUESTS[2], r) == r
    r = M.EndQuorumEpochResponse(epoch=8, leader_id=3, error=M.FENCED_LEADER_EPOCH)
    assert _response_trip(REQUESTS[3], r) == r

    fetch = REQUESTS[4]
    entries = (Entry(12, 6, (b"a", b"bb"), False),
               Entry(13, 7, {"type": "LeaderChange", "leader_id": 2, "voters": [1, 2, 3]}, True))
    echo = dict(fetch_offset=12, last_fetched_epoch=6, fetch_id=99)
    for r in (M.FetchResponse(epoch=7, leader_id=2, high_watermark=13, log_start_offset=0, entries=entries, **echo),
              M.FetchResponse(epoch=7, leader_id=2, high_watermark=10, diverging_epoch=OffsetAndEpoch(11, 5), **echo),
              M.FetchResponse(epoch=7, leader_id=2, high_watermark=10, log_start_offset=50,
                              snapshot_id=OffsetAndEpoch(50, 4), **echo),
              M.FetchResponse(epoch=8, leader_id=-1, error=M.NOT_LEADER_OR_FOLLOWER, **echo)):
        assert _response_trip(fetch, r) == r

    snap = REQUESTS[5]
    r = M.FetchSnapshotResponse(epoch=7, leader_id=2, snapshot_id=OffsetAndEpoch(100, 6), size=10000,
                                position=4096, data=b"\x01" * 100, fetch_id=5)
    assert _response_trip(snap, r) == r
