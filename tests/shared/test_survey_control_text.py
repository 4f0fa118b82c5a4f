"""Every survey text refuses carriage returns and the other control characters but newline and
tab, naming where (a carriage return in an option label once lost the answer: the browser turns
it into a newline in the input's value). Surveys already stored keep loading."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deniable.shared.errors import SurveyError
from deniable.shared.survey import Survey
from tests.shared.test_translations import doc as multilingual

ROOT = Path(__file__).resolve().parents[2]
#: Keys whose values are names or settings, not texts (each has a grammar of its own).
NOT_TEXT = {"id", "type", "mechanism", "enrollment", "device", "closes_at", "language"}


def documents() -> list[dict[str, Any]]:
    found = [multilingual()]
    for path in [*ROOT.glob("examples/*.json"), *ROOT.glob("aggregator/examples/*.json")]:
        found.append(json.loads(path.read_text(encoding="utf-8")))
    return found


def texts(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(path, text) of every text leaf of a survey document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in NOT_TEXT:
                yield from texts(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from texts(value, (*path, i))
    elif isinstance(node, str):
        yield path, node


def replaced(document: dict[str, Any], path: tuple[Any, ...], value: str) -> dict[str, Any]:
    out = copy.deepcopy(document)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def where(path: tuple[Any, ...], document: dict[str, Any]) -> str:
    """The words an error must name: the field, or the question holding it."""
    if path[0] == "questions" and isinstance(path[1], int):
        return f"questions[{path[1]}]"
    return str(path[0]) if path[0] != "translations" else f"translations.{path[1]}"


CASES = [
    (i, path, bad)
    for i, document in enumerate(documents())
    for path, text in texts(document)
    if text.strip() and "relevant" not in path
    for bad in ("\r", "\x0b", "\x85", "\x1b[2J")
]


def test_every_text_leaf_is_found() -> None:
    assert len({(i, p) for i, p, _ in CASES}) > 40


@pytest.mark.parametrize(("index", "path", "bad"), CASES)
def test_a_control_character_in_any_text_is_refused_naming_where(
    index: int, path: tuple[Any, ...], bad: str
) -> None:
    document = documents()[index]
    original = document
    for step in path:
        original = original[step]
    Survey.from_dict(document)  # the document itself is fine
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict(replaced(document, path, f"{original[:1]}{bad}{original[1:]}"))
    assert where(path, document) in str(caught.value)


@pytest.mark.parametrize("kept", ["\n", "\t"])
def test_newline_and_tab_stay_text(kept: str) -> None:
    document = multilingual()
    document["questions"][0]["text"] = f"Do you{kept}smoke?"
    document["description"] = f"Two{kept}minutes."
    assert Survey.from_dict(document).questions["smokes"].text == f"Do you{kept}smoke?"


def test_a_survey_stored_with_a_carriage_return_keeps_loading() -> None:
    document = multilingual()
    document["questions"][1]["options"][0] = "Left\r"
    with pytest.raises(SurveyError, match=r"questions\[1\]\.options\[0\]"):
        Survey.from_dict(document)
    stored = Survey.from_stored(document)
    assert stored.questions["party"].options[0] == "Left\r"
    with pytest.raises(SurveyError):  # the leniency ends with the stored read
        Survey.from_dict(document)
