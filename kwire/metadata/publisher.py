"""Who hears of each new metadata image (Kafka's MetadataPublisher, and the publishing step
of its MetadataLoader).

Every committed batch of metadata records becomes a delta and a new image
(kwire.metadata.delta); the broker then hands both to each installed publisher, in the order
they were installed: the replica manager's publisher (roles, fetchers, logs), the
coordinators', the client quotas, the authorizer, the controller's wake-up. A publisher
reads what it needs from the delta (what changed) and the image (the state now); it never
writes to either.
"""
from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger("kwire.metadata.publisher")


class MetadataPublisher(Protocol):
    name: str

    def on_metadata_update(self, delta, image) -> None:
        """``delta`` (kwire.metadata.delta.MetadataDelta) made ``image``, now the broker's."""


class MetadataPublishers:
    """The installed publishers, called in order. A publisher that raises is logged and the
    others still run, as Kafka's loader does with its fault handler: one component's bug
    does not stop the metadata reaching the rest."""

    def __init__(self) -> None:
        self._publishers: list = []

    def install(self, publisher) -> None:
        if any(p.name == publisher.name for p in self._publishers):
            raise ValueError(f"a metadata publisher named {publisher.name} is installed already")
        self._publishers.append(publisher)

    def names(self) -> list[str]:
        return [p.name for p in self._publishers]

    def publish(self, delta, image) -> None:
        for p in self._publishers:
            try:
                p.on_metadata_update(delta, image)
            except Exception:   # noqa: BLE001 - Kafka's loader fault handler: logged, the rest go on
                log.exception("metadata publisher %s failed on the image at offset %d", p.name, image.offset)
