"""The admin subcommands' parsers, for kwire.cli."""
from __future__ import annotations

from kwire.admin import acls, cluster, configs, groups, leader_election, topics


def add_admin_parsers(sub) -> None:
    for mod in (topics, groups, configs, cluster, acls, leader_election):
        mod.add_parser(sub)
