"""One partition as this broker hosts it (Kafka's Partition, its sans-I/O part): leader or
follower, the leader epoch and ISR of the metadata image's partition state it took up last
(read from that immutable PartitionImage, never copied: the image is their one owner), and on
the leader the state of every follower (its log end offset as its fetches report it, when it last caught
up) from which the high watermark and the ISR changes to ask the controller for follow.

Rules, as Kafka's:
- high watermark = the smallest log end offset among the *maximal* ISR: the ISR, plus the
  replicas an ISR expansion in flight adds (so the high watermark never passes a record a
  replica about to count as in sync lacks); it only moves forward on a leader.
- a follower is caught up when a fetch asks for the leader's log end offset (or for the log
  end offset the leader had at the follower's previous fetch: it was caught up then);
  it leaves the ISR when it has not been for replica.lag.time.max.ms;
- a follower outside the ISR joins it when its log end offset has reached the high watermark
  and the start of the leader's epoch;
- one ISR change in flight at a time (an AlterPartition to the controller): the record it
  commits, applied like every other, sets the ISR here.

Nothing here awaits or touches files beyond the log object's in-memory state.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FollowerState:
    """What the leader knows of one follower (Kafka's ReplicaState)."""
    log_end_offset: int = -1           # from its last fetch (-1 until it fetched this epoch)
    log_start_offset: int = -1         # likewise (its fetch's log_start_offset; -1: unknown)
    last_caught_up_ms: int = 0         # when it last was caught up
    last_fetch_ms: int = 0
    last_fetch_leader_log_end_offset: int = -1


@dataclass
class Partition:
    topic: str
    index: int
    log: object                       # the PartitionLog
    # the metadata image's state of this partition (kwire.metadata.image.PartitionImage,
    # immutable) that this replica took up last: the one owner of its leader, leader epoch,
    # partition epoch, replicas and ISR, which are read from it, never copied
    registration: object = None
    is_leader: bool = False
    leader_epoch_start_offset: int = -1
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending_isr: list[int] | None = None   # an AlterPartition in flight: the ISR it asks for

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def leader(self) -> int:
        return self.registration.leader if self.registration is not None else -1

    @property
    def leader_epoch(self) -> int:
        return self.registration.leader_epoch if self.registration is not None else -1

    @property
    def partition_epoch(self) -> int:
        return self.registration.partition_epoch if self.registration is not None else -1

    @property
    def replicas(self) -> list[int]:
        return self.registration.replicas if self.registration is not None else []

    @property
    def isr(self) -> list[int]:
        return self.registration.isr if self.registration is not None else []

    # ------------------------------------------------------------------ roles
    def make_leader(self, registration, node_id: int, now_ms: int) -> bool:
        """This broker (``node_id``, the registration's leader) leads the partition from now
        (or still does, with new replicas / ISR). Returns True when this is a new leadership
        (a new epoch): follower states start afresh, the ISR members counted caught up now
        (Kafka's makeLeader)."""
        new_epoch = not self.is_leader or registration.leader_epoch != self.leader_epoch
        self.registration = registration
        self.is_leader = True
        self.pending_isr = None
        if new_epoch:
            self.leader_epoch_start_offset = self.log.log_end_offset
            self.followers = {r: FollowerState(last_caught_up_ms=now_ms if r in self.isr else 0,
                                               last_fetch_ms=now_ms)
                              for r in self.replicas if r != node_id}
        else:
            for r in self.replicas:
                if r != node_id and r not in self.followers:
                    self.followers[r] = FollowerState(last_fetch_ms=now_ms)
            for r in list(self.followers):
                if r not in self.replicas:
                    del self.followers[r]
        return new_epoch

    def make_follower(self, registration) -> bool:
        """Another broker (or none: -1) leads the partition. Returns True when the leader or
        its epoch changed (the fetcher must start over from this replica's log end offset)."""
        changed = self.is_leader or registration.leader != self.leader \
            or registration.leader_epoch != self.leader_epoch
        self.registration = registration
        self.is_leader = False
        self.pending_isr = None
        self.followers = {}
        self.leader_epoch_start_offset = -1
        return changed

    # ------------------------------------------------------------------ leader
    @property
    def maximal_isr(self) -> list[int]:
        if self.pending_isr is None:
            return self.isr
        return self.isr + [r for r in self.pending_isr if r not in self.isr]

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, now_ms: int,
                                    log_start_offset: int = -1) -> bool:
        """A follower fetched from ``fetch_offset`` (its log end offset), its log starting at
        ``log_start_offset`` (-1: not said). Returns False if it is not a replica of this
        partition."""
        st = self.followers.get(replica_id)
        if st is None:
            return False
        st.log_start_offset = log_start_offset
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            st.last_caught_up_ms = max(st.last_caught_up_ms, now_ms)
        elif fetch_offset >= st.last_fetch_leader_log_end_offset >= 0:
            st.last_caught_up_ms = max(st.last_caught_up_ms, st.last_fetch_ms)
        st.log_end_offset = fetch_offset
        st.last_fetch_ms = now_ms
        st.last_fetch_leader_log_end_offset = leo
        return True

    def maybe_increment_high_watermark(self, min_isr: int = 0) -> bool:
        """The high watermark = the smallest log end offset in the maximal ISR (never
        backwards). Returns True if it moved. ``min_isr`` (with eligible leader replicas,
        KIP-966): while the ISR is smaller than min(min_isr, replicas) the high watermark
        stays (Kafka's maybeIncrementLeaderHW / isUnderMinIsr): a replica that left the ISR
        below min ISR may be elected from the ELR, and must hold every record below it."""
        plog = self.log
        if min_isr and len(self.isr) < min(min_isr, len(self.replicas)):
            return False
        hw = plog.log_end_offset
        for r in self.maximal_isr:
            if r == self.leader:
                continue
            st = self.followers.get(r)
            if st is None or st.log_end_offset < 0:
                return False   # an ISR member that has not fetched in this epoch: wait for it
            if st.log_end_offset < hw:
                hw = st.log_end_offset
        if hw > plog.high_watermark:
            plog.update_high_watermark(hw)
            return True
        return False

    def isr_to_expand(self, replica_id: int, eligible: bool = True) -> list[int] | None:
        """The ISR with ``replica_id`` added when it has caught up enough to join (its log end
        offset at the high watermark and at the start of this leader's epoch) and its broker
        may join ISRs (``eligible``: unfenced, not in controlled shutdown, as the metadata
        says; the controller would refuse it INELIGIBLE_REPLICA), else None."""
        if not self.is_leader or self.pending_isr is not None or replica_id in self.isr or not eligible:
            return None
        st = self.followers.get(replica_id)
        if st is None:
            return None
        if st.log_end_offset >= self.log.high_watermark and st.log_end_offset >= self.leader_epoch_start_offset:
            # in ascending order, as Kafka's leader sends it: Partition.prepareIsrExpand builds the
            # ISR as a Scala HashSet of ints, which iterates in ascending order for broker ids of
            # this size; the order shows in every tool (kafka-topics --describe's Isr column)
            return sorted(self.isr + [replica_id])
        return None

    def isr_to_shrink(self, now_ms: int, lag_ms: int) -> list[int] | None:
        """The ISR without the followers that have not caught up for ``lag_ms`` (Kafka's
        getOutOfSyncReplicas), else None."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        leo = self.log.log_end_offset
        out = []
        for r in self.isr:
            if r == self.leader:
                continue
            st = self.followers.get(r)
            if st is None:
                continue
            if st.log_end_offset != leo and now_ms - st.last_caught_up_ms > lag_ms:
                out.append(r)
        if not out:
            return None
        return sorted(r for r in self.isr if r not in out)     # ascending, as isr_to_expand
