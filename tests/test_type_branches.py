"""No code branches on a question type's or a mechanism's name outside the classes that own
them (deniable.shared.questions, mechanisms, sketches, longitudinal), and no table is keyed by
one: everything else asks the question object or the class, whose abilities are data
(docs/architecture.md, "Adding a question type")."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "client", "aggregator", "relay")
#: The modules that own the names: the question types, the mechanisms, the sketches and the
#: protocols of questions asked in waves.
OWNERS = {
    "shared/questions.py",
    "shared/mechanisms.py",
    "shared/sketches.py",
    "shared/longitudinal.py",
}
TYPE_NAMES = {"binary", "categorical", "integer", "multi", "text"}
MECHANISM_NAMES = {
    *("rr", "coins", "grr", "oue", "auto", "onebit", "none"),
    *("cms", "hcms", "rappor", "l-grr", "l-osue"),
}
NAMES = TYPE_NAMES | MECHANISM_NAMES
#: Constants that hold a name (`mechanisms.PLAIN` is "none").
NAME_CONSTANTS = {"PLAIN"}
#: A question document's "text" is its words, not the text type: a key "text" alone
#: (doc["text"], words.get("text")) is read as that field, never as a lookup by the type.
FIELD_WORDS = {"text"}
#: Comparisons with a name's word that mean something else, each with why: (module, code).
#: Keep it short; a new entry needs a reason a reviewer accepts.
NOT_A_NAME: dict[tuple[str, str], str] = {
    # The skip-logic grammar's token kinds ("text" is a quoted string token).
    ("shared/conditions.py", "token.kind != 'text'"): "a condition token's kind",
    ("shared/conditions.py", "token.kind in ('text', 'number')"): "a condition token's kind",
    # A translation's words for a question: its "text" field, not the text type.
    ("aggregator/forms/importing.py", "'text' not in words"): "a translated question's field",
}


def _is_name(node: ast.expr | None) -> bool:
    """Whether an expression is a type or mechanism name: a string literal naming one, a
    constant holding one (PLAIN) or a class's `.name` (LOSUE.name, mech.Coins.name)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in NAMES
    if isinstance(node, ast.Name):
        return node.id in NAME_CONSTANTS
    if isinstance(node, ast.Attribute):
        if node.attr in NAME_CONSTANTS:
            return True
        owner = node.value
        held = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        return node.attr == "name" and held[:1].isupper()
    return False


def _names_in(node: ast.expr) -> int:
    """How many names an operand holds: itself, or the items of a tuple, list or set."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return sum(_is_name(item) for item in node.elts)
    return int(_is_name(node))


def _keyed_by_name(node: ast.expr | None) -> bool:
    """A lookup's key that is a name, but for a document's "text" field."""
    return _is_name(node) and not (isinstance(node, ast.Constant) and node.value in FIELD_WORDS)


def branches(source: str) -> list[tuple[int, str]]:
    """(line, code) of each comparison with, match on, lookup by or literal table of type or
    mechanism names in `source`, whatever the variables are called: a comparison or a
    `match` with a name; a dict, set, tuple or list literal holding two names or more (a
    table keyed by them, or a list of them); `table["grr"]`, `table.get("rr")` or
    `dict(rr=..., coins=...)`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        hit = False
        if isinstance(node, ast.Compare):
            hit = any(_names_in(o) for o in (node.left, *node.comparators))
        elif isinstance(node, ast.Match):
            hit = any(
                isinstance(p, ast.MatchValue) and _is_name(p.value)
                for case in node.cases
                for p in ast.walk(case.pattern)
            )
            if hit:
                found.append((node.lineno, f"match {ast.unparse(node.subject)}"))
                continue
        elif isinstance(node, ast.Dict):
            hit = sum(_is_name(key) for key in node.keys) >= 2
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            hit = _names_in(node) >= 2
        elif isinstance(node, ast.Subscript):
            hit = _keyed_by_name(node.slice)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
                hit = _keyed_by_name(node.args[0])
            elif isinstance(func, ast.Name) and func.id == "dict":
                hit = sum(k.arg in NAMES for k in node.keywords) >= 2
        if hit:
            found.append((node.lineno, ast.unparse(node)))  # type: ignore[attr-defined]
    return sorted(set(found))


def _modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.relative_to(ROOT).as_posix() not in OWNERS
    )


def test_no_branch_on_a_type_or_mechanism_name() -> None:
    """Outside the owners, no module compares with a type or mechanism name or keys a table
    by one (but the few comparisons NOT_A_NAME explains)."""
    problems = []
    for path in _modules():
        name = path.relative_to(ROOT).as_posix()
        found = [
            (line, code)
            for line, code in branches(path.read_text(encoding="utf-8"))
            if (name, code) not in NOT_A_NAME
        ]
        if found:
            lines = "\n".join(f"    {name}:{line}: {code}" for line, code in found)
            problems.append(
                f"{name} branches on, or keeps a table of, question type or mechanism names "
                f"{len(found)} times; ask the question object (question.kind, "
                f"question.randomizer) or the class's declarations instead:\n{lines}"
            )
    assert not problems, "\n".join(problems)


def test_every_exception_is_still_there() -> None:
    """Each comparison NOT_A_NAME explains is still in its module (else it leaves the list)."""
    for (name, code), _why in NOT_A_NAME.items():
        codes = {found for _, found in branches((ROOT / name).read_text(encoding="utf-8"))}
        assert code in codes, f"{name}: {code!r} is gone; remove it from NOT_A_NAME"


@pytest.mark.parametrize(
    "planted",
    [
        'if question.type == "binary":\n    pass\n',
        'x = q.type in ("integer", "text")\n',
        'if qtype != "multi":\n    pass\n',
        'if "categorical" == kind.type:\n    pass\n',
        'if question.mechanism == "oue":\n    pass\n',
        'if question.randomizer.name == "rappor":\n    pass\n',
        'ok = mechanism not in ("rappor", "cms")\n',
        'match question.type:\n    case "text":\n        pass\n',
        'if entry["type"] == "integer":\n    pass\n',
        'wide = question.get("type") not in ("integer", "multi")\n',
        # whatever the variable is called
        'if kind == "binary":\n    pass\n',
        'if status == "text":\n    pass\n',
        'if chosen in ("l-grr", "l-osue"):\n    pass\n',
        'match what:\n    case "hcms" | "cms":\n        pass\n',
        # a name held by a constant or a class
        "plain = doc.get('mechanism') == mech.PLAIN\n",
        "if requested == mech.Coins.name:\n    pass\n",
        # tables keyed by names, and lists of them
        'BINARY = {"rr": _rr, "coins": _coins, "none": _plain}\n',
        "BUILDERS = {LOSUE.name: LOSUE, 'auto': auto}\n",
        'SERIES = ("l-grr", "l-osue", "auto")\n',
        'choices = ["none", "rr"]\n',
        'ALLOWED = {"grr", "oue"}\n',
        "TABLE = dict(rr=1, coins=2)\n",
        'size = DEFAULT_SKETCH["hcms"]\n',
        'planned = PLANNABLE.get("grr")\n',
    ],
)
def test_a_planted_branch_is_found(planted: str) -> None:
    """The check is real: a branch or a table of each form is found."""
    assert branches(planted)


@pytest.mark.parametrize(
    "innocent",
    [
        'if mimetype != "application/json":\n    pass\n',
        'if question.kind.rows == "mean":\n    pass\n',
        "if question.plain:\n    pass\n",
        'doc = {"id": qid, "text": words, "type": kind.name}\n',
        'words = doc["text"]\n',
        'FIELDS = ("id", "text", "options", "hint")\n',
        "if chain.name != named:\n    pass\n",
        'table = {"none": 1}\n',
    ],
)
def test_other_comparisons_are_not_branches(innocent: str) -> None:
    """A document's "text" field, one name written as data, or names compared with each other
    are not branches on a name."""
    assert not branches(innocent)


@pytest.mark.parametrize(
    "planted",
    [
        'def f(q):\n    return 1 if q.type == "binary" else 2\n',
        'def f(entry):\n    kind = entry["type"]\n    return kind == "binary"\n',
        'ROWS = {"binary": "yes", "integer": "mean"}\n',
    ],
)
def test_a_planted_branch_in_a_module_fails_the_check(
    planted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module with a new branch or table makes the suite check fail, naming the line."""
    package = tmp_path / "aggregator"
    package.mkdir()
    (package / "planted.py").write_text(planted, encoding="utf-8")
    for other in ("shared", "client", "relay"):
        (tmp_path / other).mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    with pytest.raises(AssertionError, match=r"aggregator/planted.py:\d+: "):
        test_no_branch_on_a_type_or_mechanism_name()


#: A minimal randomized question of each type (a new type adds its own here).
EXAMPLES = {
    "binary": {"type": "binary", "epsilon": 1},
    "categorical": {"type": "categorical", "options": ["a", "b", "c"], "epsilon": 1},
    "integer": {"type": "integer", "min": 0, "max": 10, "epsilon": 1},
    "multi": {"type": "multi", "options": ["a", "b", "c"], "epsilon": 1.5},
    "text": {"type": "text", "epsilon": 2, "candidates": ["tea"]},
}


def test_every_question_type_has_an_example() -> None:
    from deniable.shared import QUESTION_TYPES

    assert set(QUESTION_TYPES) == set(EXAMPLES)
    assert all(kind.name == name for name, kind in QUESTION_TYPES.items())


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_question_type_resolves_to_a_fixed_point(name: str) -> None:
    """Each type's resolved form resolves to itself, with its default mechanism."""
    from deniable.shared import QUESTION_TYPES, Question

    doc = {"id": "q", "text": "Q?", **EXAMPLES[name]}
    question = Question.from_dict(doc)
    assert question.kind is QUESTION_TYPES[name]
    assert question.type == name
    assert question.mechanism == question.kind.mechanisms[0] or (
        question.kind.mechanisms[0] == "auto" and question.mechanism in ("grr", "oue")
    )
    resolved = question.to_dict()
    assert Question.from_dict(resolved).to_dict() == resolved
    assert list(resolved)[:3] == ["id", "text", "type"]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_question_type_explains_and_reads_back_its_answers(name: str) -> None:
    """Its words name no other type's shape, and a respondent's value survives normalize."""
    from deniable.shared import Question
    from deniable.shared.explain import question_lines

    question = Question.from_dict({"id": "q", "text": "Q?", **EXAMPLES[name]})
    lines = question_lines(question)
    assert lines[0].startswith("What is sent")
    assert "times surer" in lines[1]
    value = {"binary": "yes", "categorical": "b", "integer": 7, "multi": ["a", "c"]}.get(
        name, "Tea "
    )
    normal = question.normalize(value)
    assert question.normalize(normal if name != "multi" else sorted(normal)) == normal
    assert question.validate(question.randomize(value)) is not None


def template_branches(source: str) -> list[tuple[int, str]]:
    """(line, code) of each comparison with, lookup by or literal table of type or mechanism
    names in a Jinja template's expressions, whatever the variables are called (read from
    Jinja's own parse, so HTML such as `type="text"` is never mistaken for one)."""
    from jinja2 import Environment, nodes

    def is_name(node: nodes.Node) -> bool:
        return isinstance(node, nodes.Const) and node.value in NAMES

    def held(node: nodes.Node) -> int:
        if isinstance(node, nodes.Tuple | nodes.List):
            return sum(is_name(item) for item in node.items)
        return int(is_name(node))

    found = []
    for node in Environment(extensions=["jinja2.ext.i18n"]).parse(source).find_all(nodes.Expr):
        if isinstance(node, nodes.Compare):
            hit = bool(held(node.expr)) or any(held(op.expr) for op in node.ops)
        elif isinstance(node, nodes.Dict):
            hit = sum(is_name(pair.key) for pair in node.items) >= 2
        elif isinstance(node, nodes.Tuple | nodes.List):
            hit = held(node) >= 2
        elif isinstance(node, nodes.Getitem):
            hit = is_name(node.arg) and node.arg.value not in FIELD_WORDS  # type: ignore[attr-defined]
        elif isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr):
            hit = node.node.attr == "get" and bool(node.args) and is_name(node.args[0])
        else:
            hit = False
        if hit:
            found.append((node.lineno, type(node).__name__))
    return sorted(set(found))


def _templates() -> list[Path]:
    """The dashboard's templates and the page's (one renderer, in deniable.shared)."""
    folders = (ROOT / "aggregator" / "web" / "templates", ROOT / "shared" / "templates")
    return sorted(path for folder in folders for path in folder.glob("*.html"))


def test_no_template_branches_on_a_type_or_mechanism_name() -> None:
    """The dashboard's and the page's templates ask the question type's properties (its
    control, its rows), never its name: a new type needs no template edit for those."""
    pages = _templates()
    assert len(pages) >= 6 and any("shared" in p.parts for p in pages)
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in pages
        for line, what in template_branches(path.read_text("utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize(
    "planted",
    [
        "{% if q.type == 'binary' %}x{% endif %}",
        "{% if kind in ['text', 'multi'] %}x{% endif %}",
        "{% if 'rr' == m %}x{% endif %}",
        "{{ {'rr': 1, 'coins': 2}[q.mechanism] }}",
        "{% set words = ('hcms', 'cms') %}",
        "{{ captions['grr'] }}",
        "{{ captions.get('oue') }}",
        "{% if q.mechanism != 'none' %}x{% endif %}",
    ],
)
def test_a_planted_template_branch_is_found(planted: str) -> None:
    assert template_branches(planted)


@pytest.mark.parametrize(
    "innocent",
    [
        '<input type="text" name="{{ q.id }}">',
        "{% if q.kind.control == 'words' %}x{% endif %}",
        "{% if q.question.kind.rows == 'mean' %}x{% endif %}",
        "{{ q['text'] }}",
        "{{ _('Answer in your own words (text).') }}",
    ],
)
def test_other_template_comparisons_are_not_branches(innocent: str) -> None:
    assert not template_branches(innocent)
