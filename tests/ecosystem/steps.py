"""``SideSteps``: test_kafka_tools.Steps over two conftest ``Side`` objects (placeholders beyond "{B}",
more than one address per cluster, masks of a test's own), for the secured and three-node pairs."""
from __future__ import annotations

import re

from tests.ecosystem.conftest import run_tools
from tests.ecosystem.test_kafka_tools import _POOL, Steps, _masked


class SideSteps(Steps):
    """As Steps; each command's placeholders are filled from the side's ``subs``; every loopback
    address (``127.0.0.1:port``: brokers, controllers) becomes ``<addr>`` and each placeholder's value
    its placeholder; ``masks`` are more (pattern, replacement) pairs applied after."""

    def __init__(self, sides, masks=(), post=None):
        super().__init__(sides)
        self.sides = sides
        self.masks = list(masks)
        self.post = post            # a last text -> text step (e.g. acl_blocks_sorted)

    def mask(self, text: str, side) -> str:
        text = _masked(text, side.bootstrap)
        for k, v in side.subs.items():
            if k != "{B}":
                text = text.replace(v, k)
        text = re.sub(r"\b127\.0\.0\.1:\d+\b", "<addr>", text)
        text = re.sub(r"\blocalhost:\d+\b", "<addr>", text)
        text = re.sub(r'"/tmp/[^"]*"', '"<dir>"', text)              # each cluster's data dirs
        for pattern, repl in self.masks:
            text = re.sub(pattern, repl, text, flags=re.M)
        return self.post(text) if self.post else text

    def results(self) -> tuple[list, list]:
        def one(side):
            cmds = [tuple(side.fill(a) for a in cmd) for _, cmd, _ in self.steps]
            return [(rc, self.mask(out, side), self.mask(err, side)) for rc, out, err in run_tools(cmds)]
        futures = [_POOL.submit(one, s) for s in self.sides]
        return futures[0].result(), futures[1].result()


def acl_blocks_sorted(text: str) -> str:
    """kafka-acls prints ACLs resource by resource from Java hash sets and maps whose order follows
    enum identity hash codes, so it changes from one JVM to the next: each resource's block (its
    "... ACLs for resource `...`:" line and the ACL lines under it) gets its ACL lines sorted and the
    blocks are sorted; other lines (e.g. "ACLs for principal `User:alice`") stay first, in order.
    The first ACL line's leading space is the tool's own too."""
    preface, blocks = [], []
    for line in text.splitlines():
        entry = line.lstrip(" ")
        if entry.startswith("\t("):
            blocks[-1][1].append(entry) if blocks else preface.append(entry)
        elif " ACLs for resource `" in line:
            blocks.append((line.rstrip(), []))
        elif line.strip():
            preface.append(line)
    out = preface + ["\n".join([head, *sorted(entries)]) for head, entries in sorted(blocks)]
    return "\n\n".join(out)
