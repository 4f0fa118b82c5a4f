"""The respondent's web page, GET /s/<survey_id>: answer a survey in the browser.

The page randomizes, signs and sends on the device with static/deniable.js (the same protocol
as deniable.client); the server renders the questions and their plain-words explanations
(shared/explain.py, the text of `deniable explain`) and never sees a true answer. No cookies,
no inline script, nothing from another origin.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from typing import Any

from flask import Blueprint, Response, render_template

from deniable.aggregator import surveys
from deniable.aggregator.web.db import get_store, survey_cache
from deniable.shared.errors import DeniableError
from deniable.shared.explain import question_lines, total_lines

bp = Blueprint("respond", __name__, template_folder="templates")

MODULE = "deniable.js"
#: The page: scripts and styles of this origin only, requests to this origin only, never framed.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
#: The epsilon a browser may spend over every survey it answers, as the Python client's default.
EPSILON_CAP = 10.0


def module_bytes() -> bytes:
    """The protocol module as this package ships it (what /static/deniable.js serves)."""
    return resources.files("deniable.aggregator.web").joinpath("static", MODULE).read_bytes()


@cache
def module_sha256() -> str:
    """sha256 hex of deniable.js, shown on the page so a respondent can check the code."""
    return hashlib.sha256(module_bytes()).hexdigest()


@bp.get("/s/<survey_id>")
def page(survey_id: str) -> Any:
    """The survey's answer page (an invitation comes in the fragment: #invitation=CODE)."""
    try:
        record = surveys.survey_or_404(get_store(), survey_id)
    except DeniableError:
        html = render_template("respond_missing.html", survey_id=survey_id)
        return _headers(Response(html, 404, mimetype="text/html"))
    survey = survey_cache().survey(record)
    questions = [
        {"question": q, "explanation": question_lines(q)} for q in survey.questions.values()
    ]
    html = render_template(
        "respond.html",
        survey=survey,
        questions=questions,
        totals=total_lines(survey),
        closed=record.closed or survey.is_closed(),
        cap=EPSILON_CAP,
        module_sha256=module_sha256(),
    )
    return _headers(Response(html, mimetype="text/html"))


def _headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"
    return response
