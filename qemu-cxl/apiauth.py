#!/usr/bin/env python3
"""TLS and bearer tokens for the memory-server daemon's API, as the tests and the e2e runs use them
(docs/daemon-api.md "TLS"). Stdlib + the `openssl` command (Debian `openssl`,
installed by `make daemon`).

`Pki` is a throw-away certificate authority made for tests with the openssl CLI: a CA, a server
certificate for 127.0.0.1/localhost, client certificates (subject CN = caller, O = role), and a
second, unrelated CA for negative controls. `ApiAuth` is one daemon's credentials: the Pki's
server certificate, a fresh random bearer token per role in a `--token-file`, and, for a client,
the TLS context trusting the CA and the token each call needs: object-manager for registration
(POST /v1/objects), failure-detector for fence and rejoin, reader for the rest (the roles of
schema/controlplane.yaml, x-apta-roles).

For a deployment the same shapes apply with a real CA: the daemon's certificate must name the
address the clients dial (subjectAltName), and each caller gets its own token (or certificate).
"""
from __future__ import annotations

import copy
import os
import re
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

from apta.paths import ROOT

PKI_DIR = ROOT / "build" / "qemu-cxl" / "tls"
DAYS = 30                          # validity; a Pki older than DAYS - 1 days is made again
ROLES = ("reader", "failure-detector", "object-manager", "compute-server", "kubelet")
# the caller a test makes for each role (a compute-server token names its server)
CALLERS = {"reader": "scheduler", "failure-detector": "failure-detector", "object-manager": "object-manager",
           "compute-server": "guest-cs1", "kubelet": "kubelet-cs1"}


class PkiError(RuntimeError):
    pass


def _openssl(*args: str, cwd: Path):
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise PkiError(f"openssl {' '.join(args[:2])}: {r.stderr.strip()[-800:]}")


def _key_and_csr(cwd: Path, name: str, subj: str):
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subj, cwd=cwd)


def _sign(cwd: Path, name: str, ca: str, serial: int, ext: str):
    (cwd / f"{name}.ext").write_text(ext)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-set_serial", str(serial),
             "-days", str(DAYS), "-sha256", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=cwd)


def _ca(cwd: Path, name: str, cn: str):
    _openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", str(DAYS), "-sha256", "-subj", f"/CN={cn}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=cwd)


SERVER_EXT = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
              "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
CLIENT_EXT = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"


class Pki:
    """The test CA and its certificates in `dir` (build/qemu-cxl/tls/ by default), made once and
    reused while valid: ca.pem/ca.key, server.pem/server.key (127.0.0.1, localhost),
    client-<role>.pem/.key (CN = CALLERS[role], O = role; client-admin: O = admin, no role),
    other-ca.pem and other-server.pem/.key (a server certificate of another CA: a client trusting
    ca.pem must refuse it), client-other.pem/.key (a client certificate of the other CA)."""

    def __init__(self, dir: Path = PKI_DIR):
        self.dir = Path(dir)
        if not self._fresh():
            self._make()

    def path(self, name: str) -> Path:
        return self.dir / name

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    def client(self, role: str) -> tuple[Path, Path]:
        return self.dir / f"client-{role}.pem", self.dir / f"client-{role}.key"

    def _fresh(self) -> bool:
        stamp = self.dir / "made"
        try:
            return time.time() - float(stamp.read_text()) < (DAYS - 1) * 86400
        except (OSError, ValueError):
            return False

    def _make(self):
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tls-", dir=self.dir.parent))
        try:
            _ca(tmp, "ca", "apta test CA")
            _key_and_csr(tmp, "server", "/CN=apta-memd")
            _sign(tmp, "server", "ca", 2, SERVER_EXT)
            for i, role in enumerate((*ROLES, "admin")):
                _key_and_csr(tmp, f"client-{role}", f"/O={role}/CN={CALLERS.get(role, 'intruder')}")
                _sign(tmp, f"client-{role}", "ca", 10 + i, CLIENT_EXT)
            _ca(tmp, "other-ca", "another CA")
            _key_and_csr(tmp, "other-server", "/CN=apta-memd")
            _sign(tmp, "other-server", "other-ca", 2, SERVER_EXT)
            _key_and_csr(tmp, "client-other", "/O=failure-detector/CN=failure-detector")
            _sign(tmp, "client-other", "other-ca", 3, CLIENT_EXT)
            for p in tmp.iterdir():
                if p.suffix in (".csr", ".ext", ".srl"):
                    p.unlink()
                else:
                    p.chmod(0o600)
            (tmp / "made").write_text(f"{time.time():.0f}\n")
            if self.dir.exists():                      # stale: replaced whole
                shutil.rmtree(self.dir, ignore_errors=True)
            try:
                os.rename(tmp, self.dir)
            except OSError:                            # another process made it meanwhile
                if not self._fresh():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def role_for(method: str, path: str) -> str:
    """The role a call needs (controlplane.yaml x-apta-roles, as the daemon enforces them)."""
    p = path.split("?")[0]
    if method == "POST" and p in ("/v1/objects", "/v1/cancel"):
        return "object-manager"
    if method == "POST" and re.fullmatch(r"/v1/servers/[^/]+/(fence|rejoin)", p):
        return "failure-detector"
    return "reader"


class ApiAuth:
    """One daemon's API credentials: TLS with the Pki's server certificate (or `server` =
    "other" for a negative control: a certificate of another CA), a random token per role in
    `dir`/tokens.csv, optionally client certificates (`client_ca`). `daemon_args()` are the
    daemon's flags; `context()` and `header()` are a client's side."""

    def __init__(self, dir: Path, pki: Pki | None = None, server: str = "server", client_ca: bool = False):
        self.pki = pki or Pki()
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.server, self.client_ca = server, client_ca
        self.trust = self.pki.ca                     # the CA a client of ours trusts
        self.tokens = {r: secrets.token_hex(24) for r in ROLES}
        self.token_file = self.dir / "tokens.csv"
        self.token_file.write_text("# token,name,role[,server]: written by qemu-cxl/apiauth.py\n" + "".join(
            f"{tok},{CALLERS[r]},{r}{',cs1' if r in ('compute-server', 'kubelet') else ''}\n" for r, tok in self.tokens.items()))
        self.token_file.chmod(0o600)
        for r in ("reader", "failure-detector", "object-manager"):    # one file per caller, as a mounted Secret
            f = self.token_path(r)
            f.write_text(self.tokens[r] + "\n")
            f.chmod(0o600)

    def token_path(self, role: str) -> Path:
        return self.dir / f"token-{role}"

    def daemon_args(self) -> list[str]:
        a = ["--tls-cert-file", str(self.pki.path(f"{self.server}.pem")),
             "--tls-private-key-file", str(self.pki.path(f"{self.server}.key")), "--token-file", str(self.token_file)]
        return a + (["--client-ca-file", str(self.pki.ca)] if self.client_ca else [])

    def context(self, cert_role: str | None = None) -> ssl.SSLContext:
        """A client's TLS context: trusts only the test CA, TLS 1.2+, checks the name
        (127.0.0.1); with `cert_role`, presents that role's client certificate."""
        ctx = ssl.create_default_context(cafile=str(self.trust))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if cert_role:
            cert, key = self.pki.client(cert_role)
            ctx.load_cert_chain(str(cert), str(key))
        return ctx

    def variant(self, trust: Path | None = None, tokens: dict | None = None) -> "ApiAuth":
        """A client's credentials gone wrong, for negative controls: another CA trusted, or
        other tokens for some roles (the daemon's token file is not touched)."""
        v = copy.copy(self)
        v.trust = Path(trust) if trust else self.trust
        v.tokens = {**self.tokens, **(tokens or {})}
        return v

    def header(self, method: str, path: str) -> dict:
        return {"Authorization": "Bearer " + self.tokens[role_for(method, path)]}


def wrong_credentials(auth: ApiAuth) -> list[tuple[str, ApiAuth | None, str]]:
    """The negative controls of a client of `auth`'s daemon: (case, credentials, what the
    refusal says): tokens the daemon never issued (401), a CA other than the one that signed its
    certificate (the client refuses the certificate), no TLS at all (the daemon's 400)."""
    return [("wrong token", auth.variant(tokens={r: "not-the-daemon-token-0123456789" for r in auth.tokens}), "HTTP 401"),
            ("wrong CA", auth.variant(trust=auth.pki.path("other-ca.pem")), "CERTIFICATE_VERIFY_FAILED"),
            ("plain HTTP", None, "HTTP 400")]
