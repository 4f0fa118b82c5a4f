"""Fixtures shared across the suite: a real aggregator server process on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import settings

from tests.postgres_support import PostgresCluster, PostgresUnavailable
from tests.redis_support import RedisServer, RedisUnavailable

# Property tests draw the same examples on every run and machine: a failure is reproducible,
# and the suite never passes or fails by the luck of the draw.
settings.register_profile("deniable", derandomize=True, print_blob=True)
settings.load_profile("deniable")

BIN = Path(sys.executable).parent
AGGREGATOR = BIN / "deniable-aggregator"
STARTUP_SECONDS = 30


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """A `deniable-aggregator run` process on a real SQLite file (or the PostgreSQL database
    env's DENIABLE_DATABASE_URL names), with a researcher token."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None, bin_dir: Path = BIN):
        self.data_dir = data_dir
        self.aggregator = bin_dir / "deniable-aggregator"  # another venv's: an installed wheel
        self.env = {**os.environ, "DENIABLE_DATA_DIR": str(data_dir)}
        self.env.pop("DENIABLE_DATABASE_URL", None)
        self.env.update(env or {})
        self.database_url = self.env.get("DENIABLE_DATABASE_URL")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.token = self.cli("create-token", "--name", "tests").stdout.strip()

    @property
    def headers(self) -> dict[str, str]:
        """The researcher's Authorization header."""
        return {"Authorization": f"Bearer {self.token}"}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `deniable-aggregator ARGS` against this server's data directory."""
        result = subprocess.run(
            [str(self.aggregator), *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        if check and result.returncode != 0:
            raise AssertionError(f"deniable-aggregator {' '.join(args)} failed: {result.stderr}")
        return result

    def start(self) -> None:
        """Start the server and wait until /healthz answers."""
        self.process = subprocess.Popen(
            [str(self.aggregator), "run", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"the aggregator exited with {self.process.returncode}: {err}")
            try:
                if requests.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the aggregator did not answer /healthz within {STARTUP_SECONDS} s")

    def stop(self) -> None:
        """Stop the server: terminate, then kill if it lingers."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stderr:
            self.process.stderr.close()
        self.process = None

    def restart(self) -> None:
        """Stop and start again on the same port and data."""
        self.stop()
        self.start()

    def create_survey(self, doc: dict[str, Any]) -> dict[str, Any]:
        """POST a survey document as the researcher; the JSON answer."""
        response = requests.post(
            f"{self.url}/api/v1/surveys", json=doc, headers=self.headers, timeout=10
        )
        assert response.status_code in (200, 201), response.text
        return response.json()

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        """GET a path as the researcher."""
        return requests.get(f"{self.url}{path}", headers=self.headers, timeout=30, **kwargs)

    def results(self, survey_id: str) -> dict[str, Any]:
        """The results JSON of a survey."""
        response = self.get(f"/api/v1/surveys/{survey_id}/results")
        assert response.status_code == 200, response.text
        return response.json()


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL cluster for the session (skipped when none can start, unless CI)."""
    try:
        import psycopg  # noqa: F401

        cluster = PostgresCluster(free_port())
        cluster.start()
    except (ImportError, PostgresUnavailable) as exc:
        if _in_ci():
            pytest.fail(f"CI needs PostgreSQL for the postgres backend tests: {exc}")
        pytest.skip(f"PostgreSQL backend tests skipped: no PostgreSQL could be started ({exc})")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A throwaway Redis server for the session (skipped when none can start, unless CI)."""
    try:
        server = RedisServer(free_port())
        server.start()
    except RedisUnavailable as exc:
        if _in_ci():
            pytest.fail(f"CI needs Redis for the shared rate limit tests: {exc}")
        pytest.skip(f"shared rate limit tests skipped: no Redis could be started ({exc})")
    yield server
    server.stop()


@pytest.fixture
def backend() -> str:
    """The store backend: SQLite, unless a folder's conftest parametrizes it over BACKENDS."""
    return "sqlite"


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    """A fresh PostgreSQL database's URL on the postgres backend; None on SQLite."""
    if backend != "postgres":
        return None
    return request.getfixturevalue("postgres_cluster").database()


@pytest.fixture
def live_server_factory(
    tmp_path_factory: pytest.TempPathFactory, backend: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., LiveServer]]:
    """Start real aggregator servers (env: extra environment variables); all stop at teardown.

    On the postgres backend each server gets its own new database unless env names one."""
    servers: list[LiveServer] = []

    def start(env: dict[str, str] | None = None) -> LiveServer:
        env = dict(env or {})
        if backend == "postgres" and "DENIABLE_DATABASE_URL" not in env:
            env["DENIABLE_DATABASE_URL"] = request.getfixturevalue("postgres_cluster").database()
        server = LiveServer(tmp_path_factory.mktemp("aggregator"), env)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def live_server(live_server_factory: Callable[..., LiveServer]) -> LiveServer:
    """A real `deniable-aggregator run` on a free port, with `.url`, `.data_dir`, `.token`,
    `.create_survey(doc)`, `.restart()`, `.cli(...)`, `.results(id)`."""
    return live_server_factory()
