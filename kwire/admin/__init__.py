"""``kwire topics | groups | configs | cluster | acls``: Kafka's admin tools (kafka-topics.sh,
kafka-consumer-groups.sh, kafka-configs.sh, kafka-metadata-quorum.sh, kafka-acls.sh) with their
flags and output shapes, on kwire's own wire client (kwire.admin.client), against any Kafka
cluster. Nothing here is imported by the broker.

The command modules import kwire.admin.client, kwire.errors and the codecs inside the
functions that run a command (tagged ``# noqa: PLC0415 - start-up time (kwire.admin)``):
``kwire --help`` builds every command's parser and needs none of them (~8 ms)."""
