"""The page's modules know question types and mechanisms in one place: the QUESTION_TYPES and
MECHANISMS tables. Anywhere else in any of the page's modules, a comparison, switch, membership
test or lookup on a type or mechanism name, whatever the variable is called, or a literal list
or table of names is a branch, and this test fails naming it (the browser side of
docs/architecture.md's "where a new question type goes")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "aggregator" / "web" / "static"
#: Every module of the page and the dashboard (the tables may move to a module of their own).
MODULES = tuple(sorted(path.name for path in STATIC.glob("*.js")))
TABLES = ("MECHANISMS", "QUESTION_TYPES")
TYPES = ("binary", "categorical", "integer", "multi", "text")
MECHANISM_NAMES = ("none", "rr", "coins", "grr", "oue", "onebit", "cms", "hcms", "rappor")
#: Names the tables need not hold as their own entries: auto resolves to grr or oue, and the
#: protocols of questions asked in waves are reached through their question type.
OTHER_NAMES = ("auto", "l-grr", "l-osue")
NAMES = "|".join(re.escape(n) for n in (*TYPES, *MECHANISM_NAMES, *OTHER_NAMES))
QUOTED = rf"""(["'`])(?:{NAMES})\1"""


def quoted(tag: str) -> str:
    """A quoted name whose quote is the named group `tag` (several in one pattern)."""
    return rf"""(?P<{tag}>["'`])(?:{NAMES})(?P={tag})"""


def key(tag: str) -> str:
    """A name as an object's key, quoted or not ({ rr: ..., "l-grr": ... })."""
    return rf"(?:{quoted(tag)}|\b(?:{NAMES})\b(?!-))\s*:(?!:)"


#: A document's "text" is its words: q["text"] is a field, not a lookup by the text type.
LOOKED_UP = rf"""\[\s*(["'`])(?!text\1)(?:{NAMES})\1\s*\]"""
# question.type, q?.mechanism, type, ...; not the Fetch API's response.type
SUBJECT = r"(?<![\w$.])(?!response\.)[\w$.?\[\]]*\b(?:type|mechanism)\b"
COMPARE = r"(?:===|!==|==|!=)"

#: Each pattern is one way of branching on a name; the tables themselves may only hold keys.
BRANCHES = {
    "compares with a name": rf"{COMPARE}\s*{QUOTED}|{QUOTED}\s*{COMPARE}",
    "compares a type or mechanism": rf"{SUBJECT}\s*{COMPARE}|{COMPARE}\s*{SUBJECT}",
    "switches on a name": rf"\bcase\s+{QUOTED}|\bswitch\s*\(\s*{SUBJECT}",
    "tests membership of a type or mechanism": (
        rf"\.(?:includes|indexOf|has)\(\s*{SUBJECT}\s*\)|{SUBJECT}\s+in\b"
    ),
    "looks a name up outside the tables": rf"\b(?:{'|'.join(TABLES)})\s*(?:\.\s*\w|\[)",
    # question[question.mechanism] is the wire format (parameters under the mechanism's name).
    "keys another table by type or mechanism": rf"(?<!question)\[\s*{SUBJECT}\s*\]",
    "tests membership of a name": (
        rf"\.(?:includes|indexOf|has)\(\s*{QUOTED}\s*\)|{QUOTED}\s+in\b"
    ),
    "lists names": rf"\[\s*{quoted('a')}\s*,\s*{quoted('b')}",
    "keys a table by names": rf"\{{\s*{key('a')}[^{{}};]*?,\s*{key('b')}",
    "looks a name up": LOOKED_UP,
}


#: What only the tables may do.
TABLE_WORK = {
    "looks a name up outside the tables",
    "keys a table by names",
    "looks a name up",
    "lists names",
}
#: Findings that mean something else, each with why: (module, the line's code).
NOT_A_NAME: dict[tuple[str, str], str] = {
    # The skip-logic grammar's token kinds ("text" is a quoted string token).
    ("conditions.js", "if (token.kind === 'text' || token.kind === 'number') {"): "a token's kind",
}
#: Findings left for issue 37 (browser modules not yet asking the tables), with their count:
#: the list only shrinks (a module with more or fewer findings than listed fails).
NOT_YET_MOVED: dict[str, int] = {}


def table_spans(source: str) -> list[tuple[int, int]]:
    """Where `const MECHANISMS = {...};` and `const QUESTION_TYPES = {...};` are (braces
    matched, so the spans are exactly the tables)."""
    spans = []
    for name in TABLES:
        start = source.find(f"const {name} = {{")
        if start < 0:
            continue
        depth, i = 0, source.index("{", start)
        while True:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            if depth == 0:
                break
            i += 1
        spans.append((start, i + 1))
    return spans


def branches(source: str, module: str) -> list[str]:
    """Every branch on a type or mechanism name in `source`, as "module:line: why: code"."""
    spans = table_spans(source)
    found: dict[int, str] = {}  # one finding per line
    for why, pattern in BRANCHES.items():
        for match in re.finditer(pattern, source):
            inside = any(a <= match.start() < b for a, b in spans)
            # The tables are keyed by names and may look up their own entries (QUESTION_TYPES
            # maps names to MECHANISMS.x).
            if inside and why in TABLE_WORK:
                continue
            line = source.count("\n", 0, match.start()) + 1
            code = source.splitlines()[line - 1].strip()
            if (module, code) in NOT_A_NAME:
                continue
            found.setdefault(line, f"{module}:{line}: {why}: {code}")
    return [found[line] for line in sorted(found)]


def read(module: str) -> str:
    return (STATIC / module).read_text("utf-8")


def test_the_page_modules_branch_on_no_type_or_mechanism_outside_the_tables() -> None:
    problems = []
    for module in MODULES:
        found = branches(read(module), module)
        allowed = NOT_YET_MOVED.get(module, 0)
        if len(found) > allowed:
            problems += found
        elif len(found) < allowed:
            problems.append(
                f"{module}: {len(found)} findings, fewer than NOT_YET_MOVED's {allowed}"
            )
    assert not problems, "branch on a type or mechanism name; use the tables:\n" + "\n".join(
        problems
    )


def test_every_exception_is_still_there() -> None:
    """Each finding NOT_A_NAME explains is still in its module (else it leaves the list), and
    each module NOT_YET_MOVED lists exists."""
    for module, code in NOT_A_NAME:
        assert code in {line.strip() for line in read(module).splitlines()}, (module, code)
    assert set(NOT_YET_MOVED) <= set(MODULES)


def test_the_tables_hold_every_type_and_mechanism() -> None:
    source = read("mechanisms.js")
    spans = dict(zip(TABLES, table_spans(source), strict=True))
    types = source[slice(*spans["QUESTION_TYPES"])]
    for name in TYPES:
        assert re.search(rf"^  {name}: \{{", types, re.M), name
    for name in MECHANISM_NAMES:
        assert re.search(rf"\b{name}: MECHANISMS\.\w+", types), name


PLANTED = [
    'if (question.type === "binary") return 1;',
    "if ('oue' == question.mechanism) return bits;",
    "switch (question.mechanism) { default: }",
    'const plain = ["none", "rr"].includes(question.mechanism);',
    "const reader = CONTROLS[question.type === `multi` ? 'boxes' : 'choice'];",
    'const oue = MECHANISMS["oue"];',
    "const rr = MECHANISMS.rr.randomize(question, 1, p);",
    "if (question.type in { text: 1 }) {}",
    'const words = { text: "sketch", multi: "marks" }[question.type];',
    # whatever the variable is called, and lists and tables of names
    'if (kind === "binary") return 1;',
    "if (chosen !== 'l-grr') return 0;",
    'const SKETCHES = ["hcms", "cms", "rappor"];',
    'const POWER = { rr: 1, "coins": 2 };',
    "const size = DEFAULTS['hcms'];",
    'if (["grr"].includes(x) || allowed.has("oue")) {}',
    "switch (kind) { case 'multi': break; }",
]
#: Modules a planted line can go into (outside the tables, between two functions).
HOSTS = tuple(module for module in MODULES if "\nfunction " in read(module))


@pytest.mark.parametrize("module", HOSTS)
@pytest.mark.parametrize("planted", PLANTED)
def test_a_planted_branch_is_found(module: str, planted: str) -> None:
    source = read(module)
    before = branches(source, module)
    at = source.index("\nfunction ") + 1  # outside the tables, between two functions
    found = branches(source[:at] + planted + "\n" + source[at:], module)
    new = [hit for hit in found if planted in hit]
    assert new and len(found) == len(before) + len(new), found


@pytest.mark.parametrize(
    "innocent",
    [
        "const doc = { id: q.id, text: q.text, type: q.type };",
        'const words = q["text"];',
        "if (response.type === 'opaque') {}",
        "const plain = MECHANISM.none;",
    ],
)
def test_other_lines_are_not_branches(innocent: str) -> None:
    assert not branches(innocent, "innocent.js")
