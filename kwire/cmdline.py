"""Command-line plumbing shared by every ``kwire`` command (kwire.cli and the admin commands of
kwire.admin, below it): one-line usage errors (exit 2), runtime errors (exit 1), and near-miss
suggestions."""
from __future__ import annotations

import argparse
import sys

__all__ = ["UsageError", "RuntimeFailure", "Parser", "suggest", "fail", "EXIT_USAGE", "EXIT_RUNTIME"]

EXIT_RUNTIME, EXIT_USAGE = 1, 2


class UsageError(Exception):
    """A bad flag, config key or value: printed as one line, exit code 2."""


class RuntimeFailure(Exception):
    """The command was well formed but could not be done (a port in use, a data dir that
    cannot be written, a broker that does not answer): one line, exit code 1."""


def suggest(word: str, choices, cutoff: float = 0.8) -> str | None:
    """The closest of ``choices`` to ``word`` (a typo's intended spelling), or None."""
    import difflib  # noqa: PLC0415 - only on a mistake; kwire serve's start does without it

    got = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return got[0] if got else None


# flags people try first, from other brokers' command lines
_KNOWN_MISTAKES = {"--port": "--listen HOST:PORT or --listen PORT", "--host": "--listen HOST:PORT",
                   "--bind": "--listen HOST:PORT", "--listeners": "--listen NAME://HOST:PORT",
                   "--log-dir": "--data-dir", "--log-dirs": "--data-dir", "--broker-id": "--node-id",
                   "--bootstrap-servers": "--bootstrap-server"}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: ``PROG: error: MESSAGE (hint)``, exit 2."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        hint = ""
        if message.startswith("unrecognized arguments:"):
            first = message.split(":", 1)[1].split()[0] if message.split(":", 1)[1].split() else ""
            flag = first.split("=", 1)[0]
            options = [o for a in self._actions for o in a.option_strings]
            if flag in _KNOWN_MISTAKES:
                hint = f"; use {_KNOWN_MISTAKES[flag]}"
            elif flag.startswith("-") and (near := suggest(flag, options, 0.7)):
                hint = f"; did you mean {near}?"
        raise UsageError(f"{self.prog}: {message}{hint} (see '{self.prog} --help')")


def fail(exc: BaseException, code: int) -> int:
    print(f"kwire: {exc}" if not str(exc).startswith("kwire") else str(exc), file=sys.stderr)
    return code
