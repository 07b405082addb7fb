"""Cluster metadata: records shaped like KRaft's, and the image built by replaying them."""
