"""The product's own words in other languages: extract, update, compile and check the gettext
catalogs with Babel's Python API (docs/translations.md).

    .venv/bin/python scripts/i18n.py extract   # the source's msgids -> shared/locale/deniable.pot
    .venv/bin/python scripts/i18n.py update    # the template's msgids -> each <lang>/.../deniable.po
    .venv/bin/python scripts/i18n.py compile   # each .po -> its .mo (what the product reads)
    .venv/bin/python scripts/i18n.py check     # exit 1 on a stale template, a missing translation,
                                               # a placeholder lost, or a stale .mo
    .venv/bin/python scripts/i18n.py init LANG # start the catalog of a new language

`make i18n` runs extract and update; `make i18n-compile` runs compile, then check. Where the
words are is declared in babel.cfg (Python `_()`, `N_()`, `ngettext()`; the page's JavaScript
`t()`, `say()`, `N_()`; the page's template `_()`, `t()` and the plural `tn()`).
"""

from __future__ import annotations

import contextlib
import gettext
import io
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from babel.core import Locale, UnknownLocaleError
from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_file
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po
from babel.util import pathmatch

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "babel.cfg"
LOCALE_DIR = ROOT / "shared" / "locale"
TEMPLATE = LOCALE_DIR / "deniable.pot"
DOMAIN = "deniable"
#: The folders babel.cfg's patterns are matched in (never .venv, build, tests).
SOURCE_DIRS = ("shared", "client", "aggregator")
#: The calls whose literal first argument is a msgid, by extraction method: gettext's in
#: Python; the page's `t()`, its status line's `say()` and the marker `N_()` in JavaScript;
#: `_()`, `t()` and the plural `tn(singular, plural, count=...)` in the page's template.
KEYWORDS: dict[str, dict[str, Any]] = {
    "python": dict(DEFAULT_KEYWORDS),
    "javascript": {"t": None, "say": None, "N_": None},
    "jinja2": {"_": None, "gettext": None, "ngettext": (1, 2), "t": None, "tn": (1, 2)},
}
#: A comment just above a text, starting with this, reaches the translators.
COMMENT_TAGS = ("TRANSLATORS:",)
PROJECT = "deniable"
HEADER = (
    "# The product's own words in one language (docs/translations.md says how to edit them).\n"
    "# This file is distributed under the same license as the deniable project."
)
#: `{name}` placeholders (str.format and the page's `t()`) and printf-style ones (%s, %(x)d).
PLACEHOLDER = re.compile(
    r"\{[A-Za-z_][A-Za-z0-9_]*\}|%(?:\([A-Za-z_]+\))?[-#0 +]*\d*(?:\.\d+)?[sdfgr]"
)


def _mapping() -> tuple[list[tuple[str, str]], dict[str, dict[str, str]]]:
    with CONFIG.open(encoding="utf-8") as handle:
        return parse_mapping_cfg(handle, filename=str(CONFIG))


def _sources() -> Iterator[tuple[str, str, dict[str, str]]]:
    """(repo-relative path, extraction method, options) of every file babel.cfg names, sorted."""
    method_map, options_map = _mapping()
    files = sorted(
        path.relative_to(ROOT).as_posix()
        for folder in SOURCE_DIRS
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    for name in files:
        for pattern, method in method_map:
            if pathmatch(pattern, name):
                yield name, method, options_map.get(pattern, {})
                break


def extract() -> Catalog:
    """The catalog of every msgid in the source, as babel.cfg finds them (no translations)."""
    catalog = Catalog(
        project=PROJECT,
        version="1",
        copyright_holder="the deniable authors",
        msgid_bugs_address="",
        header_comment=HEADER,
        charset="utf-8",
        fuzzy=False,
    )
    for name, method, options in _sources():
        with contextlib.redirect_stderr(io.StringIO()) as said:
            found = extract_from_file(
                method,
                ROOT / name,
                keywords=KEYWORDS.get(method.split(":")[0].split(".")[0], DEFAULT_KEYWORDS),
                comment_tags=COMMENT_TAGS,
                options=options,
                strip_comment_tags=True,
            )
        for line in said.getvalue().splitlines():
            # `say("")` clears the page's status line: not a text to translate.
            if "Empty msgid" not in line:
                print(line, file=sys.stderr)
        for lineno, message, comments, context in found:
            catalog.add(
                message,
                None,
                [(name, lineno)],
                auto_comments=comments,
                context=context,
            )
    return catalog


def msgids(catalog: Catalog) -> set[str | tuple[str, ...]]:
    """The msgids of a catalog (a plural message's as the tuple of its forms), header excluded."""
    return {message.id for message in catalog if message.id}


def _po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    # No line numbers: the files change only when a text is added, removed or moved to
    # another file, not when eight people edit the code around it.
    write_po(out, catalog, width=100, sort_output=True, include_lineno=False)
    return out.getvalue()


def _read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as handle:
        return read_po(handle, locale=locale, domain=DOMAIN)


def _shown(path: Path) -> str:
    """A path as the messages show it: from the repository root when it is inside."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def languages() -> list[str]:
    """The languages with a catalog (a folder with LC_MESSAGES/deniable.po)."""
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def po_path(lang: str) -> Path:
    """Where the catalog of `lang` lives."""
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def write_template() -> bool:
    """Extract into shared/locale/deniable.pot; False when it was already up to date (the file
    is left alone, so its creation date does not churn)."""
    text = _po_bytes(extract())
    if TEMPLATE.exists() and _undated(TEMPLATE.read_bytes()) == _undated(text):
        return False
    TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    TEMPLATE.write_bytes(text)
    return True


def _undated(text: bytes) -> bytes:
    return re.sub(rb'"POT-Creation-Date: [^"]*"\n', b"", text)


def update(langs: Iterable[str] | None = None) -> list[str]:
    """Merge the template into each language's catalog: new msgids come in untranslated,
    removed ones go (no fuzzy guesses: a translator writes each sentence). The updated
    languages."""
    template = _read(TEMPLATE)
    done = []
    for lang in langs or languages():
        path = po_path(lang)
        catalog = _read(path, lang)
        catalog.update(template, no_fuzzy_matching=True, update_header_comment=False)
        for message in list(catalog.obsolete):
            del catalog.obsolete[message]
        path.write_bytes(_po_bytes(catalog))
        done.append(lang)
    return done


def init(lang: str) -> Path:
    """Start the catalog of a new language from the template (its plural rule from CLDR)."""
    try:
        Locale.parse(lang)
    except (ValueError, UnknownLocaleError):
        raise SystemExit(
            f"{lang!r} is not a language Babel knows: give a language tag such as pt or pt_BR"
        ) from None
    path = po_path(lang)
    if path.exists():
        raise SystemExit(f"{_shown(path)} exists already: run `make i18n` to update it")
    template = _read(TEMPLATE)
    catalog = Catalog(
        locale=lang,
        domain=DOMAIN,
        project=PROJECT,
        version="1",
        copyright_holder="the deniable authors",
        msgid_bugs_address="",
        header_comment=HEADER,
        fuzzy=False,
    )
    for message in template:
        if message.id:
            catalog[message.id] = Message(
                message.id,
                "" if isinstance(message.id, str) else ("",) * catalog.num_plurals,
                locations=message.locations,
                auto_comments=message.auto_comments,
                flags=message.flags,
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_po_bytes(catalog))
    return path


def mo_bytes(lang: str) -> bytes:
    """What compiling `lang`'s catalog gives (the bytes its committed .mo must hold)."""
    out = io.BytesIO()
    write_mo(out, _read(po_path(lang), lang), use_fuzzy=False)
    return out.getvalue()


_GENERATED_BY = re.compile(r"^Generated-By: .*$\n?", re.MULTILINE)


def mo_messages(data: bytes) -> dict[Any, str]:
    """A compiled catalog's messages, its header without the Babel version that wrote it (so a
    .mo compiled by another Babel release with the same texts compares equal)."""
    messages = dict(gettext.GNUTranslations(io.BytesIO(data))._catalog)  # type: ignore[attr-defined]
    if "" in messages:
        messages[""] = _GENERATED_BY.sub("", messages[""])
    return messages


def mo_is_current(lang: str) -> bool:
    """Whether the committed .mo holds what compiling the .po gives."""
    mo = po_path(lang).with_suffix(".mo")
    return mo.exists() and mo_messages(mo.read_bytes()) == mo_messages(mo_bytes(lang))


def compile_all(langs: Iterable[str] | None = None) -> list[str]:
    """Compile each catalog's .po into the .mo the product reads."""
    done = []
    for lang in langs or languages():
        po_path(lang).with_suffix(".mo").write_bytes(mo_bytes(lang))
        done.append(lang)
    return done


def placeholders(text: str) -> list[str]:
    """The `{name}` and `%s`-style placeholders of a text, sorted (order may change)."""
    return sorted(PLACEHOLDER.findall(text))


def problems() -> list[str]:
    """Everything that keeps the catalogs from being complete and current, one line each."""
    found: list[str] = []
    source = msgids(extract())
    template = _read(TEMPLATE) if TEMPLATE.exists() else Catalog()
    for missing in sorted(map(str, source - msgids(template))):
        found.append(f"deniable.pot lacks {missing!r}: run `make i18n`")
    for stale in sorted(map(str, msgids(template) - source)):
        found.append(f"deniable.pot still has {stale!r}, no longer in the source: run `make i18n`")
    for lang in languages():
        catalog = _read(po_path(lang), lang)
        where = f"shared/locale/{lang}/LC_MESSAGES/deniable.po"
        for missing in sorted(map(str, msgids(template) - msgids(catalog))):
            found.append(f"{where} lacks {missing!r}: run `make i18n`, then translate it")
        for message in catalog:
            if not message.id:
                continue
            found += [f"{where}: {problem}" for problem in message_problems(message)]
            found += [f"{where}: {message.id!r}: {err}" for err in message.check(catalog)]
        if not mo_is_current(lang):
            found.append(f"{where}: its .mo is not what it compiles to: run `make i18n-compile`")
    return found


def message_problems(message: Message) -> list[str]:
    """Why one translated message is not ready: untranslated, fuzzy, or placeholders differ."""
    ids = [message.id] if isinstance(message.id, str) else list(message.id)
    strings = [message.string] if isinstance(message.string, str) else list(message.string)
    if message.fuzzy:
        return [f"{message.id!r} is marked fuzzy: check the translation and remove the flag"]
    if not all(s and s.strip() for s in strings):
        return [f"{message.id!r} is not translated"]
    wanted = placeholders(ids[-1])
    out = []
    for text in strings:
        # A plural form may leave out the count ("un" for one): every other placeholder stays.
        got = placeholders(text)
        if got != wanted and not (len(strings) > 1 and set(got) <= set(wanted)):
            out.append(
                f"{message.id!r}: the translation {text!r} has placeholders {got}, not {wanted}"
            )
    return out


def main(argv: list[str]) -> int:
    """The command line: extract, update, compile, check or init LANG."""
    command = argv[0] if argv else ""
    if command == "extract":
        print("deniable.pot updated" if write_template() else "deniable.pot already up to date")
    elif command == "update":
        print("updated: " + ", ".join(update()))
    elif command == "compile":
        print("compiled: " + ", ".join(compile_all()))
    elif command == "init" and len(argv) == 2:
        print(f"created {_shown(init(argv[1]))}: translate it, then `make i18n-compile`")
    elif command == "check":
        found = problems()
        for line in found:
            print(line, file=sys.stderr)
        print(f"{len(found)} problem(s)" if found else "catalogs complete and compiled")
        return 1 if found else 0
    else:
        print(
            "usage: scripts/i18n.py extract | update | compile | check | init LANG", file=sys.stderr
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
