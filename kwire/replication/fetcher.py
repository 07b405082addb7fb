"""Follower fetchers: the Trio edge that copies the leaders' logs to this broker (Kafka's
ReplicaFetcherManager / ReplicaFetcherThread).

One fetcher per leader broker (num.replica.fetchers = 1), over one connection to that
broker's inter-broker listener (inter.broker.listener.name: TLS and SASL as
kwire.security.peers sets up; a refused authentication is logged once, naming the leader, and
retried every replica.fetch.backoff.ms), as Kafka's followers do: a replica Fetch (v15: ``replica_state``
with this broker's id and epoch, topic ids, sessionless) for every partition this broker
follows there, each from its log end offset with its last fetched epoch and the leader epoch
it knows. The leader holds the fetch until it has data (replica.fetch.min.bytes) or
replica.fetch.wait.max.ms passes. Answers are applied by kwire.replication.follower
(append, truncation, out of range); a partition whose fetch failed (leader epoch mismatch,
unknown partition, storage error) waits replica.fetch.backoff.ms before it is asked for
again (50 ms when the leader has not applied its leadership yet: UNKNOWN_LEADER_EPOCH,
NOT_LEADER_OR_FOLLOWER); a lost connection is retried likewise, except one that had been answering: the leader
closed it (it restarted, or shut down), so the fetcher reconnects at once instead of sleeping
replica.fetch.backoff.ms while a new leader's acks=all writes wait for it (Kafka's network
client notices the close and reconnects before its next request); a refused connect, or a
connection that fails before its first answer, backs off. When the metadata moves a partition
to another leader (or makes this broker its leader), ``update`` / ``remove`` move it between
fetchers.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import trio

from kwire import link_faults
from kwire.codec.apis import api
from kwire.codec.frame import NEED_DATA
from kwire.connection import KafkaClientConnection, ProtocolError
from kwire.errors import ErrorCode, KafkaError
from kwire.net import RECV_SIZE
from kwire.replication import follower as F
from kwire.security.peers import PLAINTEXT_LINK, PeerAuthenticationFailed

log = logging.getLogger("kwire.replication.fetcher")

FETCH = api("Fetch")
FETCH_VERSION = 15
_RETRY_SOON = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_LEADER_EPOCH,
               ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
               ErrorCode.REPLICA_NOT_AVAILABLE}
_LEADER_BEHIND = {ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER}
LEADER_BEHIND_RETRY_S = 0.05


@dataclass
class _Fetching:
    leader_epoch: int
    delayed_until: float = 0.0


class ReplicaFetcher:
    """Fetches the partitions this broker follows on one leader broker."""

    def __init__(self, manager: "ReplicaFetcherManager", leader_id: int):
        self.manager = manager
        self.leader_id = leader_id
        self.partitions: dict[tuple[str, int], _Fetching] = {}
        self.changed = trio.Event()
        self._answers = 0   # answers received on the current connection
        self._refusal: str | None = None   # why the leader's listener refuses us, once logged

    def _refused(self, why: str) -> None:
        """A connection the leader's listener refused (authentication, TLS, no such listener):
        one error line naming the peer, repeated only when the reason changes."""
        if why != self._refusal:
            log.error("broker %d: cannot fetch from broker %d: %s", self.manager.node_id, self.leader_id, why)
            self._refusal = why

    def _poke(self) -> None:
        self.changed.set()

    async def run(self) -> None:
        m = self.manager
        while True:
            if not self.partitions:
                self.changed = trio.Event()
                await self.changed.wait()
                continue
            b = m.image().brokers.get(self.leader_id)
            addr = m.link.address(b) if b is not None else None
            if addr is None or (m.unreachable is not None and m.unreachable.blocks(self.leader_id)):
                if b is not None and addr is None:
                    self._refused(f"broker {self.leader_id} registered no inter-broker listener {m.link.listener}")
                await self._sleep(m.backoff_s)
                continue
            try:
                stream = await m.link.connect(addr[0], addr[1], timeout=m.request_timeout_s,
                                              client_id=f"kwire-replica-fetcher-{m.node_id}")
            except PeerAuthenticationFailed as exc:     # wrong credentials or certificate: said once
                self._refused(str(exc))
                await self._sleep(m.backoff_s)
                continue
            except (OSError, trio.TooSlowError) as exc:
                log.debug("broker %d: cannot reach leader %d at %s:%d: %s", m.node_id, self.leader_id,
                          addr[0], addr[1], exc)
                await self._sleep(m.backoff_s)
                continue
            if self._refusal is not None:
                log.info("broker %d: replica fetches from broker %d connected again (%s)", m.node_id,
                         self.leader_id, m.link.describe())
                self._refusal = None
            conn = KafkaClientConnection(client_id=f"kwire-replica-fetcher-{m.node_id}", max_frame_size=256 << 20)
            self._answers = 0
            try:
                await self._fetch_loop(stream, conn)
            except (OSError, ProtocolError, trio.BrokenResourceError, trio.ClosedResourceError,
                    trio.TooSlowError) as exc:   # the leader went away (or stopped answering)
                log.info("broker %d: replica fetches from %d interrupted: %s", m.node_id, self.leader_id, exc)
                if not self._answers:   # else: a connection that worked was closed: reconnect at once
                    await self._sleep(m.backoff_s)
            except Exception:  # noqa: BLE001 - a bad answer must not stop the broker
                log.exception("broker %d: replica fetcher for leader %d failed", m.node_id, self.leader_id)
                await self._sleep(m.backoff_s)
            finally:
                await trio.aclose_forcefully(stream)

    async def _sleep(self, seconds: float) -> None:
        with trio.move_on_after(seconds):
            self.changed = trio.Event()
            await self.changed.wait()

    async def _fetch_loop(self, stream, conn: KafkaClientConnection) -> None:
        m = self.manager
        while True:
            now = trio.current_time()
            req, asked = self._build_request(now)
            if req is None:
                if not self.partitions:
                    return   # nothing led there: no connection kept open to a leader that may go away
                wake = min((f.delayed_until for f in self.partitions.values()), default=now + 1.0)
                with trio.move_on_at(wake if self.partitions else now + 3600):
                    self.changed = trio.Event()
                    await self.changed.wait()
                if not self.partitions:
                    return
                continue
            if m.unreachable is not None and m.unreachable.blocks(self.leader_id):
                raise ConnectionError(f"leader {self.leader_id} unreachable (fault injection)")
            body = await self._call(stream, conn, req, m.wait_max_s + m.request_timeout_s)
            if m.unreachable is not None and m.unreachable.blocks(self.leader_id):
                raise ConnectionError(f"leader {self.leader_id} unreachable (fault injection)")
            self._answers += 1
            await self._apply_response(body, asked)

    def _build_request(self, now: float):
        m = self.manager
        Req = FETCH.request
        image = m.image()
        by_topic: dict = {}
        asked = {}
        for tp, f in self.partitions.items():
            if f.delayed_until > now:
                continue
            part = m.replica_manager.partitions.get(tp)
            t = image.topics.get(tp[0])
            if part is None or part.is_leader or t is None or part.log.closed:
                continue
            if m.quota is not None and m.node_id not in part.isr and m.quota.should_throttle(tp[0], tp[1], False,
                                                                                         m.now_ms()):
                # Kafka's shouldFollowerThrottle: left out of this fetch, asked again after the backoff
                f.delayed_until = now + m.backoff_s
                continue
            pos = F.fetch_position(part)
            asked[tp] = (part, pos)
            by_topic.setdefault(t.topic_id, []).append(Req.struct("FetchPartition")(
                partition=tp[1], current_leader_epoch=pos.current_leader_epoch, fetch_offset=pos.fetch_offset,
                last_fetched_epoch=pos.last_fetched_epoch, log_start_offset=pos.log_start_offset,
                partition_max_bytes=m.fetch_max_bytes))
        if not asked:
            return None, asked
        topics = [Req.struct("FetchTopic")(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()]
        RS = Req.struct("ReplicaState")
        req = Req.cls(replica_state=RS(replica_id=m.node_id, replica_epoch=m.broker_epoch()),
                      max_wait_ms=int(m.wait_max_s * 1000), min_bytes=m.min_bytes,
                      max_bytes=m.response_max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
                      topics=topics, forgotten_topics_data=[], rack_id="")
        return req, asked

    async def _call(self, stream, conn: KafkaClientConnection, req, timeout: float):
        _, data = conn.send_request(FETCH, FETCH_VERSION, req)
        await stream.send_all(data)
        with trio.fail_after(timeout):
            while True:
                resp = conn.next_response()
                if resp is not NEED_DATA:
                    return resp.body
                data = await stream.receive_some(RECV_SIZE)
                if not data:
                    raise trio.BrokenResourceError(f"leader {self.leader_id} closed the connection")
                conn.receive_data(data)

    async def _apply_response(self, body, asked) -> None:
        m = self.manager
        rm = m.replica_manager
        image = m.image()
        if body.error_code:
            log.info("broker %d: replica fetch from %d refused: %s", m.node_id, self.leader_id,
                     ErrorCode(body.error_code).name)
            self._delay_all()
            return
        now_ms = m.now_ms()
        for t in body.responses:
            ti = image.topics_by_id.get(t.topic_id)
            if ti is None:
                continue
            for pd in t.partitions:
                tp = (ti.name, pd.partition_index)
                got = asked.get(tp)
                f = self.partitions.get(tp)
                if got is None or f is None:
                    continue
                part, pos = got
                if not self._still_following(tp, part, f) or part.log.log_end_offset != pos.fetch_offset:
                    continue   # moved or changed while the fetch was out: ask again
                try:
                    await self._apply_partition(part, pd, pos, now_ms)
                except KafkaError as exc:
                    log.warning("broker %d: follower append to %s-%d failed: %s", m.node_id, tp[0], tp[1], exc)
                    f.delayed_until = trio.current_time() + m.backoff_s

    def _still_following(self, tp, part, f) -> bool:
        return self.manager.replica_manager.partitions.get(tp) is part and not part.is_leader \
            and part.leader_epoch == f.leader_epoch and self.partitions.get(tp) is f

    async def _apply_partition(self, part, pd, pos, now_ms: int) -> None:
        """One partition's answer. A truncation (index rebuild, producer-state rebuild,
        checkpoint write) and a heavy append (ReplicaManager.append_is_heavy: a large write, a
        segment roll) run in a worker thread; this fetcher is the only writer of the
        partition's log while it follows, and applies its answers one at a time, so they
        keep their order. What follows the leader's offsets runs on the loop, only if the
        partition is still followed in the same epoch."""
        m = self.manager
        rm = m.replica_manager
        f = self.partitions[part.tp]
        err = pd.error_code
        if err == ErrorCode.NONE:
            de = pd.diverging_epoch
            if de is not None and (de.epoch >= 0 or de.end_offset >= 0):
                await trio.to_thread.run_sync(
                    F.truncate, part, F.truncation_offset(part, de.epoch, de.end_offset),
                    f"diverging epoch {de.epoch} ends at {de.end_offset} on leader {self.leader_id}")
                return
            records = pd.records
            if records and m.quota is not None and m.quota.is_throttled(part.topic, part.index):
                m.quota.record(len(records), now_ms)
            if records is not None and rm.append_is_heavy(part.topic, part.index, records, now_ms):
                await trio.to_thread.run_sync(F.append_leader_records, rm, part, records, now_ms)
                if self._still_following(part.tp, part, f):
                    F.follow_leader(rm, part, pd.high_watermark, pd.log_start_offset)
                return
            F.append_as_follower(rm, part, records, pd.high_watermark, pd.log_start_offset, now_ms)
            return
        if err == ErrorCode.OFFSET_OUT_OF_RANGE:
            await trio.to_thread.run_sync(F.out_of_range, part, pd.log_start_offset, pd.high_watermark)
            return
        level = logging.DEBUG if err in _RETRY_SOON else logging.WARNING
        log.log(level, "broker %d: fetch of %s-%d from leader %d: error %d", m.node_id, part.topic, part.index,
                self.leader_id, err)
        delay = m.backoff_s
        if err in _LEADER_BEHIND:
            # the leader our metadata names has not applied its leadership yet (the metadata
            # reaches brokers at slightly different times): ask again soon, while its acks=all
            # writes wait for this follower, not after the whole replica.fetch.backoff.ms
            delay = min(delay, LEADER_BEHIND_RETRY_S)
        f.delayed_until = trio.current_time() + delay

    def _delay_all(self) -> None:
        until = trio.current_time() + self.manager.backoff_s
        for f in self.partitions.values():
            f.delayed_until = until


class ReplicaFetcherManager:
    """The fetchers of one broker, by leader broker."""

    def __init__(self, node_id: int, replica_manager, image, config, now_ms, broker_epoch, link=PLAINTEXT_LINK):
        self.node_id = node_id
        self.link = link    # the leaders' inter-broker listener and how to secure it (kwire.security.peers)
        self.replica_manager = replica_manager
        self.image = image
        self.now_ms = now_ms
        self.broker_epoch = broker_epoch
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.by_partition: dict[tuple[str, int], int] = {}
        self._nursery = None
        self.wait_max_s = int(config.get("replica.fetch.wait.max.ms")) / 1000
        self.min_bytes = int(config.get("replica.fetch.min.bytes"))
        self.fetch_max_bytes = int(config.get("replica.fetch.max.bytes"))
        self.response_max_bytes = int(config.get("replica.fetch.response.max.bytes"))
        self.backoff_s = int(config.get("replica.fetch.backoff.ms")) / 1000
        self.request_timeout_s = int(config.get("replica.socket.timeout.ms") or 30000) / 1000
        self.unreachable = link_faults.from_config(config, node_id)   # tests only; None otherwise
        # follower.replication.throttled.* (kwire.quota.replication, KIP-73); None: no throttling
        self.quota = None

    def start(self, nursery) -> None:
        self._nursery = nursery
        for f in self.fetchers.values():
            nursery.start_soon(f.run)

    def update(self, part) -> None:
        """Follow ``part`` on its current leader (or stop fetching it while it has none)."""
        tp = part.tp
        old = self.by_partition.get(tp)
        if old is not None and old != part.leader:
            self.remove(tp)
        if part.leader < 0 or part.is_leader:
            self.remove(tp)
            return
        fetcher = self.fetchers.get(part.leader)
        if fetcher is None:
            fetcher = self.fetchers[part.leader] = ReplicaFetcher(self, part.leader)
            if self._nursery is not None:
                self._nursery.start_soon(fetcher.run)
        cur = fetcher.partitions.get(tp)
        if cur is None or cur.leader_epoch != part.leader_epoch:
            fetcher.partitions[tp] = _Fetching(part.leader_epoch)
        self.by_partition[tp] = part.leader
        fetcher._poke()

    def remove(self, tp) -> None:
        leader = self.by_partition.pop(tp, None)
        if leader is None:
            return
        fetcher = self.fetchers.get(leader)
        if fetcher is not None:
            fetcher.partitions.pop(tp, None)
            fetcher._poke()

