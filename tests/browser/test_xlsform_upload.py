"""The dashboard's XLSForm upload in Chromium against a real aggregator (docs/xlsform.md): a
form with several problems lists them all beside the upload field (never under the JSON box);
with "leave out the rows deniable cannot honour" the notices are listed there too, the document
is filled, and the survey is created with the notices shown."""

from __future__ import annotations

import io
import re
from typing import Any

from openpyxl import Workbook
from playwright.sync_api import expect

KIND = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def form() -> bytes:
    """An ODK-style form with a privacy choice and three rows deniable cannot honour."""
    book = Workbook()
    survey = book.active
    survey.title = "survey"
    for row in (
        ["type", "name", "label:English", "appearance", "deniable::mechanism"],
        ["start", "start", None, None, None],
        ["select one from yes_no", "smokes", "Do you smoke?", "minimal", "none"],
        ["geopoint", "where", "Where are you?", None, None],
        ["date", "when", "Since when?", None, None],
        ["select_one yes_no", "daily", "Every day?", None, None],
    ):
        survey.append(row)
    choices = book.create_sheet("choices")
    for row in (
        ["list name", "name", "label:English"],
        ["yes_no", "yes", "Yes"],
        ["yes_no", "no", "No"],
    ):
        choices.append(row)
    settings = book.create_sheet("settings")
    settings.append(["form_title", "form_id", "deniable::epsilon"])
    settings.append(["Smoking", "Smoking_v1", 1])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def login(page: Any, server: Any) -> None:
    page.goto(f"{server.url}/")
    page.get_by_label("Token").fill(server.token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{server.url}/")


def test_upload_problems_and_notices_are_listed_beside_the_field(
    live_server: Any, page: Any
) -> None:
    login(page, live_server)
    page.goto(f"{live_server.url}/surveys/new")
    upload = page.locator("#xlsform")
    upload.set_input_files({"name": "smoking.xlsx", "mimeType": KIND, "buffer": form()})
    page.get_by_role("button", name="Create survey from the XLSForm").click()
    errors = page.locator("#xlsform-errors")
    expect(errors).to_be_visible()
    expect(errors.locator("li")).to_have_count(2)
    expect(errors.locator("li").nth(0)).to_contain_text(
        "survey sheet, row 4 (where), column 'type': deniable cannot honour 'geopoint'"
    )
    expect(errors.locator("li").nth(1)).to_contain_text("row 5 (when)")
    expect(errors).to_contain_text("Not created: 2 problems in the form")
    # Beside the upload: inside the XLSForm's own form, right under the file field, which
    # names it; never under the JSON box.
    xlsform = page.locator('form[aria-labelledby="xlsform-heading"]')
    assert xlsform.locator("#xlsform-errors").count() == 1
    assert "xlsform-errors" in (upload.get_attribute("aria-describedby") or "")
    assert page.locator("#document-error").count() == 0
    field, listed = upload.bounding_box(), errors.bounding_box()
    assert field and listed and 0 <= listed["y"] - (field["y"] + field["height"]) < 80
    expect(page.locator("#xlsform-notices")).to_contain_text("left out the metadata rows start")

    upload.set_input_files({"name": "smoking.xlsx", "mimeType": KIND, "buffer": form()})
    page.get_by_label("Leave out the rows deniable cannot honour").check()
    page.get_by_role("button", name="Fill the document").click()
    notices = page.locator("#xlsform-notices li")
    expect(page.locator("#xlsform-notices")).to_contain_text("row 4 (where): left out")
    expect(page.locator("#xlsform-notices")).to_contain_text("'Smoking_v1' is not a survey id")
    assert notices.count() >= 4 and page.locator("#xlsform-errors").count() == 0
    expect(page.get_by_label("Paste the survey JSON")).to_have_value(
        re.compile('"id": "smoking-v1"')
    )

    upload.set_input_files({"name": "smoking.xlsx", "mimeType": KIND, "buffer": form()})
    page.get_by_label("Leave out the rows deniable cannot honour").check()
    page.get_by_role("button", name="Create survey from the XLSForm").click()
    page.wait_for_url(f"{live_server.url}/surveys/smoking-v1")
    expect(page.locator(".flash").first).to_contain_text("created from smoking.xlsx")
    expect(page.locator(".flash.notice").filter(has_text="row 5 (when): left out")).to_have_count(1)
