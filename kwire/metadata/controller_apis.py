"""The controller's requests on the controller listener, both ends: AlterPartition (v3, from
partition leaders), BrokerHeartbeat (v1, kwire sends it for controlled shutdown),
ElectLeaders (v2) and AlterPartitionReassignments (v1), forwarded by the node a client asked. Serving maps a request body to
kwire.metadata.controller.Controller and its answer back to a response body; sending builds
the request for ``RaftTransport.call`` and reads the response.

Served versions: AlterPartition 2-3, BrokerHeartbeat 0-1 (v1: offline log dirs, with kwire's
private list of the partitions in them), ElectLeaders 0-2,
AlterPartitionReassignments 0-1 (what the codec knows). Left out: AlterPartition v0-1 (topic names; Kafka 4 dropped them), the heartbeat's
lease and fencing on request (``want_fence``): liveness rides on the metadata log fetches.
"""
from __future__ import annotations

import uuid

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.metadata.controller import Controller, HeartbeatReply
from kwire.metadata.partition_change import RECOVERED, AlterPartitionResult, Election

ALTER_PARTITION, BROKER_HEARTBEAT, ELECT_LEADERS = api("AlterPartition"), api("BrokerHeartbeat"), api("ElectLeaders")
ALTER_REASSIGNMENTS = api("AlterPartitionReassignments")
V_ALTER_PARTITION, V_BROKER_HEARTBEAT, V_ELECT_LEADERS, V_ALTER_REASSIGNMENTS = 3, 1, 2, 1
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
