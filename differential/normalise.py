"""Decoded answers -> plain trees, with what legitimately differs between two brokers masked.

Masked or mapped, each for a reason:
  throttle_time_ms               dropped: quota timing, not protocol behaviour
  cluster_id, host, port         "<cluster-id>", "<host>", "<port>": each broker has its own
  finalized_features_epoch       "<epoch>": the metadata offset the features were read at
  topic_id                       "topic:<name>" through the side's own name <-> id map, else an ordinal
  producer_id, member_id, session_id (fetch), transactional producer ids in batches
                                 ordinals by first appearance within one case ("<producer_id#0>")
  crc                            dropped from decoded batches once checked ("crc_ok")
  log_append_time_ms             "<time>" when set (-1 is kept)
Arrays of structs are compared in a canonical order (by their identifying fields: name, topic,
partition_index, node_id, api_key ...): Kafka builds most of them from hash maps and promises no order.
Error codes are rendered with their names (``3 UNKNOWN_TOPIC_OR_PARTITION``)."""
from __future__ import annotations

import json
import uuid

from kwire.codec.records import RecordBatch, iter_batches
from kwire.codec.schema import StructBase
from kwire.errors import ErrorCode

DROP = {"throttle_time_ms"}
CONSTANT = {"cluster_id": "<cluster-id>", "host": "<host>", "port": "<port>",
            "finalized_features_epoch": "<epoch>"}
# field name -> (ordinal kind, values kept as they are)
ORDINAL = {"producer_id": ("producer_id", (-1,)), "member_id": ("member_id", ("", None)),
           "leader": ("member_id", ("", None)), "session_id": ("session_id", (0,)),
           "active_producer_id": ("producer_id", (-1,))}
KEY_FIELDS = ("name", "topic", "topic_name", "topic_id", "partition_index", "partition", "partition_id",
              "node_id", "broker_id", "api_key", "key", "resource_type", "resource_name", "group_id",
              "transactional_id", "config_name", "member_id", "group_instance_id", "producer_id")
ZERO_UUID = uuid.UUID(int=0)


class Normaliser:
    """One per case and side: ordinals are consistent within the case."""

    def __init__(self, topic_ids: dict):
        self.id_to_name = {v: k for k, v in topic_ids.items()}
        self.ordinals: dict[str, dict] = {}

    def ordinal(self, kind: str, value):
        seen = self.ordinals.setdefault(kind, {})
        if value not in seen:
            seen[value] = len(seen)
        return f"<{kind}#{seen[value]}>"

    def topic(self, value):
        if value == ZERO_UUID:
            return "<zero-uuid>"
        name = self.id_to_name.get(value)
        return f"topic:{name}" if name is not None else self.ordinal("unknown_topic_id", value)

    def tree(self, value, name: str = ""):
        if isinstance(value, StructBase):
            return self.struct(value)
        if isinstance(value, list):
            items = [self.tree(v, name) for v in value]
            if items and all(isinstance(i, dict) for i in items):
                items.sort(key=_sort_key)
            return items
        if name in CONSTANT and value is not None:
            return CONSTANT[name]
        if name == "topic_id" or (isinstance(value, uuid.UUID) and value in self.id_to_name):
            return self.topic(value)
        if name in ORDINAL and value not in ORDINAL[name][1]:
            return self.ordinal(ORDINAL[name][0], value)
        if name.endswith("error_code") and isinstance(value, int):
            return error_name(value)
        if name == "log_append_time_ms" and value != -1:
            return "<time>"
        if name == "records" and value is not None:
            return self.records(value)
        if isinstance(value, uuid.UUID):
            return str(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).hex()
        return value

    def struct(self, obj: StructBase) -> dict:
        return {f: self.tree(getattr(obj, f), f) for f in obj._fields if f not in DROP}

    def records(self, data) -> list:
        buf = bytes(data)
        out = []
        pos = 0
        try:
            for batch in iter_batches(buf, allow_partial_tail=True):
                out.append(self.batch(batch))
                pos = batch.end
        except Exception as exc:  # noqa: BLE001 - a batch we cannot read is reported, not raised
            out.append({"unreadable": f"{type(exc).__name__}"})
        if pos < len(buf):
            out.append({"partial_tail_bytes": "<partial>"})
        return out

    def batch(self, b: RecordBatch) -> dict:
        log_append = b.timestamp_type == 1
        return {
            "base_offset": b.base_offset, "batch_length": b.batch_length,
            "partition_leader_epoch": b.partition_leader_epoch, "magic": b.magic,
            "crc_ok": b.crc_valid(), "attributes": b.attributes, "last_offset_delta": b.last_offset_delta,
            "base_timestamp": "<time>" if log_append else b.base_timestamp,
            "max_timestamp": "<time>" if log_append else b.max_timestamp,
            "producer_id": b.producer_id if b.producer_id == -1 else self.ordinal("producer_id", b.producer_id),
            "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
            "record_count": b.record_count,
            "payload": bytes(b.buf[b.pos + 61:b.end]).hex() if not log_append else "<payload>",
        }


def error_name(code: int) -> str:
    try:
        return f"{code} {ErrorCode(code).name}"
    except ValueError:
        return str(code)


def _sort_key(item: dict):
    ident = tuple((k, str(item[k])) for k in KEY_FIELDS if k in item)
    return (ident, json.dumps(item, sort_keys=True, default=str))
