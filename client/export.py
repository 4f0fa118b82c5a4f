"""`deniable page export URL DIR`: the respondent page as a static site anyone can host.

The page is the aggregator's /s/<survey> rendered by the same renderer (deniable.shared.page)
with the modules of the installed package, never downloaded from the aggregator: every module
pinned by its sha384, the survey pinned by its resolved document and hash (a survey the
aggregator serves with another hash is refused, here and in the browser), and the aggregator's
origin the only one the page talks to (its Content-Security-Policy says so too). Any static
host serves it; the aggregator must list the host's origin in DENIABLE_PAGE_ORIGINS
(docs/fieldwork.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests

from deniable.client.errors import ClientError
from deniable.client.http import Api, client_version, make_session
from deniable.client.page import installed_script
from deniable.client.urls import normalize_url
from deniable.shared.page import MODULES, exported_page, sri
from deniable.shared.survey import SURVEY_ID, Survey

#: What verify-page and a curious host read: the survey, its hash, the aggregator, the modules.
MANIFEST = "deniable-page.json"
INDEX = "index.html"
_LINK = re.compile(r"/s/([^/]+)/?")


@dataclass(frozen=True)
class Export:
    """An exported page: where it is and what it pins."""

    directory: Path
    survey: Survey
    aggregator: str
    files: tuple[str, ...]


def parse_link(url: str) -> tuple[str, str]:
    """The aggregator's origin and the survey id of a respondent link `<aggregator>/s/<id>`."""
    text = url.strip()
    parts = urlsplit(text)
    match = _LINK.fullmatch(parts.path)
    if parts.scheme not in ("http", "https") or not parts.netloc or match is None:
        raise ClientError(
            f"expected a respondent link like https://aggregator.example/s/SURVEY, got {url!r}"
        )
    if not SURVEY_ID.fullmatch(match.group(1)):
        raise ClientError(f"{match.group(1)!r} in {url!r} is not a survey id")
    return normalize_url(f"{parts.scheme}://{parts.netloc}"), match.group(1)


def _check_directory(directory: Path, force: bool) -> None:
    if directory.exists() and not directory.is_dir():
        raise ClientError(f"{directory} exists and is not a directory: choose another DIR")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise ClientError(
            f"{directory} is not empty: choose an empty or new directory, or add --force to "
            "write the page's files over what is there"
        )


def export_page(
    url: str, directory: Path, *, force: bool = False, session: requests.Session | None = None
) -> Export:
    """Fetch the survey behind the respondent link `url`, check it against its hash, and write
    the pinned static page into `directory` (ClientError, and nothing written, on a problem)."""
    aggregator, survey_id = parse_link(url)
    _check_directory(directory, force)
    modules = {name: installed_script(name) for name in MODULES}
    survey = Api(aggregator, session or make_session()).fetch_survey(survey_id)
    integrity = {name: sri(data) for name, data in modules.items()}
    html = exported_page(
        survey,
        aggregator=aggregator,
        closed=survey.is_closed(),
        integrity=integrity,
        module_sha256=hashlib.sha256(modules["deniable.js"]).hexdigest(),
    )
    manifest = {
        "survey": survey.id,
        "survey_hash": survey.hash,
        "aggregator": aggregator,
        "modules": {name: hashlib.sha256(data).hexdigest() for name, data in modules.items()},
        "deniable": client_version(),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in modules.items():
        (directory / name).write_bytes(data)
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    (directory / INDEX).write_text(html, "utf-8")  # last: a page only once its modules are there
    return Export(directory, survey, aggregator, (INDEX, *MODULES, MANIFEST))
