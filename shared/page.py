"""The respondent's web page, rendered once for both places it is served (docs/fieldwork.md).

The aggregator's own /s/<id> and a page exported with `deniable page export` are the same
HTML from the same template (shared/templates/respond.html), with the questions and the
plain-words explanations of `deniable explain` (shared/explain.py). The page pins its code and
its survey: every module by Subresource Integrity (sha384: `integrity=` on the script and the
stylesheet, and the import map's `integrity` for the module others import), the survey by its
resolved document and hash in a script data block, and it names the one aggregator it talks to.

The page speaks to respondents (docs/respondents.md): per question one plain sentence, the
plain-words explanation (probabilities, epsilon, "times surer") in a collapsed `<details>`, the
privacy budget and the code's hash with `verify-page` in collapsed details of their own.

The DOM the page's JavaScript reads (static/respond.js):
`<main id="main" data-survey data-survey-hash data-aggregator data-cap data-epsilon data-device
data-service-worker data-lang>`, `<script type="application/json" id="pinned-survey">`, the
product's words in each of the survey's languages (`<script type="application/json"
id="page-messages">`: `{tag: {msgid: text}}`) and their plural forms (`id="page-plurals"`),
the other languages' explanations (`id="page-explanations"`), the language switcher
`[data-lang-switcher]`, the texts it rewrites (`[data-t]` with `data-t-args`: a fixed text by
its English msgid, and `data-t-plural`, `data-t-count` for a count; `[data-text]`,
`[data-question-text]`, `[data-option]`, `[data-hint]`, `[data-note]`, `[data-explain]`: the
survey's own texts), each question's `[data-item]` (hidden when its `relevant` condition is
false) and `[data-privacy]` (hidden for a split ballot's direct arm), and the hidden
`[data-thanks]`, `[data-next]`, `[data-waiting]`, `[data-sent]`, `[data-shared-note]` and
`[data-invitation]` elements of the shared-device mode (docs/fieldwork.md, docs/surveys.md).
A page in one language carries no `data-t` on its fixed texts but its counts' (nothing
rewrites them), nor `data-index` on its options.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from deniable.shared import i18n
from deniable.shared.explain import question_lines, total_lines
from deniable.shared.survey import Question, Survey

if TYPE_CHECKING:
    from jinja2 import Environment

#: The protocol: the module the page imports (deniable.js) and the modules it imports, each
#: one concern (docs/architecture.md); the service worker imports them all too.
PROTOCOL = (
    "deniable.js",
    "probability.js",
    "text.js",
    "mechanisms.js",
    "canonical.js",
    "signing.js",
    "ledger.js",
    "delivery.js",
)
#: What the service worker (sw.js) imports, from beside it: the protocol and the relay's sealing.
WORKER_IMPORTS = (*PROTOCOL, "ohttp.js")
#: The page's files: the protocol, the relay's sealing, the skip-logic conditions, the memo of
#: permanent answers (waves), the language switcher, the survey texts' markdown, the
#: shared-device mode, the page, the service worker and the stylesheet.
MODULES = (
    *PROTOCOL,
    "ohttp.js",
    "conditions.js",
    "memo.js",
    "languages.js",
    "markdown.js",
    "shared-device.js",
    "respond.js",
    "sw.js",
    "respond.css",
)
#: The modules other modules import: the import map pins them (a script tag pins the rest).
#: respond.js imports all but the protocol only for a survey that needs them (a relay, skip
#: logic, waves, several languages, markdown, a shared device), so that a page loads only the
#: code it runs.
IMPORTED = (
    *PROTOCOL,
    "ohttp.js",
    "conditions.js",
    "memo.js",
    "languages.js",
    "markdown.js",
    "shared-device.js",
)
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


def connect_sources(survey: Survey, *origins: str) -> str:
    """The page's CSP connect-src: itself, `origins` (an exported page's aggregator) and the
    survey's relay when it names one (docs/anonymity.md)."""
    route = getattr(survey, "route", None)
    relay = (route.relay_origin,) if route is not None else ()
    return " ".join(dict.fromkeys(("'self'", *origins, *relay)))


def pinned_survey(survey: Survey) -> str:
    """The pinned survey as the page carries it: the resolved document and its hash."""
    return script_data({"survey": survey.to_dict(), "survey_hash": survey.hash})


def survey_languages(survey: Survey) -> list[str]:
    """The languages the survey is written in: its default language first, then each
    translation's tag (docs/surveys.md)."""
    return list(survey.languages)


def choose_language(survey: Survey, asked: str | None) -> str:
    """The language a page is first rendered in: `asked` (the page's `?lang=`) when the survey
    has it, by full tag then primary subtag, else the survey's default (respond.js applies the
    same rule in the browser, then the browser's languages)."""
    if asked is not None and len(asked) > 35:
        return survey.language
    return survey.language_for(asked) or survey.language


#: The page's plural texts (the template's `tn()`, by singular msgid): the page carries their
#: forms in each of the survey's languages.
PAGE_PLURALS = (
    "{count} answer waiting to be sent from this device.",
    "{count} answer sent from this device.",
)


def page_plurals(survey: Survey) -> str:
    """The plural forms of the page's plural texts in each of the survey's languages that has
    them in its catalog, as the page carries them: `{tag: {"index": "...", "forms": {msgid:
    [form, ...]}}}`, where the digit at position n of `index` is the form for the number n
    (gettext's Plural-Forms of the catalog, written by Babel; docs/translations.md). A language
    without them shows English's two forms, which the page knows."""
    carried = {}
    for tag in survey_languages(survey):
        forms = {
            msgid: found
            for msgid, found in i18n.plural_messages(tag).items()
            if msgid in PAGE_PLURALS
        }
        if forms:
            carried[tag] = {"index": i18n.plural_index(tag), "forms": forms}
    return script_data(carried)


def page_messages(survey: Survey) -> str:
    """The product's words in each of the survey's languages (`{tag: {msgid: text}}`), as the
    page carries them so that its language switcher works offline and in an exported page."""
    return script_data({tag: i18n.messages(tag) for tag in survey_languages(survey)})


def explanations(survey: Survey) -> dict[str, dict[str, Any]]:
    """The plain-words explanations (shared/explain.py, the text of `deniable explain`) of the
    randomized questions in each of the survey's languages (a plain question says it is plain
    in one sentence of its own): `{tag: {"questions": {qid: text}, "totals": [line, ...]}}`."""
    return {
        tag: {
            "questions": {
                q.id: " ".join(question_lines(q, lang=tag))
                for q in survey.questions.values()
                if not q.plain
            },
            "totals": total_lines(survey, lang=tag),
        }
        for tag in survey_languages(survey)
    }


def _texts(survey: Survey, lang: str) -> dict[str, Any]:
    """The survey's own texts in `lang` (`Survey.text_in`), with every question's option
    labels in option order (a question without labels shows its own options)."""
    words = survey.text_in(lang)
    questions = {}
    for q in survey.questions.values():
        mine = words.questions.get(q.id)
        options = [str(x) for x in (getattr(q, "options", None) or ())]
        labels = list(mine.options) if mine is not None else []
        questions[q.id] = {
            "text": mine.text if mine is not None else q.text,
            "options": labels if len(labels) == len(options) else options,
            "hint": mine.hint if mine is not None else q.hint,
            "note": mine.note if mine is not None else q.note,
        }
    return {"title": words.title, "description": words.description, "questions": questions}


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Slot:
    """A placeholder of a fixed text that the page's script fills in (an `<output>`)."""

    def __init__(self, element_id: str, initial: str = "…", marker: str = "") -> None:
        self.element_id = element_id
        self.initial = initial
        self.marker = marker  # an attribute name the page's tests and scripts select it by


def _fixed(
    translate: Callable[[str], str],
    translate_n: Callable[[str, str, int], str] | None = None,
    *,
    switchable: bool = True,
) -> Callable[..., Any]:
    """The template's `t(msgid, **args)`: the element's attributes and text of a fixed text
    (the msgid and its arguments for respond.js's language switcher; `Slot` arguments become
    `<output>` elements the script keeps up to date, markup arguments are the template's own
    elements, each with its `data-slot`). With `translate_n` it is `tn(msgid, plural, **args)`:
    the form for the number in the `count` argument (a Slot's initial text), and the element
    says both msgids and which slot counts, so the script picks the form again when it changes
    (`data-t-plural`, `data-t-count`; docs/translations.md). A page that is not `switchable`
    (a survey in one language) says the msgid of its plural texts only: nothing else changes."""
    from markupsafe import Markup, escape

    def fixed(
        msgid: str, tag: str = "span", _attrs: str = "", _plural: str | None = None, **args: Any
    ) -> Markup:
        plain = {k: v for k, v in args.items() if not isinstance(v, Slot | Markup)}
        if _plural is None or translate_n is None:
            text = translate(msgid)
        else:
            count = args["count"]
            text = translate_n(msgid, _plural, int(getattr(count, "initial", count)))
        parts = []
        last = 0
        for match in _PLACEHOLDER.finditer(text):
            parts.append(escape(text[last : match.start()]))
            value = args.get(match.group(1))
            if isinstance(value, Slot):
                parts.append(
                    Markup('<output id="{}" data-slot="{}"{}>{}</output>').format(
                        value.element_id,
                        match.group(1),
                        Markup(f" {value.marker}") if value.marker else "",
                        value.initial,
                    )
                )
            elif isinstance(value, Markup):  # an element of the template's, with data-slot
                parts.append(value)
            elif value is None:
                parts.append(escape(match.group(0)))
            else:
                parts.append(escape(str(value)))
            last = match.end()
        parts.append(escape(text[last:]))
        if not switchable and _plural is None:
            extra = Markup(" ") + Markup(_attrs) if _attrs else Markup("")
            return Markup("<{}{}>{}</{}>").format(
                Markup(tag), extra, Markup("").join(parts), Markup(tag)
            )
        attrs = Markup(' data-t="{}"').format(msgid)
        if _plural is not None:
            attrs += Markup(' data-t-plural="{}" data-t-count="count"').format(_plural)
        if plain:
            attrs += Markup(' data-t-args="{}"').format(
                json.dumps(plain, ensure_ascii=False, sort_keys=True)
            )
        extra = Markup(" ") + Markup(_attrs) if _attrs else Markup("")
        return Markup("<{}{}{}>{}</{}>").format(
            Markup(tag), extra, attrs, Markup("").join(parts), Markup(tag)
        )

    return fixed


def _plural_fixed(fixed: Callable[..., Any]) -> Callable[..., Any]:
    """The template's `tn(msgid, plural, **args)` (see _fixed): `count` selects the form."""

    def plural_fixed(msgid: str, plural: str, tag: str = "span", _attrs: str = "", **args: Any):
        return fixed(msgid, tag, _attrs, _plural=plural, **args)

    return plural_fixed


def _question_entry(
    question: Question, texts: Mapping[str, Any], explained: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "question": question,
        "explanation": explained["questions"].get(question.id),
        "texts": texts["questions"][question.id],
        "relevant": question.relevant,
    }


@cache
def _environment() -> Environment:
    """The template environment (jinja2 is imported when a page is first rendered)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader("deniable.shared", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
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
    lang: str | None = None,
) -> str:
    """The respondent page of `survey` (HTML): `assets` and `integrity` name each module's URL
    and sha384 (MODULES: respond.js, deniable.js, ...), `aggregator` is the origin it sends
    to, `lang` the language asked for (`?lang=`; else the survey's default)."""
    chosen = choose_language(survey, lang)
    texts = _texts(survey, chosen)
    explained = explanations(survey)
    questions = [_question_entry(q, texts, explained[chosen]) for q in survey.questions.values()]
    from markupsafe import Markup

    translate = i18n.translator(chosen)
    switchable = len(survey_languages(survey)) > 1
    fixed = _fixed(translate, i18n.plural_translator(chosen), switchable=switchable)
    others = {tag: words for tag, words in explained.items() if tag != chosen}
    template = _environment().get_template("respond.html")
    return template.render(
        survey=survey,
        survey_hash=survey.hash,
        device=getattr(survey, "device", "personal"),
        questions=questions,
        texts=texts,
        lang=chosen,
        direction=i18n.direction(chosen),
        languages=survey_languages(survey),
        _=translate,
        t=fixed,
        tn=_plural_fixed(fixed),
        switchable=switchable,
        Slot=Slot,
        totals=explained[chosen]["totals"],
        aggregator=aggregator,
        assets=assets,
        integrity=integrity,
        import_map=Markup(import_map(assets, integrity)),  # escaped by script_data
        pinned=Markup(pinned_survey(survey)),  # escaped by script_data
        messages=Markup(page_messages(survey)),  # escaped by script_data
        plurals=Markup(page_plurals(survey)),  # escaped by script_data
        # The other languages' explanations: the page's own language is in its HTML already.
        explained=Markup(script_data(others)),  # escaped by script_data
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
SERVED_ASSETS = (
    *PROTOCOL,
    "ohttp.js",
    "conditions.js",
    "memo.js",
    "languages.js",
    "markdown.js",
    "shared-device.js",
    "respond.js",
    "respond.css",
)
#: What an exported page's footer suggests (it cannot know where it will be hosted).
EXPORT_HINT = "deniable verify-page ADDRESS-OF-THIS-PAGE"


def asset_version(integrity: Mapping[str, str]) -> str:
    """The version of the page's files: 16 hex digits of the sha256 of their integrity values,
    so that any change of any file gives every URL a new version (and a year-long cache)."""
    text = "".join(f"{name} {integrity[name]}\n" for name in SERVED_ASSETS)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def served_assets(root: str, integrity: Mapping[str, str]) -> dict[str, str]:
    """The URLs of the aggregator page's files, for an app mounted at `root` ("" at the host's
    root): `/static/v/<version>/<name>`, one directory per version of the files (modules import
    each other by relative URL), each file cacheable for a year."""
    version = asset_version(integrity)
    return {name: f"{root}/static/v/{version}/{name}" for name in SERVED_ASSETS}


def served_page(
    survey: Survey,
    *,
    aggregator: str,
    root: str,
    page_url: str,
    closed: bool,
    integrity: Mapping[str, str],
    module_sha256: str,
    lang: str | None = None,
) -> str:
    """The aggregator's /s/<id> page, exactly: what respond.py serves and verify-page expects
    (first rendered in `lang`, the page's `?lang=`, when the survey has that language)."""
    return render_page(
        survey,
        aggregator=aggregator,
        assets=served_assets(root, integrity),
        integrity=integrity,
        service_worker=f"{root}/s/sw.js",
        closed=closed,
        cap=PAGE_EPSILON_CAP,
        module_sha256=module_sha256,
        verify_hint=f"deniable verify-page {page_url}",
        lang=lang,
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
        meta_csp=page_csp(
            import_map(assets, integrity), connect=connect_sources(survey, aggregator), meta=True
        ),
    )
