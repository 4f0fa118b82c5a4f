"""`pip install 'deniable-*.whl[aggregator]'` in a fresh venv, used as the README says: init-db,
create-token and run serve; a report sent by the installed `deniable answer` is counted; the
dashboard logs in; an XLSForm imports; a .dta export downloads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyreadstat
import pytest
import requests

from tests.aggregator.conftest import SURVEY_DOC, TRUTH
from tests.conftest import LiveServer
from tests.install.wheel_support import ROOT, Installed, build_wheel, install

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def aggregator(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    wheel, _ = build_wheel(tmp_path_factory.mktemp("wheel"))
    return install(wheel, tmp_path_factory.mktemp("venv") / "aggregator", "aggregator")


def test_the_installed_aggregator_serves_what_the_readme_promises(
    aggregator: Installed, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    init = aggregator.run("deniable-aggregator", "init-db", DENIABLE_DATA_DIR=str(data))
    assert init.returncode == 0, init.stderr
    server = LiveServer(data, bin_dir=aggregator.bin)  # create-token, then run
    server.start()
    try:
        server.create_survey(SURVEY_DOC)
        answers = [f"--answer={qid}={value}" for qid, value in TRUTH.items()]
        sent = aggregator.run(
            "deniable", "answer", server.url, "habits", "--yes", "--json", *answers,
            DENIABLE_HOME=str(tmp_path / "respondent"),
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["status"] == "accepted"
        assert server.results("habits")["n"] == 1

        browser = requests.Session()
        login = browser.get(f"{server.url}/login", timeout=10).text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', login)
        assert csrf is not None
        answer = browser.post(
            f"{server.url}/login",
            data={"token": server.token, "csrf_token": csrf.group(1)},
            timeout=10,
        )
        assert answer.status_code == 200 and "Habits" in answer.text

        form = ROOT / "examples" / "health-multilingual.xlsx"
        imported = server.cli("survey", "import", str(form), "--create")
        assert json.loads(imported.stdout)["id"] in server.get("/api/v1/surveys").text

        export = server.get("/api/v1/surveys/habits/export.dta")
        assert export.status_code == 200, export.text
        (tmp_path / "habits.dta").write_bytes(export.content)
        frame, meta = pyreadstat.read_dta(str(tmp_path / "habits.dta"))
        assert len(frame) == 1 and "smokes" in meta.column_names
    finally:
        server.stop()
