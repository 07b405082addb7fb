"""The corpora. ``FAMILIES`` lists every generated family in the order they run."""
from differential.cases import admin, data, groups, malformed, txn

FAMILIES = [*admin.FAMILIES, *data.FAMILIES, *groups.FAMILIES, *txn.FAMILIES, *malformed.FAMILIES]
