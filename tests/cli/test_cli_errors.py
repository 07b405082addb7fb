"""Every mistake on ``kwire``'s command line ends in one line on stderr naming the problem:
exit code 2 for usage errors, 1 for runtime failures (subprocesses, as a user runs it)."""
from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys

import pytest

from kwire.cmdline import RuntimeFailure

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")


def kwire(*argv: str, timeout: float = 30, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kwire", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)


def one_line(proc: subprocess.CompletedProcess) -> str:
    """The error: stderr without log lines must be exactly one line."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not LOG_LINE.match(ln)]
    assert len(lines) == 1, proc.stderr
    return lines[0]


USAGE_CASES = [
    (["serve", "--port", "1"], ["unrecognized arguments: --port 1", "--listen"]),
    (["serve", "--lisen", "9092"], ["did you mean --listen?"]),
    (["serve", "--override", "num.partitions=three"], ["Invalid value three for configuration num.partitions",
                                                        "--override"]),
    (["serve", "--override", "auto.create.topics.enable=maybe"], ["auto.create.topics.enable", "true or false"]),
    (["serve", "--override", "num.partiton=3"], ["unknown config key 'num.partiton'", "did you mean num.partitions?"]),
    (["serve", "--override", "retention.ms=1000"], ["unknown config key 'retention.ms'", "log.retention.ms"]),
    (["serve", "--override", "novalue"], ["--override needs KEY=VALUE"]),
    (["serve", "--log-level", "LOUD"], ["--log-level 'LOUD' is not a log level", "DEBUG, INFO"]),
    (["serve", "--log-level", "inf"], ["did you mean INFO?"]),
    (["serve", "--config", "/nonexistent/server.properties"], ["--config /nonexistent/server.properties",
                                                               "No such file"]),
    (["serve", "--listen", "127.0.0.1:abc"], ["--listen '127.0.0.1:abc'", "'abc' is not a number"]),
    (["serve", "--listen", "99999"], ["port 99999 is out of range"]),
    (["serve", "--listen", "SSL://127.0.0.1:9093"], ["SSL://127.0.0.1:9093", "ssl.keystore.location"]),
    (["serve", "--controller-quorum-voters", "1@127.0.0.1"], ["'1@127.0.0.1' is not ID@HOST:PORT",
                                                              "1@127.0.0.1:9093"]),
    (["serve", "--controller-quorum-voters", "1@127.0.0.1:9093,2@127.0.0.1"], ["'2@127.0.0.1'"]),
    (["serve", "--node-id", "one"], ["Invalid value one for configuration node.id", "--node-id"]),
    (["serve", "--node-id", "-1"], ["node.id", "at least 0"]),
    (["serve", "--advertised-listener", "9092"], ["needs a host"]),
    (["topic"], ["invalid choice: 'topic'"]),
    # the links between nodes (kwire.security.peers): Kafka's checks, one line each
    (["serve", "--controller-quorum-voters", "1@127.0.0.1:19093,2@127.0.0.1:19193", "--controller-listen",
      "127.0.0.1:19093", "--override", "inter.broker.listener.name=PLAINTEXT", "--override",
      "security.inter.broker.protocol=PLAINTEXT"], ["Only one of inter.broker.listener.name and "
                                                    "security.inter.broker.protocol"]),
    (["serve", "--controller-quorum-voters", "1@127.0.0.1:19093,2@127.0.0.1:19193", "--controller-listen",
      "127.0.0.1:19093", "--override", "inter.broker.listener.name=REPLICATION"],
     ["inter.broker.listener.name=REPLICATION", "valid options", "PLAINTEXT"]),
    (["serve", "--controller-quorum-voters", "1@127.0.0.1:19093,2@127.0.0.1:19193", "--override",
      "controller.listener.names=CONTROLLER"], ["controller.listener.names=CONTROLLER must name one of the "
                                                "listeners", "CONTROLLER://HOST:PORT"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv,words", USAGE_CASES, ids=[" ".join(a) for a, _ in USAGE_CASES])
def test_usage_errors_exit_2_with_one_line(argv, words, tmp_path):
    proc = kwire(*argv, "--data-dir", str(tmp_path / "d")) if argv[0] == "serve" else kwire(*argv)
    line = one_line(proc)
    assert proc.returncode == 2, proc.stderr
    assert all(w in line for w in words), line
    assert not (tmp_path / "d").exists()        # nothing was started or created


@pytest.mark.slow
def test_no_arguments_prints_help():
    proc = kwire()
    assert proc.returncode == 2
    assert "usage: kwire" in proc.stderr and "serve" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_version():
    import kwire as pkg

    proc = kwire("--version")
    assert proc.returncode == 0 and proc.stdout.startswith(f"kwire {pkg.__version__} ")


@pytest.mark.slow
def test_serve_help_explains_every_flag():
    proc = kwire("serve", "--help")
    assert proc.returncode == 0
    out = proc.stdout
    for flag in ("--listen", "--advertised-listener", "--data-dir", "--config", "--override", "--node-id",
                 "--controller-listen", "--controller-quorum-voters", "--log-level"):
        assert flag in out
    for words in ("node.id", "PLAINTEXT://:9092", "DEBUG, INFO", "every interface", "Exit codes"):
        assert words in out, words


@pytest.mark.slow
def test_data_dir_that_is_a_file(tmp_path):
    f = tmp_path / "data"
    f.write_text("x")
    proc = kwire("serve", "--listen", "127.0.0.1:0", "--data-dir", str(f))
    assert proc.returncode == 1
    assert one_line(proc) == f"kwire: data dir {f} is a file, not a directory; choose another --data-dir"


@pytest.mark.slow
def test_data_dir_under_a_file(tmp_path):
    f = tmp_path / "data"
    f.write_text("x")
    proc = kwire("serve", "--listen", "127.0.0.1:0", "--data-dir", str(f / "sub"))
    assert proc.returncode == 1 and "a part of the path is a file" in one_line(proc)


def test_read_only_data_dir_is_named(tmp_path, monkeypatch):
    """(In process: a read-only file system needs a mount the test cannot make.)"""
    from kwire.cli import serve

    def read_only(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(serve.os, "makedirs", read_only)
    with pytest.raises(RuntimeFailure) as ei:
        serve.check_data_dir(str(tmp_path / "d"))
    assert str(ei.value) == f"kwire: cannot create data dir {tmp_path / 'd'}: read-only file system " \
                            f"(choose a --data-dir on a writable disk)"


@pytest.mark.slow
def test_port_in_use_names_the_address(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = kwire("serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 1
    assert one_line(proc) == (f"kwire: cannot listen on 127.0.0.1:{port} (client listener): the address is already "
                              f"in use (another broker or program listens there; stop it or choose another port)")


@pytest.mark.slow
def test_unresolvable_host(tmp_path):
    proc = kwire("serve", "--listen", "no-such-host.invalid:9092", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 1 and "host 'no-such-host.invalid' does not resolve" in one_line(proc)


@pytest.mark.slow
def test_data_dir_in_use_by_another_broker(tmp_path):
    from kwire.testing import Broker

    with Broker(data_dir=str(tmp_path / "d")):
        proc = kwire("serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 1 and "is in use by another kwire broker" in one_line(proc)
