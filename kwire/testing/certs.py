"""A throwaway certificate authority for tests: a CA, a server certificate for the broker
(subjectAltName localhost / 127.0.0.1 / ::1) and client certificates, written as PEM files
in the shapes Kafka's ``ssl.keystore.type=PEM`` reads (certificate chain + private key in
one file) and clients read (``ssl.ca.location`` / ``ssl_cafile``, ``ssl.certificate.location``
+ ``ssl.key.location``).

Needs the ``cryptography`` package (``pip install 'kwire[testing]'``). EC P-256 keys: quick to make.
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
import os
from dataclasses import dataclass

__all__ = ["CertificateAuthority", "Issued", "require_cryptography"]


def require_cryptography() -> None:
    """A secured test broker makes its certificates with ``cryptography``, which plain
    ``pip install kwire`` does not bring: say which extra does, in one line."""
    try:
        import cryptography  # noqa: F401, PLC0415 - optional dependency: cryptography
    except ImportError:
        raise ModuleNotFoundError(
            "kwire.testing: a TLS or SASL test broker needs the 'cryptography' package: "
            "pip install 'kwire[testing]'", name="cryptography") from None


@dataclass(frozen=True)
class Issued:
    """Files of one issued certificate."""
    cert: str         # the certificate (PEM)
    key: str          # its private key (PEM; encrypted when a password was given)
    keystore: str     # certificate chain + private key in one PEM file (Kafka's PEM keystore)
    password: str | None
    subject: str      # RFC 4514 subject, e.g. "CN=alice,O=kwire-test"


class CertificateAuthority:
    """A CA whose files live in ``directory`` (created if need be)."""

    def __init__(self, directory: str, name: str = "kwire test CA"):
        require_cryptography()
        from cryptography import x509  # noqa: PLC0415 - optional dependency: cryptography
        from cryptography.hazmat.primitives import hashes  # noqa: PLC0415 - optional dependency: cryptography
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415 - optional dependency: cryptography
        from cryptography.x509.oid import NameOID  # noqa: PLC0415 - optional dependency: cryptography

        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = _dt.datetime.now(_dt.timezone.utc)
        self._cert = (x509.CertificateBuilder().subject_name(self._name).issuer_name(self._name)
                      .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
                      .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=2))
                      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                      .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                   key_encipherment=False, data_encipherment=False,
                                                   key_agreement=False, key_cert_sign=True, crl_sign=True,
                                                   encipher_only=False, decipher_only=False), critical=True)
                      .sign(self._key, hashes.SHA256()))
        self.ca_file = os.path.join(directory, "ca.pem")
        with open(self.ca_file, "wb") as f:
            f.write(self._pem(self._cert))

    @staticmethod
    def _pem(cert) -> bytes:
        from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - optional dependency: cryptography
        return cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, *, server: bool = False, password: str | None = None,
              organization: str | None = None, file_name: str | None = None, client: bool | None = None) -> Issued:
        """A certificate for ``common_name``: a server one (serverAuth, SANs for this machine)
        or a client one (clientAuth); both with ``server=True, client=True`` (a broker's
        certificate on mutual-TLS inter-broker and controller listeners: it serves and connects)."""
        from cryptography import x509  # noqa: PLC0415 - optional dependency: cryptography
        from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415 - optional dependency: cryptography
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415 - optional dependency: cryptography
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: PLC0415 - optional dependency: cryptography

        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        subject = x509.Name(attrs)
        now = _dt.datetime.now(_dt.timezone.utc)
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(self._name).public_key(key.public_key())
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage(
                 ([ExtendedKeyUsageOID.SERVER_AUTH] if server else [])
                 + ([ExtendedKeyUsageOID.CLIENT_AUTH] if (client if client is not None else not server) else [])),
                 critical=False))
        if server:
            b = b.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.DNSName(common_name),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("::1"))]),
                critical=False)
        cert = b.sign(self._key, hashes.SHA256())
        enc = (serialization.BestAvailableEncryption(password.encode()) if password
               else serialization.NoEncryption())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)
        base = os.path.join(self.directory, file_name or common_name.replace("/", "_").replace(" ", "_"))
        paths = (base + ".crt.pem", base + ".key.pem", base + ".keystore.pem")
        with open(paths[0], "wb") as f:
            f.write(self._pem(cert))
        with open(paths[1], "wb") as f:
            f.write(key_pem)
        with open(paths[2], "wb") as f:
            f.write(self._pem(cert) + self._pem(self._cert) + key_pem)
        return Issued(paths[0], paths[1], paths[2], password, subject.rfc4514_string())
