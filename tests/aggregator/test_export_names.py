"""Stata/SPSS variable names: always found, always valid, always distinct (a question named
`street` once made the export loop forever)."""

from __future__ import annotations

import re

import pyreadstat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.aggregator import exports
from deniable.shared import Survey
from deniable.shared.survey import QUESTION_ID

_VALID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
_STORAGE = re.compile(r"str(?:[0-9]+|l)", re.IGNORECASE)
qids = st.from_regex(QUESTION_ID, fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(qids, unique=True, max_size=40))
def test_names_always_end_valid_and_distinct(ids: list[str]) -> None:
    names = exports.variable_names(ids)
    assert list(names) == ids
    folded = [name.casefold() for name in names.values()]
    assert len(set(folded)) == len(folded)
    for name in names.values():
        assert _VALID.fullmatch(name), name
        assert not _STORAGE.fullmatch(name), name


def test_words_that_begin_like_a_storage_type_keep_their_name() -> None:
    ids = ["street", "stress", "strata", "string", "str80", "strl", "str", "by", "q"]
    names = exports.variable_names(ids)
    assert names["street"] == "street" and names["strata"] == "strata"
    assert names["string"] == "string" and names["str"] == "str"
    assert names["str80"] == "str80_2" and names["strl"] == "strl_2" and names["by"] == "by_2"


@pytest.mark.parametrize("fmt", ["dta", "sav"])
def test_a_survey_asking_about_the_street_exports(tmp_path, fmt: str) -> None:
    survey = Survey.from_dict(
        {
            "id": "street-life",
            "title": "Street life",
            "questions": [
                {
                    "id": "street",
                    "text": "Do you live on a busy street?",
                    "type": "binary",
                    "epsilon": 1.0,
                },
                {
                    "id": "str80",
                    "text": "A storage type's name",
                    "type": "binary",
                    "mechanism": "none",
                },
            ],
        }
    )
    path = tmp_path / f"street.{fmt}"
    bodies = iter(['{"answers": {"street": 1, "str80": 0}}'])
    exports.write_stat_file(survey, bodies, fmt, str(path))  # type: ignore[arg-type]
    frame, _ = (pyreadstat.read_dta if fmt == "dta" else pyreadstat.read_sav)(str(path))
    assert list(frame.columns) == ["street", "str80_2"]
    assert list(frame["street"]) == [1.0]
