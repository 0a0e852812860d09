"""Toxiproxy in front of each broker's client listener: the way to add latency on a kernel without netem.

A broker of a cluster with client proxies advertises its proxy's port, so every client connection (after
the bootstrap, which goes to the proxy too) passes through it; replication and the controller quorum use
listeners of their own and are not delayed. Toxiproxy (Shopify's, a Go module) is built once with
``go install`` into the cache and runs as a child process of the harness on 127.0.0.1, marked with its
owner like every child, so a crashed run's server is reaped at the next start.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache import build_lock
from ..children import child_env, die_with_parent
from ..errors import ConfigError, ImageBuildError, TestbedError
from ..service import Service
from ..settings import settings
from ..waits import wait_until

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY_VERSION = "v2.5.0"  # the newest the Go module proxy serves here
LATENCY_TOXIC = "latency"


def unavailable() -> str | None:
    """Why client proxies cannot be built here, or None."""
    if toxiproxy_binary().exists() or shutil.which("go"):
        return None
    return ("latency needs Toxiproxy, which testbed builds with Go: install Go (https://go.dev/dl/ or "
            "apt-get install -y golang-go) and run again")


def toxiproxy_binary() -> Path:
    return settings().cache_dir / "toxiproxy" / TOXIPROXY_VERSION / "toxiproxy-server"


def ensure_toxiproxy() -> Path:
    """The Toxiproxy server binary, built once (``go install``, about 20 s) and reused."""
    binary = toxiproxy_binary()
    if binary.exists():
        return binary
    if (why := unavailable()) is not None:
        raise ConfigError(why)
    with build_lock(f"toxiproxy-{TOXIPROXY_VERSION}"):
        if binary.exists():
            return binary
        gobin = binary.parent / "bin"
        env = child_env(GOBIN=str(gobin), GOFLAGS="-mod=mod", GOPATH=str(settings().cache_dir / "gopath"))
        proc = subprocess.run(["go", "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"], env=env,
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise ImageBuildError(f"building Toxiproxy {TOXIPROXY_VERSION} with go install failed: "
                                  f"{proc.stderr[-2000:]}")
        (gobin / "server").rename(binary)
    return binary


@dataclass
class ClientProxies(Service):
    """``with ClientProxies(api_port) as proxies: proxies.add("broker-1", listen, upstream)``."""

    api_port: int
    log_path: Path | None = None
    host: str = "127.0.0.1"
    _server: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> None:
        binary = ensure_toxiproxy()
        out: Any = subprocess.DEVNULL
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            out = self.log_path.open("ab")
        try:
            self._server = subprocess.Popen([str(binary), "-host", self.host, "-port", str(self.api_port)],
                                            stdout=out, stderr=subprocess.STDOUT, env=child_env(),
                                            preexec_fn=die_with_parent())
        finally:
            if out is not subprocess.DEVNULL:
                out.close()  # the server holds its own copy of the descriptor
        wait_until(lambda: self._call("GET", "/version") is not None, timeout_s=30,
                   what=f"Toxiproxy to answer on {self.host}:{self.api_port}", diagnostics=self._state,
                   abort=lambda: None if self._server.poll() is None else f"Toxiproxy exited: {self._state()}")

    def close(self) -> None:
        if self._server is not None and self._server.poll() is None:
            self._server.kill()
            self._server.wait(timeout=10)
        self._server = None

    def add(self, name: str, listen_port: int, upstream_port: int) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": f"{self.host}:{listen_port}",
                                        "upstream": f"{self.host}:{upstream_port}", "enabled": True})

    def set_latency(self, name: str, latency_ms: int, jitter_ms: int = 0) -> None:
        """Every response from the upstream (the broker) reaches its client ``latency_ms`` (+- jitter) later."""
        self.clear_latency(name)
        self._call("POST", f"/proxies/{name}/toxics",
                   {"name": LATENCY_TOXIC, "type": "latency", "stream": "downstream", "toxicity": 1.0,
                    "attributes": {"latency": latency_ms, "jitter": jitter_ms}})

    def clear_latency(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}/toxics/{LATENCY_TOXIC}", missing_ok=True)

    def _state(self) -> str:
        code = None if self._server is None else self._server.poll()
        return f"server {'running' if code is None else f'exited with {code}'}; log: {self.log_path}"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, *, missing_ok: bool = False) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://{self.host}:{self.api_port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if missing_ok and exc.code == 404:
                return None
            raise TestbedError(f"Toxiproxy {method} {path}: HTTP {exc.code} {exc.read()[:500]!r}") from None
        except (urllib.error.URLError, ConnectionError):
            if method == "GET":
                return None  # not up yet: the start's wait asks again
            raise
        try:
            return json.loads(raw) if raw else {}
        except ValueError:  # /version answers in plain text
            return raw.decode(errors="replace")
