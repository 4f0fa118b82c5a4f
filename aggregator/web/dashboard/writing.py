"""Creating a survey (pasted or uploaded JSON, or an XLSForm), issuing invitation codes and
closing a survey."""

from __future__ import annotations

import json
from typing import Any

from flask import current_app, flash, redirect, render_template, request, url_for

from deniable.aggregator import access, forms
from deniable.aggregator import surveys as actions
from deniable.aggregator.params import parse_whole
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.stats import planning, power, series_planning
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.store import SurveyRecord
from deniable.aggregator.web.dashboard.base import (
    EVERY_KIND,
    bp,
    principal,
    shown_on,
    survey_or_404,
)
from deniable.aggregator.web.dashboard.planners import (
    plan_from_args,
    power_from_args,
    series_plan_from_args,
)
from deniable.aggregator.web.db import get_store, survey_cache
from deniable.shared import SurveyError
from deniable.shared.canonical import JSONTextError, parse_json

#: The most invitation codes one form issues (the page shows them all).
MAX_INVITATIONS_FORM = 1000
#: What the new-survey form shows of a refused document: everything but the principal's
#: standing (a read-only token, a lost session), which is the handler's page.
DOCUMENT_KINDS = EVERY_KIND - {"forbidden", "unauthenticated"}


def _create(text: str) -> SurveyRecord:
    """Validate a survey document and store it; ActionError says what is wrong (invalid, or
    conflict when the id is taken)."""
    try:
        doc = parse_json(text)
        record, created = actions.create_survey(
            get_store(), doc, Limits.from_config(current_app.config), who=principal()
        )
    except JSONTextError as exc:
        raise ActionError("invalid", f"not valid JSON: {exc}") from None
    except SurveyError as exc:
        raise ActionError("invalid", str(exc)) from None
    if not created:
        raise ActionError("conflict", f"id: survey {record.id!r} already exists; choose another id")
    return record


def _from_xlsform(upload: Any, drop_unsupported: bool) -> tuple[str, list[str], list[str]]:
    """An uploaded XLSForm's survey document as JSON text (or ""), its problems (one line
    each, naming the sheet, row and column) and its notices; a file over
    forms.MAX_FORM_BYTES is refused before it is parsed."""
    raw = upload.read(forms.MAX_FORM_BYTES + 1)
    if len(raw) > forms.MAX_FORM_BYTES:
        return "", [f"larger than {forms.MAX_FORM_BYTES:,} bytes; a form is far smaller"], []
    try:
        imported = forms.read_xlsform(
            raw, filename=upload.filename or "form.xlsx", drop_unsupported=drop_unsupported
        )
    except forms.XLSFormError as exc:
        return "", exc.problems, exc.notices
    return json.dumps(imported.document, indent=2, ensure_ascii=False), [], imported.notices


def _new_page(
    *,
    error: str | None = None,
    text: str = "",
    filled: str | None = None,
    form_errors: list[str] | None = None,
    form_notices: list[str] | None = None,
) -> tuple[str, int]:
    """The new-survey page: the document's form (with what was wrong, 400) and the planners."""
    form_errors = form_errors or []
    fields, plan_result, plan_error = plan_from_args()
    power_fields, power_result, power_error = power_from_args()
    series_fields, series_plan, series_error = series_plan_from_args()
    return render_template(
        "new.html",
        series_fields=series_fields,
        series_plan=series_plan,
        series_error=series_error,
        series_mechanisms=series_planning.SERIES_MECHANISMS,
        power_fields=power_fields,
        power_result=power_result,
        power_error=power_error,
        power_tests=power.TESTS,
        power_mechanisms=tuple(power.BINARY),
        error=error,
        text=text,
        filled=filled,
        form_errors=form_errors,
        form_notices=form_notices or [],
        max_form_bytes=forms.MAX_FORM_BYTES,
        plan_fields=fields,
        plan=plan_result,
        plan_error=plan_error,
        mechanisms=planning.MECHANISM_NAMES,
        max_options=planning.MAX_OPTIONS,
        plan_query={key: value for key, value in fields.items() if key in request.args},
    ), (400 if error or form_errors else 200)


def _created(record: SurveyRecord, notices: list[str], source: str | None = None) -> Any:
    """To the new survey's page, saying it was created and each notice."""
    flash(f"Survey {record.id!r} created" + (f" from {source}." if source else "."))
    for notice in [*notices, *actions.language_notices(record)]:
        flash(f"Note: {notice}.", "notice")
    return redirect(url_for("dashboard.survey", survey_id=record.id))


def _from_form(text: str) -> Any:
    """A POST with an XLSForm: its problems and notices beside the upload (docs/xlsform.md),
    its document filled in for a preview, or the survey created."""
    xlsform = request.files["xlsform"]
    drop = request.form.get("drop_unsupported") == "yes"
    form_text, form_errors, form_notices = _from_xlsform(xlsform, drop)
    text = form_text or text
    if form_errors:
        return _new_page(text=text, form_errors=form_errors, form_notices=form_notices)
    if request.form.get("xlsform_action") != "create":
        return _new_page(text=text, filled=xlsform.filename, form_notices=form_notices)

    def refused(exc: ActionError) -> tuple[str, int]:
        return _new_page(text=text, form_errors=[str(exc)], form_notices=form_notices)

    with shown_on(refused, DOCUMENT_KINDS):
        created = _create(text)
    return _created(created, form_notices, xlsform.filename)


def _from_json(text: str) -> Any:
    """A POST with a pasted document or an uploaded JSON file: the survey created, or the
    page saying what is wrong."""
    upload = request.files.get("file")
    if upload is not None and upload.filename:
        limit = current_app.config.get("MAX_CONTENT_LENGTH") or 8 * 1024 * 1024
        raw = upload.read(limit + 1)
        if len(raw) > limit:
            error = f"The uploaded file is larger than {limit:,} bytes; a survey is far smaller."
            return _new_page(error=error, text=text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _new_page(error="The uploaded file is not UTF-8 text.", text=text)
    if not text.strip():
        return _new_page(error="Paste a survey document or choose a JSON file.", text=text)
    with shown_on(lambda exc: _new_page(error=str(exc), text=text), DOCUMENT_KINDS):
        created = _create(text)
    return _created(created, [])


@bp.route("/surveys/new", methods=["GET", "POST"])
def new_survey() -> Any:
    """Create a survey from pasted or uploaded JSON, or an XLSForm; the planners help choose
    epsilon and n. Only for a principal that may create surveys (a 403 page otherwise); it
    owns what it creates."""
    access.require_creator(principal())
    if request.method != "POST":
        return _new_page()
    text = request.form.get("document") or ""
    xlsform = request.files.get("xlsform")
    if xlsform is not None and xlsform.filename:
        return _from_form(text)
    return _from_json(text)


@bp.route("/surveys/<survey_id>/invitations", methods=["POST"])
def invitations(survey_id: str) -> Any:
    """Issue single-use invitation codes and show them once; a refused count is flashed on
    the survey's page."""
    record, resolved = survey_or_404(survey_id, "invite")
    count = parse_whole(request.form.get("count"))
    limit = min(MAX_INVITATIONS_FORM, current_app.config.get("MAX_INVITATIONS", 10_000))

    def refused(exc: ActionError) -> Any:
        flash(str(exc), "error")
        return redirect(url_for("dashboard.survey", survey_id=survey_id))

    with shown_on(refused):
        codes = actions.invite(
            get_store(), survey_id, count, limit=limit, cache=survey_cache(), who=principal()
        )
    return render_template("codes.html", survey=resolved, record=record, codes=codes)


@bp.route("/surveys/<survey_id>/close", methods=["POST"])
def close(survey_id: str) -> Any:
    """Stop accepting reports."""
    survey_or_404(survey_id, "close")
    actions.close_survey(get_store(), survey_id, who=principal())
    flash("The survey is closed: it accepts no more reports.")
    return redirect(url_for("dashboard.survey", survey_id=survey_id))
