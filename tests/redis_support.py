"""A throwaway Redis server for the tests: Debian's redis-server on a free loopback port, its
files in a temp dir, nothing kept on disk (as docs/operations.md runs it for rate limits)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

STARTUP_SECONDS = 20


class RedisUnavailable(RuntimeError):
    """No Redis server could be started here (with the reason)."""


def _pong(port: int) -> bool:
    """Whether a Redis server answers PING on 127.0.0.1:port (the protocol's inline form)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A running redis-server owned by the tests; `url` is what DENIABLE_RATE_LIMIT_STORAGE takes."""

    def __init__(self, port: int):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RedisUnavailable(
                "no redis-server found (install Debian's redis-server package: "
                "scripts/test-deps.sh)"
            )
        self.binary = binary
        self.port = port
        self.root = Path(tempfile.mkdtemp(prefix="deniable-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start redis-server in the foreground of its own process and wait for its PONG."""
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.root),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=open(self.root / "server.log", "wb"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.root / "server.log").read_text(errors="replace")[-500:]
                raise RedisUnavailable(f"redis-server exited: {log}")
            if _pong(self.port):
                return
            time.sleep(0.05)
        self.stop()
        raise RedisUnavailable(f"redis-server did not answer within {STARTUP_SECONDS} s")

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)
