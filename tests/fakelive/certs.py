"""Throwaway TLS material for the fake Gemini Live server.

A tiny private CA signs one leaf certificate for ``localhost`` / ``127.0.0.1`` / ``::1``.
Clients trust *only* the CA file (``ca_path``), never the system store, so a test cannot
accidentally talk to a real endpoint. A CA + leaf pair (rather than one self-signed leaf) is
used because OpenSSL's strict verification mode (the default of ``ssl.create_default_context``
from Python 3.13 on) rejects self-signed leaves that lack CA extensions.

Keys are EC P-256: generating them takes milliseconds, so a test session can afford fresh ones.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TestCerts", "make_test_certs"]


@dataclass(frozen=True)
class TestCerts:
    """Paths of the generated PEM files and SSL contexts built from them."""

    # Not a pytest test class despite the name.
    __test__ = False

    directory: Path
    ca_path: Path
    """The CA certificate: what clients trust (``SSL_CERT_FILE``)."""
    cert_path: Path
    """The server's chain (leaf then CA), PEM."""
    key_path: Path
    """The server's private key, PEM, unencrypted."""

    def client_ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts only the throwaway CA (hostname checks stay on)."""
        return ssl.create_default_context(cafile=str(self.ca_path))

    def server_ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.cert_path), str(self.key_path))
        return ctx


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Lookout tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def make_test_certs(directory: Path | str | None = None) -> TestCerts:
    """Generate a CA and a ``127.0.0.1``/``localhost`` leaf and write them as PEM files.

    ``directory`` defaults to a fresh temporary directory; it is not removed automatically
    (pass pytest's ``tmp_path_factory`` directory to have pytest manage it).
    """
    out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="fakelive-"))
    out.mkdir(parents=True, exist_ok=True)
    # Backdate a little so a skewed clock between test processes cannot make it "not yet valid".
    now = dt.datetime.now(dt.UTC)
    not_before = now - dt.timedelta(hours=1)
    not_after = now + dt.timedelta(days=2)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Lookout fake Live test CA")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )

    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        # Hostname verification of an IP literal (https://127.0.0.1:PORT) matches only an
        # iPAddress SAN, never the CN or a DNS SAN.
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
                    x509.IPAddress(ipaddress.IPv6Address("::1")),
                ]
            ),
            critical=False,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(leaf_key.public_key()), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )

    pem = serialization.Encoding.PEM
    ca_path = out / "ca.pem"
    cert_path = out / "server-chain.pem"
    key_path = out / "server-key.pem"
    ca_path.write_bytes(ca_cert.public_bytes(pem))
    cert_path.write_bytes(leaf_cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    key_path.write_bytes(
        leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return TestCerts(directory=out, ca_path=ca_path, cert_path=cert_path, key_path=key_path)
