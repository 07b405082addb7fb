"""The group coordinator's side of KIP-932's share-state RPCs, for the share-group offsets
admin APIs (kwire.handlers.share_offsets) on share partitions whatever broker leads them:
ReadShareGroupStateSummary (87; ``summaries``: state epoch, start offset, records done in
flight) and InitializeShareGroupState (83; ``initialize``: a new start offset at the next
state epoch, which fences the share partition's leader: it reads the state again, see
kwire.share.state_store) sent to each key's share coordinator (one request per coordinator),
or answered by kwire.share.coordinator directly when it is this broker.

Kafka's group coordinator keeps the state epoch in the group's metadata
(ShareGroupStatePartitionMetadata) and initializes a share partition when the group is first
assigned it; here the share coordinator's state epoch is read back (the summary) and the
next one sent, and the leader's first write creates the state.
"""
from __future__ import annotations

import logging
from uuid import UUID

import trio

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.share import records as SR
from kwire.share.coordinator import RETRIABLE

log = logging.getLogger("kwire.share")
DONE_STATES = (2, 4)   # acknowledged, archived


def _done(batches) -> int:
    return sum(b.last_offset - b.first_offset + 1 for b in batches if b.delivery_state in DONE_STATES)


def _by_node(store, group_id: str, tps) -> dict:
    out: dict = {}
    for tid, p in tps:
        _, node = store.coordinator_node(group_id, tid, p)
        out.setdefault(node, []).append((tid, p))
    return out


async def summaries(store, group_id: str, tps) -> dict:
    """{(topic id, partition): (error, state epoch, start offset or -1, done in flight)}."""
    out: dict = {}
    if SR.STATE_TOPIC not in store.broker.image.topics:
        return {tp: (ErrorCode.NONE, 0, -1, 0) for tp in tps}
    for node, parts in _by_node(store, group_id, tps).items():
        if node is None:
            out.update({tp: (ErrorCode.COORDINATOR_NOT_AVAILABLE, 0, -1, 0) for tp in parts})
        elif node == store.broker.node_id:
            for tid, p in parts:
                err, st = await store.coordinator.read(group_id, tid, p, -1)
                out[(tid, p)] = ((err, st.state_epoch, st.start_offset, _done(st.batches)) if st is not None
                                 else (err, 0, -1, 0))
        else:
            out.update(await _remote_summaries(store, node, group_id, parts))
    return out


async def _remote_summaries(store, node: int, group_id: str, parts) -> dict:
    R = api("ReadShareGroupStateSummary").request
    by_topic: dict[UUID, list] = {}
    for tid, p in parts:
        by_topic.setdefault(tid, []).append(R.struct("PartitionData")(partition=p, leader_epoch=-1))
    req = R.cls(group_id=group_id, topics=[R.struct("ReadStateSummaryData")(topic_id=t, partitions=ps)
                                          for t, ps in by_topic.items()])
    failed = {tp: (ErrorCode.COORDINATOR_NOT_AVAILABLE, 0, -1, 0) for tp in parts}
    try:
        resp = await store.channel.request(node, "ReadShareGroupStateSummary", 1, req)
    except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
        log.info("share state: ReadShareGroupStateSummary to broker %d failed: %s", node, exc)
        return failed
    out = {}
    for r in resp.results:
        for pr in r.partitions:
            if (r.topic_id, pr.partition) in failed:
                out[(r.topic_id, pr.partition)] = (ErrorCode(pr.error_code), pr.state_epoch, pr.start_offset,
                                                   max(pr.delivery_complete_count, 0))
    return failed | out


async def initialize(store, group_id: str, starts: dict) -> dict:
    """Set {(topic id, partition): start offset} at the share coordinators, each at the state
    epoch after the stored one, retrying (the state topic being created, a coordinator
    learning it leads) until share.coordinator.write.timeout.ms; {(tid, p): error}."""
    b = store.broker
    if SR.STATE_TOPIC not in b.image.topics:
        await store._ensure_topic()
    deadline = trio.current_time() + int(b.config.get("share.coordinator.write.timeout.ms")) / 1000
    backoff, pending, out = 0.05, dict(starts), {}
    while True:
        sums = await summaries(store, group_id, list(pending))
        for tp, (err, state_epoch, _, _) in sums.items():
            out[tp] = err if err != ErrorCode.NONE else await _initialize_one(
                store, group_id, tp, state_epoch + 1, pending[tp])
        pending = {tp: s for tp, s in pending.items() if out[tp] in RETRIABLE}
        if not pending or trio.current_time() + backoff >= deadline:
            return out
        await trio.sleep(backoff)
        backoff = min(backoff * 2, 0.5)



async def _initialize_one(store, group_id: str, tp, state_epoch: int, start: int) -> ErrorCode:
    tid, p = tp
    return await store.at_coordinator(group_id, tid, p,
                                      lambda: store.coordinator.initialize(group_id, tid, p, state_epoch, start),
                                      "InitializeShareGroupState", "InitializeStateData",
                                      state_epoch=state_epoch, start_offset=start)
