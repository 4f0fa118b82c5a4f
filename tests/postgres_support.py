"""A throwaway PostgreSQL cluster for the tests: initdb in a temp dir, a free loopback port."""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

STARTUP_SECONDS = 30
#: The database whose schemas the tests use as their databases.
TEST_DATABASE = "deniable_tests"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be made here (with the reason)."""


def find_bindir() -> Path:
    """The directory holding initdb and postgres (Debian's /usr/lib/postgresql/N/bin or PATH)."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    )
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(os.path.realpath(initdb)).parent))
    for directory in candidates:
        if (Path(directory) / "initdb").exists() and (Path(directory) / "postgres").exists():
            return Path(directory)
    raise PostgresUnavailable(
        "no initdb/postgres found (install Debian's postgresql package: scripts/test-deps.sh)"
    )


class PostgresCluster:
    """A running cluster owned by the tests; `database()` makes an empty database, its URL."""

    def __init__(self, port: int):
        self.bindir = find_bindir()
        self.port = port
        self.root = Path(tempfile.mkdtemp(prefix="deniable-pg-"))
        self.data = self.root / "data"
        self.as_root = os.geteuid() == 0
        self.process: subprocess.Popen[bytes] | None = None
        self._names = itertools.count()
        self.user = "postgres" if self.as_root else os.environ.get("USER") or "tests"

    def _as_user(self) -> dict[str, object]:
        """Popen arguments that run as the postgres OS user when we are root (postgres refuses
        to run as root), as ourselves otherwise."""
        if not self.as_root:
            return {}
        return {"user": "postgres", "group": "postgres", "extra_groups": [], "cwd": self.root}

    def start(self) -> None:
        """initdb, then start postgres on 127.0.0.1:port with its socket in the temp dir."""
        import psycopg

        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
        init = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                self.user,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            **self._as_user(),  # type: ignore[call-overload]
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()[-500:]}")
        self.process = subprocess.Popen(  # type: ignore[call-overload]
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-k",
                str(self.root),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=400",
                "-c",
                "shared_buffers=32MB",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "server.log", "wb"),
            **self._as_user(),
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.root / "server.log").read_text(errors="replace")[-500:]
                raise PostgresUnavailable(f"postgres exited: {log}")
            if self._ready():
                with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {TEST_DATABASE} TEMPLATE template0")
                return
            time.sleep(0.1)
        self.stop()
        raise PostgresUnavailable(f"postgres did not start within {STARTUP_SECONDS} s")

    def _ready(self) -> bool:
        import psycopg

        try:
            psycopg.connect(self.url("postgres"), connect_timeout=1).close()
        except psycopg.OperationalError:
            return False
        return True

    def url(self, dbname: str) -> str:
        """The URL of a database of this cluster."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def database(self, prefix: str = "test") -> str:
        """The URL of a new, empty database of its own (a schema of the tests' database, named
        by the URL's search_path: CREATE DATABASE takes a fifth of a second, a schema nothing)."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(TEST_DATABASE), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url(TEST_DATABASE)}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete the cluster."""
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown: disconnect everyone
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)


#: The store backends the store-level and end-to-end tests run on.
BACKENDS = ("sqlite", "postgres")

#: An end-to-end test whose point is not the store runs on SQLite only: PostgreSQL runs the
#: store contract (tests/aggregator's `store` fixture) and the tests of concurrency.
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"])
