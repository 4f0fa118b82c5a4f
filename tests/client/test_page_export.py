"""`deniable page export URL DIR` and `deniable verify-page` on the exported page, hosted by a
static server on its own port, against a real aggregator (docs/fieldwork.md)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import requests
from client_support import FakeAggregator, send, survey_doc
from test_cli import run
from test_import_isolation import run as run_blocked

from deniable.client.page import installed_script
from deniable.shared import Survey
from deniable.shared.page import (
    IMPORTED,
    MODULES,
    SERVED_ASSETS,
    WORKER_IMPORTS,
    asset_version,
    render_page,
    sri,
)
from tests.static_host import StaticHost

MANIFEST = "deniable-page.json"


@pytest.fixture
def static_host(tmp_path: Path) -> Iterator[StaticHost]:
    """A static host of tmp_path/www (export into a folder of it)."""
    root = tmp_path / "www"
    root.mkdir()
    host = StaticHost(root)
    yield host
    host.close()


class Page(HTMLParser):
    """The exported page's script, link, meta and main elements."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], str]] = []
        self._open: list[Any] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = [tag, {k: v or "" for k, v in attrs}, ""]
        if tag == "script":
            self._open = element
        if tag in ("script", "link", "meta", "main", "h1"):
            self.elements.append(element)  # type: ignore[arg-type]

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[2] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None

    def find(self, tag: str, **attrs: str) -> list[tuple[str, dict[str, str], str]]:
        return [
            e
            for e in self.elements
            if e[0] == tag and all(e[1].get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


@pytest.fixture
def exported(
    live_server: Any, new_survey: Callable[..., str], static_host: StaticHost, home: Path
) -> tuple[str, Path]:
    """A survey exported into the static host's `site/` folder: (survey id, folder)."""
    survey_id = new_survey()
    folder = Path(static_host.server.RequestHandlerClass.keywords["directory"]) / "site"  # type: ignore[attr-defined]
    result = run(home, "page", "export", f"{live_server.url}/s/{survey_id}", str(folder))
    assert result.returncode == 0, result.stderr
    return survey_id, folder


def test_the_export_is_the_installed_code_and_the_survey_pinned(
    live_server: Any, new_survey: Callable[..., str], tmp_path: Path, home: Path
) -> None:
    survey_id = new_survey()
    published = live_server.get(f"/api/v1/surveys/{survey_id}").json()
    folder = tmp_path / "out"
    result = run(home, "page", "export", f"{live_server.url}/s/{survey_id}", str(folder))
    assert result.returncode == 0, result.stderr
    assert str(folder) in result.stdout and "DENIABLE_PAGE_ORIGINS" in result.stdout
    assert sorted(p.name for p in folder.iterdir()) == sorted([*MODULES, "index.html", MANIFEST])
    for name in MODULES:  # the installed package's bytes, never the aggregator's
        assert (folder / name).read_bytes() == installed_script(name)

    page = Page((folder / "index.html").read_text("utf-8"))
    (script,) = page.find("script", type="module")
    assert script[1]["src"] == "./respond.js"
    assert script[1]["integrity"] == sri(installed_script("respond.js"))
    (style,) = page.find("link", rel="stylesheet")
    assert style[1]["integrity"] == sri(installed_script("respond.css"))
    (imports,) = page.find("script", type="importmap")
    mapping = json.loads(imports[2])
    assert mapping["integrity"] == {  # the modules others import: deniable, conditions, memo
        f"./{name}": sri(installed_script(name)) for name in IMPORTED
    }
    (main,) = page.find("main", id="main")
    assert main[1]["data-aggregator"] == live_server.url
    assert main[1]["data-survey"] == survey_id
    assert main[1]["data-survey-hash"] == published["survey_hash"]
    assert main[1]["data-service-worker"] == "./sw.js"
    assert main[1]["data-device"] == "personal"
    (pinned,) = page.find("script", type="application/json", id="pinned-survey")
    document = json.loads(pinned[2])
    assert document["survey_hash"] == published["survey_hash"]
    assert Survey.from_dict(document["survey"]).hash == published["survey_hash"]

    # The policy in the page: its own scripts and the import map by its hash, requests to the
    # aggregator (and the page's own host) only.
    (policy,) = page.find("meta", http_equiv="Content-Security-Policy")
    csp = policy[1]["content"]
    digest = base64.b64encode(hashlib.sha256(imports[2].encode()).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}';" in csp
    assert f"connect-src 'self' {live_server.url};" in csp and "default-src 'none'" in csp

    manifest = json.loads((folder / MANIFEST).read_text("utf-8"))
    assert manifest["survey"] == survey_id and manifest["aggregator"] == live_server.url
    assert manifest["survey_hash"] == published["survey_hash"]
    assert manifest["modules"] == {
        name: hashlib.sha256(installed_script(name)).hexdigest() for name in MODULES
    }


def test_a_survey_that_does_not_match_its_hash_is_refused(tmp_path: Path, home: Path) -> None:
    survey = Survey.from_dict(survey_doc("tampered"))
    doc = survey.to_dict()
    doc["questions"][0]["text"] = "Do you smoke? (changed after publication)"
    body = json.dumps({"survey": doc, "survey_hash": survey.hash}).encode()
    routes = {"GET /api/v1/surveys/tampered": lambda handler: send(handler, 200, body)}
    folder = tmp_path / "out"
    with FakeAggregator(routes, survey) as fake:
        result = run(home, "page", "export", f"{fake.url}/s/tampered", str(folder))
    assert result.returncode == 1
    assert (
        result.stderr.startswith("error: ") and "does not match its published hash" in result.stderr
    )
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not folder.exists()  # nothing written


def test_a_directory_with_files_is_refused_unless_forced(
    live_server: Any, new_survey: Callable[..., str], tmp_path: Path, home: Path
) -> None:
    survey_id = new_survey()
    folder = tmp_path / "busy"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    link = f"{live_server.url}/s/{survey_id}"
    refused = run(home, "page", "export", link, str(folder))
    assert refused.returncode == 1 and "is not empty" in refused.stderr
    assert "--force" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    forced = run(home, "page", "export", "--force", link, str(folder))
    assert forced.returncode == 0, forced.stderr
    assert (folder / "index.html").is_file() and (folder / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    "link",
    ["http://127.0.0.1:9/surveys/x", "ftp://host/s/x", "not a link", "http://h/s/Bad_Id"],
)
def test_a_link_that_is_not_a_respondent_link_is_one_line(
    link: str, tmp_path: Path, home: Path
) -> None:
    result = run(home, "page", "export", link, str(tmp_path / "out"))
    assert result.returncode == 1 and result.stderr.startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unreachable_aggregator_is_one_line(tmp_path: Path, home: Path) -> None:
    result = run(home, "page", "export", "http://127.0.0.1:9/s/x", str(tmp_path / "out"))
    assert result.returncode == 1 and "could not reach http://127.0.0.1:9" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("where", ["site/", "site", "site/index.html"])
def test_verify_page_passes_on_the_hosted_export(
    exported: tuple[str, Path], static_host: StaticHost, home: Path, where: str
) -> None:
    result = run(home, "verify-page", f"{static_host.url}/{where}")
    assert result.returncode == 0, result.stderr
    for name in ("respond.js", "deniable.js", "respond.css", "sw.js", "survey", "page"):
        assert f"{name}: same" in result.stdout
    assert "DIFFERENT" not in result.stdout
    assert "integrity matches (import map)" in result.stdout
    assert "The page's code is the code you installed." in result.stdout
    assert f"It pins survey {exported[0]}" in result.stdout


def test_verify_page_fails_on_a_changed_module(
    exported: tuple[str, Path], static_host: StaticHost, home: Path
) -> None:
    _, folder = exported
    (folder / "deniable.js").write_bytes(installed_script("deniable.js") + b"\n// sends truths\n")
    result = run(home, "verify-page", f"{static_host.url}/site/")
    assert result.returncode == 1
    assert "deniable.js: DIFFERENT" in result.stdout and "respond.js: same" in result.stdout
    assert (
        result.stderr.startswith("error: deniable.js served by")
        and "do not answer" in result.stderr
    )
    assert len(result.stderr.strip().splitlines()) == 1


#: Markup a host can add that the browser runs (or that redirects the page) while every module
#: reference still checks out; each found by a red-team attack on the first verify-page.
HOSTILE_ADDITIONS = {
    "a duplicate src": (
        '<script type="module" src="./respond.js"',
        '<script type="module" src="./evil.js" src="./respond.js"',
    ),
    "a CDATA section": (
        "<main",
        "<![CDATA[ x ><script type=module src=./evil.js></script> ]]><main",
    ),
    "a short comment": ("<main", "<!--><script type=module src=./evil.js></script>--><main"),
    "a scoped import map": (
        '"imports":',
        '"scopes":{"./":{"./deniable.js":"./x/deniable.js"}},"imports":',
    ),
    "an event handler": ("<main", '<img src=x onerror="alert(1)"><main'),
    "a frame": ("<main", '<iframe srcdoc="<script>parent.x=1</script>"></iframe><main'),
    "a refresh": ("<head>", '<head><meta http-equiv=refresh content="0;url=https://evil.example">'),
    "a shadowing #main": (
        "<main",
        '<div id="main" data-aggregator="https://evil.example"></div><main',
    ),
    "a base": ("<head>", '<head><base href="/elsewhere/">'),
    "a preload": ("<head>", "<head><link rel=modulepreload href=./evil.js>"),
}


@pytest.mark.parametrize("addition", sorted(HOSTILE_ADDITIONS))
def test_verify_page_fails_on_any_markup_the_host_adds(
    exported: tuple[str, Path], static_host: StaticHost, home: Path, addition: str
) -> None:
    _, folder = exported
    index = folder / "index.html"
    html = index.read_text("utf-8")
    old, new = HOSTILE_ADDITIONS[addition]
    assert old in html
    index.write_text(html.replace(old, new, 1), "utf-8")
    result = run(home, "verify-page", f"{static_host.url}/site/")
    assert result.returncode == 1 and "page: DIFFERENT" in result.stdout, result.stdout


def test_verify_page_fails_on_a_byte_order_mark(
    exported: tuple[str, Path], static_host: StaticHost, home: Path
) -> None:
    _, folder = exported
    index = folder / "index.html"
    index.write_bytes(b"\xef\xbb\xbf" + index.read_bytes())
    result = run(home, "verify-page", f"{static_host.url}/site/")
    assert result.returncode == 1 and "byte-order mark" in result.stdout


def test_verify_page_fails_when_the_page_pins_other_code(
    exported: tuple[str, Path], static_host: StaticHost, home: Path
) -> None:
    """An altered module with its integrity rewritten to match: the browser would run it, so
    the pin itself is compared with the installed copy."""
    _, folder = exported
    altered = installed_script("respond.js") + b"\n// and a tracker\n"
    (folder / "respond.js").write_bytes(altered)
    index = folder / "index.html"
    html = index.read_text("utf-8")
    index.write_text(html.replace(sri(installed_script("respond.js")), sri(altered)), "utf-8")
    result = run(home, "verify-page", f"{static_host.url}/site/index.html")
    assert result.returncode == 1 and "respond.js: DIFFERENT" in result.stdout
    assert "integrity DIFFERS (script tag)" in result.stdout
    assert "page: DIFFERENT" in result.stdout  # the HTML is not what deniable renders either
    assert result.stderr.startswith("error: page, respond.js served by")


def test_verify_page_fails_when_the_pinned_survey_is_not_the_published_one(
    exported: tuple[str, Path], static_host: StaticHost, home: Path
) -> None:
    survey_id, folder = exported
    published = Survey.from_dict(survey_doc(survey_id))
    doc = survey_doc(survey_id)
    doc["title"] = "Another version of the survey"
    other = Survey.from_dict(doc)
    index = folder / "index.html"
    html = index.read_text("utf-8")
    assert html.count(published.hash) >= 2
    pinned = re.search(r'<script type="application/json" id="pinned-survey">(.*?)</script>', html)
    assert pinned is not None
    replaced = json.dumps({"survey": other.to_dict(), "survey_hash": other.hash})
    html = html.replace(pinned.group(1), replaced).replace(published.hash, other.hash)
    index.write_text(html, "utf-8")
    result = run(home, "verify-page", f"{static_host.url}/site/")
    assert result.returncode == 1
    assert "survey: DIFFERENT" in result.stdout and "respond.js: same" in result.stdout
    assert f"published sha256 {published.hash}" in result.stdout
    assert "the survey the page pins is not the one" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_verify_page_fails_when_the_pinned_document_does_not_match_its_hash(
    exported: tuple[str, Path], static_host: StaticHost, home: Path
) -> None:
    _, folder = exported
    index = folder / "index.html"
    html = index.read_text("utf-8")
    index.write_text(html.replace("Do you smoke?", "Do you smoke tobacco?"), "utf-8")
    result = run(home, "verify-page", f"{static_host.url}/site/")
    assert result.returncode == 1 and "survey: DIFFERENT" in result.stdout
    assert "does not match the hash the page pins" in result.stdout


def test_a_page_that_is_not_a_deniable_page_is_one_line(
    static_host: StaticHost, home: Path
) -> None:
    root = Path(static_host.server.RequestHandlerClass.keywords["directory"])  # type: ignore[attr-defined]
    (root / "index.html").write_text("<!doctype html><title>hello</title><p>hi</p>")
    result = run(home, "verify-page", f"{static_host.url}/")
    assert result.returncode == 1 and "no deniable survey page" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_pinned_survey_cannot_end_its_script_block() -> None:
    """A title or option with `</script>` stays data: the page's JSON block ends where the
    renderer ends it, and reads back as the survey."""
    doc = survey_doc("hostile")
    doc["title"] = "</script><script>alert(1)</script> & <!--"
    doc["questions"][0]["text"] = "\u2028</SCRIPT >?"
    survey = Survey.from_dict(doc)
    modules = {name: f"./{name}" for name in MODULES}
    html = render_page(
        survey,
        aggregator="https://agg.example",
        assets=modules,
        integrity={name: "sha384-x" for name in MODULES},
        service_worker="./sw.js",
        closed=False,
        cap=10.0,
        module_sha256="0" * 64,
        verify_hint="deniable verify-page URL",
    )
    page = Page(html)
    scripts = page.find("script")
    assert [s[1].get("type") for s in scripts] == [
        "importmap",
        "module",
        "application/json",  # the pinned survey
        "application/json",  # the product's words in the survey's languages
        "application/json",  # their plural forms
        "application/json",  # the plain-words explanations in the page's other languages
    ]
    document = json.loads(page.find("script", id="pinned-survey")[0][2])
    assert document["survey"]["title"] == doc["title"] and document["survey_hash"] == survey.hash
    explained = json.loads(page.find("script", id="page-explanations")[0][2])
    assert explained == {}  # one language: its explanations are in the page's own HTML
    assert "<script>alert(1)" not in html  # the title in <h1> and <title> is escaped


def _between(html: str, start: str, end: str) -> str:
    return html[html.index(start) : html.index(end)]


def test_the_aggregator_serves_the_same_page_pinned_the_same_way(
    live_server: Any, new_survey: Callable[..., str], tmp_path: Path, home: Path
) -> None:
    survey_id = new_survey()
    response = live_server.get(f"/s/{survey_id}")
    assert response.status_code == 200
    html = response.text
    page = Page(html)
    (script,) = page.find("script", type="module")
    # The files at their versioned URLs (cacheable for a year), pinned as the export pins them.
    version = asset_version({name: sri(installed_script(name)) for name in SERVED_ASSETS})
    assert script[1]["src"] == f"/static/v/{version}/respond.js"
    assert script[1]["integrity"] == sri(installed_script("respond.js"))
    (imports,) = page.find("script", type="importmap")
    assert json.loads(imports[2])["integrity"] == {
        f"/static/v/{version}/{name}": sri(installed_script(name)) for name in IMPORTED
    }
    (main,) = page.find("main", id="main")
    assert main[1]["data-aggregator"] == live_server.url
    assert main[1]["data-service-worker"] == "/s/sw.js"
    # The header policy allows the import map by the hash of its exact text, and no other.
    csp = response.headers["Content-Security-Policy"]
    digest = base64.b64encode(hashlib.sha256(imports[2].encode()).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}';" in csp and "worker-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp

    # One renderer: the exported page's form and explanations are the aggregator's, byte for byte.
    folder = tmp_path / "out"
    assert (
        run(home, "page", "export", f"{live_server.url}/s/{survey_id}", str(folder)).returncode == 0
    )
    exported = (folder / "index.html").read_text("utf-8")
    for start, end in (("<form", "</form>"), ('<section class="thanks"', "<footer")):
        assert _between(exported, start, end) == _between(html, start, end)


def test_the_service_worker_is_served_under_s(live_server: Any) -> None:
    for name in ("sw.js", *WORKER_IMPORTS):  # the worker, and the modules it imports (./...)
        response = requests.get(f"{live_server.url}/s/{name}", timeout=10)
        assert response.status_code == 200 and response.content == installed_script(name)
        assert response.headers["Content-Type"].startswith("text/javascript")
        assert response.headers["Cache-Control"] == "no-cache"
        assert "Access-Control-Allow-Origin" not in response.headers


def test_a_client_only_install_renders_the_page_without_the_aggregator() -> None:
    result = run_blocked(
        "import sys\n"
        "from deniable.client.export import export_page\n"
        "from deniable.shared import Survey\n"
        "from deniable.shared.page import MODULES, render_page\n"
        "doc = {'id': 'x', 'title': 'T', 'questions': [{'id': 'q', 'text': 'Q?',"
        " 'type': 'binary', 'epsilon': 1.0}]}\n"
        "html = render_page(Survey.from_dict(doc), aggregator='https://a.example',"
        " assets={n: './' + n for n in MODULES}, integrity={n: 'sha384-x' for n in MODULES},"
        " service_worker='./sw.js', closed=False, cap=10.0, module_sha256='0' * 64,"
        " verify_hint='deniable verify-page URL')\n"
        "assert 'data-aggregator=\"https://a.example\"' in html\n"
        "assert not {'flask', 'werkzeug'} & {m.split('.')[0] for m in sys.modules}\n"
        "assert not any(m.startswith('deniable.aggregator') for m in sys.modules)\n"
        "print('ok')\n"
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
