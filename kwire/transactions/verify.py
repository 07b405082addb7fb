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
TRANSACTION_ABORTABLE below Produce v11)."""
from __future__ import annotations

import logging

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.transactions.records import TRANSACTION_STATE_TOPIC

E = ErrorCode
log = logging.getLogger("kwire.transactions")

VERIFY_VERSION = 5


async def verify_transaction(broker, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions) -> dict[tuple[str, int], ErrorCode]:
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
        return coord.verify_partitions(transactional_id, producer_id, producer_epoch, tps)
    R = api("AddPartitionsToTxn").request
    by_topic: dict[str, list[int]] = {}
    for topic, part in tps:
        by_topic.setdefault(topic, []).append(part)
    req = R.cls(transactions=[R.struct("AddPartitionsToTxnTransaction")(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=True, topics=[R.struct("AddPartitionsToTxnTopic")(name=n, partitions=ps)
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
