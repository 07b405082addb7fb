"""The corpora. ``FAMILIES`` lists every generated family in the order they run."""
from differential.cases import admin, data, groups, malformed, replay, txn

FAMILIES = [*admin.FAMILIES, *data.FAMILIES, *groups.FAMILIES, *txn.FAMILIES, *malformed.FAMILIES, *replay.FAMILIES]
