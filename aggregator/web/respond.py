"""The respondent's web page, GET /s/<survey_id>: answer a survey in the browser.

The page randomizes, signs and sends on the device with static/deniable.js (the same protocol
as deniable.client); the server never sees a true answer. It is rendered by the one renderer
(deniable.shared.page, also behind `deniable page export`), so the aggregator's page and an
exported one behave the same: the questions and their plain-words explanations
(shared/explain.py, the text of `deniable explain`), the modules pinned by Subresource
Integrity, the survey pinned by its hash. No cookies, no inline script but the import map
(allowed by its hash), nothing from another origin. The page's files are served at versioned
URLs, /static/v/<version>/<name> (the version a hash of their integrity values), cacheable for
a year; the service worker is served at /s/sw.js, so that its scope covers every /s/ page
(docs/fieldwork.md).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from typing import Any

from flask import Blueprint, Response, abort, render_template, request

from deniable.aggregator import surveys
from deniable.aggregator.web.db import get_store, survey_cache
from deniable.shared.errors import DeniableError
from deniable.shared.page import (
    SERVED_ASSETS,
    WORKER_IMPORTS,
    asset_version,
    connect_sources,
    import_map,
    page_csp,
    served_assets,
    served_page,
    sri,
)

bp = Blueprint("respond", __name__, template_folder="templates")

MODULE = "deniable.js"
#: The files the page loads from /static/ (the service worker comes from /s/sw.js).
PAGE_ASSETS = SERVED_ASSETS
#: Served under /s/ as well: the service worker (its scope is /s/) and the modules it imports.
WORKER_FILES = ("sw.js", *WORKER_IMPORTS)
#: How long a browser may keep a file of /static/v/<version>/: a year (its URL changes with it).
VERSIONED_MAX_AGE = 365 * 24 * 3600
_TYPES = {"js": "text/javascript", "css": "text/css"}


def static_bytes(name: str) -> bytes:
    """A page file as this package ships it (what /static/NAME serves)."""
    return resources.files("deniable.aggregator.web").joinpath("static", name).read_bytes()


def module_bytes() -> bytes:
    """The protocol module as this package ships it (what /static/deniable.js serves)."""
    return static_bytes(MODULE)


@cache
def module_sha256() -> str:
    """sha256 hex of deniable.js, shown on the page so a respondent can check the code."""
    return hashlib.sha256(module_bytes()).hexdigest()


@cache
def integrity() -> dict[str, str]:
    """The sha384 Subresource Integrity of each file the page loads."""
    return {name: sri(static_bytes(name)) for name in PAGE_ASSETS}


@cache
def csp_for(assets: tuple[tuple[str, str], ...], connect: str = "'self'") -> str:
    """The page's Content-Security-Policy for these asset URLs (the import map's hash), with
    requests to `connect` (the survey's relay too, when it names one)."""
    return page_csp(import_map(dict(assets), integrity()), connect=connect)


@cache
def version() -> str:
    """The version of the page's files in their URLs (/static/v/<version>/<name>)."""
    return asset_version(integrity())


def default_csp() -> str:
    """The policy of a page whose files are at /static/ (the app at the root of its host)."""
    return csp_for(tuple(served_assets("", integrity()).items()))


#: The page's policy: scripts and styles of this origin only (and the import map, by hash),
#: requests to this origin only, its own service worker, never framed.
CSP = default_csp()


@bp.get("/s/<survey_id>")
def page(survey_id: str) -> Any:
    """The survey's answer page (an invitation comes in the fragment: #invitation=CODE)."""
    assets = served_assets(request.script_root, integrity())
    csp = csp_for(tuple(assets.items()))
    try:
        record = surveys.survey_or_404(get_store(), survey_id)
    except DeniableError:
        html = render_template("respond_missing.html", survey_id=survey_id)
        return _headers(Response(html, 404, mimetype="text/html"), csp)
    survey = survey_cache().survey(record)
    html = served_page(
        survey,
        aggregator=request.host_url.rstrip("/"),
        root=request.script_root,
        page_url=request.url,
        closed=record.closed or survey.is_closed(),
        integrity=integrity(),
        module_sha256=module_sha256(),
        lang=request.args.get("lang"),  # the first render's language (docs/surveys.md)
    )
    if survey.route is not None:  # the page posts to the survey's relay (docs/anonymity.md)
        csp = csp_for(tuple(assets.items()), connect_sources(survey))
    return _headers(Response(html, mimetype="text/html"), csp)


@bp.get("/static/v/<string(length=16):asked>/<name>")
def versioned_file(asked: str, name: str) -> Any:
    """A page file at its versioned URL, cacheable for a year: only this version's (an old
    page's URL is 404, never another version's bytes under it)."""
    if asked != version() or name not in PAGE_ASSETS:
        abort(404)
    response = Response(static_bytes(name), mimetype=_TYPES[name.rsplit(".", 1)[1]])
    response.headers["Cache-Control"] = f"public, max-age={VERSIONED_MAX_AGE}, immutable"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def worker_file(name: str) -> Any:
    """The service worker at /s/sw.js (so its scope is /s/), and the modules it imports."""
    try:
        body = static_bytes(name)
    except OSError:
        abort(404)
    response = Response(body, mimetype="text/javascript")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


for _name in WORKER_FILES:  # one route each: /s/<survey_id> is the page
    bp.add_url_rule(f"/s/{_name}", view_func=worker_file, defaults={"name": _name})


def _headers(response: Response, csp: str) -> Response:
    response.headers["Content-Security-Policy"] = csp
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"
    return response
