"""No code branches on a question type's or a mechanism's name outside the classes that own
them (deniable.shared.questions, mechanisms, sketches): everything else asks the question
object (docs/architecture.md, "Adding a question type")."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "client", "aggregator")
#: The modules that own the names: the question types and the mechanisms.
OWNERS = {"shared/questions.py", "shared/mechanisms.py", "shared/sketches.py"}
TYPE_NAMES = {"binary", "categorical", "integer", "multi", "text"}
MECHANISM_NAMES = {"rr", "coins", "grr", "oue", "auto", "onebit", "none", "cms", "hcms", "rappor"}
#: Modules not yet moved to asking the question object, with their count of branches. The
#: list only shrinks: a module with more branches than listed fails, and so does one with
#: fewer (lower its count, or drop it once at zero).
NOT_YET_MOVED: dict[str, int] = {}


def _named(node: ast.expr, word: str) -> bool:
    """Whether an expression is a name, attribute or key whose name contains `word` (q.type,
    qtype, entry["type"], entry.get("type"))."""
    if isinstance(node, ast.Name):
        return word in node.id.lower()
    if isinstance(node, ast.Attribute):
        return word in node.attr.lower()
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        key = node.args[0] if node.func.attr == "get" else None
    else:
        return False
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and word in key.value


def _strings(node: ast.expr) -> set[str]:
    """The string constants of a constant or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)} - {None}  # type: ignore[misc]
    return set()


def _kinds() -> tuple[tuple[str, set[str]], ...]:
    """(a word in the compared name, the names it is compared with): a question's type, and a
    mechanism's name (`question.mechanism`, `randomizer.name`, `requested`)."""
    return (
        ("type", TYPE_NAMES),
        ("mechanism", MECHANISM_NAMES),
        ("name", MECHANISM_NAMES),
        ("requested", MECHANISM_NAMES),
    )


def branches(source: str) -> list[tuple[int, str]]:
    """(line, code) of each comparison or match of a type or mechanism name in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for word, names in _kinds():
                named = any(_named(o, word) for o in operands)
                if named and any(_strings(o) & names for o in operands):
                    found.append((node.lineno, ast.unparse(node)))
                    break
        elif isinstance(node, ast.Match):
            for word, names in _kinds():
                values = {
                    p.value.value
                    for case in node.cases
                    for p in ast.walk(case.pattern)
                    if isinstance(p, ast.MatchValue) and isinstance(p.value, ast.Constant)
                }
                if _named(node.subject, word) and values & names:
                    found.append((node.lineno, f"match {ast.unparse(node.subject)}"))
                    break
    return found


def _modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.relative_to(ROOT).as_posix() not in OWNERS
    )


def test_no_branch_on_a_type_or_mechanism_name() -> None:
    """Outside the owners, only the modules listed as not yet moved may branch, no more than
    they do today; the list shrinks as they move."""
    problems = []
    for path in _modules():
        name = path.relative_to(ROOT).as_posix()
        found = branches(path.read_text(encoding="utf-8"))
        allowed = NOT_YET_MOVED.get(name, 0)
        if len(found) > allowed:
            lines = "\n".join(f"    {name}:{line}: {code}" for line, code in found)
            problems.append(
                f"{name} branches on a question type or mechanism name {len(found)} times "
                f"(allowed {allowed}); ask the question object (question.kind, "
                f"question.randomizer) instead:\n{lines}"
            )
        elif len(found) < allowed:
            problems.append(
                f"{name} now has {len(found)} branches, fewer than the {allowed} listed in "
                "NOT_YET_MOVED: lower its count (or remove it at zero)"
            )
    assert not problems, "\n".join(problems)


def test_the_allowlist_names_existing_modules() -> None:
    """A module listed as not yet moved exists (a renamed one must leave the list)."""
    assert all((ROOT / name).is_file() for name in NOT_YET_MOVED)


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
    ],
)
def test_a_planted_branch_is_found(planted: str) -> None:
    """The check is real: a branch of each form is found."""
    assert branches(planted)


@pytest.mark.parametrize(
    "innocent",
    [
        'if mimetype != "application/json":\n    pass\n',
        'if question.kind.rows == "mean":\n    pass\n',
        'if status == "text":\n    pass\n',
        "if question.plain:\n    pass\n",
    ],
)
def test_other_comparisons_are_not_branches(innocent: str) -> None:
    assert not branches(innocent)


def test_a_planted_branch_in_a_module_fails_the_check(tmp_path: Path, monkeypatch) -> None:
    """A module with a new branch makes the suite check fail, naming the line."""
    package = tmp_path / "aggregator"
    package.mkdir()
    (package / "planted.py").write_text(
        'def f(q):\n    return 1 if q.type == "binary" else 2\n', encoding="utf-8"
    )
    for other in ("shared", "client"):
        (tmp_path / other).mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "NOT_YET_MOVED", {})
    with pytest.raises(AssertionError, match=r"aggregator/planted.py:2: q.type == 'binary'"):
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


def test_no_template_branches_on_a_type_or_mechanism_name():
    """The dashboard's and the page's templates ask the question type's properties (its
    control, its rows), never its name: a new type needs no template edit for those."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    # The dashboard's templates and the respondent page's (one renderer, in deniable.shared).
    folders = (root / "aggregator" / "web" / "templates", root / "shared" / "templates")
    pages = sorted(path for folder in folders for path in folder.glob("*.html"))
    # A comparison with a name written in the template (a string literal or a list of them).
    branch = re.compile(r"\b(type|mechanism)\s*(==|!=|in\b|not in\b)\s*[\[(]?\s*['\"]")
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in pages
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        for tag in re.findall(r"\{[%{].*?[%}]\}", line)
        if branch.search(tag)
    ]
    assert len(pages) >= 6 and any(
        p.parent.name == "templates" and "shared" in p.parts for p in pages
    )
    assert found == []
