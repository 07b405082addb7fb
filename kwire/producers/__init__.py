"""Producer ids for idempotent producers: the durable block allocator and InitProducerId's
epoch rules (ids.py). Per-partition sequence state lives with the log (kwire.log.producer_state)."""
