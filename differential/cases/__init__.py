"""The corpora. ``FAMILIES`` lists every generated family in the order they run (the secured ones
run on their own pair, after the others)."""
from differential.cases import admin, data, groups, malformed, replay, secured, txn

FAMILIES = [*admin.FAMILIES, *data.FAMILIES, *groups.FAMILIES, *txn.FAMILIES, *malformed.FAMILIES, *replay.FAMILIES,
            *secured.FAMILIES]
