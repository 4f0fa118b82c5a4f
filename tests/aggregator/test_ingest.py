"""Ingestion: every refused report changes nothing; accepted ones count exactly once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from deniable.aggregator import credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.store import Store
from deniable.aggregator.surveys import ActionError, close_survey, create_survey, survey_or_404
from deniable.aggregator.web.statuses import refusal_status, report_status
from deniable.shared import Survey, hour_now, sign_report
from deniable.shared.signing import generate_key, public_key_text


def snapshot(store: Store, survey_id: str) -> tuple[Any, ...]:
    """Everything a report could change."""
    return store.tallies(survey_id), list(store.iter_report_bodies(survey_id))


def resign(report: dict[str, Any], key, **changes: Any) -> dict[str, Any]:
    """The report with fields changed and signed again, so only the change is wrong."""
    return sign_report({**report, **changes}, key)


def test_an_accepted_report_counts_once(store, survey, report_for):
    report = report_for(survey)
    (outcome,) = ingest(store, report)
    assert outcome.to_dict() == {"report_id": report["report_id"], "result": "accepted"}
    assert report_status(outcome) == 201
    n, support = store.tallies(survey.id)
    assert n == 1
    for qid, question in survey.questions.items():
        expected = [0] * question.k
        for option in question.supports(report["answers"][qid]):
            expected[option] = 1
        assert support[qid] == expected


def test_the_same_report_again_is_a_duplicate(store, survey, report_for):
    report = report_for(survey)
    ingest(store, report)
    before = snapshot(store, survey.id)
    (outcome,) = ingest(store, dict(report))
    assert (outcome.result, report_status(outcome), outcome.reason) == ("duplicate", 200, None)
    assert snapshot(store, survey.id) == before


def refused(store: Store, survey: Survey, value: Any, status: int, reason: str) -> None:
    before = snapshot(store, survey.id)
    (outcome,) = ingest(store, value)
    assert outcome.result == "rejected"
    assert report_status(outcome) == status, outcome.reason
    assert reason in (outcome.reason or ""), outcome.reason
    assert snapshot(store, survey.id) == before


def test_a_second_report_from_the_same_key_is_refused(store, survey, report_for):
    key = generate_key()
    ingest(store, report_for(survey, key))
    refused(store, survey, report_for(survey, key), 409, "already answered")


def test_a_tampered_report_is_refused(store, survey, report_for):
    report = report_for(survey)
    report["answers"]["smokes"] = 1 - report["answers"]["smokes"]
    refused(store, survey, report, 422, "signature")


def test_a_tampered_resend_of_an_accepted_report_is_refused(store, survey, report_for):
    report = report_for(survey)
    ingest(store, report)
    report["answers"]["smokes"] = 1 - report["answers"]["smokes"]
    refused(store, survey, report, 422, "signature")


def test_text_that_is_not_unicode_is_refused_not_a_crash(store, survey, report_for):
    """From Python, ingest may get a lone surrogate (JSON's \\ud800) anywhere."""
    stored = report_for(survey)
    assert ingest(store, stored)[0].result == "accepted"
    lone_id = {**report_for(survey), "report_id": "\ud800"}
    lone_key = {**stored, "answers": {**stored["answers"], "\ud800": 1}}  # a stored report_id
    outcomes = ingest(store, [lone_id, lone_key, report_for(survey)])
    assert [o.result for o in outcomes] == ["rejected", "rejected", "accepted"]
    assert store.tallies(survey.id)[0] == 2


def test_ids_no_store_can_hold_are_refused_not_looked_up(store, survey, report_for):
    """A NUL fits SQLite's text but not PostgreSQL's: such ids are never queried."""
    nul = {**report_for(survey), "report_id": "\x00abc"}
    outcomes = ingest(store, [nul, report_for(survey)])
    assert [o.result for o in outcomes] == ["rejected", "accepted"]
    assert store.tallies(survey.id)[0] == 1
    for bad in ("h\x00x", "x" * 65, "UPPER"):
        with pytest.raises(ActionError) as raised:
            survey_or_404(store, bad)
        assert raised.value.kind == "not-found" and refusal_status(raised.value) == 404


def test_a_report_id_reused_by_another_signed_report_is_refused(store, survey, report_for):
    report = report_for(survey)
    ingest(store, report)
    other = report_for(survey, report_id=report["report_id"])
    refused(store, survey, other, 409, "report_id")


def test_a_wrong_survey_hash_is_refused(store, survey, report_for):
    key = generate_key()
    report = resign(report_for(survey, key), key, survey_hash="0" * 64)
    refused(store, survey, report, 409, "survey_hash")


def test_an_unknown_question_is_refused(store, survey, report_for):
    key = generate_key()
    report = report_for(survey, key)
    report = resign(report, key, answers={**report["answers"], "extra": 1})
    refused(store, survey, report, 422, "no such question")


def test_a_missing_answer_is_refused(store, survey, report_for):
    key = generate_key()
    report = report_for(survey, key)
    answers = {k: v for k, v in report["answers"].items() if k != "party"}
    refused(store, survey, resign(report, key, answers=answers), 422, "party")


@pytest.mark.parametrize(
    ("qid", "value"),
    [("smokes", 2), ("party", 4), ("party", -1), ("region", "0101"), ("region", "01x10")],
)
def test_an_out_of_range_answer_is_refused(store, survey, report_for, qid, value):
    key = generate_key()
    report = report_for(survey, key)
    report = resign(report, key, answers={**report["answers"], qid: value})
    refused(store, survey, report, 422, qid)


@pytest.mark.parametrize("value", [1.0, 0.5, True])
def test_a_non_integer_answer_is_refused(store, survey, report_for, value):
    key = generate_key()
    report = report_for(survey, key)
    report = resign(report, key, answers={**report["answers"], "smokes": value})
    refused(store, survey, report, 422, "smokes")


def test_a_float_version_is_refused(store, survey, report_for):
    key = generate_key()
    refused(store, survey, resign(report_for(survey, key), key, v=1.0), 422, "v:")


def test_an_unknown_survey_is_refused_with_404(store, survey, report_for):
    key = generate_key()
    report = resign(report_for(survey, key), key, survey="nope")
    refused(store, survey, report, 404, "no survey 'nope'")


@pytest.mark.parametrize("shift", [timedelta(days=3), timedelta(days=-3)])
def test_a_sent_at_far_from_now_is_refused(store, survey, report_for, shift):
    sent_at = hour_now(datetime.now(UTC) + shift)
    refused(store, survey, report_for(survey, sent_at=sent_at), 422, "sent_at")


def test_the_clock_skew_is_configurable(store, survey, report_for):
    sent_at = hour_now(datetime.now(UTC) - timedelta(days=3))
    (outcome,) = ingest(store, report_for(survey, sent_at=sent_at), clock_skew=timedelta(days=4))
    assert outcome.result == "accepted"


def test_a_malformed_sent_at_is_refused(store, survey, report_for):
    key = generate_key()
    report = resign(report_for(survey, key), key, sent_at="2026-11-22T18:17:00Z")
    refused(store, survey, report, 422, "sent_at")


@pytest.mark.parametrize("value", [None, 3, 1.5, "text", {"v": 1}])
def test_not_a_report_is_refused(store, survey, value):
    refused(store, survey, value, 422, "")


def test_after_close_reports_are_refused_but_resends_stay_duplicates(store, survey, report_for):
    sent = report_for(survey)
    ingest(store, sent)
    close_survey(store, survey.id, who=OPERATOR)
    refused(store, survey, report_for(survey), 409, "closed")
    (outcome,) = ingest(store, sent)
    assert outcome.result == "duplicate"


def test_a_survey_past_its_closes_at_refuses_reports(store, survey_doc, report_for):
    record, _ = create_survey(
        store, {**survey_doc, "id": "past", "closes_at": "2020-01-01T00:00:00Z"}, who=OPERATOR
    )
    survey = Survey.from_dict(record.resolved)
    refused(store, survey, report_for(survey), 409, "closed")


def test_an_invite_only_survey_takes_only_enrolled_keys(store, invite_doc, report_for):
    record, _ = create_survey(store, invite_doc, who=OPERATOR)
    survey = Survey.from_dict(record.resolved)
    key = generate_key()
    refused(store, survey, report_for(survey, key), 403, "not enrolled")
    store.add_invitations(survey.id, [credentials.digest("CODE")], "now")
    assert store.enroll(survey.id, public_key_text(key), credentials.digest("CODE")) == "enrolled"
    (outcome,) = ingest(store, report_for(survey, key))
    assert outcome.result == "accepted"


def test_a_batch_stores_its_valid_reports_in_order(store, survey, report_for):
    key = generate_key()
    first = report_for(survey, key)
    batch = [first, {"nope": 1}, report_for(survey), first, report_for(survey, key)]
    outcomes = ingest(store, batch)
    assert [o.result for o in outcomes] == [
        "accepted",
        "rejected",
        "accepted",
        "duplicate",
        "rejected",
    ]
    assert outcomes[0].report_id == first["report_id"]
    assert outcomes[1].report_id is None
    assert store.tallies(survey.id)[0] == 2


def test_surveys_are_parsed_once_per_hash(store, survey, report_for):
    from deniable.aggregator.store.survey_cache import SurveyCache

    cache = SurveyCache()
    ingest(store, [report_for(survey) for _ in range(3)], cache=cache)
    first = cache.survey(store.get_survey(survey.id))
    ingest(store, report_for(survey), cache=cache)
    assert cache.survey(store.get_survey(survey.id)) is first


def test_a_survey_closed_while_its_record_is_cached_still_refuses_reports(
    store, survey, report_for
):
    from deniable.aggregator.ingest import RecordCache

    recent = RecordCache(ttl=3600)
    (first,) = ingest(store, report_for(survey), records=recent)
    assert first.result == "accepted"
    close_survey(store, survey.id, who=OPERATOR)
    assert recent.get(store, survey.id).closed_at is None  # the cached record is stale...
    (late,) = ingest(store, report_for(survey), records=recent)
    assert (late.result, report_status(late)) == ("rejected", 409)  # ...but the write refuses it
    assert "closed" in late.reason
    assert store.tallies(survey.id)[0] == 1
