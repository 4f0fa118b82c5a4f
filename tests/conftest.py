"""Fixtures shared across the suite: a real aggregator server process on a free port.

`live_server` is one server per test module (and store backend), started on first use: tests
sharing it make their own surveys (`new_survey_id`, `LiveServer.create_survey(doc, fresh=True)`)
and never count what is server-wide. A test that changes or counts server-wide state (accounts,
tokens, every survey, the audit log, the data directory) is marked `own_server` and gets a server
of its own; `live_server_factory` starts servers with other settings (docs/architecture.md,
Development)."""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import requests
from hypothesis import HealthCheck, settings

from tests.postgres_support import PostgresCluster, PostgresUnavailable
from tests.redis_support import RedisServer, RedisUnavailable

if TYPE_CHECKING:
    from deniable.aggregator.store import Store

# Property tests draw the same examples on every run and machine: a failure is reproducible,
# and the suite never passes or fails by the luck of the draw.
# No deadline and no too_slow health check: both are timings, and a loaded machine trips them.
settings.register_profile(
    "deniable",
    derandomize=True,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("deniable")

BIN = Path(sys.executable).parent
AGGREGATOR = BIN / "deniable-aggregator"
STARTUP_SECONDS = 30
#: How long a test waits for one answer before calling the server hung: a guard against hangs,
#: not a speed check (the worst analyses take seconds alone, much longer on a loaded machine).
REQUEST_SECONDS = 300


#: Where free_port looks when the kernel's ephemeral range leaves no room below it.
PORTS_LOW, PORTS_HIGH = 10_000, 65_536


def _port_block() -> range:
    """This test process's own ports: below the kernel's ephemeral range (where bind(0) and
    every outgoing connection take theirs), split into one block per xdist worker."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        ephemeral = int(text.split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32_768  # Linux's default
    high = ephemeral if ephemeral - PORTS_LOW >= 4_096 else PORTS_HIGH
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) % workers if worker.isdigit() else 0
    size = (high - PORTS_LOW) // workers
    return range(PORTS_LOW + index * size, PORTS_LOW + (index + 1) * size)


_PORTS = _port_block()
#: Ports are handed out in turn, from an offset of this process's own (two runs at once on one
#: machine start apart).
_NEXT_PORT = itertools.count(os.getpid())


def free_port() -> int:
    """A TCP port nothing listens on right now, that no other test process here is handed and
    the kernel gives no socket of its own: a server started on it after this call finds it
    free (with bind(0) another worker's probe, or an outgoing connection, could take it
    between the probe and the server's bind)."""
    for _ in range(len(_PORTS)):
        port = _PORTS[next(_NEXT_PORT) % len(_PORTS)]
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use (or in TIME_WAIT): the next one
            return port
    raise RuntimeError(f"no free port in {_PORTS.start}-{_PORTS.stop - 1}")


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
        self._ids = itertools.count(1)
        if bin_dir == BIN:  # what `create-token --name tests` does, without a process's start-up
            self.token = admin_token(self.env, "tests")
        else:  # another venv's aggregator (an installed wheel) makes its own
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
                if requests.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):
                pass  # not listening yet, or slow to answer its first request under load
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

    def store(self) -> contextlib.AbstractContextManager[Store]:
        """This server's store opened in the test's process, as the server's commands open it
        (for setting up what a command-line test does not test)."""
        return open_store_of(self.env)

    @property
    def running(self) -> bool:
        """Whether the server process is up (a test may have stopped it)."""
        return self.process is not None and self.process.poll() is None

    def new_survey_id(self, prefix: str = "survey") -> str:
        """A survey id no other test on this server has used."""
        return f"{prefix}-{next(self._ids)}"

    def create_survey(self, doc: dict[str, Any], *, fresh: bool = False) -> dict[str, Any]:
        """POST a survey document as the researcher; the JSON answer. `fresh`: under a new id
        made from the document's (`body["survey"]["id"]`), for a server tests share."""
        if fresh:
            doc = {**doc, "id": self.new_survey_id(doc["id"])}
        response = requests.post(
            f"{self.url}/api/v1/surveys", json=doc, headers=self.headers, timeout=REQUEST_SECONDS
        )
        assert response.status_code in (200, 201), response.text
        return response.json()

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        """GET a path as the researcher."""
        return requests.get(
            f"{self.url}{path}", headers=self.headers, timeout=REQUEST_SECONDS, **kwargs
        )

    def results(self, survey_id: str) -> dict[str, Any]:
        """The results JSON of a survey."""
        response = self.get(f"/api/v1/surveys/{survey_id}/results")
        assert response.status_code == 200, response.text
        return response.json()


@contextlib.contextmanager
def open_store_of(env: dict[str, str]) -> Iterator[Store]:
    """The store (migrated) of the database `env` names, opened in this process, as a command
    of the server's would open it; closed at the end of the block."""
    from deniable.aggregator import config as settings
    from deniable.aggregator.store.base import open_store

    config = {**settings.defaults(), **settings.from_env(env)}
    config.update(settings.resolve(config))
    store = open_store(config)
    try:
        store.migrate()
        yield store
    finally:
        store.close()


def admin_token(env: dict[str, str], name: str) -> str:
    """A new admin token on the database `env` names, made in this process (the store and
    service `create-token` calls; tests/aggregator/test_aggregator_cli.py runs the command)."""
    from deniable.aggregator import accounts
    from deniable.aggregator.access import OPERATOR

    with open_store_of(env) as store:
        token, _ = accounts.admin_token(store, OPERATOR, name)
    return token


#: The folders whose tests are marked by their folder's name (`make test-fast` skips them).
MARKED_FOLDERS = ("browser", "e2e", "install")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the browser, end-to-end and install tests, and those on PostgreSQL, so `make
    test-fast` can leave them out (`-m "not browser and not e2e and ..."`)."""
    tests = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(tests).parts[0] if item.path.is_relative_to(tests) else ""
        if folder in MARKED_FOLDERS:
            item.add_marker(folder)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "postgres":
            item.add_marker("postgres")


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


def _server_env(
    backend: str, request: pytest.FixtureRequest, env: dict[str, str] | None
) -> dict[str, str]:
    """The environment of a new server: on the postgres backend, a new database of its own
    unless env names one."""
    env = dict(env or {})
    if backend == "postgres" and "DENIABLE_DATABASE_URL" not in env:
        env["DENIABLE_DATABASE_URL"] = request.getfixturevalue("postgres_cluster").database()
    return env


@pytest.fixture
def live_server_factory(
    tmp_path_factory: pytest.TempPathFactory, backend: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., LiveServer]]:
    """Start real aggregator servers (env: extra environment variables); all stop at teardown.

    On the postgres backend each server gets its own new database unless env names one."""
    servers: list[LiveServer] = []

    def start(env: dict[str, str] | None = None) -> LiveServer:
        server = LiveServer(
            tmp_path_factory.mktemp("aggregator"), _server_env(backend, request, env)
        )
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def _module_servers() -> Iterator[dict[str, LiveServer]]:
    """The servers a module's tests share, by backend; stopped when the module ends."""
    servers: dict[str, LiveServer] = {}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture
def live_server(
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _module_servers: dict[str, LiveServer],
) -> LiveServer:
    """A real `deniable-aggregator run` on a free port, with `.url`, `.data_dir`, `.token`,
    `.create_survey(doc)`, `.restart()`, `.cli(...)`, `.results(id)`: the module's shared one
    (started on first use, started again if a test stopped it), or, for a test marked
    `own_server`, one of its own."""
    if request.node.get_closest_marker("own_server"):
        return request.getfixturevalue("live_server_factory")()
    server = _module_servers.get(backend)
    if server is None:
        server = LiveServer(
            tmp_path_factory.mktemp("aggregator"), _server_env(backend, request, None)
        )
        _module_servers[backend] = server
    if not server.running:
        server.stop()
        server.start()
    return server
