"""Suite-wide hooks."""
from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup``: send the tests of one ``xdist_group`` to one worker (the Spark
    tests share one SparkSession that way). pytest-xdist 3.8 marks them by rewriting
    ``item._nodeid``, which pytest 9.2 no longer reads (node ids live in ``item._id``), so the
    groups were silently ignored; this does the same marking where xdist's did not take."""
    if not getattr(config.option, "loadgroup", False):
        return
    _longest_first(items)
    for item in items:
        if "@" in item.nodeid:
            continue
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names:
            continue
        suffixed = f"{item.nodeid}@{'_'.join(names)}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId
            item._id = NodeId.parse(suffixed)
        else:
            item._nodeid = suffixed


# Where the long tests live (a Spark session, JVMs, three-node clusters waiting for failovers), longest
# first. xdist hands out work in collection order, so a 70 s chaos test or the Spark group's ~300 s
# collected last kept one worker busy while the others had finished: started first, the short tests
# fill in around them (make test's wall time, not its CPU).
LONG_FIRST = ("tests/spark/", "tests/replication/test_chaos", "tests/cli/test_compat_both.py",
              "tests/replication/", "tests/raft/", "tests/transactions/", "tests/integration/test_many_partitions.py",
              "tests/testing/", "tests/wire_diff/", "tests/share/test_share_java.py")


def _longest_first(items) -> None:
    def rank(item) -> int:
        path = item.nodeid
        return next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), len(LONG_FIRST))
    items.sort(key=rank)   # stable: a module's tests stay together and in order
