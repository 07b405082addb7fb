"""The admin subcommands' parsers, for kwire.cli."""
from __future__ import annotations


def add_admin_parsers(sub) -> None:
    from kwire.admin import acls, cluster, configs, groups, leader_election, topics  # noqa: PLC0415

    for mod in (topics, groups, configs, cluster, acls, leader_election):
        mod.add_parser(sub)
