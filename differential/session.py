"""One case run against one side: the requests it sends, the answers it records.

A case is a function ``run(s: Session, params)``; it is run once per side with the same params and
the same case number, so names (``s.topic("a")``, ``s.group()``) agree and only broker-assigned
values (topic ids, producer ids, member ids) differ; those reach later requests through the answers
the case reads, never through hard-coded values."""
from __future__ import annotations

import time
import uuid

from kwire.codec.apis import api as api_by

from differential.pair import Side
from differential.wire import Conn, Outcome, decode_outcome


class Session:
    def __init__(self, side: Side, n: int, family: str):
        self.side = side
        self.n = n
        self.family = family
        self.user: str | None = None   # None: the side's own login (admin on a secured pair)
        self.conn: Conn = side.connect(f"differential-{family}")
        self.log: list[tuple[str, str, int, Outcome]] = []   # (label, api, version, outcome)

    # ------------------------------------------------------------------ names
    def topic(self, tag: str = "a") -> str:
        return f"{self.family}-{self.n}-{tag}"

    def group(self, tag: str = "g") -> str:
        return f"{self.family}-{self.n}-{tag}"

    def reconnect(self) -> None:
        self.conn.close()
        self.conn = self.side.connect(f"differential-{self.family}", user=self.user)

    def login(self, user: str) -> None:
        """Go on as ``user`` (a secured pair): a new connection that authenticates as them."""
        self.user = user
        self.reconnect()

    def close(self) -> None:
        self.conn.close()

    def version(self, api_name: str, draw: int, at_least: int = 0) -> int:
        """A version both brokers serve, picked by ``draw`` (hypothesis draws a number, the pair's
        ranges turn it into a version): the corpora do not hard-code either broker's ranges."""
        lo, hi = self.side.common[api_by(api_name).key]
        lo = max(lo, at_least)
        return lo + draw % (hi - lo + 1)

    # ------------------------------------------------------------------ requests
    def call(self, api_name: str, version: int, *, label: str = "", expect_response: bool = True,
             timeout: float | None = None, **fields):
        """Send and record; the decoded body (None when there was none)."""
        out = self.conn.call(api_name, version, expect_response=expect_response, timeout=timeout, **fields)
        self.log.append((label or api_name, api_name, version, out))
        self._learn(out)
        return out.body

    def setup(self, api_name: str, version: int, **fields):
        """Send without recording (what a case needs in place before the requests it compares)."""
        out = self.conn.call(api_name, version, **fields)
        self._learn(out)
        return out.body

    def raw(self, label: str, data: bytes, api_name: str | None, version: int, timeout: float = 1.5) -> None:
        """Send bytes as they are; record whether an answer came (decoded as ``api_name``), the
        connection closed, or nothing came within ``timeout``."""
        if not self.conn.send_raw(data):
            out = Outcome("closed")
        else:
            kind, frame = self.conn.read_frame(timeout)
            if kind != "frame":
                out = Outcome(kind)
            elif api_name is None:
                out = Outcome("undecodable", None, None, "no schema to decode with")
            else:
                out = decode_outcome(api_by(api_name), version, frame)
        self.log.append((label, api_name or "Raw", version, out))

    def _learn(self, out: Outcome) -> None:
        body = out.body
        if out.kind != "response" or body is None:
            return
        for t in getattr(body, "topics", None) or []:
            name, tid = getattr(t, "name", None), getattr(t, "topic_id", None)
            if name and isinstance(tid, uuid.UUID) and tid.int:
                self.side.topic_ids[name] = tid

    # ------------------------------------------------------------------ helpers
    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None, *,
                     wait: bool = True) -> None:
        R = api_by("CreateTopics").request
        C = R.struct("CreatableTopicConfig")
        T = R.struct("CreatableTopic")
        topic = T(name=name, num_partitions=partitions, replication_factor=1,
                  configs=[C(name=k, value=v) for k, v in (configs or {}).items()])
        self.setup("CreateTopics", 7, topics=[topic], timeout_ms=15000)
        if wait:
            self.wait_ready(name, partitions)

    def wait_ready(self, name: str, partitions: int, timeout: float = 15.0) -> None:
        """Until Metadata shows every partition with a leader (a controller commits the topic a
        moment before the broker's metadata image has it)."""
        T = api_by("Metadata").request.struct("MetadataRequestTopic")
        deadline = time.monotonic() + timeout
        while True:
            body = self.setup("Metadata", 12, topics=[T(name=name)], allow_auto_topic_creation=False)
            t = body.topics[0] if body is not None and body.topics else None
            if (t is not None and t.error_code == 0 and len(t.partitions) == partitions
                    and all(p.leader_id >= 0 and p.error_code == 0 for p in t.partitions)
                    and self._leads(name, partitions)):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.side.name}: topic {name} not ready: {body}")
            time.sleep(0.05)

    def wait_coordinator(self, group: str, timeout: float = 15.0, key_type: int = 0) -> None:
        """Until the group's coordinator is loaded (a client retries the retriable coordinator errors;
        the case's compared requests start once both brokers are past them)."""
        G = S("OffsetFetch", "OffsetFetchRequestGroup")
        deadline = time.monotonic() + timeout
        while True:
            f = self.setup("FindCoordinator", 4, key_type=key_type, coordinator_keys=[group])
            o = self.setup("OffsetFetch", 8, groups=[G(group_id=group, topics=None)]) if key_type == 0 else None
            if f is not None and f.coordinators[0].error_code == 0 and (
                    key_type != 0 or (o is not None and o.groups[0].error_code == 0)):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.side.name}: no coordinator for {group}: {f} {o}")
            time.sleep(0.1)

    def _leads(self, name: str, partitions: int) -> bool:
        """The broker serves the partitions, not only lists them: Kafka's metadata cache takes a new
        image a moment before its replica manager makes the partitions leaders."""
        T = S("ListOffsets", "ListOffsetsTopic")
        LP = S("ListOffsets", "ListOffsetsPartition")
        body = self.setup("ListOffsets", 7, replica_id=-1, isolation_level=0, topics=[
            T(name=name, partitions=[LP(partition_index=i, timestamp=-1) for i in range(partitions)])])
        return body is not None and all(p.error_code == 0 for t in body.topics for p in t.partitions)

    def topic_id(self, name: str) -> uuid.UUID:
        if name not in self.side.topic_ids:
            T = api_by("Metadata").request.struct("MetadataRequestTopic")
            self.setup("Metadata", 12, topics=[T(name=name)], allow_auto_topic_creation=False)
        return self.side.topic_ids.get(name, uuid.UUID(int=0))


def S(api_name: str, struct: str):
    """A request struct class of ``api_name`` (``S("Produce", "TopicProduceData")``)."""
    return api_by(api_name).request.struct(struct)
