"""`pip install 'deniable-*.whl[deploy]'` in a fresh venv: gunicorn, with the deploy config as
docs/operations.md runs it, serves the installed aggregator."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.conftest import free_port
from tests.e2e import load_support as load
from tests.install.wheel_support import Installed, build_wheel, install

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    wheel, _ = build_wheel(tmp_path_factory.mktemp("wheel"))
    return install(wheel, tmp_path_factory.mktemp("venv") / "deploy", "deploy")


def test_gunicorn_serves_the_installed_aggregator(deploy: Installed, tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = deploy.run("deniable-aggregator", "create-token", DENIABLE_DATA_DIR=str(data))
    assert token.returncode == 0, token.stderr
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = load.gunicorn(data, port, workers=2, bin_dir=deploy.bin)
    try:
        load.wait_healthy(url, server, seconds=60)
        listed = requests.get(
            f"{url}/api/v1/surveys",
            headers={"Authorization": f"Bearer {token.stdout.strip()}"},
            timeout=10,
        )
        assert listed.status_code == 200 and listed.json() == {"surveys": []}
        where = deploy.run("python", "-c", "import deniable.aggregator as a; print(a.__file__)")
        assert str(deploy.root) in where.stdout  # the installed copy served, not the checkout
    finally:
        assert "Traceback" not in load.stop(server)
