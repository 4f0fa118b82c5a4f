"""verified_body: the fast signature check signs exactly what verify_report checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.shared import Survey, make_report
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import ReportError
from deniable.shared.report import (
    _STRING_FIELDS,
    canonical_report,
    check_structure,
    signed_bytes,
    verified_body,
    verify_report,
)
from deniable.shared.signing import generate_key

# A question named like the signature field must not fool the splice of the signed bytes.
DOC = {
    "id": "tricky",
    "title": "Tricky",
    "questions": [
        {"id": "signature", "text": "?", "type": "binary", "epsilon": 1.0},
        {
            "id": "public_key",
            "text": "?",
            "type": "categorical",
            "options": ["a", "b", "c"],
            "epsilon": 1.0,
        },
    ],
}


def test_it_accepts_what_verify_report_accepts_and_returns_the_canonical_body():
    survey = Survey.from_dict(DOC)
    for _ in range(20):
        report = check_structure(
            make_report(survey, {"signature": "yes", "public_key": "b"}, generate_key())
        )
        verify_report(report)
        assert verified_body(report) == canonical_json(report).decode("utf-8")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["answers"].__setitem__("signature", 1 - r["answers"]["signature"]),
        lambda r: r.__setitem__("sent_at", "2020-01-01T00:00:00Z"),
        lambda r: r.__setitem__("signature", r["signature"][::-1]),
        lambda r: r.__setitem__("signature", "A" * 86),
        lambda r: r.__setitem__("public_key", "A" * 43),
        lambda r: r.__setitem__("public_key", "AAAA"),
    ],
)
def test_it_refuses_what_verify_report_refuses(change):
    survey = Survey.from_dict(DOC)
    report = make_report(survey, {"signature": "no", "public_key": "a"}, generate_key())
    change(report)
    with pytest.raises(ReportError) as expected:
        verify_report(report)
    with pytest.raises(ReportError) as found:
        verified_body(report)
    assert str(found.value) == str(expected.value)


#: Printable ASCII (quotes and backslashes included), or any text at all.
_ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
_TEXT = st.one_of(_ASCII, st.text(max_size=12))
_VALUE = st.one_of(st.integers(), _TEXT, st.booleans(), st.none(), st.floats(allow_nan=False))


@settings(max_examples=400, deadline=None)
@given(
    answers=st.dictionaries(_TEXT, _VALUE, max_size=5),
    strings=st.one_of(
        st.fixed_dictionaries({name: _ASCII for name in _STRING_FIELDS}),
        st.fixed_dictionaries({name: _TEXT for name in _STRING_FIELDS}),
    ),
    v=st.one_of(st.integers(), _TEXT),
    extra=st.dictionaries(_TEXT, _VALUE, max_size=1),
    drop=st.sets(st.sampled_from(["answers", "survey", "v"]), max_size=1),
)
def test_canonical_report_writes_exactly_what_the_json_encoder_writes(
    answers, strings, v, extra, drop
):
    report = {**strings, "answers": answers, "v": v, **extra}
    for name in drop:
        report.pop(name, None)
    signed, body = canonical_report(report)
    assert body == canonical_json(report)
    assert signed == signed_bytes(report)


def test_canonical_report_orders_keys_that_prefix_each_other_like_the_encoder():
    survey = Survey.from_dict(DOC)
    report = make_report(survey, {"signature": "yes", "public_key": "b"}, generate_key())
    report["answers"] = {"a!": 1, "a": 0, "a b": "01", "A": 2, "a-": 3, "a_": 4}
    assert canonical_report(report) == (signed_bytes(report), canonical_json(report))
