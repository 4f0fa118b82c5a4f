"""Reports: canonical JSON, Ed25519 signatures, strict parsing."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.shared import (
    ReportError,
    Survey,
    SurveyError,
    canonical_json,
    make_report,
    parse_report,
    sign_report,
    signed_bytes,
)
from deniable.shared import report as report_module
from deniable.shared import survey as survey_module
from deniable.shared.canonical import b64url_encode
from deniable.shared.report import answer_support, check_answers, hour_now
from deniable.shared.signing import generate_key, public_key_bytes, public_key_text, verify
from tests.shared.conftest import DOC

TRUTH = {"smokes": "no", "cannabis": "yes", "party": "B", "region": 4}


@pytest.fixture
def survey(doc) -> Survey:
    return Survey.from_dict(doc)


@pytest.fixture
def report(survey):
    return make_report(survey, TRUTH, generate_key())


def test_canonical_json_is_designs_encoding():
    obj = {"b": [1, "ä"], "a": {"z": 1, "y": None}}
    assert canonical_json(obj) == '{"a":{"y":null,"z":1},"b":[1,"ä"]}'.encode()


def test_a_made_report_parses_and_verifies(survey, report):
    assert set(report) == {
        "v",
        "survey",
        "survey_hash",
        "answers",
        "report_id",
        "sent_at",
        "public_key",
        "signature",
    }
    assert report["survey_hash"] == survey.hash
    assert uuid.UUID(report["report_id"]).version == 4
    assert parse_report(json.loads(json.dumps(report)), survey) == report


def test_the_signature_covers_every_other_field(report):
    assert verify(report["public_key"], report["signature"], signed_bytes(report))
    assert signed_bytes(report) == canonical_json(
        {k: v for k, v in report.items() if k != "signature"}
    )


def test_sent_at_is_truncated_to_the_hour(report):
    assert report["sent_at"].endswith(":00:00Z")
    assert hour_now(datetime(2026, 11, 22, 18, 47, 13, tzinfo=UTC)) == "2026-11-22T18:00:00Z"


# As other languages' libraries write them: Swift's upper-case uuidString and hex, JavaScript's
# toISOString (".000Z"), isoformat's "+00:00".
FOREIGN = [
    {"report_id": str(uuid.uuid4()).upper()},
    {"survey_hash": None},  # the survey's hash in upper case
    {"sent_at": "2026-11-22T18:00:00.000Z"},
    {"sent_at": "2026-11-22T18:00:00+00:00"},
    {"sent_at": "2026-11-22T18:00:00.000000+00:00"},
]


@pytest.mark.parametrize("change", FOREIGN)
def test_a_client_in_another_language_can_report(survey, report, change):
    other = {**report, **change}
    if "survey_hash" in change:
        other["survey_hash"] = survey.hash.upper()
    signed = sign_report({k: v for k, v in other.items() if k != "signature"}, generate_key())
    assert parse_report(signed, survey)["report_id"] == other["report_id"]


@pytest.mark.parametrize(
    "sent_at",
    [
        "2026-11-22T18:00:00+02:00",  # a local offset tells the respondent's time zone
        "2026-11-22T18:00:00-00:00",
        "2026-11-22T18:00:00.001Z",
        "2026-11-22T18:00:01Z",
        "2026-11-22T18:00:00",
        "2026-11-22 18:00:00Z",
        "2026-11-22T18:00:00.0000000000Z",
    ],
)
def test_sent_at_finer_than_the_hour_or_local_is_refused(survey, report, sent_at):
    with pytest.raises(ReportError, match=r"^sent_at: expected a UTC time truncated to the hour"):
        parse_report({**report, "sent_at": sent_at}, survey, verify=False)


def test_report_holds_no_true_answer_or_float(report):
    for value in report["answers"].values():
        assert type(value) in (int, str)
    assert "region 4" not in json.dumps(report)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda r: r["answers"].update(smokes=1 - r["answers"]["smokes"]),
        lambda r: r.update(report_id=str(uuid.uuid4())),
        lambda r: r.update(sent_at="2020-01-01T00:00:00Z"),
        lambda r: r.update(public_key=public_key_text(generate_key())),
    ],
)
def test_a_tampered_report_fails_verification(survey, report, tamper):
    bad = copy.deepcopy(report)
    tamper(bad)
    with pytest.raises(ReportError, match="signature: does not verify"):
        parse_report(bad, survey)


def test_a_report_re_signed_by_another_key_fails_under_the_original_key(survey, report):
    resigned = sign_report(report, generate_key())
    assert parse_report(resigned, survey)  # valid on its own, for the new key
    resigned["public_key"] = report["public_key"]
    with pytest.raises(ReportError, match="signature"):
        parse_report(resigned, survey)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("signature"), r"^signature: missing field"),
        (lambda r: r.update(extra=1), r"^extra: unknown field"),
        (lambda r: r.update(v=2), r"^v: unsupported version"),
        (lambda r: r.update(v=1.0), r"^v: unsupported version"),
        (lambda r: r.update(survey_hash="00" * 31), r"^survey_hash: expected 64"),
        (lambda r: r.update(report_id="not-a-uuid"), r"^report_id: expected a UUID4"),
        (
            lambda r: r.update(sent_at="2026-11-22T18:47:00Z"),
            r"^sent_at: expected a UTC time truncated to the hour",
        ),
        (lambda r: r.update(sent_at="2026-13-22T18:00:00Z"), r"^sent_at: not a real time"),
        (lambda r: r.update(public_key="a" * 200), r"^public_key: expected"),
        (lambda r: r.update(answers=[]), r"^answers: expected a non-empty object"),
        (lambda r: r["answers"].update(smokes=1.0), r"^answers\.smokes: floats are not allowed"),
        (lambda r: r["answers"].update(smokes=True), r"^answers\.smokes: expected an option index"),
        (lambda r: r["answers"].update(smokes=None), r"^answers\.smokes: expected an option index"),
        (lambda r: r["answers"].update(smokes=2), r"^answers\.smokes: expected 0 or 1, got 2"),
        (
            lambda r: r["answers"].update(party=4),
            r"^answers\.party: expected an option index from 0 to 3",
        ),
        (lambda r: r["answers"].update(region="01"), r"^answers\.region: expected a string of 16"),
        (lambda r: r["answers"].update(weight=1), r"^answers\.weight: no such question"),
        (lambda r: r["answers"].pop("party"), r"^answers\.party: missing"),
        (lambda r: r.update(survey_hash="0" * 64), r"^survey_hash: does not match"),
        (lambda r: r.update(survey="other-survey"), r"^survey: report is for 'other-survey'"),
    ],
)
def test_strict_parsing_names_the_reason(survey, report, change, message):
    bad = copy.deepcopy(report)
    change(bad)
    with pytest.raises(ReportError, match=message):
        parse_report(bad, survey)


@pytest.mark.parametrize("bad", [None, [], "report", 7])
def test_a_report_must_be_an_object(bad):
    with pytest.raises(ReportError, match="JSON object"):
        parse_report(bad)


def test_public_key_must_be_32_bytes(survey, report):
    bad = dict(report, public_key=report["public_key"][:-2])
    with pytest.raises(ReportError, match="public_key: not a 32-byte Ed25519 public key"):
        parse_report(bad, survey)


P = 2**255 - 19
ORDER_8_Y = 2707385501144840649318225287225658788936804267575313519463743609750303402022
SMALL_ORDER_KEYS = [
    b64url_encode((y + extra | sign << 255).to_bytes(32, "little"))
    for y in (0, 1, P - 1, ORDER_8_Y, P - ORDER_8_Y)
    for extra in (0, P)  # y and its non-canonical encoding y + p, where it fits in 255 bits
    for sign in (0, 1)
    if y + extra < 2**255
]


@pytest.mark.parametrize("key", SMALL_ORDER_KEYS)
def test_a_small_order_public_key_is_no_key(key):
    with pytest.raises(ValueError, match="small order"):
        public_key_bytes(key)
    assert not verify(key, b64url_encode(bytes(64)), b"anything")


def test_a_report_forged_with_the_zero_key_is_refused(survey, report):
    """The all-zero key and signature verify for about one message in five: find one such
    report (it verifies by the bare Ed25519 check), then see it refused."""
    zero_key, zero_signature = bytes(32), bytes(64)
    for _ in range(200):
        forged = {**report, "report_id": str(uuid.uuid4()), "public_key": b64url_encode(zero_key)}
        forged["signature"] = b64url_encode(zero_signature)
        try:
            Ed25519PublicKey.from_public_bytes(zero_key).verify(
                zero_signature, signed_bytes(forged)
            )
        except InvalidSignature:
            continue
        break
    else:
        pytest.fail("no report verified under the zero key in 200 tries")
    with pytest.raises(ReportError, match=r"^public_key: not a 32-byte Ed25519 public key"):
        parse_report(forged, survey)


def test_report_ids_are_random_uuid4s():
    from deniable.shared.report import new_report_id

    ids = {new_report_id() for _ in range(2000)}
    assert len(ids) == 2000
    for rid in list(ids)[:200]:
        parsed = uuid.UUID(rid)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, rid)


def test_forked_children_draw_different_coins():
    import os

    from deniable.shared.probability import random_bytes

    random_bytes(1)  # fill this process's pool before forking
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, random_bytes(8))
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 8) != random_bytes(8)


_ANY = st.one_of(
    st.text(max_size=90),
    st.text(st.sampled_from("0123456789abcdefT:Z-_AZ4.+"), max_size=90),
    st.integers(),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
_SHAPED = make_report(Survey.from_dict(DOC), TRUTH, generate_key())


@settings(max_examples=300, deadline=None)
@given(
    changes=st.dictionaries(st.sampled_from([*report_module.FIELDS, "extra"]), _ANY, max_size=2),
    drop=st.sets(st.sampled_from(report_module.FIELDS), max_size=1),
    moment=st.datetimes(timezones=st.just(UTC)),
)
def test_the_one_pass_shape_check_agrees_with_the_field_by_field_one(changes, drop, moment):
    report = {**_SHAPED, "sent_at": hour_now(moment), **changes}
    for name in drop:
        report.pop(name, None)
    try:
        report_module._check_head(report)
        passes = True
    except ReportError:
        passes = False
    assert report_module._well_formed_head(report) is passes


_SURVEY = Survey.from_dict(DOC)


@settings(max_examples=300, deadline=None)
@given(
    answers=st.one_of(
        st.fixed_dictionaries(
            {
                "smokes": st.one_of(st.integers(-1, 2), st.booleans(), st.text(max_size=2)),
                "cannabis": st.integers(-1, 2),
                "party": st.one_of(st.integers(-1, 4), st.just("1")),
                "region": st.one_of(
                    st.text("01", min_size=15, max_size=17), st.integers(0, 1), st.just("0" * 16)
                ),
            }
        ),
        st.dictionaries(st.sampled_from([*_SURVEY.questions, "other"]), st.integers(0, 1)),
        st.lists(st.integers(), max_size=1),
    )
)
def test_answer_support_accepts_exactly_what_check_answers_accepts(answers):
    try:
        check_answers(_SURVEY, answers)
    except ReportError as exc:
        with pytest.raises(ReportError) as found:
            answer_support(_SURVEY, answers)
        assert str(found.value) == str(exc)
        return
    assert answer_support(_SURVEY, answers) == {
        qid: q.supports(answers[qid]) for qid, q in _SURVEY.questions.items()
    }


def test_support_of_remembers_answers_but_never_takes_a_bool_for_an_option():
    """The memo is keyed by value, and True == 1: a bool must stay refused after 1 is known."""
    survey = Survey.from_dict(DOC)
    smokes = survey.questions["smokes"]
    assert smokes.support_of(1) == (1,)
    assert smokes.support_of(1) is smokes.support_of(1)  # remembered
    for value in (True, False, 1.0):
        with pytest.raises(SurveyError):
            smokes.support_of(value)
    with pytest.raises(ReportError, match="smokes"):
        answer_support(survey, {**{q: 0 for q in survey.questions}, "smokes": True})


def test_support_of_remembers_at_most_support_memo_answers(monkeypatch):
    survey = Survey.from_dict(DOC)
    region = survey.questions["region"]
    monkeypatch.setattr(survey_module, "SUPPORT_MEMO", 3)
    answers = [format(i, f"0{region.k}b") for i in range(6)]
    for bits in answers:
        assert region.support_of(bits) == tuple(i for i, c in enumerate(bits) if c == "1")
    assert len(region._support_memo) == 3
    with pytest.raises(SurveyError):
        region.support_of("2" * region.k)
