"""KIP-890 part 1, the partition leader's side: before a producer's first transactional batch
on a partition is accepted, the leader asks the transaction coordinator whether the partition
is in the producer's ongoing transaction (AddPartitionsToTxn v5 with verify_only, as Kafka's
AddPartitionsToTxnManager sends it; answered in process when this broker is the coordinator).

``await verify_transaction(broker, tid, producer_id, producer_epoch, partitions)`` -> the
coordinator's error per partition: NONE (in the transaction), TRANSACTION_ABORTABLE (not in
it: the batch must be refused), PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
CONCURRENT_TRANSACTIONS; COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS while no coordinator answers, NETWORK_EXCEPTION when the
coordinator could not be reached. The produce path maps these to what its client version
understands (Kafka answers NOT_ENOUGH_REPLICAS for the retriable ones, INVALID_TXN_STATE for
TRANSACTION_ABORTABLE below Produce v11).

KIP-890 part 2 (transaction version 2, Produce v12 / TxnOffsetCommit v5): ``await
add_to_transaction(...)`` asks the coordinator to add the partitions (AddPartitionsToTxn v5
without verify_only; in process through ``add_partitions_waiting``) and answers the same way.
A previous transaction still writing its markers (CONCURRENT_TRANSACTIONS) is waited for up
to COMPLETION_WAIT_S, as Kafka's AddPartitionsToTxnManager retries it for
add.partitions.to.txn.retry.backoff.max.ms."""
from __future__ import annotations

import logging

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.internal_topics import TRANSACTION_STATE_TOPIC

E = ErrorCode
log = logging.getLogger("kwire.transactions")

VERIFY_VERSION = 5
#: how long an add waits for an ending transaction to complete before answering
#: CONCURRENT_TRANSACTIONS (Kafka's add.partitions.to.txn.retry.backoff.max.ms)
COMPLETION_WAIT_S = 0.1


async def add_partitions_waiting(edge, coord, tid: str, pid: int, epoch: int, tps,
                                 transaction_version: int | None = None) -> ErrorCode:
    """coordinator.add_partitions; a transaction still ending (EndTxn answered, its markers
    being written: CONCURRENT_TRANSACTIONS) is waited for, up to COMPLETION_WAIT_S, and the
    add asked again from the state it left, as a client's retry would be (Kafka answers
    CONCURRENT_TRANSACTIONS at once and the client, or the partition leader, retries after
    its backoff)."""
    error = await coord.add_partitions(tid, pid, epoch, tps, transaction_version).wait()
    if error == E.CONCURRENT_TRANSACTIONS and coord.completing(tid):
        await edge.wait_for_completion(tid, COMPLETION_WAIT_S)
        if edge.coordinator is coord:
            error = await coord.add_partitions(tid, pid, epoch, tps, transaction_version).wait()
    return error


async def verify_transaction(broker, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions, *, add: bool = False) -> dict[tuple[str, int], ErrorCode]:
    tps = list(partitions)

    def all_(error: ErrorCode):
        return {tp: error for tp in tps}

    edge = broker.txn_edge
    coord = edge.coordinator
    t = broker.image.topics.get(TRANSACTION_STATE_TOPIC)
    if coord is None or t is None:
        return all_(E.COORDINATOR_NOT_AVAILABLE)
    p = t.partitions.get(coord.partition_for(transactional_id))
    node = broker.image.brokers.get(p.leader) if p is not None else None
    if node is None or node.fenced:
        return all_(E.COORDINATOR_NOT_AVAILABLE)
    if node.node_id == broker.node_id:
        if add:
            error = await add_partitions_waiting(edge, coord, transactional_id, producer_id, producer_epoch, tps, 2)
            return all_(error)
        return coord.verify_partitions(transactional_id, producer_id, producer_epoch, tps)
    R = api("AddPartitionsToTxn").request
    by_topic: dict[str, list[int]] = {}
    for topic, part in tps:
        by_topic.setdefault(topic, []).append(part)
    req = R.cls(transactions=[R.struct("AddPartitionsToTxnTransaction")(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=not add, topics=[R.struct("AddPartitionsToTxnTopic")(name=n, partitions=ps)
                                  for n, ps in by_topic.items()])])
    try:
        resp = await edge.channel.request(node.node_id, "AddPartitionsToTxn", VERIFY_VERSION, req)
    except Exception as exc:  # noqa: BLE001 - unreachable, timed out, a bad answer
        log.info("verifying %s's transaction with broker %d failed: %s", transactional_id, node.node_id, exc)
        return all_(E.NETWORK_EXCEPTION)
    if resp.error_code:
        return all_(E(resp.error_code))
    out = {}
    for res in resp.results_by_transaction:
        if res.transactional_id == transactional_id:
            for tr in res.topic_results:
                for pr in tr.results_by_partition:
                    out[(tr.name, pr.partition_index)] = E(pr.partition_error_code)
    return {tp: out.get(tp, E.UNKNOWN_SERVER_ERROR) for tp in tps}


async def add_to_transaction(broker, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions) -> dict[tuple[str, int], ErrorCode]:
    """Transaction version 2: the coordinator adds the partitions to the producer's
    transaction (starting it) and answers as ``verify_transaction`` does."""
    return await verify_transaction(broker, transactional_id, producer_id, producer_epoch, partitions, add=True)
