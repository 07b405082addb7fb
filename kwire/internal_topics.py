"""The names of Kafka's internal topics (Kafka's ``org.apache.kafka.common.internals.Topic``).

A leaf module: code that only needs a name (the broker's edges, the handlers) imports it from
here, so the coordinators' record modules (their schemas and dataclasses) load at start-up
only where they are used.
"""
OFFSETS_TOPIC = "__consumer_offsets"              # Topic.GROUP_METADATA_TOPIC_NAME
TRANSACTION_STATE_TOPIC = "__transaction_state"   # Topic.TRANSACTION_STATE_TOPIC_NAME
SHARE_STATE_TOPIC = "__share_group_state"         # Topic.SHARE_GROUP_STATE_TOPIC_NAME
