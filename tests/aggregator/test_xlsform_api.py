"""POST /api/v1/surveys with an XLSForm body (docs/xlsform.md): the survey is created and the
import's notices come back in `notices`; a form with problems is one 422 whose `errors` lists
every problem (sheet, row, column) and `notices` the rest; ?drop_unsupported=true leaves out the
rows deniable cannot honour. A read-only token is refused before the body is read."""

from __future__ import annotations

import io
from typing import Any

from openpyxl import Workbook

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def form(*extra: list[Any]) -> bytes:
    book = Workbook()
    survey = book.active
    survey.title = "survey"
    for row in (
        ["type", "name", "label::English", "appearance"],
        ["start", "start", None, None],
        ["select_one yes_no", "smokes", "Do you smoke?", "minimal"],
        *extra,
    ):
        survey.append(row)
    choices = book.create_sheet("choices")
    for row in (
        ["list_name", "name", "label::English"],
        ["yes_no", "yes", "Yes"],
        ["yes_no", "no", "No"],
    ):
        choices.append(row)
    settings = book.create_sheet("settings")
    settings.append(["form_id", "form_title", "deniable::epsilon"])
    settings.append(["Api_Form", "From the API", 1])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_an_xlsform_body_creates_its_survey_with_the_notices(client: Any, auth: Any) -> None:
    response = client.post("/api/v1/surveys", data=form(), headers={**auth, "Content-Type": XLSX})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["id"] == "api-form" and body["survey"]["questions"][0]["id"] == "smokes"
    notices = body["notices"]
    assert any(
        n.startswith("survey sheet: left out the metadata rows start (row 2)") for n in notices
    )
    assert any("column 'appearance': ignored" in n for n in notices)
    assert any("'Api_Form' is not a survey id; the survey's id is 'api-form'" in n for n in notices)
    again = client.post("/api/v1/surveys", data=form(), headers={**auth, "Content-Type": XLSX})
    assert again.status_code == 200  # the same document again


def test_an_xlsform_with_problems_is_one_422_listing_each(client: Any, auth: Any) -> None:
    bad = form(["geopoint", "where", "Where?", None], ["date", "when", "When?", None])
    response = client.post("/api/v1/surveys", data=bad, headers={**auth, "Content-Type": XLSX})
    assert response.status_code == 422 and response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["detail"] == "invalid XLSForm: 2 problems (errors)"
    assert [e.split(": ", 1)[0] for e in body["errors"]] == [
        "survey sheet, row 4 (where), column 'type'",
        "survey sheet, row 5 (when), column 'type'",
    ]
    assert any("metadata rows start" in n for n in body["notices"])
    dropped = client.post(
        "/api/v1/surveys?drop_unsupported=true", data=bad, headers={**auth, "Content-Type": XLSX}
    )
    assert dropped.status_code == 201
    assert any("row 4 (where): left out" in n for n in dropped.get_json()["notices"])
    wrong = client.post(
        "/api/v1/surveys?drop_unsupported=maybe", data=bad, headers={**auth, "Content-Type": XLSX}
    )
    assert wrong.status_code == 400 and "drop_unsupported" in wrong.get_json()["detail"]


def test_bytes_that_are_no_workbook_are_a_422_never_a_crash(client: Any, auth: Any) -> None:
    for data in (
        b"",
        b"id,title\n",
        b"PK\x03\x04" + b"\0" * 64,
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
    ):
        response = client.post("/api/v1/surveys", data=data, headers={**auth, "Content-Type": XLSX})
        assert response.status_code == 422, data
        assert len(response.get_json()["errors"]) == 1
