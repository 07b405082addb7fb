"""A follower's side of a replica fetch, sans I/O (Kafka's AbstractFetcherThread /
ReplicaFetcherThread, their decisions): what to ask the leader for, and what to do with its
answer. The Trio fetcher (kwire.replication.fetcher) sends and receives; these functions
change the follower's log.

- ask: from the log end offset, with the epoch of the last batch (``last_fetched_epoch``,
  Fetch v12+) so the leader can say where the logs diverge, and the leader epoch the
  follower knows (``current_leader_epoch``: an older leader answers FENCED_LEADER_EPOCH / a
  newer one UNKNOWN_LEADER_EPOCH).
- records: appended as they are (origin REPLICATION: the leader's offsets and epochs, the
  leader-epoch cache follows the batches), then the follower's high watermark is
  min(leader's, own log end offset) (waking the consumers' fetches waiting on this follower,
  KIP-392) and its log start offset follows the leader's.
- a diverging epoch: truncate to where the two logs last agree (the smaller of the leader's
  end offset for that epoch and this log's own end offset for it), then fetch again; the
  next answer checks the new tail in turn (Kafka's truncateOnFetchResponse). The leader epoch
  cache is truncated there even when the log is not (an epoch this broker led without
  appending in it), as Kafka's UnifiedLog.truncateTo does.
- OFFSET_OUT_OF_RANGE: the leader's log starts after this log's end (retention, DeleteRecords
  on the leader): start over, empty, at the leader's log start offset; otherwise (this log is
  ahead of the leader) truncate to the leader's high watermark (which the leader's log holds)
  and let the divergence check do the rest.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from kwire.log.validator import REPLICATION

log = logging.getLogger("kwire.replication")


@dataclass
class FetchPosition:
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    current_leader_epoch: int


def fetch_position(part) -> FetchPosition:
    plog = part.log
    return FetchPosition(plog.log_end_offset, plog.latest_epoch, plog.log_start_offset, part.leader_epoch)


def append_as_follower(rm, part, records, leader_high_watermark: int, leader_log_start_offset: int,
                       now_ms: int) -> int:
    """Append the leader's batches (may be empty) and follow its high watermark and log start
    offset. Returns the number of bytes appended. Raises KafkaError from the append (a
    KafkaStorageError takes the log dir offline)."""
    n = append_leader_records(rm, part, records, now_ms)
    follow_leader(rm, part, leader_high_watermark, leader_log_start_offset)
    return n


def append_leader_records(rm, part, records, now_ms: int) -> int:
    """The log half of ``append_as_follower``: the leader's batches (may be empty) appended as
    they are. No event-loop state is touched: the fetcher runs a heavy one (a large write, a
    segment roll) in a worker thread. Returns the number of bytes appended."""
    n = len(records) if records is not None else 0
    if n:
        part.log.append(records, now_ms=now_ms, origin=REPLICATION,
                        producer_id_expiration_ms=rm._producer_id_expiration_ms())
    return n


def follow_leader(rm, part, leader_high_watermark: int, leader_log_start_offset: int) -> None:
    """The other half, on the event loop: follow the leader's high watermark (waking the
    consumers' fetches waiting on this follower) and its log start offset."""
    plog = part.log
    hw = min(leader_high_watermark, plog.log_end_offset)
    if hw >= plog.log_start_offset and hw != plog.high_watermark:
        plog.update_high_watermark(hw)
        # consumers reading from this follower (KIP-392) wait for its high watermark to move
        rm.fetch_waiters.wake(part.tp)
    new_start = min(leader_log_start_offset, plog.high_watermark)
    if new_start > plog.log_start_offset:
        # segments wholly below it go at the next retention pass, off the event loop
        plog.log_start_offset = new_start
        plog.leader_epoch_cache.truncate_from_start(new_start)


def truncation_offset(part, diverging_epoch: int, diverging_end_offset: int) -> int:
    """Where this log stops agreeing with the leader's, given the leader's answer (the
    largest epoch <= our last one it knows, and where that epoch ends on the leader)."""
    plog = part.log
    if diverging_epoch < 0 or diverging_end_offset < 0:
        return min(plog.high_watermark, plog.log_end_offset)
    mine = plog.end_offset_for_epoch(diverging_epoch)
    if mine is None:
        return min(plog.high_watermark, plog.log_end_offset)
    return min(diverging_end_offset, mine[1], plog.log_end_offset)


def truncate(part, offset: int, why: str) -> None:
    plog = part.log
    if offset < plog.log_end_offset:
        log.info("%s: truncating from %d to %d (%s)", plog.topic_partition, plog.log_end_offset, offset, why)
        plog.truncate_to(offset)
    elif plog.leader_epoch_cache.truncate_from_end(plog.log_end_offset):
        # as Kafka's UnifiedLog.truncateTo: the epoch cache is truncated even when the log is not.
        # This broker may have led an epoch, assigning its start here, without appending in it;
        # unknown to the new leader, it would stay this log's last epoch, and every fetch would
        # be answered with the same diverging epoch, without end
        log.info("%s: leader epochs from offset %d dropped (%s)", plog.topic_partition, plog.log_end_offset, why)
        plog.leader_epoch_cache.write_if_dirty()


def out_of_range(part, leader_log_start_offset: int, leader_high_watermark: int) -> None:
    """The leader refused our fetch offset as out of range."""
    plog = part.log
    if leader_log_start_offset > plog.log_end_offset:
        log.info("%s: log end offset %d is below the leader's log start offset %d: starting over there",
                 plog.topic_partition, plog.log_end_offset, leader_log_start_offset)
        plog.truncate_fully_and_start_at(leader_log_start_offset)
    else:
        # our log end is past the leader's (a leader whose log is shorter than ours, e.g.
        # elected without our tail): go back to the leader's high watermark, which its log
        # holds, so the next fetch is in range (our own when the leader's is unknown)
        to = leader_high_watermark if leader_high_watermark >= 0 else plog.high_watermark
        to = min(to, plog.log_end_offset)
        if to >= plog.log_end_offset and plog.log_end_offset > plog.log_start_offset:
            to = plog.log_end_offset - 1   # always progress: one record back at least
        truncate(part, max(to, plog.log_start_offset), "out of range on the leader")
