"""The controller's requests on the controller listener, both ends (Kafka's ControllerApis;
the listener itself is kwire.metadata.controller_server). Serving maps a request body to the
controller and its answer back to a response body; sending builds the request for
``RaftTransport.call`` and reads the response.

- AlterPartition (v3, from partition leaders), BrokerHeartbeat (v1, kwire sends it for
  controlled shutdown), ElectLeaders (v2) and AlterPartitionReassignments (v1), forwarded by
  the node a client asked: kwire.metadata.controller.Controller.
- Topic changes travel as intents: CreateTopics (v7, one topic) and CreatePartitions (v3, one
  topic) reach the active controller, which checks, places and commits them
  (kwire.metadata.quorum) and answers in the request's own response (error code and message,
  topic id, partitions, replication factor). Kafka's brokers wrap the client's request in an
  Envelope (with the principal, for the controller's authorizer); kwire sends the topic's
  request itself.
- Metadata forwarding is kwire's own use of a Kafka format: a Produce (v9) to
  ``__cluster_metadata`` partition 0 carries metadata records to the active controller, which
  answers once they are committed (``base_offset`` = the entry's offset) or with an error
  (NOT_CONTROLLER, TOPIC_ALREADY_EXISTS, ...).

Served versions: AlterPartition 2-3, BrokerHeartbeat 0-1 (v1: offline log dirs, with kwire's
private list of the partitions in them), ElectLeaders 0-2,
AlterPartitionReassignments 0-1 (what the codec knows), CreateTopics 7, CreatePartitions 3,
Produce 9 (forwarding only). Left out: AlterPartition v0-1 (topic names; Kafka 4 dropped them), the heartbeat's
lease and fencing on request (``want_fence``): liveness rides on the metadata log fetches;
Envelope.
"""
from __future__ import annotations

import logging
import uuid
from typing import Any, Awaitable, Callable

from kwire.codec import records as RB
from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.metadata.controller import Controller, HeartbeatReply
from kwire.metadata.partition_change import RECOVERED, AlterPartitionResult, Election
from kwire.metadata.topic_changes import CreatePartitions, CreateTopic, TopicOutcome
from kwire.raft.transport import TOPIC as METADATA_TOPIC

log = logging.getLogger("kwire.controller_apis")

ALTER_PARTITION, BROKER_HEARTBEAT, ELECT_LEADERS = api("AlterPartition"), api("BrokerHeartbeat"), api("ElectLeaders")
ALTER_REASSIGNMENTS = api("AlterPartitionReassignments")
V_ALTER_PARTITION, V_BROKER_HEARTBEAT, V_ELECT_LEADERS, V_ALTER_REASSIGNMENTS = 3, 1, 2, 1
CREATE_TOPICS, CREATE_PARTITIONS, PRODUCE = api("CreateTopics"), api("CreatePartitions"), api("Produce")
V_CREATE_TOPICS, V_CREATE_PARTITIONS, V_PRODUCE = 7, 3, 9
ELECTION_TYPES = {0: Election.PREFERRED, 1: Election.UNCLEAN}


# ====================================================================================== serving
def handlers(controller: Controller) -> dict:
    """api key -> ``async fn(body, version) -> response body``, for the controller listener."""
    async def alter_partition(body, version):
        Resp = ALTER_PARTITION.response
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                if version >= 3:
                    isr = [s.broker_id for s in p.new_isr_with_epochs]
                    epochs = [s.broker_epoch for s in p.new_isr_with_epochs]
                else:
                    isr, epochs = list(p.new_isr), None
                r = await controller.alter_partition(body.broker_id, body.broker_epoch, t.topic_id, p.partition_index,
                                                     p.leader_epoch, p.partition_epoch, isr,
                                                     leader_recovery_state=p.leader_recovery_state,
                                                     broker_epochs=epochs)
                parts.append(Resp.struct("PartitionData")(
                    partition_index=p.partition_index, error_code=int(r.code), leader_id=r.leader,
                    leader_epoch=r.leader_epoch, isr=list(r.isr), leader_recovery_state=r.leader_recovery_state,
                    partition_epoch=r.partition_epoch))
            topics.append(Resp.struct("TopicData")(topic_id=t.topic_id, partitions=parts))
        return Resp.cls(throttle_time_ms=0, error_code=0, topics=topics)

    async def broker_heartbeat(body, version):
        offline = [] if version < 1 else list(body.offline_log_dirs or [])
        parts = [] if version < 1 else [(t.topic_id, p) for t in (body.kwire_offline_partitions or [])
                                        for p in t.partitions]
        r = await controller.broker_heartbeat(body.broker_id, body.broker_epoch, body.current_metadata_offset,
                                              bool(body.want_shut_down), offline, parts)
        return BROKER_HEARTBEAT.response.cls(throttle_time_ms=0, error_code=int(r.code), is_caught_up=r.is_caught_up,
                                             is_fenced=r.is_fenced, should_shut_down=r.should_shut_down)

    async def elect_leaders(body, version):
        election = ELECTION_TYPES.get(body.election_type if version >= 1 else 0)
        if election is None:
            return elect_leaders_response(ErrorCode.INVALID_REQUEST, {}, version)
        tps = None if body.topic_partitions is None else {
            t.topic: list(t.partitions) for t in body.topic_partitions}
        code, results = await controller.elect_leaders(election, tps)
        return elect_leaders_response(code, results, version)

    async def alter_reassignments(body, version):
        allow = bool(body.allow_replication_factor_change) if version >= 1 else True
        code, results = await controller.alter_reassignments(reassignment_intent(body), allow)
        return reassignments_response(code, results, None)

    return {ALTER_PARTITION.key: alter_partition, BROKER_HEARTBEAT.key: broker_heartbeat,
            ELECT_LEADERS.key: elect_leaders, ALTER_REASSIGNMENTS.key: alter_reassignments}



def forwarding_handlers(on_records: Callable[[list[bytes]], Awaitable[tuple[int, int]]],
                        on_topic_change: Callable[[Any], Awaitable[TopicOutcome]]) -> dict:
    """api key -> ``async fn(body, version) -> response body`` for what other nodes forward
    to this node's controller: metadata records (Produce to ``__cluster_metadata``;
    ``on_records(values) -> (error code, committed offset)``) and topic changes (CreateTopics,
    CreatePartitions; ``on_topic_change(intent) -> TopicOutcome``)."""
    async def metadata_records(body, version):
        Resp = PRODUCE.response
        PR = Resp.struct("PartitionProduceResponse")
        code, offset = ErrorCode.INVALID_REQUEST, -1
        try:
            td = body.topic_data[0]
            pd = td.partition_data[0]
            values = [bytes(r.value) for b in RB.iter_batches(bytes(pd.records)) for r in b.records()]
            code, offset = await on_records(values)
        except Exception as exc:  # noqa: BLE001
            log.warning("controller: forwarded metadata failed: %s", exc)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        return Resp.cls(responses=[Resp.struct("TopicProduceResponse")(
            name=METADATA_TOPIC, partition_responses=[PR(index=0, error_code=int(code), base_offset=offset,
                                                         log_append_time_ms=-1, log_start_offset=-1)])],
            throttle_time_ms=0)

    async def topic_change(key: int, body):
        """A topic change forwarded to this node's controller: one topic per request."""
        t = body.topics[0] if body.topics else None
        if t is None:
            req = None
        elif key == CREATE_TOPICS.key:
            req = topic_intent(t, bool(body.validate_only))
        else:
            req = partitions_intent(t, bool(body.validate_only))
        if req is None:
            out = TopicOutcome(ErrorCode.INVALID_REQUEST, "no topic")
        else:
            try:
                out = await on_topic_change(req)
            except Exception:  # noqa: BLE001 - answer, log once, keep the listener
                log.exception("controller: forwarded %s of %s failed", type(req).__name__, req.name)
                out = TopicOutcome(ErrorCode.UNKNOWN_SERVER_ERROR)
        name = t.name if t is not None else ""
        if key == CREATE_TOPICS.key:
            Resp = CREATE_TOPICS.response
            r = Resp.struct("CreatableTopicResult")(name=name, error_code=int(out.code), error_message=out.message,
                                                    num_partitions=out.num_partitions,
                                                    replication_factor=out.replication_factor)
            if out.topic_id is not None:
                r.topic_id = out.topic_id
            return Resp.cls(throttle_time_ms=0, topics=[r])
        Resp = CREATE_PARTITIONS.response
        return Resp.cls(throttle_time_ms=0, results=[Resp.struct("CreatePartitionsTopicResult")(
            name=name, error_code=int(out.code), error_message=out.message)])

    async def create_topics(body, version):
        return await topic_change(CREATE_TOPICS.key, body)

    async def create_partitions(body, version):
        return await topic_change(CREATE_PARTITIONS.key, body)

    return {PRODUCE.key: metadata_records, CREATE_TOPICS.key: create_topics,
            CREATE_PARTITIONS.key: create_partitions}


def topic_intent(t, validate_only: bool) -> CreateTopic:
    """CreateTopics' CreatableTopic as the controller's intent."""
    return CreateTopic(t.name, t.num_partitions, t.replication_factor,
                       {a.partition_index: list(a.broker_ids) for a in t.assignments} if t.assignments else None,
                       {c.name: c.value for c in t.configs}, validate_only)


def partitions_intent(t, validate_only: bool) -> CreatePartitions:
    """CreatePartitions' CreatePartitionsTopic as the controller's intent."""
    return CreatePartitions(t.name, t.count, [list(a.broker_ids) for a in t.assignments]
                            if t.assignments is not None else None, validate_only)

def reassignment_intent(body) -> dict[str, list[tuple[int, list[int] | None]]]:
    out: dict[str, list] = {}
    for t in body.topics:
        out.setdefault(t.name, []).extend(
            (p.partition_index, None if p.replicas is None else list(p.replicas)) for p in t.partitions)
    return out


def reassignments_response(code: ErrorCode, results: dict, message: str | None):
    Resp = ALTER_REASSIGNMENTS.response
    TR, PR = Resp.struct("ReassignableTopicResponse"), Resp.struct("ReassignablePartitionResponse")
    return Resp.cls(throttle_time_ms=0, error_code=int(code), error_message=message, responses=[
        TR(name=name, partitions=[PR(partition_index=pid, error_code=int(c), error_message=m) for pid, c, m in rows])
        for name, rows in results.items()])


def elect_leaders_response(code: ErrorCode, results: dict, version: int):
    Resp = ELECT_LEADERS.response
    PR, RR = Resp.struct("PartitionResult"), Resp.struct("ReplicaElectionResult")
    return Resp.cls(throttle_time_ms=0, error_code=int(code), replica_election_results=[
        RR(topic=name, partition_result=[PR(partition_id=pid, error_code=int(c), error_message=m)
                                         for pid, c, m in rows])
        for name, rows in results.items()])


def elect_leaders_results(resp) -> tuple[ErrorCode, dict]:
    return ErrorCode(resp.error_code), {
        r.topic: [(p.partition_id, ErrorCode(p.error_code), p.error_message) for p in r.partition_result]
        for r in resp.replica_election_results}


# ====================================================================================== sending
async def send_alter_partition(transport, dest: int, broker_id: int, broker_epoch: int, topic_id: uuid.UUID,
                               partition: int, leader_epoch: int, partition_epoch: int, new_isr: list[int],
                               leader_recovery_state: int = RECOVERED, timeout: float = 10.0,
                               broker_epochs: list[int] | None = None) -> AlterPartitionResult:
    Req = ALTER_PARTITION.request
    epochs = broker_epochs or [-1] * len(new_isr)
    pd = Req.struct("PartitionData")(
        partition_index=partition, leader_epoch=leader_epoch, leader_recovery_state=leader_recovery_state,
        partition_epoch=partition_epoch,
        new_isr_with_epochs=[Req.struct("BrokerState")(broker_id=r, broker_epoch=e) for r, e in zip(new_isr, epochs)])
    body = Req.cls(broker_id=broker_id, broker_epoch=broker_epoch,
                   topics=[Req.struct("TopicData")(topic_id=topic_id, partitions=[pd])])
    resp = await transport.call(dest, ALTER_PARTITION, V_ALTER_PARTITION, body, timeout=timeout)
    if resp.error_code:
        return AlterPartitionResult(ErrorCode(resp.error_code))
    p = resp.topics[0].partitions[0]
    return AlterPartitionResult(ErrorCode(p.error_code), p.leader_id, p.leader_epoch, list(p.isr), p.partition_epoch,
                                p.leader_recovery_state)


async def send_broker_heartbeat(transport, dest: int, broker_id: int, broker_epoch: int, offset: int,
                                want_shut_down: bool, timeout: float = 10.0, offline_log_dirs=(),
                                offline_partitions=()) -> HeartbeatReply:
    Req = BROKER_HEARTBEAT.request
    by_topic: dict = {}
    for topic_id, p in offline_partitions:
        by_topic.setdefault(topic_id, []).append(p)
    body = Req.cls(broker_id=broker_id, broker_epoch=broker_epoch,
                   current_metadata_offset=offset, want_fence=False,
                   want_shut_down=want_shut_down, offline_log_dirs=list(offline_log_dirs),
                   kwire_offline_partitions=[Req.struct("OfflineTopic")(topic_id=t, partitions=sorted(ps))
                                             for t, ps in by_topic.items()])
    r = await transport.call(dest, BROKER_HEARTBEAT, V_BROKER_HEARTBEAT, body, timeout=timeout)
    return HeartbeatReply(ErrorCode(r.error_code), r.is_caught_up, r.is_fenced, should_shut_down=r.should_shut_down)


async def send_elect_leaders(transport, dest: int, election: Election, topic_partitions: dict | None,
                             timeout: float = 10.0) -> tuple[ErrorCode, dict]:
    Req = ELECT_LEADERS.request
    tps = None if topic_partitions is None else [
        Req.struct("TopicPartitions")(topic=t, partitions=list(ps)) for t, ps in topic_partitions.items()]
    body = Req.cls(election_type=0 if election is Election.PREFERRED else 1, topic_partitions=tps,
                   timeout_ms=int(timeout * 1000))
    resp = await transport.call(dest, ELECT_LEADERS, V_ELECT_LEADERS, body, timeout=timeout)
    return elect_leaders_results(resp)


async def send_alter_reassignments(transport, dest: int, topics: dict, allow_rf_change: bool,
                                   timeout: float = 10.0) -> tuple[ErrorCode, dict]:
    Req = ALTER_REASSIGNMENTS.request
    body = Req.cls(timeout_ms=int(timeout * 1000), allow_replication_factor_change=allow_rf_change, topics=[
        Req.struct("ReassignableTopic")(name=name, partitions=[
            Req.struct("ReassignablePartition")(partition_index=pid, replicas=target) for pid, target in parts])
        for name, parts in topics.items()])
    resp = await transport.call(dest, ALTER_REASSIGNMENTS, V_ALTER_REASSIGNMENTS, body, timeout=timeout)
    return ErrorCode(resp.error_code), {
        t.name: [(p.partition_index, ErrorCode(p.error_code), p.error_message) for p in t.partitions]
        for t in resp.responses}


async def send_metadata_records(transport, dest: int, values: list[bytes], timeout: float) -> tuple[int, int]:
    """Forward metadata records to the controller ``dest``; (error code, committed offset)."""
    Req = PRODUCE.request
    batch = RB.build_batch([(None, v, [], -1) for v in values])
    body = Req.cls(transactional_id=None, acks=-1, timeout_ms=int(timeout * 1000), topic_data=[
        Req.struct("TopicProduceData")(name=METADATA_TOPIC, partition_data=[
            Req.struct("PartitionProduceData")(index=0, records=batch)])])
    resp = await transport.call(dest, PRODUCE, V_PRODUCE, body, timeout=timeout + 1)
    pr = resp.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


async def send_topic_change(transport, dest: int, req: CreateTopic | CreatePartitions,
                            timeout: float) -> TopicOutcome:
    """Send a topic-change intent to the controller ``dest``; its TopicOutcome."""
    if isinstance(req, CreateTopic):
        Req = CREATE_TOPICS.request
        assignments = [Req.struct("CreatableReplicaAssignment")(partition_index=p, broker_ids=list(b))
                       for p, b in sorted((req.assignments or {}).items())]
        configs = [Req.struct("CreatableTopicConfig")(name=k, value=v) for k, v in (req.configs or {}).items()]
        body = Req.cls(topics=[Req.struct("CreatableTopic")(
            name=req.name, num_partitions=req.num_partitions, replication_factor=req.replication_factor,
            assignments=assignments, configs=configs)], timeout_ms=int(timeout * 1000),
            validate_only=req.validate_only)
        resp = await transport.call(dest, CREATE_TOPICS, V_CREATE_TOPICS, body, timeout=timeout + 1)
        r = resp.topics[0]
        ok = r.error_code == ErrorCode.NONE and not req.validate_only
        return TopicOutcome(ErrorCode(r.error_code), r.error_message, r.topic_id if ok else None,
                            r.num_partitions, r.replication_factor)
    Req = CREATE_PARTITIONS.request
    assignments = None if req.assignments is None else [
        Req.struct("CreatePartitionsAssignment")(broker_ids=list(a)) for a in req.assignments]
    body = Req.cls(topics=[Req.struct("CreatePartitionsTopic")(name=req.name, count=req.count,
                                                               assignments=assignments)],
                   timeout_ms=int(timeout * 1000), validate_only=req.validate_only)
    resp = await transport.call(dest, CREATE_PARTITIONS, V_CREATE_PARTITIONS, body, timeout=timeout + 1)
    r = resp.results[0]
    return TopicOutcome(ErrorCode(r.error_code), r.error_message)
