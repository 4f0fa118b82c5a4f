"""XLSForm's `relevant` on deniable's one condition tree (deniable.shared.conditions): the
importer builds its nodes, deniable's conditions are read by its `parse`, and both render back
exactly as written (parentheses, numbers), so import -> export -> import keeps the hash."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from deniable.aggregator.forms import export_xlsform, import_xlsform, relevance
from deniable.shared import conditions
from deniable.shared.survey import Survey

#: Every node class of the one tree.
SHARED_NODES = (
    conditions.Compare,
    conditions.OneOf,
    conditions.Selected,
    conditions.Not,
    conditions.Group,
    conditions.All,
    conditions.Any_,
    conditions.Ref,
    conditions.Lit,
)

XLSFORMS = [
    "${a} = 'x'",
    "not(${a} != 'x') or (${b} < -2 and ${b} > 1.50)",
    "selected(${c}, 'x') and 'y' = ${a}",
    "${a} != '' or ${b} = ''",
]


def same(qid: str, value: str) -> str:
    """Strings compared with a question, unchanged (no choice names to map)."""
    return value


def _nodes(value: Any) -> Iterator[Any]:
    """A tree and every node, operand and value under it."""
    yield value
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            for part in item if isinstance(item, tuple) else (item,):
                yield from _nodes(part)


def test_relevance_defines_no_condition_tree_of_its_own() -> None:
    own = {
        name
        for name, value in vars(relevance).items()
        if inspect.isclass(value) and value.__module__ == relevance.__name__
    }
    assert own == {"ConditionError", "_Parser"}
    source = inspect.getsource(relevance)
    assert "MAX_CONDITION =" not in source and "MAX_DEPTH =" not in source
    assert relevance.MAX_DEPTH is conditions.MAX_DEPTH
    asked = conditions.parse("z == 'yes'").tree
    for text in XLSFORMS:
        tree = relevance.parse_xlsform(text)
        reduced = relevance.answered(relevance.renamed(tree, {"a": "aa"}), lambda q: asked)
        for node in [*_nodes(tree), *_nodes(reduced)]:
            if not isinstance(node, str | int | float | bool | None):
                assert isinstance(node, SHARED_NODES), (text, node)


@pytest.mark.parametrize(
    "text",
    [
        "age >= 1.50",
        "(a == 'x') and ((b == 2.0))",
        "not (a == 1) or not a == -0.25",
        "a in ('x', \"it's\", 3)",
        "'x' in c and (b < 10 or b > 20)",
    ],
)
def test_deniable_conditions_read_by_the_shared_parser_render_back_as_written(text: str) -> None:
    tree = conditions.parse(text).tree
    assert relevance.to_deniable(tree, same) == text
    xlsform = relevance.to_xlsform(tree, same)
    back = relevance.to_deniable(relevance.parse_xlsform(xlsform), same)
    assert relevance.to_xlsform(conditions.parse(back).tree, same) == xlsform


def test_the_shared_tree_keeps_parentheses_and_numbers_as_written() -> None:
    tree = conditions.parse("(age >= 1.50)").tree
    assert tree == conditions.Group(
        conditions.Compare(">=", conditions.Ref("age"), conditions.Lit(1.5))
    )
    assert isinstance(tree, conditions.Group) and isinstance(tree.item, conditions.Compare)
    assert tree.item.right == conditions.Lit(1.5) and tree.item.right.written == "1.50"
    assert conditions.evaluate(tree, {"age": 2}) and not conditions.evaluate(tree, {"age": 1})


def test_xlsform_numbers_become_numbers_deniable_reads() -> None:
    tree = relevance.parse_xlsform("${b} > .5 and ${b} < -.25")
    text = relevance.to_deniable(tree, lambda q, v: v)
    assert text == "b > 0.5 and b < -0.25"
    assert conditions.parse(text).tree == tree


def test_an_xlsform_number_past_the_digits_deniable_keeps_is_refused() -> None:
    with pytest.raises(relevance.ConditionError, match="more than 15 digits"):
        relevance.parse_xlsform("${b} > 1234567890123456")


def test_a_survey_with_decimals_and_parentheses_comes_back_with_its_hash() -> None:
    relevant = "(age >= 1.50) and not (age == 3) or age in (7, 8.0)"
    doc = {
        "id": "decimals",
        "title": "Decimals",
        "questions": [
            {
                "id": "age",
                "text": "Age?",
                "type": "integer",
                "min": 0,
                "max": 99,
                "mechanism": "none",
            },
            {"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0, "relevant": relevant},
        ],
    }
    survey = Survey.from_dict(doc)
    first = Survey.from_dict(import_xlsform(export_xlsform(survey)))
    assert first.questions["q"].relevant == (
        "(age >= 1.50) and not (age == 3) or (age == 7 or age == 8.0)"
    )
    again = Survey.from_dict(import_xlsform(export_xlsform(first)))
    assert again.hash == first.hash
