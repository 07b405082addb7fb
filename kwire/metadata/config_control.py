"""The controller's rules for ``min.insync.replicas`` under KIP-966 (Kafka's
ConfigurationControlManager: maybeGenerateElrSafetyRecords, isDisallowedBrokerMinIsrTransition,
isDisallowedClusterMinIsrTransition).

A Kafka 4.1+ cluster is formatted with ``eligible.leader.replicas.version`` 1, and the controller
that turns ELR on writes a cluster-level (broker resource ``""``) ``min.insync.replicas`` holding
its static value (server.properties, else 1) and removes every broker-level one; from then on a
broker-level ``min.insync.replicas`` cannot be set or removed, and the cluster-level one cannot be
removed (INVALID_CONFIG). Clients see it: DescribeConfigs reports ``min.insync.replicas`` with
source DYNAMIC_DEFAULT_BROKER_CONFIG for the default resource, every broker and every topic, and
a legacy AlterConfigs of the default resource that leaves it out is refused.

A new kwire cluster answers as a freshly formatted Kafka 4.3 one: the controller writes the
record with the first registration into a metadata log that has none (kwire's "format"), and
the same refusals hold. With it the controller writes eligible.leader.replicas.version (1 when
the emulated release is 4.1+, else 0): the partition decisions keep eligible leader replicas
while it is 1 (kwire.metadata.partition_change), with the effective min ISR of
``topic_min_isr``.
"""
from __future__ import annotations

from kwire.metadata import records as R

MIN_ISR = "min.insync.replicas"
BROKER_MIN_ISR_ALTERED = f"Broker-level {MIN_ISR} cannot be altered while ELR is enabled."
CLUSTER_MIN_ISR_REMOVED = f"Cluster-level {MIN_ISR} cannot be removed while ELR is enabled."


def elr_safety_records(image, static_min_isr: int) -> list:
    """The records that make ELR safe: a cluster-level min.insync.replicas when there is none,
    and the removal of every broker-level one; [] once both hold (safe to call every time)."""
    out = []
    if MIN_ISR not in image.broker_configs.get("", {}):
        out.append((R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_BROKER, resource_name="",
                                           name=MIN_ISR, value=str(int(static_min_isr)))))
    for name in sorted(n for n in image.broker_configs if n != ""):
        if MIN_ISR in image.broker_configs[name]:
            out.append((R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_BROKER, resource_name=name,
                                               name=MIN_ISR, value=None)))
    return out


def clear_elr_records(image, resource_type: int, resource_name: str, changes: dict) -> list:
    """The ClearElrRecord a change of min.insync.replicas brings while ELR is on (Kafka's
    ConfigurationControlManager.createClearElrRecordsAsNeeded): the ELR was kept against the
    old value, so it is no proof of safety under the new one. A topic's change clears that
    topic's partitions when its value changes; a broker resource's (only the cluster-level one
    is allowed) clears every topic's, even for the same value, as Kafka writes a ConfigRecord
    for every broker-resource change (KAFKA-14136)."""
    if MIN_ISR not in changes or not elr_enabled(image):
        return []
    if resource_type == R.RESOURCE_TOPIC:
        t = image.topics.get(resource_name)
        if t is None or t.configs.get(MIN_ISR) == changes[MIN_ISR]:
            return []
        return [(R.CLEAR_ELR, R.CLEAR_ELR.cls(topic_name=resource_name))]
    if resource_type == R.RESOURCE_BROKER:
        return [(R.CLEAR_ELR, R.CLEAR_ELR.cls(topic_name=""))]
    return []


def min_isr_transition_error(resource_name: str, changes: dict) -> str | None:
    """Why a change of broker resource ``resource_name`` ({key: new value or None}) is refused
    while ELR is on (INVALID_CONFIG with this message), else None."""
    if MIN_ISR not in changes:
        return None
    if resource_name != "":
        return BROKER_MIN_ISR_ALTERED
    if changes[MIN_ISR] is None:
        return CLUSTER_MIN_ISR_REMOVED
    return None


# ---------------------------------------------------------------------- eligible leader replicas
ELR_FEATURE = "eligible.leader.replicas.version"
ELR_SINCE = (4, 1)   # Kafka's ELRV_1 bootstraps with metadata version 4.1-IV0


def elr_enabled(image) -> bool:
    """Kafka's FeatureControlManager.isElrFeatureEnabled: eligible.leader.replicas.version >= 1."""
    return image.features.get(ELR_FEATURE, 0) >= 1


def elr_feature_records(image, kafka_version: str | None) -> list:
    """The eligible.leader.replicas.version a cluster gets at its format (kwire's first
    registration into a metadata log without the feature): 1 where the release kwire emulates
    (None: the default, 4.3) formats new clusters with ELR on (4.1+), else 0 (ELR stays off,
    as on a 3.x / 4.0-formatted Kafka cluster); [] once the log holds the feature."""
    if ELR_FEATURE in image.features:
        return []
    on = kafka_version is None or tuple(int(x) for x in str(kafka_version).split(".")[:2]) >= ELR_SINCE
    return [(R.FEATURE_LEVEL, R.FEATURE_LEVEL.cls(name=ELR_FEATURE, feature_level=1 if on else 0))]


def topic_min_isr(image, topic) -> int:
    """Kafka's ReplicationControlManager.getTopicEffectiveMinIsr: the topic's
    min.insync.replicas (else the cluster-level one, which ELR makes sure exists; else 1),
    at most the topic's replication factor (its partition 0's replicas)."""
    v = topic.configs.get(MIN_ISR)
    if v is None:
        v = image.broker_configs.get("", {}).get(MIN_ISR, 1)
    p0 = topic.partitions.get(0)
    rf = len(p0.replicas) if p0 is not None else int(v)
    return min(int(v), rf)
