"""Certificates for TLS trials: a throw-away CA, a server and a client certificate (openssl).

The server settings are added to every cluster of an experiment that has a TLS trial, so TLS on
and off are client options on the same cluster. sysbench loads cacert.pem, client-cert.pem and
client-key.pem from its working directory (the endpoint's tls_dir).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

FILES = ("cacert.pem", "server-cert.pem", "server-key.pem", "client-cert.pem", "client-key.pem")


def server_settings(cert_dir: Path) -> dict[str, str]:
    return {
        "ssl_ca": str(cert_dir / "cacert.pem"),
        "ssl_cert": str(cert_dir / "server-cert.pem"),
        "ssl_key": str(cert_dir / "server-key.pem"),
    }


def ensure_certs(cert_dir: Path) -> Path:
    """Create the certificates once (10 years, RSA 2048); readable by mysqld (a lab, not production)."""
    if all((cert_dir / f).exists() for f in FILES):
        return cert_dir
    cert_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(cert_dir, 0o755)

    def run(*argv: str) -> None:
        subprocess.run(["openssl", *argv], cwd=cert_dir, check=True, capture_output=True, timeout=60)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "3650",
        "-subj",
        "/CN=clusterbench-ca",
        "-keyout",
        "ca-key.pem",
        "-out",
        "cacert.pem",
    )
    for who in ("server", "client"):
        run(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN=clusterbench-{who}",
            "-keyout",
            f"{who}-key.pem",
            "-out",
            f"{who}-req.pem",
        )
        run(
            "x509",
            "-req",
            "-in",
            f"{who}-req.pem",
            "-days",
            "3650",
            "-CA",
            "cacert.pem",
            "-CAkey",
            "ca-key.pem",
            "-set_serial",
            "01" if who == "server" else "02",
            "-out",
            f"{who}-cert.pem",
        )
    for f in FILES:
        os.chmod(cert_dir / f, 0o644)
    return cert_dir
