"""The respondent's web page, rendered once for both places it is served (docs/fieldwork.md).

The aggregator's own /s/<id> and a page exported with `deniable page export` are the same
HTML from the same template (shared/templates/respond.html), with the questions and the
plain-words explanations of `deniable explain` (shared/explain.py). The page pins its code and
its survey: every module by Subresource Integrity (sha384: `integrity=` on the script and the
stylesheet, and the import map's `integrity` for the module others import), the survey by its
resolved document and hash in a script data block, and it names the one aggregator it talks to.

The DOM the page's JavaScript reads (static/respond.js):
`<main id="main" data-survey data-survey-hash data-aggregator data-cap data-epsilon data-device
data-service-worker>`, `<script type="application/json" id="pinned-survey">`, and the hidden
`[data-thanks]`, `[data-next]`, `[data-waiting]`, `[data-sent]`, `[data-shared-note]` and
`[data-invitation]` elements of the shared-device mode.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from deniable.shared.explain import question_lines, total_lines
from deniable.shared.survey import Survey

if TYPE_CHECKING:
    from jinja2 import Environment

#: The page's files: the protocol module, the page, the service worker and the stylesheet.
MODULES = ("deniable.js", "respond.js", "sw.js", "respond.css")
#: The modules other modules import: the import map pins them (a script tag pins the rest).
IMPORTED = ("deniable.js",)
#: The bare specifier the import map gives the protocol module.
SPECIFIER = "deniable"


def sri(data: bytes) -> str:
    """The Subresource Integrity value of `data`: "sha384-" and the base64 digest."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode("ascii")


def script_data(value: Any) -> str:
    """JSON for an inline `<script>` block: `<`, `>` and `&` escaped, so no text in it can end
    the element (JSON.parse reads the escapes back)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def import_map(assets: Mapping[str, str], integrity: Mapping[str, str]) -> str:
    """The page's inline import map: the protocol module's URL and the integrity of each module
    others import (a browser refuses a module whose bytes do not match)."""
    return script_data(
        {
            "imports": {SPECIFIER: assets["deniable.js"]},
            "integrity": {assets[name]: integrity[name] for name in IMPORTED},
        }
    )


def inline_hash(text: str) -> str:
    """The CSP source that allows one inline script: 'sha256-...' of its exact text."""
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def page_csp(import_map_text: str, *, connect: str = "'self'", meta: bool = False) -> str:
    """The page's Content-Security-Policy: its own scripts and the import map (by hash), its own
    styles, its own service worker, requests to `connect` only; never framed (a header only:
    a <meta> policy cannot say frame-ancestors)."""
    policy = (
        f"default-src 'none'; script-src 'self' {inline_hash(import_map_text)}; "
        f"style-src 'self'; img-src 'self' data:; connect-src {connect}; worker-src 'self'; "
        "form-action 'none'; base-uri 'none'"
    )
    return policy if meta else f"{policy}; frame-ancestors 'none'"


def pinned_survey(survey: Survey) -> str:
    """The pinned survey as the page carries it: the resolved document and its hash."""
    return script_data({"survey": survey.to_dict(), "survey_hash": survey.hash})


@cache
def _environment() -> Environment:
    """The template environment (jinja2 is imported when a page is first rendered)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader("deniable.shared", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=False,
        keep_trailing_newline=True,
    )


def render_page(
    survey: Survey,
    *,
    aggregator: str,
    assets: Mapping[str, str],
    integrity: Mapping[str, str],
    service_worker: str,
    closed: bool,
    cap: float,
    module_sha256: str,
    verify_hint: str,
    exported: bool = False,
    meta_csp: str | None = None,
) -> str:
    """The respondent page of `survey` (HTML): `assets` and `integrity` name each module's URL
    and sha384 (respond.js, deniable.js, respond.css), `aggregator` is the origin it sends to."""
    questions = [
        {"question": q, "explanation": question_lines(q)} for q in survey.questions.values()
    ]
    from markupsafe import Markup

    template = _environment().get_template("respond.html")
    return template.render(
        survey=survey,
        survey_hash=survey.hash,
        device=getattr(survey, "device", "personal"),
        questions=questions,
        totals=total_lines(survey),
        aggregator=aggregator,
        assets=assets,
        integrity=integrity,
        import_map=Markup(import_map(assets, integrity)),  # escaped by script_data
        pinned=Markup(pinned_survey(survey)),  # escaped by script_data
        service_worker=service_worker,
        closed=closed,
        cap=cap,
        module_sha256=module_sha256,
        verify_hint=verify_hint,
        exported=exported,
        meta_csp=meta_csp,
    )


#: The epsilon a browser may spend over every survey it answers (the Python client's default).
PAGE_EPSILON_CAP = 10.0
#: The files the aggregator's /s/<id> loads from /static/ (its worker comes from /s/sw.js).
SERVED_ASSETS = ("deniable.js", "respond.js", "respond.css")
#: What an exported page's footer suggests (it cannot know where it will be hosted).
EXPORT_HINT = "deniable verify-page ADDRESS-OF-THIS-PAGE"


def served_assets(root: str) -> dict[str, str]:
    """The URLs of the aggregator page's files, for an app mounted at `root` ("" at the host's
    root)."""
    return {name: f"{root}/static/{name}" for name in SERVED_ASSETS}


def served_page(
    survey: Survey,
    *,
    aggregator: str,
    root: str,
    page_url: str,
    closed: bool,
    integrity: Mapping[str, str],
    module_sha256: str,
) -> str:
    """The aggregator's /s/<id> page, exactly: what respond.py serves and verify-page expects."""
    return render_page(
        survey,
        aggregator=aggregator,
        assets=served_assets(root),
        integrity=integrity,
        service_worker=f"{root}/s/sw.js",
        closed=closed,
        cap=PAGE_EPSILON_CAP,
        module_sha256=module_sha256,
        verify_hint=f"deniable verify-page {page_url}",
    )


def exported_page(
    survey: Survey,
    *,
    aggregator: str,
    closed: bool,
    integrity: Mapping[str, str],
    module_sha256: str,
) -> str:
    """An exported page's index.html, exactly: what `deniable page export` writes and
    verify-page expects."""
    assets = {name: f"./{name}" for name in MODULES}
    return render_page(
        survey,
        aggregator=aggregator,
        assets=assets,
        integrity=integrity,
        service_worker="./sw.js",
        closed=closed,
        cap=PAGE_EPSILON_CAP,
        module_sha256=module_sha256,
        verify_hint=EXPORT_HINT,
        exported=True,
        meta_csp=page_csp(import_map(assets, integrity), connect=f"'self' {aggregator}", meta=True),
    )
