"""Transactional offset commits (TxnOffsetCommit, KIP-98/447), as a part of GroupCoordinator.

A transactional producer commits a consumer group's offsets inside its transaction
(``sendOffsetsToTransaction``): the coordinator writes them to ``__consumer_offsets`` in a
transactional batch of that producer (so the log holds them, fenced by the producer's
epoch), keeps them pending per producer id, and they become the group's committed offsets
only when the transaction's commit marker lands in the partition (``complete_transaction``,
called by the WriteTxnMarkers handler once the marker is appended); an abort marker drops
them. Meanwhile OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for those
partitions, and they keep their committed offsets from expiring and their group from
being deleted by expiry. A later regular commit of the same partition wins over a
transaction committed after it (the record offsets decide, as in Kafka's
OffsetMetadataManager.replayEndTransactionMarker). Recovery after a restart or a leader
change replays the same from the log (kwire.groups.loader).

Validation is Kafka's: a group unknown here with a generation >= 0 is ILLEGAL_GENERATION;
from v3 the member id, group instance id and generation are checked like an OffsetCommit's
(UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION), but a commit without them is
accepted whatever the group's state (v0-2 carry none), and a rebalance in progress is no
error. Nothing here does I/O.

KIP-890 verification (asking the transaction coordinator whether the offsets partition is in
the producer's transaction) is the edge's, before this runs (kwire.handlers.txn_offset_commit);
the append here then carries its verification guard.
"""
from __future__ import annotations

import logging
from typing import Iterable

from kwire.errors import ErrorCode
from kwire.groups import records as R
from kwire.groups.group import Group, GroupState
from kwire.groups.membership import append_error
from kwire.groups.offsets import IN_FLIGHT, OffsetAndMetadata
from kwire.coordinator.pending import Pending
from kwire.groups.results import CommitResult

E = ErrorCode
S = GroupState
log = logging.getLogger("kwire.groups")

#: (topic, partition, committed offset, leader epoch or -1, metadata or None)
TxnCommitOffset = tuple[str, int, int, int, "str | None"]


class TransactionalOffsets:
    """Mixed into GroupCoordinator (which has ``groups``, ``clock``, ``config``, ``loading``,
    ``owns``, ``partition_for``, ``_write`` and ``_validate_offset_commit``)."""

    def _init_transactional_offsets(self) -> None:
        #: producer id -> ids of groups with offsets pending in its open transaction (may
        #: name groups gone since: each use checks the group)
        self._txn_groups: dict[int, set[str]] = {}

    # ================================================================== TxnOffsetCommit ==
    def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                           offsets: Iterable[TxnCommitOffset], *, generation_id: int = -1,
                           member_id: str = "", group_instance_id: str | None = None,
                           verify: bool = False, verification_guard=None) -> Pending[CommitResult]:
        """Handle a TxnOffsetCommit: the offsets are written as a transactional batch of the
        producer and pending until its transaction ends. Answers once the write is
        durable (errors as an OffsetCommit's, Kafka's storeOffsets). ``verify``: the edge
        verified the partition with the transaction coordinator (KIP-890), so the append needs
        the producer's transaction open there or ``verification_guard`` still current."""
        offsets = list(offsets)
        p: Pending[CommitResult] = Pending()

        def fail(error: ErrorCode) -> Pending[CommitResult]:
            p.set_result(CommitResult({(t, part): error for t, part, *_ in offsets}))
            return p

        g = self.groups.get(group_id)
        created = g is None
        if g is None:
            if generation_id >= 0:
                return fail(E.ILLEGAL_GENERATION)
            g = self.groups[group_id] = Group(group_id)   # a "simple" group, as Kafka
        error = self._validate_offset_commit(g, generation_id, member_id, group_instance_id,
                                             transactional=True, partitions=self._checked_partitions(offsets))
        if error is not None:
            if created:
                self.groups.pop(group_id, None)
            return fail(error)

        now = self.clock.now_ms()
        errors: dict[tuple[str, int], ErrorCode] = {}
        accepted: dict[tuple[str, int], OffsetAndMetadata] = {}
        for topic, partition, offset, leader_epoch, metadata in offsets:
            metadata = metadata or ""
            tp = (topic, partition)
            if len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = E.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = OffsetAndMetadata(offset, leader_epoch, metadata, now, -1, IN_FLIGHT)
                errors[tp] = E.NONE
        if not accepted:
            if created and g.offsets.empty:
                self.groups.pop(group_id, None)
            p.set_result(CommitResult(errors))
            return p
        for tp, om in accepted.items():
            g.offsets.put_pending(producer_id, tp, om)
        self._txn_groups.setdefault(producer_id, set()).add(group_id)
        records = [(R.offset_key(group_id, t, part),
                    R.offset_value(R.OffsetValue(om.offset, om.leader_epoch, om.metadata,
                                                 om.commit_timestamp, om.expire_timestamp)))
                   for (t, part), om in accepted.items()]

        def appended(error: ErrorCode, base_offset: int) -> None:
            live = self.groups.get(group_id) is g and not g.is_(S.DEAD)
            if error == E.NONE:
                if live:
                    for i, (tp, om) in enumerate(accepted.items()):
                        g.offsets.pending_appended(producer_id, tp, om,
                                                   -1 if base_offset < 0 else base_offset + i)
            else:
                if live:
                    for tp, om in accepted.items():
                        g.offsets.fail_pending(producer_id, tp, om)
                    if created and g.is_(S.EMPTY) and g.offsets.empty and not g.members:
                        del self.groups[group_id]   # the group this commit made goes with it
                e = append_error(error, E.INVALID_COMMIT_OFFSET_SIZE)   # as OffsetCommit
                for tp in accepted:
                    errors[tp] = e
            p.set_result(CommitResult(errors))

        txn = (producer_id, producer_epoch) if not verify else \
            (producer_id, producer_epoch, verification_guard)
        self._write(group_id, records, appended, transaction=txn, with_offset=True)
        return p

    # ================================================================== markers =========
    def transaction_completed(self, partition: int, producer_id: int, producer_epoch: int,
                              committed: bool, offset: int = -1) -> int:
        """A transaction marker of ``producer_id`` was appended to ``__consumer_offsets``
        partition ``partition`` at ``offset`` (and replicated): the producer's pending
        offsets of the partition's groups become committed (``committed``) or vanish.
        Offsets whose record lies after the marker stay pending (the producer's next
        transaction). While the partition loads, the marker is kept for the end of the load;
        on a partition not served here it is ignored (whoever loads it reads the marker
        from the log). ``producer_epoch`` is not checked: the log fenced older epochs when
        it took the marker. Returns how many offsets became committed."""
        load = self.loading.get(partition)
        if load is not None:
            load.late_marker(producer_id, committed, offset)
            return 0
        if not self.owns(partition):
            log.debug("marker of producer %d on __consumer_offsets-%d, not served here: ignored",
                      producer_id, partition)
            return 0
        gids = self._txn_groups.get(producer_id)
        if not gids:
            return 0
        n = 0
        for gid in [x for x in gids if self.partition_for(x) == partition]:
            gids.discard(gid)
            g = self.groups.get(gid)
            if g is None or g.is_(S.DEAD):
                continue
            done, dropped = g.offsets.complete(producer_id, committed, offset)
            if producer_id in g.offsets.open_producers():
                gids.add(gid)
            n += len(done)
            if dropped:
                log.warning("group %s: transaction of producer %d (epoch %d) ended before the "
                            "append of its offsets of %s did: dropped", gid, producer_id,
                            producer_epoch, dropped)
            log.debug("group %s: transaction of producer %d (epoch %d) %s: %d offsets committed",
                      gid, producer_id, producer_epoch, "committed" if committed else "aborted",
                      len(done))
        if not gids:
            self._txn_groups.pop(producer_id, None)
        return n

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   committed: bool, offset: int) -> None:
        """The WriteTxnMarkers handler's hook (``await broker.groups.complete_transaction``);
        never suspends: ``transaction_completed`` does the work."""
        self.transaction_completed(partition, producer_id, producer_epoch, committed, offset)
