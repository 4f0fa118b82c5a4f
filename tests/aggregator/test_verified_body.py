"""verified_body: the fast signature check signs exactly what verify_report checks."""

from __future__ import annotations

import pytest

from deniable.shared import Survey, make_report
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import ReportError
from deniable.shared.report import check_structure, verified_body, verify_report
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
