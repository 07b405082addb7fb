"""Security settings a user gets wrong, run as a user runs them (``python -m kwire serve``):
each ends the start with one line on stderr naming the key or file and the fix, exit code 2
for a usage error (the command line or config says something that cannot hold), 1 for a
runtime one (a keystore file that cannot be read as configured). Nothing is served."""
from __future__ import annotations

import pytest

from kwire.testing import Broker, free_port
from tests.cli.test_cli_errors import kwire, one_line

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


# ---------------------------------------------------------------------------- listeners
def test_listen_flag_and_listeners_key_naming_another_protocol_are_refused(tmp_path):
    """`--listen 127.0.0.1:P` is a PLAINTEXT listener; listeners=SASL_PLAINTEXT://... asks for
    SASL on the same port. It used to serve PLAINTEXT (anyone connected as ANONYMOUS)."""
    port = free_port()
    proc = kwire("serve", "--listen", f"127.0.0.1:{port}", "--override", f"listeners=SASL_PLAINTEXT://127.0.0.1:{port}",
                 "--override", f"sasl.jaas.config={JAAS}", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 2, proc.stderr
    assert one_line(proc) == (
        f"kwire serve: --listen 127.0.0.1:{port} (a PLAINTEXT listener) and listeners=SASL_PLAINTEXT://127.0.0.1:"
        f"{port} (set by --override) name different listeners; write --listen SASL_PLAINTEXT://127.0.0.1:{port} "
        f"to move SASL_PLAINTEXT, or give only one of them")
    assert not (tmp_path / "d").exists()


def test_listen_flag_against_server_properties_names_the_file(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("listeners=SSL://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094\ncontroller.listener.names=CONTROLLER\n")
    proc = kwire("serve", "--config", str(props), "--listen", "PLAINTEXT://127.0.0.1:19093",
                 "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc)
    assert line.startswith("kwire serve: --listen PLAINTEXT://127.0.0.1:19093 and listeners=SSL://127.0.0.1:9093 "
                           f"(in {props}) name different listeners"), line
    assert "--listen SSL://127.0.0.1:19093" in line


def test_harness_refuses_a_listeners_override_it_would_not_serve(tmp_path):
    port = free_port()
    with pytest.raises(ValueError, match=r"disagrees with the harness's listener PLAINTEXT://127\.0\.0\.1:\d+ .*"
                                         r"Broker\(security='SASL_PLAINTEXT', host='127\.0\.0\.1', port=\d+\)"):
        Broker(port=port, overrides={"listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}"})
    # the same listener the harness opens anyway is accepted (and left to the harness)
    assert "listeners" not in Broker(port=port, data_dir=str(tmp_path),
                                        overrides={"listeners": f"PLAINTEXT://127.0.0.1:{port}"}).overrides
