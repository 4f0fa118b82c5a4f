"""`deniable verify-page URL`: is the respondent web page's code the code you installed?

The page randomizes in the browser with scripts someone serves: the aggregator at /s/<survey>,
or any static host for a page made by `deniable page export` (docs/fieldwork.md). This reads
the page the browser would run and checks it against the installed deniable package (found
without importing the aggregator, so it works on a client-only install): every module's
Subresource Integrity value (the script tags, the stylesheet, the import map), every module's
served bytes, the service worker's bytes, and the survey the page pins against the survey the
aggregator publishes now. An address with no page on it (/s/<unknown>) still gets today's check
of the aggregator's /static/ scripts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import posixpath
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

from deniable.client.errors import ClientError
from deniable.client.http import Api, make_session
from deniable.client.urls import normalize_url
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import SurveyError
from deniable.shared.page import (
    IMPORTED,
    MODULES,
    WORKER_IMPORTS,
    exported_page,
    served_page,
    sri,
)
from deniable.shared.survey import Survey

#: The page's scripts: the protocol module and the page logic that reads the form.
SCRIPTS = ("deniable.js", "respond.js")
#: The page's JSON data blocks besides the pinned survey: the product's words, their plural
#: forms and the plain-words explanations in each of the survey's languages (shared/page.py).
DATA_BLOCKS = ("page-messages", "page-plurals", "page-explanations")
#: Redirects followed to reach a page (a directory's address answers with its slash added).
MAX_REDIRECTS = 5
#: The most module references read from one page (the aggregator's page has 26): a hostile
#: page cannot make verify-page fetch without end.
MAX_REFERENCES = 40


@dataclass(frozen=True)
class Check:
    """One check of the page: a module (or the pinned survey) beside what it should be."""

    name: str
    same: bool
    details: tuple[str, ...] = ()
    kind: str = "code"  # "code" or "survey"


@dataclass(frozen=True)
class Verdict:
    """What verify-page found at an address: its checks, and the aggregator the page names."""

    url: str
    checks: list[Check] = field(default_factory=list)
    aggregator: str | None = None
    survey: str | None = None

    @property
    def same(self) -> bool:
        """Whether every check passed."""
        return all(check.same for check in self.checks)


def installed_script(name: str) -> bytes:
    """The installed package's copy of a page file (deniable.js, respond.js, sw.js, respond.css)."""
    if name not in MODULES and name not in SCRIPTS:
        raise ClientError(f"{name!r} is not one of the page's files ({', '.join(MODULES)})")
    spec = importlib.util.find_spec("deniable.aggregator")  # finds, does not import, the package
    if spec is None or not spec.submodule_search_locations:
        raise ClientError("the installed deniable has no copy of the page's scripts to compare")
    path = Path(next(iter(spec.submodule_search_locations))) / "web" / "static" / name
    try:
        return path.read_bytes()
    except OSError:
        raise ClientError(f"the installed deniable has no {name} ({path})") from None


def server_of(url: str) -> str:
    """The origin of an address (the aggregator's base URL from a page URL)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ClientError(f"expected the page's address, like https://host/s/SURVEY, got {url!r}")
    return normalize_url(f"{parts.scheme}://{parts.netloc}")


def fetch(session: requests.Session, url: str, *, what: str) -> tuple[str, int, bytes]:
    """GET `url` with the client's limits (deadline, size), following a few redirects: the final
    address, its status and its body."""
    for _ in range(MAX_REDIRECTS + 1):
        origin = server_of(url)
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        response = Api(origin, session)._request("GET", path, advice=f"check the address of {what}")
        if response.status_code in (301, 302, 303, 307, 308) and "Location" in response.headers:
            url = urljoin(url, response.headers["Location"])
            continue
        return url, response.status_code, response.content
    raise ClientError(f"{what} at {url} redirects more than {MAX_REDIRECTS} times")


class _PageParser(HTMLParser):
    """The parts of a page verify-page reads: scripts, stylesheets and the <main> element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.links: list[dict[str, str]] = []
        self.main: dict[str, str] | None = None
        self._script: tuple[dict[str, str], list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if tag == "script":
            self._script = (values, [])
        elif tag == "link":
            self.links.append(values)
        elif tag == "main" and values.get("id") == "main" and self.main is None:
            self.main = values

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script[1].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script[0], "".join(self._script[1])))
            self._script = None


def _module_name(url: str) -> str:
    return posixpath.basename(urlsplit(url).path)


class _Checker:
    """The checks of one page: each reference to a module, then the pinned survey."""

    def __init__(self, session: requests.Session, page_url: str) -> None:
        self.session = session
        self.page_url = page_url
        self.checks: list[Check] = []
        self.seen: set[str] = set()

    def module(self, url: str, how: str, integrity: str | None) -> None:
        """A module the page loads from `url` (by `how`), pinned by `integrity` (or not)."""
        absolute = urljoin(self.page_url, url)
        if len(self.seen) >= MAX_REFERENCES:
            raise ClientError(
                f"{self.page_url} loads more than {MAX_REFERENCES} files: not a deniable page"
            )
        if integrity is None and absolute in self.seen:
            return  # already compared (the worker imports the page's own deniable.js)
        self.seen.add(absolute)
        name = _module_name(absolute)
        if name not in MODULES:
            self.checks.append(
                Check(name or url, False, (f"{how} {absolute}: not a file of deniable's page",))
            )
            return
        installed = installed_script(name)
        details = []
        same = True
        if integrity is not None:
            expected = sri(installed)
            pinned = integrity.split() == [expected]
            same &= pinned
            details.append(
                f"integrity {'matches' if pinned else 'DIFFERS'} ({how}): "
                f"{integrity or '(none)'}" + ("" if pinned else f"; installed {expected}")
            )
        _, status, body = fetch(self.session, absolute, what=name)
        served = hashlib.sha256(body).hexdigest() if status == 200 else f"HTTP {status}"
        installed_hex = hashlib.sha256(installed).hexdigest()
        same &= served == installed_hex
        details += [f"served    sha256 {served}  {absolute}", f"installed sha256 {installed_hex}"]
        self.checks.append(Check(name, same, tuple(details)))

    def fail(self, name: str, detail: str, kind: str = "code") -> None:
        """A check that cannot pass (a script the package does not ship, a missing pin)."""
        self.checks.append(Check(name, False, (detail,), kind))


def _check_page(checker: _Checker, parsed: _PageParser) -> tuple[dict[str, object], str | None]:
    """The code checks of a parsed page; its pinned survey document, if any."""
    pinned: dict[str, object] = {}
    pinned_text: str | None = None
    scripts: list[str] = []  # the module scripts' addresses
    mapped: set[str] = set()  # the addresses the import map pins
    for attrs, text in parsed.scripts:
        kind = attrs.get("type", "").strip().lower()
        if "src" in attrs:
            if kind != "module":
                checker.fail(_module_name(attrs["src"]) or "script", "a classic script")
                continue
            checker.module(attrs["src"], "script tag", attrs.get("integrity", ""))
            scripts.append(urljoin(checker.page_url, attrs["src"]))
        elif kind == "importmap":
            try:
                value = parse_json(text)
            except JSONTextError as exc:
                checker.fail("import map", f"not JSON: {exc}")
                continue
            entries = value.get("integrity") if isinstance(value, dict) else None
            imports = value.get("imports") if isinstance(value, dict) else None
            if not isinstance(entries, dict) or not isinstance(imports, dict):
                checker.fail("import map", "no imports and integrity objects")
                continue
            for target in imports.values():
                if not isinstance(target, str) or target not in entries:
                    checker.fail("import map", f"imports {target!r} without an integrity value")
            for url, integrity in entries.items():
                checker.module(url, "import map", integrity if isinstance(integrity, str) else "")
                mapped.add(urljoin(checker.page_url, url))
        elif kind == "application/json" and attrs.get("id") == "pinned-survey":
            pinned_text = text
        elif kind == "application/json" and attrs.get("id") in DATA_BLOCKS:
            pass  # data the page reads, never runs: the exact-page check covers its bytes
        else:
            checker.fail("inline script", "the page runs inline code deniable does not ship")
    for attrs in parsed.links:
        if "stylesheet" in attrs.get("rel", "").lower().split():
            checker.module(attrs.get("href", ""), "stylesheet", attrs.get("integrity", ""))
    if not any(_module_name(url) == "respond.js" for url in scripts):
        checker.fail("respond.js", "the page does not load respond.js")
    for url in scripts:  # what each module imports (./deniable.js, ...) the import map pins
        for name in IMPORTED:
            if urljoin(url, name) not in mapped:
                checker.fail(name, f"the import map does not pin {urljoin(url, name)}")
    worker = (parsed.main or {}).get("data-service-worker")
    if worker:  # a worker's script cannot be pinned by integrity: its bytes are compared
        checker.module(worker, "service worker", None)
        for name in WORKER_IMPORTS:  # the modules the worker imports, from beside it
            checker.module(urljoin(urljoin(checker.page_url, worker), name), "worker import", None)
    if pinned_text is not None:
        try:
            value = parse_json(pinned_text)
        except JSONTextError:
            value = None
        if isinstance(value, dict):
            pinned = value
    return pinned, pinned_text


def _check_survey(
    checker: _Checker, session: requests.Session, main: dict[str, str], pinned: dict[str, object]
) -> tuple[str | None, str | None]:
    """The pinned survey: its document against its hash, and the hash against the one the
    aggregator publishes now. The aggregator and survey the page names."""
    raw_aggregator = main.get("data-aggregator", "")
    survey_id = main.get("data-survey", "")
    try:
        aggregator = normalize_url(raw_aggregator)
    except ClientError:
        checker.fail("survey", f"the page names no aggregator ({raw_aggregator!r})", "survey")
        return None, survey_id
    if urlsplit(aggregator).path:
        checker.fail("survey", f"the page's aggregator {aggregator} is not an origin", "survey")
        return aggregator, survey_id
    document, pinned_hash = pinned.get("survey"), pinned.get("survey_hash")
    try:
        own_hash = Survey.from_dict(document).hash
    except SurveyError as exc:
        checker.fail("survey", f"the page pins no valid survey: {exc}", "survey")
        return aggregator, survey_id
    if own_hash != pinned_hash or main.get("data-survey-hash") != pinned_hash:
        checker.fail(
            "survey", "the pinned document does not match the hash the page pins", "survey"
        )
        return aggregator, survey_id
    published = Api(aggregator, session).fetch_survey(survey_id).hash
    checker.checks.append(
        Check(
            "survey",
            published == pinned_hash,
            (
                f"pinned    sha256 {pinned_hash}  {checker.page_url}",
                f"published sha256 {published}  {aggregator}/api/v1/surveys/{survey_id}",
            ),
            "survey",
        )
    )
    return aggregator, survey_id


def verify_page(url: str, session: requests.Session | None = None) -> Verdict:
    """Check the page at `url` (the aggregator's /s/<survey>, or an exported page's index.html
    or directory, wherever hosted) against the installed deniable; ClientError when it cannot
    be read."""
    server = server_of(url)
    session = session or make_session()
    final, status, body = fetch(session, url.strip(), what="the page")
    parsed = _PageParser()
    if status == 200:
        parsed.feed(body.decode("utf-8", "replace"))
        parsed.close()
    if parsed.main is None or "data-survey" not in parsed.main:
        if "/s/" not in urlsplit(final).path:
            raise ClientError(
                f"{final} answered HTTP {status} with no deniable survey page: give the page's "
                "address (https://host/s/SURVEY, or an exported page's index.html)"
            )
        return Verdict(url, _aggregator_scripts(session, server))  # no survey there: its code
    checker = _Checker(session, final)
    pinned, _ = _check_page(checker, parsed)
    aggregator, survey_id = _check_survey(checker, session, parsed.main, pinned)
    checker.checks.append(_check_exact(final, body, parsed.main, pinned))
    return Verdict(final, checker.checks, aggregator, survey_id)


#: Byte-order marks: a page that starts with one could be read by a browser in another encoding.
BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def _check_exact(
    page_url: str, body: bytes, main: dict[str, str], pinned: dict[str, object]
) -> Check:
    """The page's HTML, byte for byte, against what deniable renders for the survey it pins
    (as the aggregator serves it, or as `page export` wrote it): any markup the host added (a
    script, an event handler, a second import map, a <base>, an element that shadows #main)
    fails here, however the checks above read it."""
    fail = "the page is not exactly what deniable renders for its survey: it may run other code"
    if body.startswith(BOMS):
        return Check("page", False, ("the page starts with a byte-order mark; " + fail,), "code")
    try:
        text = body.decode("utf-8")
        survey = Survey.from_dict(pinned.get("survey"))
    except (UnicodeDecodeError, SurveyError):
        return Check("page", False, (fail,), "code")
    parts = urlsplit(page_url)
    served_at = f"{parts.scheme}://{parts.netloc}"
    root = parts.path.rsplit("/s/", 1)[0] if "/s/" in parts.path else None
    integrity = {name: sri(installed_script(name)) for name in MODULES}
    module_sha256 = hashlib.sha256(installed_script("deniable.js")).hexdigest()
    aggregator = main.get("data-aggregator", "")
    asked = parse_qs(parts.query).get("lang", [None])[0]  # /s/<id>?lang= is first shown in it
    expected = []
    for closed in (False, True):
        expected.append(
            exported_page(
                survey,
                aggregator=aggregator,
                closed=closed,
                integrity=integrity,
                module_sha256=module_sha256,
            )
        )
        if root is not None:
            expected.append(
                served_page(
                    survey,
                    aggregator=served_at,
                    root=root,
                    page_url=parts._replace(fragment="").geturl(),
                    closed=closed,
                    integrity=integrity,
                    module_sha256=module_sha256,
                    lang=asked,
                )
            )
    if text in expected:
        return Check("page", True, ("the HTML is exactly what deniable renders for its survey",))
    return Check("page", False, (fail,), "code")


def _aggregator_scripts(session: requests.Session, server: str) -> list[Check]:
    """The aggregator's /static/ scripts beside the installed copies (no page to read)."""
    api = Api(server, session)
    checks = []
    for name in SCRIPTS:
        response = api._request("GET", f"/static/{name}", advice="check the address")
        if response.status_code != 200:
            raise ClientError(f"{server}/static/{name} answered HTTP {response.status_code}")
        served = hashlib.sha256(response.content).hexdigest()
        installed = hashlib.sha256(installed_script(name)).hexdigest()
        details = (
            f"served    sha256 {served}  {server}/static/{name}",
            f"installed sha256 {installed}",
        )
        checks.append(Check(name, served == installed, details))
    return checks
