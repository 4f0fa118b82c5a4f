"""The product's own words in English, French, Spanish and Arabic (docs/translations.md): the
catalogs hold every text of the source, translated with the same placeholders, and compiled;
the lookups fall back to English; the explanations of each mechanism are translated whole."""

from __future__ import annotations

import ast
import gettext
import importlib.util
import re
import shutil
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from babel.messages.catalog import Message

from deniable.shared import Survey, i18n, sketches
from deniable.shared import explain as ex
from deniable.shared import mechanisms as mech
from deniable.shared.questions import QUESTION_TYPES

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("ar", "es", "fr")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("i18n_script", ROOT / "scripts" / "i18n.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


script = _script()


# -- the catalogs are complete and current ------------------------------------------------------
def test_the_template_holds_exactly_the_msgids_of_the_source() -> None:
    """Extracting Python `_()`, the page's `t()` and the template gives the .pot's msgids: a
    text added without `make i18n` (or one removed) fails here."""
    source = script.msgids(script.extract())
    template = script.msgids(script._read(script.TEMPLATE))
    assert not source - template, (
        f"run `make i18n`: new texts {sorted(map(str, source - template))}"
    )
    assert not template - source, (
        f"run `make i18n`: stale texts {sorted(map(str, template - source))}"
    )


def test_the_source_has_texts_from_python_the_page_script_and_the_template() -> None:
    files = {name for message in script.extract() for name, _ in message.locations}
    assert any(name.startswith("shared/") and name.endswith(".py") for name in files)
    assert any(name.endswith(".js") for name in files)
    assert any(name.endswith(".html") for name in files)


@pytest.mark.parametrize("lang", SHIPPED)
def test_every_msgid_is_translated_with_the_same_placeholders(lang: str) -> None:
    template = script.msgids(script._read(script.TEMPLATE))
    catalog = script._read(script.po_path(lang), lang)
    assert template <= script.msgids(catalog), f"run `make i18n` and translate {lang}"
    problems = [p for message in catalog if message.id for p in script.message_problems(message)]
    problems += [f"{m.id!r}: {e}" for m in catalog if m.id for e in m.check(catalog)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", SHIPPED)
def test_the_committed_mo_is_what_the_po_compiles_to(lang: str) -> None:
    assert script.mo_is_current(lang), "run `make i18n-compile`"
    # The comparison is by content: another Babel release writes its own version in the
    # header, nothing else.
    mo = script.po_path(lang).with_suffix(".mo")
    header = script.mo_messages(mo.read_bytes())[""]
    assert "Generated-By" not in header and f"Language: {lang}" in header


def test_check_reports_nothing_on_the_committed_catalogs() -> None:
    assert script.problems() == []


@pytest.mark.parametrize(
    ("string", "words"),
    [
        ("", "not translated"),
        ("  ", "not translated"),
        ("Gardée avec {keep}.", "placeholders"),  # {flip} lost
        ("Gardée avec {keep} ; sinon {flop}.", "placeholders"),  # renamed
    ],
)
def test_a_missing_translation_or_a_lost_placeholder_is_a_problem(string: str, words: str) -> None:
    message = Message("Kept with {keep}; otherwise {flip}.", string)
    (problem,) = script.message_problems(message)
    assert words in problem


def test_a_fuzzy_translation_is_a_problem() -> None:
    message = Message("Receipt", "Reçu", flags=["fuzzy"])
    assert "fuzzy" in script.message_problems(message)[0]


def test_placeholders_are_named_and_printf_style() -> None:
    assert script.placeholders("{b} and %s, {a} and %(n)d; 100%") == ["%(n)d", "%s", "{a}", "{b}"]


def test_every_translated_call_has_a_literal_msgid() -> None:
    """`_(f"...")` or `_(text)` cannot be extracted: the words would stay English."""
    wrapped = {"_", "N_", "ngettext"}
    problems = []
    for folder in ("shared", "client"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                if node.func.id not in wrapped or not node.args:
                    continue
                first = node.args[0]
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    if node.func.id == "_" and _is_lookup(first):
                        continue
                    where = path.relative_to(ROOT).as_posix()
                    problems.append(f"{where}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not problems, "\n".join(problems)


def _is_lookup(node: ast.expr) -> bool:
    """`_(TABLE[key])` of a table of N_()-marked texts, or `_(CONSTANT)` of
    one marked text, is fine."""
    if isinstance(node, ast.Name):
        return re.fullmatch(r"_?[A-Z][A-Z0-9_]*", node.id) is not None
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name | ast.Attribute)


def test_every_page_script_t_call_has_a_literal_msgid() -> None:
    """`t(`...${x}`)` or `t("..." + x)` cannot be extracted: the words would stay English."""
    unextractable = re.compile(r"(?<![\w.$])(?:t|say)\(\s*(?:`|[\"'][^\"'\n]*[\"']\s*\+)")
    problems = []
    for path in sorted((ROOT / "aggregator/web/static").glob("*.js")):
        text = path.read_text(encoding="utf-8")
        for match in unextractable.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"{path.name}:{line}: {match.group(0)}")
    assert not problems, "\n".join(problems)


def test_every_text_constant_the_page_script_says_is_marked() -> None:
    """`const OFFLINE = "..."; say(OFFLINE)` is never extracted: write `N_("...")`."""
    problems = []
    for path in sorted((ROOT / "aggregator/web/static").glob("*.js")):
        text = path.read_text(encoding="utf-8")
        said = set(re.findall(r"(?<![\w.$])(?:t|say)\(\s*([A-Z][A-Z0-9_]+)\b", text))
        for name in sorted(said):
            found = re.search(rf"\bconst\s+{name}\s*=\s*([\"'`])", text)
            if found:
                line = text.count("\n", 0, found.start()) + 1
                problems.append(f"{path.name}:{line}: const {name} = N_(...) so it is extracted")
    assert not problems, "\n".join(problems)


# -- lookups and fallbacks ----------------------------------------------------------------------
def test_the_shipped_languages_are_english_then_the_catalogs() -> None:
    assert i18n.catalog_languages() == ("en", "ar", "es", "fr")


@pytest.mark.parametrize(
    ("tag", "has", "served"),
    [
        ("en", True, "en"),
        ("fr", True, "fr"),
        ("fr-CA", True, "fr"),
        ("es-419", True, "es"),
        ("ar-EG", True, "ar"),
        ("de", False, "en"),
        ("pt-BR", False, "en"),
    ],
)
def test_a_language_is_served_by_its_catalog_or_english(tag: str, has: bool, served: str) -> None:
    assert i18n.has_catalog(tag) is has
    assert i18n.catalog_for(tag) == served


@pytest.mark.parametrize("tag", [None, "", "x", "fr;rm -rf", "../../etc", "f" * 300])
def test_a_malformed_tag_gets_english(tag: str | None) -> None:
    assert i18n.catalog_for(tag) == "en"
    assert i18n.translator(tag)("Receipt") == "Receipt"


def test_translations_and_the_english_fallback() -> None:
    assert i18n.translator("fr")("Receipt") == "Reçu"
    assert i18n.translator("es")("Receipt") == "Comprobante"
    assert i18n.translator("ar")("Receipt") == "الإيصال"
    assert i18n.translator("de")("Receipt") == "Receipt"
    assert i18n.translator("fr")("a text no catalog has") == "a text no catalog has"


def test_the_page_gets_each_catalog_as_a_dictionary() -> None:
    french = i18n.messages("fr")
    assert french["Send my randomized answers"] == "Envoyer mes réponses randomisées"
    assert "" not in french  # not the header
    assert all(isinstance(k, str) and isinstance(v, str) and v for k, v in french.items())
    assert i18n.messages("de") == {} and i18n.messages("en") == {}


def test_direction_is_right_to_left_for_arabic_hebrew_persian_urdu() -> None:
    assert [i18n.direction(t) for t in ("ar", "he-IL", "fa", "ur", "fr", "en")] == [
        "rtl",
        "rtl",
        "rtl",
        "rtl",
        "ltr",
        "ltr",
    ]


@pytest.mark.parametrize(
    ("count", "words"),
    [
        (1, "سؤال عادي واحد"),
        (2, "سؤالان"),
        (5, "5 أسئلة"),
        (11, "11 سؤالًا"),
        (100, "100 سؤال عادي"),
    ],
)
def test_arabic_counts_take_their_six_plural_forms(count: int, words: str) -> None:
    ngettext = i18n.plural_translator("ar")
    one = "{count} plain question is sent exactly as you answer, outside that protection."
    many = "{count} plain questions are sent exactly as you answer, outside that protection."
    assert words in ngettext(one, many, count).format(count=count)


# -- the explanations ---------------------------------------------------------------------------
EVERY_MECHANISM: dict[str, Any] = {
    "id": "all",
    "title": "All",
    "enrollment": "open",
    "series": "all",
    "wave": 1,
    "questions": [
        {"id": "rr", "text": "?", "type": "binary", "epsilon": 1.0},
        {"id": "coins", "text": "?", "type": "binary", "mechanism": "coins",
         "coins": {"truth": 0.5, "yes": 0.5}},
        {"id": "grr", "text": "?", "type": "categorical", "options": ["A", "B", "C"],
         "mechanism": "grr", "epsilon": 2.0},
        {"id": "oue", "text": "?", "type": "categorical", "options": ["A", "B", "C"],
         "mechanism": "oue", "epsilon": 2.0},
        {"id": "plain", "text": "?", "type": "categorical", "options": ["A", "B"],
         "mechanism": "none"},
        {"id": "onebit", "text": "?", "type": "integer", "min": 0, "max": 20, "epsilon": 1.0},
        {"id": "age", "text": "?", "type": "integer", "min": 18, "max": 99, "mechanism": "none"},
        {"id": "multi", "text": "?", "type": "multi", "options": ["A", "B", "C"],
         "epsilon": 3.0},
        {"id": "apps", "text": "?", "type": "multi", "options": ["A", "B"],
         "mechanism": "none"},
        {"id": "hcms", "text": "?", "type": "text", "epsilon": 2.0, "hcms": {"k": 16, "m": 64}},
        {"id": "cms", "text": "?", "type": "text", "mechanism": "cms", "epsilon": 2.0,
         "cms": {"k": 8, "m": 32}},
        {"id": "rappor", "text": "?", "type": "text", "mechanism": "rappor",
         "rappor": {"k": 16, "h": 2, "m": 4, "f": "1/4", "p": "1/4", "q": "3/4"}},
        {"id": "wave", "text": "?", "type": "binary",
         "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0}},
        {"id": "lgrr", "text": "?", "type": "categorical", "options": ["A", "B", "C"],
         "mechanism": "grr", "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0}},
        {"id": "losue", "text": "?", "type": "categorical", "options": ["A", "B", "C"],
         "mechanism": "oue", "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0}},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def every() -> Survey:
    return Survey.from_dict(EVERY_MECHANISM)


def _mechanism_classes() -> Iterator[type]:
    """Every concrete mechanism class with words of its own (describe())."""
    seen: set[type] = set()
    todo: list[type] = [mech.Mechanism, sketches.Sketch]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    for cls in sorted(seen, key=lambda c: c.__name__):
        if not cls.__name__.startswith("_") and "describe" in vars(cls):
            yield cls


def test_every_mechanism_of_the_example_survey_is_covered(every: Survey) -> None:
    used = {type(q.randomizer) for q in every.questions.values()}
    missing = {c.__name__ for c in _mechanism_classes()} - {c.__name__ for c in used}
    assert not missing, f"add a question using {missing} to EVERY_MECHANISM"


def test_every_mechanism_says_what_is_sent_through_the_translator(every: Survey) -> None:
    """A mechanism's sentence is written once, in its class: describe() passes its words
    through the translator it is given, as msgids the catalog holds, and the respondent's
    explanation is that sentence."""
    template = script.msgids(script._read(script.TEMPLATE))
    for question in every.questions.values():
        asked: list[str] = []

        def mark(msgid: str, asked: list[str] = asked) -> str:
            asked.append(msgid)
            return f"» {msgid}"

        marked = question.randomizer.describe(mark)
        assert asked and set(asked) <= template, (question.id, asked)
        assert marked.startswith("» ")  # the translation is what is shown
        assert ex.what_is_sent(question) == question.randomizer.describe(), question.id
        # A language with no catalog: English.
        assert ex.what_is_sent(question, lang="de") == question.randomizer.describe()


def test_every_question_type_has_a_whole_privacy_sentence_of_its_own() -> None:
    """A type's privacy sentence is one msgid of the catalog with {epsilon} and {times}, given
    to the translator whole; each type's words are its own class's."""
    template = script.msgids(script._read(script.TEMPLATE))
    for name, kind in QUESTION_TYPES.items():
        asked: list[str] = []
        kind.privacy_sentence(lambda msgid, asked=asked: asked.append(msgid) or msgid)
        assert len(asked) == 1 and asked[0] in template, name
        assert script.placeholders(asked[0]) == ["{epsilon}", "{times}"], name


@pytest.mark.parametrize("lang", SHIPPED)
def test_every_explanation_is_translated_with_its_numbers(every: Survey, lang: str) -> None:
    english = [line for q in every.questions.values() for line in ex.question_lines(q)]
    translated = [
        line for q in every.questions.values() for line in ex.question_lines(q, lang=lang)
    ]
    for en, tr in zip(english, translated, strict=True):
        assert en != tr
        # The same numbers (probabilities, counts, epsilons) in the same text.
        assert sorted(re.findall(r"\d+(?:\.\d+)?%?", en)) == sorted(
            re.findall(r"\d+(?:\.\d+)?%?", tr)
        ), (en, tr)


def test_a_french_explanation_reads_in_french() -> None:
    survey = Survey.from_dict(
        {
            "id": "s",
            "title": "S",
            "enrollment": "invite",
            "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
        }
    )
    text = ex.explain_survey(survey, spent=1.0, cap=10.0, lang="fr-CA")
    assert "Votre vraie réponse est gardée avec une probabilité de 73.1%" in text
    assert "sinon, c'est la réponse contraire qui est envoyée (26.9%)" in text
    assert "au plus 2.72 fois plus sûr" in text
    assert "Sur invitation uniquement" in text
    assert "la somme sur sa 1 question randomisée" in text
    assert "vous avez dépensé 1 sur votre plafond de 10" in text


def test_an_arabic_explanation_keeps_numbers_and_ln() -> None:
    survey = Survey.from_dict(
        {
            "id": "s",
            "title": "S",
            "enrollment": "open",
            "questions": [
                {"id": "q", "text": "Q?", "type": "binary", "mechanism": "coins",
                 "coins": {"truth": 0.5, "yes": 0.5}},
                {"id": "r", "text": "R?", "type": "binary", "mechanism": "none"},
            ],
        }
    )  # fmt: skip
    lines = ex.question_lines(survey.questions["q"], lang="ar")
    assert "تُحفَظ إجابتك الحقيقية باحتمال 50%" in lines[0]
    assert "إبسيلون = 1.099 (= ln 3)" in lines[1] and "لا يتجاوز 3." in lines[1]
    assert "سؤال عادي واحد" in "\n".join(ex.total_lines(survey, lang="ar"))
    assert ex.plain_notice("ar") == "يُرسَل كما تجيب تمامًا: لا يُعدَّل هذا السؤال عشوائيًا."
    assert ex.what_epsilon_means(survey.questions["r"], lang="ar").startswith("كلفة الخصوصية")


def test_english_explanations_are_unchanged() -> None:
    survey = Survey.from_dict(
        {
            "id": "s",
            "title": "S",
            "enrollment": "open",
            "questions": [
                {"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0},
                {"id": "r", "text": "R?", "type": "binary", "mechanism": "none"},
                {"id": "t", "text": "T?", "type": "binary", "mechanism": "none"},
            ],
        }
    )
    assert ex.total_lines(survey, spent=0.5, cap=10.0) == [
        "Total privacy cost: epsilon = 1 (the sum over its 1 randomized question). Taken "
        "together, an observer who sees your report can be at most 2.72 times surer of any one "
        "set of randomized answers than of another.",
        "2 plain questions are sent exactly as you answer, outside that protection.",
        "Epsilon adds up over every survey you answer: you have spent 0.5 of your cap of 10; "
        "answering this survey would bring it to 1.5.",
    ]
    assert ex.times(Fraction(3)) == "3"


# -- adding a language, as docs/translations.md says --------------------------------------------
def test_adding_a_language_init_translate_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locale = tmp_path / "locale"
    shutil.copytree(ROOT / "shared" / "locale", locale)
    monkeypatch.setattr(script, "LOCALE_DIR", locale)
    monkeypatch.setattr(script, "TEMPLATE", locale / "deniable.pot")
    path = script.init("de")
    assert "de" in script.languages()
    catalog = script._read(path, "de")
    assert catalog.num_plurals == 2 and script.msgids(catalog) == script.msgids(
        script._read(locale / "deniable.pot")
    )
    catalog["Receipt"].string = "Beleg"
    path.write_bytes(script._po_bytes(catalog))
    with pytest.raises(SystemExit, match="exists already"):
        script.init("de")  # never overwrites a translator's work
    with pytest.raises(SystemExit, match="not a language"):
        script.init("../../etc")
    script.compile_all(["de"])
    german = gettext.translation(i18n.DOMAIN, locale, languages=["de"])
    assert german.gettext("Receipt") == "Beleg"
    assert german.gettext("Status") == "Status"  # untranslated: English until translated


def test_explain_survey_speaks_the_surveys_language_and_the_products() -> None:
    survey = Survey.from_dict(
        {
            "id": "s",
            "title": "Habits",
            "enrollment": "open",
            "language": "en",
            "questions": [{"id": "q", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0}],
            "translations": {
                "fr": {
                    "title": "Habitudes",
                    "questions": {"q": {"text": "Fumez-vous ?", "options": ["non", "oui"]}},
                }
            },
        }
    )
    french = ex.explain_survey(survey, lang="fr")
    assert french.startswith("Habitudes (s)") and "1. Fumez-vous ? [q]" in french
    assert "Votre appareil randomise chaque réponse" in french
    german = ex.explain_survey(survey, lang="de")  # neither the survey nor a catalog has it
    assert german.startswith("Habits (s)") and "1. Do you smoke? [q]" in german
    assert "Your device randomizes every answer" in german


@pytest.mark.parametrize("lang", SHIPPED)
def test_the_lines_under_each_question_are_translated(every: Survey, lang: str) -> None:
    for question in every.questions.values():
        english = ex.kind_lines(question)
        assert english == question.kind.explain_lines(question)
        translated = ex.kind_lines(question, lang=lang, labels=["x", "y", "z"][: question.k])
        for en, tr in zip(english, translated, strict=True):
            assert en.strip() and tr.strip() != en.strip(), (question.id, en)
            assert tr.startswith("   ")
