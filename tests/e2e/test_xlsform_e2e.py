"""XLSForm end to end, on both stores: the multilingual example (English, French, Arabic; a
plain question gating two randomized ones; one question of each type) imported with
`deniable-aggregator survey import --create` and uploaded on a real server's dashboard; the
published hash is the one the round trip import -> export -> import gives; every problem is one
line naming the sheet, row and column, beside the dashboard's upload field; --dry-run and
--drop-unsupported create nothing and say what they leave out."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests
from openpyxl import Workbook

from deniable.aggregator.forms import MAX_FORM_BYTES
from deniable.shared.survey import Survey
from tests.postgres_support import SQLITE_ONLY

pytestmark = [
    pytest.mark.own_server,  # each test imports the same form as the same survey
    # the form's import is the point; the survey and reports it stores: test_store.py on both
    SQLITE_ONLY,
]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "health-multilingual.xlsx"
SURVEY_ID = "health-multilingual"


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


def _logged_in(url: str, token: str) -> requests.Session:
    browser = requests.Session()
    csrf = _csrf(browser.get(f"{url}/login", timeout=10).text)
    response = browser.post(
        f"{url}/login", data={"token": token, "csrf_token": csrf}, allow_redirects=False, timeout=10
    )
    assert response.status_code == 302, response.text
    return browser


def _bad_form() -> bytes:
    book = Workbook()
    sheet = book.active
    sheet.title = "survey"
    sheet.append(["type", "name", "label", "deniable::epsilon"])
    sheet.append(["select_one yes_no", "smokes", "Do you smoke?", 1])
    sheet.append(["geopoint", "where", "Where are you?"])
    choices = book.create_sheet("choices")
    for row in (["list_name", "name", "label"], ["yes_no", "yes", "Yes"], ["yes_no", "no", "No"]):
        choices.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _published(server: Any) -> dict[str, Any]:
    response = requests.get(f"{server.url}/api/v1/surveys/{SURVEY_ID}", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def test_cli_imports_creates_exports_and_reimports_the_same_survey(
    live_server: Any, tmp_path: Path
) -> None:
    created = live_server.cli("survey", "import", str(EXAMPLE), "--create")
    doc = json.loads(created.stdout)
    assert f"created survey {SURVEY_ID!r}" in created.stderr
    published = _published(live_server)
    assert published["survey_hash"] == Survey.from_dict(doc).hash
    survey = Survey.from_dict(published["survey"])
    assert survey.languages[0] == "en" and set(survey.languages) == {"en", "fr", "ar"}
    assert survey.text_in("ar").title == "الصحة بثلاث لغات (مثال)"
    assert survey.relevant({"smokes": "no"}) == [
        "age",
        "region",
        "smokes",
        "alcohol",
        "used",
        "town",
    ]
    out = tmp_path / "back.xlsx"
    exported = live_server.cli("survey", "export", SURVEY_ID, "--xlsform", str(out))
    assert str(out) in exported.stdout and out.stat().st_size > 0
    again = json.loads(live_server.cli("survey", "import", str(out)).stdout)
    assert Survey.from_dict(again).hash == published["survey_hash"]
    # The same document again is the same survey, not a conflict.
    twice = live_server.cli("survey", "import", str(out), "--create")
    assert twice.returncode == 0 and "already exists" in twice.stderr


def test_cli_refusals_are_one_line_each_naming_sheet_row_and_column(
    live_server: Any, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(_bad_form())
    result = live_server.cli("survey", "import", str(bad), "--create", check=False)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith(f"error: {bad}: survey sheet, row 3 (where), column 'type': ")
    assert "cannot honour 'geopoint'" in lines[0] and "--drop-unsupported" in lines[0]
    assert lines[1] == f"error: {bad}: 1 problem; nothing was created"
    # --dry-run with --drop-unsupported: the document, what is left out, and nothing created.
    dry = live_server.cli("survey", "import", str(bad), "--drop-unsupported", "--dry-run")
    assert [q["id"] for q in json.loads(dry.stdout)["questions"]] == ["smokes"]
    assert "note: survey sheet, row 3 (where): left out: deniable cannot honour 'geopoint'" in (
        dry.stderr
    )
    assert dry.stderr.strip().endswith("dry run: survey 'bad' would be created; nothing was")
    assert requests.get(f"{live_server.url}/api/v1/surveys/bad", timeout=10).status_code == 404
    created = live_server.cli("survey", "import", str(bad), "--drop-unsupported", "--create")
    assert "created survey 'bad'" in created.stderr
    assert requests.get(f"{live_server.url}/api/v1/surveys/bad", timeout=10).status_code == 200
    huge = tmp_path / "huge.xlsx"
    huge.write_bytes(b"PK" + b"\0" * MAX_FORM_BYTES)
    result = live_server.cli("survey", "import", str(huge), check=False)
    assert result.returncode == 1 and "larger than" in result.stderr
    missing = live_server.cli(
        "survey", "export", "nope", "--xlsform", str(tmp_path / "x.xlsx"), check=False
    )
    assert missing.returncode == 1 and "no survey 'nope'" in missing.stderr
    assert (
        requests.get(f"{live_server.url}/api/v1/surveys/{SURVEY_ID}", timeout=10).status_code == 404
    )


def test_dashboard_upload_fills_the_document_or_creates_the_survey(live_server: Any) -> None:
    url = live_server.url
    browser = _logged_in(url, live_server.token)
    data = EXAMPLE.read_bytes()
    csrf = _csrf(browser.get(f"{url}/surveys/new", timeout=10).text)
    kind = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    filled = browser.post(
        f"{url}/surveys/new",
        data={"csrf_token": csrf, "xlsform_action": "fill"},
        files={"xlsform": ("health-multilingual.xlsx", data, kind)},
        allow_redirects=False,
        timeout=30,
    )
    assert filled.status_code == 200, filled.text
    assert 'id="filled"' in filled.text and "hcms" in filled.text
    assert "الصحة بثلاث لغات" in filled.text
    assert requests.get(f"{url}/api/v1/surveys/{SURVEY_ID}", timeout=10).status_code == 404

    refused = browser.post(
        f"{url}/surveys/new",
        data={"csrf_token": csrf, "xlsform_action": "create"},
        files={"xlsform": ("bad.xlsx", _bad_form(), kind)},
        allow_redirects=False,
        timeout=30,
    )
    assert refused.status_code == 400
    beside = refused.text.split('id="xlsform-errors"', 1)[1].split("</div>", 1)[0]
    assert "survey sheet, row 3 (where), column &#39;type&#39;" in beside
    assert 'id="document-error"' not in refused.text  # never under the JSON box

    too_big = browser.post(
        f"{url}/surveys/new",
        data={"csrf_token": csrf, "xlsform_action": "create"},
        files={"xlsform": ("big.xlsx", b"PK" + b"\0" * MAX_FORM_BYTES, kind)},
        allow_redirects=False,
        timeout=30,
    )
    assert too_big.status_code == 400 and "larger than" in too_big.text

    no_token = requests.post(
        f"{url}/surveys/new",
        data={"xlsform_action": "create"},
        files={"xlsform": ("health-multilingual.xlsx", data, kind)},
        cookies=browser.cookies,
        allow_redirects=False,
        timeout=30,
    )
    assert no_token.status_code == 400  # CSRF as every dashboard form

    created = browser.post(
        f"{url}/surveys/new",
        data={"csrf_token": csrf, "xlsform_action": "create"},
        files={"xlsform": ("health-multilingual.xlsx", data, kind)},
        allow_redirects=False,
        timeout=30,
    )
    assert created.status_code == 302 and created.headers["Location"] == f"/surveys/{SURVEY_ID}"
    published = _published(live_server)
    first = live_server.cli("survey", "import", str(EXAMPLE))
    assert published["survey_hash"] == Survey.from_dict(json.loads(first.stdout)).hash
