"""``kwire``: the command line. ``kwire serve`` runs a broker (kwire.cli.serve); ``kwire
topics|groups|configs|cluster|acls`` administer any Kafka cluster (kwire.admin).

Every mistake on the command line ends in one line on stderr naming it: exit code 2 for a
usage error (a bad flag, key or value), 1 for a runtime failure (a port in use, a data dir
that cannot be written, a broker that does not answer). Nothing heavy is imported before
the arguments are checked, so ``--help`` and usage errors are quick.
"""
from __future__ import annotations

import argparse
import os
import sys

from kwire import __version__
from kwire.cmdline import EXIT_RUNTIME, EXIT_USAGE, Parser, RuntimeFailure, UsageError, fail
from kwire.cli.serve import (add_serve_parser, config_from_args, exit_without_teardown,  # noqa: F401
                             plan_from_config, run_serve)

__all__ = ["main", "build_parser", "config_from_args", "plan_from_config"]

DESCRIPTION = """\
kwire: a Kafka broker in Python on Trio. Stock Kafka clients (Java, librdkafka, kafka-python,
aiokafka, KafkaJS, kcat) connect to it as to Apache Kafka."""

EPILOG = """\
Run 'kwire COMMAND --help' for a command's flags and examples. The admin commands (topics,
groups, configs, cluster, metadata-quorum, acls, leader-election) talk to any Kafka cluster, kwire or Apache Kafka:
--bootstrap-server HOST:PORT (default 127.0.0.1:9092). Errors are one line on stderr; exit
code 2 for a usage error, 1 for a failure."""


def build_parser(*, admin: bool = True) -> Parser:
    """The ``kwire`` parser; ``admin=False`` leaves the admin commands out (``kwire serve``
    needs only its own: building theirs imports kwire.admin, ~10 ms of a broker's start)."""
    p = Parser(prog="kwire", description=DESCRIPTION, epilog=EPILOG,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"kwire {__version__} (Python "
                   f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro})")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)
    add_serve_parser(sub)
    if not admin:
        return p
    try:
        from kwire.admin.cli import add_admin_parsers  # noqa: PLC0415 - start-up time: see the docstring
    except ImportError:   # pragma: no cover - the admin commands are part of kwire
        pass
    else:
        add_admin_parsers(sub)
    return p


def _dispatch(argv: list[str], whole_process: bool = False) -> int:
    parser = build_parser(admin=not argv or argv[0] != "serve")
    if not argv:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args, extra = parser.parse_known_args(argv)
    if extra:
        sub = parser._subparsers._group_actions[0].choices.get(args.cmd) if args.cmd else None  # noqa: SLF001
        (sub or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.cmd is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.cmd == "serve":
        rc = run_serve(args)
        if whole_process and rc == 0:
            exit_without_teardown(rc)
        return rc
    return args.run(args)


def main(argv: list[str] | None = None) -> int:
    whole_process = argv is None   # the program itself (console script, python -m kwire)
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _dispatch(argv, whole_process)
    except UsageError as exc:
        return fail(exc, EXIT_USAGE)
    except RuntimeFailure as exc:
        return fail(exc, EXIT_RUNTIME)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:   # `kwire topics --list | head`: the reader is gone; so is the output
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
