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
@pytest.mark.slow
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


@pytest.mark.slow
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


# ---------------------------------------------------------------------------- TLS keystores
@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from kwire.testing.certs import CertificateAuthority

    d = tmp_path_factory.mktemp("tls")
    ca = CertificateAuthority(str(d))
    return d, ca.issue("localhost", server=True, password="key-secret", file_name="enc"), \
        ca.issue("localhost", server=True, file_name="plain")


def _serve_ssl(tmp_path, keystore: str, *overrides: str):
    port = free_port()
    args = ["serve", "--listen", f"SSL://127.0.0.1:{port}", "--override", "ssl.keystore.type=PEM",
            "--override", f"ssl.keystore.location={keystore}", "--data-dir", str(tmp_path / "d")]
    for o in overrides:
        args += ["--override", o]
    return port, kwire(*args, timeout=20)


@pytest.mark.slow
def test_encrypted_key_without_password_fails_instead_of_prompting(tmp_path, certs):
    _, enc, _ = certs
    port, proc = _serve_ssl(tmp_path, enc.keystore)
    assert proc.returncode == 1, proc.stderr
    assert one_line(proc) == (f"kwire: listener SSL://127.0.0.1:{port} (SSL): the private key in the TLS keystore "
                              f"{enc.keystore} is encrypted and ssl.key.password is not set; set ssl.key.password "
                              f"to its pass phrase")


@pytest.mark.slow
def test_encrypted_key_never_prompts_on_a_terminal(tmp_path, certs):
    """OpenSSL asks for the pass phrase on the controlling terminal when no password is given:
    kwire serve then waits for ever. Run it with a terminal of its own."""
    import os
    import pty
    import subprocess
    import sys

    _, enc, _ = certs
    leader, follower = pty.openpty()
    try:
        argv = [sys.executable, "-m", "kwire", "serve", "--listen", f"SSL://127.0.0.1:{free_port()}",
                "--override", "ssl.keystore.type=PEM", "--override", f"ssl.keystore.location={enc.keystore}",
                "--data-dir", str(tmp_path / "d")]
        # a new session whose controlling terminal is the pty (set in the child, then exec: no preexec_fn)
        become = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
                  "os.execv(sys.argv[1], sys.argv[1:])")
        proc = subprocess.Popen([sys.executable, "-c", become, *argv], stdin=follower, stdout=follower,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 1 and "ssl.key.password is not set" in err.decode(), err


@pytest.mark.slow
def test_wrong_key_password_names_the_file(tmp_path, certs):
    _, enc, _ = certs
    port, proc = _serve_ssl(tmp_path, enc.keystore, "ssl.key.password=not-it")
    assert proc.returncode == 1, proc.stderr
    assert one_line(proc) == (f"kwire: listener SSL://127.0.0.1:{port} (SSL): ssl.key.password does not decrypt the "
                              f"private key in the TLS keystore {enc.keystore}; set ssl.key.password to the key's "
                              f"pass phrase")


@pytest.mark.slow
def test_keystore_without_a_key_names_the_file(tmp_path, certs):
    _, _, plain = certs
    port, proc = _serve_ssl(tmp_path, plain.cert)       # the certificate alone
    assert proc.returncode == 1, proc.stderr
    assert one_line(proc) == (f"kwire: listener SSL://127.0.0.1:{port} (SSL): the TLS keystore {plain.cert} has no "
                              f"private key; ssl.keystore.location needs the certificate chain and the private key "
                              f"in one PEM file")


def test_keystore_unit_cases(certs):
    """The messages of kwire.security.tls.load_keystore, without a process."""
    import ssl

    from kwire.security.tls import KeystoreError, load_keystore

    d, enc, plain = certs
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with pytest.raises(KeystoreError, match="has no certificate; ssl.keystore.location needs"):
        load_keystore(ctx, plain.key, None)
    mixed = d / "mixed.pem"
    mixed.write_text(open(plain.cert).read() + open(enc.key).read())
    with pytest.raises(KeystoreError, match="does not belong to its first certificate"):
        load_keystore(ctx, str(mixed), "key-secret")
    with pytest.raises(KeystoreError, match=r"cannot read the TLS keystore /nonexistent\.pem: No such file"):
        load_keystore(ctx, "/nonexistent.pem", None)
    load_keystore(ctx, enc.keystore, "key-secret")        # the right password
    load_keystore(ctx, plain.keystore, None)              # no password needed


# ---------------------------------------------------------------------------- JAAS
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
JAAS_CASES = [
    (f'{PLAIN} user_alice="alice-secret";',
     "sasl.jaas.config: Invalid login module control flag 'user_alice' in JAAS config (after the class name write "
     "required, requisite, sufficient or optional)"),
    (f'{PLAIN} required user_alice="alice-secret"',
     "sasl.jaas.config: JAAS config entry not terminated by semi-colon (end it with ;)"),
    (f'{SCRAM} required user_alice="alice-secret";',
     f"sasl.jaas.config: {SCRAM} does not serve PLAIN (PLAIN's users are the user_NAME options of {PLAIN}); write "
     f"that class, or leave PLAIN out of sasl.enabled.mechanisms"),
    (f'{PLAIN[:-1]} required user_alice="alice-secret";',
     f"sasl.jaas.config: No LoginModule found for {PLAIN[:-1]}; did you mean {PLAIN}?"),
]


@pytest.mark.slow
@pytest.mark.parametrize("jaas,error", JAAS_CASES, ids=["no flag", "no semicolon", "scram for plain", "misspelt"])
def test_malformed_jaas_is_refused(tmp_path, jaas, error):
    port = free_port()
    proc = kwire("serve", "--listen", f"SASL_PLAINTEXT://127.0.0.1:{port}", "--override", "sasl.enabled.mechanisms=PLAIN",
                 "--override", f"sasl.jaas.config={jaas}", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 2, proc.stderr
    assert one_line(proc) == f"kwire serve: listener SASL_PLAINTEXT://127.0.0.1:{port} (SASL_PLAINTEXT): {error}"
    assert not (tmp_path / "d").exists()


@pytest.mark.slow
def test_malformed_jaas_of_a_listener_and_mechanism_names_its_key(tmp_path):
    port = free_port()
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    proc = kwire("serve", "--listen", f"SASL_PLAINTEXT://127.0.0.1:{port}", "--override", "sasl.enabled.mechanisms=PLAIN",
                 "--override", f"{key}={PLAIN} required user_alice;", "--data-dir", str(tmp_path / "d"))
    assert proc.returncode == 2, proc.stderr
    assert one_line(proc).endswith(f"{key}: Value not specified for key 'user_alice' in JAAS config "
                                   f"(write user_alice=\"VALUE\")")
