"""A test's handle on the newest metadata image (images are immutable: each batch makes a new
one), read through as if it were the image."""
from __future__ import annotations

from kwire.metadata.delta import replay
from kwire.metadata.image import MetadataImage


class LiveImage:
    def __init__(self, image: MetadataImage | None = None) -> None:
        self.image = image if image is not None else MetadataImage()

    def replay(self, recs) -> MetadataImage:
        """Commit one batch of (message, record) pairs: the handle moves to the new image."""
        self.image = replay(self.image, recs)
        return self.image

    def __getattr__(self, name):
        return getattr(self.image, name)
