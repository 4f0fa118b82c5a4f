"""SIGKILL the server in the middle of a load, restart it: nothing accepted is lost or recounted."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

from deniable.client import Client
from deniable.shared import Survey
from tests.conftest import AGGREGATOR, free_port
from tests.e2e import load_support as load
from tests.e2e.test_gunicorn import prepare

pytestmark = pytest.mark.slow

#: Reports each poster process has to send: far more than it sends before the kill (at 300 the
#: posters, about 1.7 s from done when the load was seen under way, could finish before this
#: test's next few requests on a loaded machine, and no post would be cut off).
PER_POSTER = 2000


class _Crashing(HTTPAdapter):
    """Sends as usual, but the first report POST goes through `around(send)` (to lose it)."""

    def __init__(self, around: Callable[[Callable[[], Any]], Any]):
        super().__init__()
        self.around: Callable[[Callable[[], Any]], Any] | None = around

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        forward = lambda: super(_Crashing, self).send(request, *args, **kwargs)  # noqa: E731
        if self.around and request.method == "POST" and request.path_url == "/api/v1/reports":
            around, self.around = self.around, None
            return around(forward)
        return forward()


def client(url: str, home: Path, around: Callable[[Callable[[], Any]], Any]) -> Client:
    """A real Client whose report POSTs go through `around`."""
    session = requests.Session()
    session.mount("http://", _Crashing(around))
    return Client(url, data_dir=home, session=session, timeout=5)


def wait_for_reports(url: str, token: str, survey_id: str, at_least: int) -> None:
    """Wait until the server has stored some reports (the load is under way)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if load.served_results(url, token, survey_id)["n"] >= at_least:
            return
        time.sleep(0.02)
    raise AssertionError("the load never got going")


def test_sigkill_mid_load_loses_nothing(tmp_path: Path, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    token = prepare(data_dir, tmp_path, database_url)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"DENIABLE_DATABASE_URL": database_url} if database_url else {}
    server = load.gunicorn(data_dir, port, workers=2, **env)
    restarted = None
    try:
        load.wait_healthy(url, server)
        published = requests.get(f"{url}/api/v1/surveys/{load.SURVEY['id']}", timeout=10).json()
        survey = Survey.from_dict(published["survey"])
        steps = [list(load.reports(survey, PER_POSTER)) for _ in range(2)]
        posters = load.start_posters(url, steps, tmp_path)
        wait_for_reports(url, token, survey.id, 40)

        def landed_then_lost(forward: Callable[[], Any]) -> Any:
            forward()  # stored and committed, but the answer never arrives
            raise requests.ConnectionError("connection reset by peer")

        def killed_first(forward: Callable[[], Any]) -> Any:
            load.stop(server, signal.SIGKILL)  # SIGKILL mid-load: master and workers
            return forward()

        landed = client(url, tmp_path / "landed", landed_then_lost)
        lost = client(url, tmp_path / "lost", killed_first)
        assert landed.answer(survey.id, load.TRUTH).status == "queued"
        assert lost.answer(survey.id, load.TRUTH).status == "queued"
        assert server.poll() is not None
        answers = [pair for process in load.collect(posters) for pair in process]
        accepted = {rid for rid, result in answers if result == "accepted"}
        assert accepted and any(result == "noanswer" for _, result in answers)

        restarted = load.gunicorn(data_dir, port, workers=2, **env)
        load.wait_healthy(url, restarted)
        n, stored = load.assert_tallies_match_export(url, token, survey)
        assert accepted <= stored  # every report answered "accepted" survived
        assert landed.status().pending == lost.status().pending == 1
        (again,) = landed.sync()
        assert again.status == "duplicate"
        (sent,) = lost.sync()
        assert sent.status == "accepted"
        assert landed.status().pending == lost.status().pending == 0
        after, _ = load.assert_tallies_match_export(url, token, survey)
        assert after == n + 1
        check = subprocess.run(
            [str(AGGREGATOR), "verify", survey.id],
            env={"DENIABLE_DATA_DIR": str(data_dir), **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert check.returncode == 0, check.stdout + check.stderr
        assert "every tally matches" in check.stdout
    finally:
        load.stop(server, signal.SIGKILL)
        if restarted is not None:
            err = load.stop(restarted)
            assert "Traceback" not in err, err
