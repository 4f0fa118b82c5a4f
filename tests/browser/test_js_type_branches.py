"""The page's modules know question types and mechanisms in one place: deniable.js's
QUESTION_TYPES and MECHANISMS tables. Anywhere else in deniable.js or respond.js, a comparison,
switch, membership test or lookup on a type or mechanism name is a branch, and this test fails
naming it (the browser side of docs/architecture.md's "where a new question type goes")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "aggregator" / "web" / "static"
MODULES = ("deniable.js", "respond.js")
TABLES = ("MECHANISMS", "QUESTION_TYPES")
TYPES = ("binary", "categorical", "integer", "multi", "text")
MECHANISM_NAMES = ("none", "rr", "coins", "grr", "oue", "onebit", "cms", "hcms", "rappor")
NAMES = "|".join((*TYPES, *MECHANISM_NAMES))
QUOTED = rf"""(["'`])(?:{NAMES})\1"""
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
}


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
            # A table may look up its own entries (QUESTION_TYPES maps names to MECHANISMS.x).
            if inside and why == "looks a name up outside the tables":
                continue
            line = source.count("\n", 0, match.start()) + 1
            code = source.splitlines()[line - 1].strip()
            found.setdefault(line, f"{module}:{line}: {why}: {code}")
    return [found[line] for line in sorted(found)]


def read(module: str) -> str:
    return (STATIC / module).read_text("utf-8")


def test_the_page_modules_branch_on_no_type_or_mechanism_outside_the_tables() -> None:
    found = [hit for module in MODULES for hit in branches(read(module), module)]
    assert not found, "branch on a type or mechanism name; use the tables:\n" + "\n".join(found)


def test_the_tables_hold_every_type_and_mechanism() -> None:
    source = read("deniable.js")
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
]


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("planted", PLANTED)
def test_a_planted_branch_is_found(module: str, planted: str) -> None:
    source = read(module)
    assert not branches(source, module)
    at = source.index("\nfunction ") + 1  # outside the tables, between two functions
    found = branches(source[:at] + planted + "\n" + source[at:], module)
    assert found and all(planted in hit for hit in found), found
