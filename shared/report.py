"""Reports: one respondent's noisy answers to one survey, signed with Ed25519.

The signature covers the canonical JSON of every field but `signature`. A report holds no true
answer, no free text and no float, and its `sent_at` is truncated to the hour on the device.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deniable.shared import ballot, signing
from deniable.shared.canonical import b64url_decode, canonical_json
from deniable.shared.errors import ReportError, SurveyError
from deniable.shared.mechanisms import Encoded
from deniable.shared.probability import random_bytes
from deniable.shared.survey import SURVEY_ID, Survey

VERSION = 1
FIELDS = (
    "v",
    "survey",
    "survey_hash",
    "answers",
    "report_id",
    "sent_at",
    "public_key",
    "signature",
)
_FIELD_SET = frozenset(FIELDS)
#: The optional field: each split-ballot question's arm (docs/wire-format.md), present exactly
#: when the survey has split-ballot questions, signed like every other field.
ARMS = ballot.FIELD
_FIELD_SET_ARMS = _FIELD_SET | {ARMS}
_ARM_QUESTION = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
#: The string fields, in the order the one-pass shape check joins them.
_STRING_FIELDS = ("survey", "survey_hash", "report_id", "sent_at", "public_key", "signature")
#: No honest report comes near this many bytes (100 questions of 256-option oue is ~27 kB).
MAX_REPORT_BYTES = 64 * 1024
#: A report's arms: at most one per question (a survey has at most 100 questions).
MAX_ARMS = 100

# Any client, in any language, must be able to report: hex and UUIDs in either case (Swift's
# uuidString is upper-case), and the hour as common libraries write it in UTC (JavaScript's
# toISOString adds ".000", others write "+00:00"). Nothing finer than the hour, and no other
# offset: a local offset would tell the aggregator the respondent's time zone.
_HASH = re.compile(r"[0-9a-fA-F]{64}")
_UUID4 = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
)
_HOUR = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:00:00(?:\.0{1,9})?(?:Z|\+00:00)")
_B64URL = re.compile(r"[A-Za-z0-9_-]+")


_last_hour: tuple[int, str] = (-1, "")


def is_report_id(text: object) -> bool:
    """Whether text is a well-formed report_id (a UUID4): only such ids can have been stored."""
    return isinstance(text, str) and _UUID4.fullmatch(text) is not None


def hour_now(now: datetime | None = None) -> str:
    """The current time truncated to the hour, as sent_at wants it (a finer time links people)."""
    global _last_hour
    if now is None:
        hour = int(time.time()) // 3600
        if hour == _last_hour[0]:
            return _last_hour[1]
        now = datetime.fromtimestamp(hour * 3600, UTC)
        _last_hour = (hour, _format_hour(now))
        return _last_hour[1]
    return _format_hour(now)


def _format_hour(moment: datetime) -> str:
    m = moment.astimezone(UTC)
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:00:00Z"


@lru_cache(maxsize=4096)
def parse_sent_at(text: str) -> datetime:
    """The datetime of a sent_at string, an hour in UTC like 2026-11-22T18:00:00Z (or with
    ".000" or "+00:00"); ValueError if not a real time. Cached: the reports of one hour share
    their sent_at."""
    if not _HOUR.fullmatch(text):
        raise ValueError(f"not a sent_at time: {text!r}")
    return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), tzinfo=UTC)


def new_report_id() -> str:
    """A random UUID4 (lower-case text) from the secure source."""
    raw = bytearray(random_bytes(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def signed_bytes(report: Mapping[str, Any]) -> bytes:
    """The bytes a report's signature covers: canonical JSON of every field but `signature`."""
    return canonical_json({k: v for k, v in report.items() if k != "signature"})


def sign_report(
    unsigned: Mapping[str, Any], key: Ed25519PrivateKey, *, public_key: str | None = None
) -> dict[str, Any]:
    """The report with `public_key` set to key's and `signature` added (`public_key` may be
    passed when the caller already holds key's public half as text, to save deriving it)."""
    body = {k: v for k, v in unsigned.items() if k not in ("public_key", "signature")}
    body["public_key"] = public_key or signing.public_key_text(key)
    body["signature"] = signing.sign(key, signed_bytes(body))
    return body


def build_report(
    survey: Survey,
    answers: Mapping[str, Encoded],
    key: Ed25519PrivateKey,
    *,
    report_id: str | None = None,
    sent_at: str | None = None,
    public_key: str | None = None,
    arms: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A signed report of already randomized (encoded) answers, checked against the survey;
    `arms` gives each split-ballot question's arm (the answers were encoded in it)."""
    if survey.split:
        arms = arms or {}
    elif not arms:  # none to give: the field is absent from a survey without split ballots
        arms = None
    check_answers(survey, answers, arms)
    return _signed(survey, answers, key, report_id, sent_at, public_key, arms)


def _signed(
    survey: Survey,
    answers: Mapping[str, Encoded],
    key: Ed25519PrivateKey,
    report_id: str | None,
    sent_at: str | None,
    public_key: str | None,
    arms: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "v": VERSION,
        "survey": survey.id,
        "survey_hash": survey.hash,
        "answers": dict(answers),
    }
    if survey.split:  # exactly when the survey has split-ballot questions
        report[ARMS] = dict(arms or {})
    report |= {
        "report_id": report_id or new_report_id(),
        "sent_at": sent_at or hour_now(),
        "public_key": public_key or signing.public_key_text(key),
    }
    report["signature"] = signing.sign(key, canonical_json(report))
    return report


def randomize_answers(
    survey: Survey, truth: Mapping[str, object], arms: Mapping[str, str] | None = None
) -> dict[str, Encoded]:
    """Randomize a true answer for exactly the questions asked (on the device, exact coins).

    The plain answers decide, question by question, which questions are asked
    (`Survey.relevant`); each asked question must be answered, and no other key given (an
    answer to a question the plain answers skip is an error too): SurveyError says which.
    A split-ballot question is encoded in its arm (`arms`, drawn beforehand with
    `Survey.draw_arms` so the respondent is told before answering): the direct arm's answer
    is sent as given. Use `randomize_report` to have the arms drawn here.

    A question asked in waves (`longitudinal`) is drawn afresh here, both rounds: right for
    one report or a simulation, not for a respondent answering wave after wave, whose
    permanent answer must come from the device's memo (`deniable.client.Client` keeps it;
    docs/app-developers.md)."""
    asked = _asked(survey, truth)
    if arms is None:
        if any(qid in asked for qid in survey.split):
            raise SurveyError(
                "arms: this survey has split-ballot questions; draw the arms with "
                "Survey.draw_arms before asking (or use randomize_report)"
            )
        arms = {}
    try:
        ballot.check_arms(arms, survey.split, asked)
    except ValueError as exc:
        raise SurveyError(str(exc)) from None
    chosen = {qid: survey.questions[qid].truth_of(truth[qid]) for qid in asked}
    return {
        qid: survey.questions[qid].arm_question(arms.get(qid)).randomizer.randomize(chosen[qid])
        for qid in asked
    }


def randomize_report(
    survey: Survey, truth: Mapping[str, object], arms: Mapping[str, str] | None = None
) -> tuple[dict[str, Encoded], dict[str, str]]:
    """(answers, arms): `randomize_answers` with the split-ballot arms drawn here (securely,
    exactly) unless given."""
    if arms is None:
        arms = survey.draw_arms(_asked(survey, truth))
    return randomize_answers(survey, truth, arms), dict(arms)


def _asked(survey: Survey, truth: Mapping[str, object]) -> list[str]:
    """The questions asked given the true answers, each answered (else SurveyError)."""
    unknown = [qid for qid in truth if qid not in survey.questions]
    if unknown:
        raise SurveyError(f"{unknown[0]}: no such question in survey {survey.id!r}")
    asked = survey.relevant(truth)
    for qid in asked:
        if qid not in truth:
            reason = (
                "the answers make it relevant"
                if survey.questions[qid].condition is not None
                else "every question asked must be answered"
            )
            raise SurveyError(f"{qid}: no answer given; {reason}")
    if len(asked) != len(truth):
        values = survey.condition_values(
            {
                qid: survey.questions[qid].randomize(truth[qid])
                for qid in survey.gates
                if qid in asked
            }
        )
        skipped = next(qid for qid in survey.questions if qid in truth and qid not in asked)
        raise SurveyError(f"{skipped}: {survey.why_skipped(skipped, values)}; leave it out")
    return asked


def make_report(
    survey: Survey,
    truth: Mapping[str, object],
    key: Ed25519PrivateKey,
    *,
    report_id: str | None = None,
    sent_at: str | None = None,
    public_key: str | None = None,
    arms: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Randomize true answers and return the signed report (what a device sends); the
    split-ballot arms are drawn here unless given."""
    answers, drawn = randomize_report(survey, truth, arms)
    return _signed(survey, answers, key, report_id, sent_at, public_key, drawn)


class Answers(dict):  # type: ignore[type-arg]
    """A report's checked answers, with its split-ballot arms (`arms`, empty for a survey
    without split-ballot questions): what `check_answers` returns."""

    arms: Mapping[str, str] = MappingProxyType({})


def arms_of(answers: Mapping[str, Any]) -> Mapping[str, str]:
    """The split-ballot arms of checked answers (empty when none)."""
    return getattr(answers, "arms", None) or {}


#: What ends a stored body's answers (and arms): `public_key` is the next field in key order.
_AFTER_ANSWERS = ',"public_key":'


def answer_pattern(
    survey: Survey, answers: Mapping[str, Any], arms: Mapping[str, str] | None = None
) -> str:
    """A report's answer pattern: what the aggregator counts per distinct value so that its
    analyses read counts, never reports (docs/architecture.md). The canonical JSON of
    {"answers": the answer to every question held but text ones, "arms": the split-ballot
    arms (a survey with split-ballot questions only)}; a skipped question is absent."""
    pattern: dict[str, Any] = {
        "answers": {
            qid: value
            for qid, value in answers.items()
            if survey.questions[qid].kind.rows != "candidates"
        }
    }
    if survey.split:
        pattern[ARMS] = dict(arms or {})
    return canonical_json(pattern).decode("utf-8")


def has_text(survey: Survey) -> bool:
    """Whether the survey has a text question (whose answers a pattern leaves out)."""
    return any(q.kind.rows == "candidates" for q in survey.questions.values())


def body_pattern(body: str) -> str:
    """`answer_pattern` of a stored body (the canonical JSON of a checked report) of a survey
    without text questions, cut from the body: its answers and arms come first, in key order,
    and no answer of those questions holds a quote (numbers and strings of 0 and 1)."""
    return body[: body.index(_AFTER_ANSWERS)] + "}"


def body_patterns(survey: Survey) -> Callable[[str], str]:
    """The answer pattern of each stored body of `survey`: cut from it (`body_pattern`), or,
    when the survey has text questions to leave out, from its parsed answers."""
    if not has_text(survey):
        return body_pattern

    def parsed(body: str) -> str:
        report = json.loads(body)
        return answer_pattern(survey, report["answers"], report.get(ARMS))

    return parsed


def _checked_arms(survey: Survey, arms: object, asked: Collection[str]) -> dict[str, str]:
    """The report's arms checked against the survey (ReportError naming the question)."""
    if not survey.split:
        if arms is not None:
            raise ReportError(
                f"{ARMS}: this survey has no split-ballot question; leave the field out"
            )
        return {}
    if arms is None:
        raise ReportError(
            f"{ARMS}: missing; this survey has split-ballot questions, so a report says each "
            "asked one's arm ({} when none is asked)"
        )
    try:
        return ballot.check_arms(arms, survey.split, asked)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def check_answers(survey: Survey, answers: object, arms: object = None) -> dict[str, Encoded]:
    """The answers if each question the report's plain answers make relevant has exactly one
    valid encoded answer and no other question has one (ReportError names the question).

    `arms` is the report's `arms` field (None when absent): exactly one arm per split-ballot
    question asked, and a direct arm's answer must be that question's plain encoding. The
    answers come back as `Answers`, their arms attached."""
    if not isinstance(answers, dict):
        raise ReportError(f"answers: expected an object, got {type(answers).__name__}")
    for qid in answers:
        if qid not in survey.questions:
            raise ReportError(f"answers.{str(qid)[:64]}: no such question in survey {survey.id!r}")
    checked_arms = _checked_arms(survey, arms, [qid for qid in survey.split if qid in answers])
    for qid, question in survey.questions.items():
        if qid in answers:
            arm = checked_arms.get(qid)
            try:
                question.arm_question(arm).validate(answers[qid])
            except SurveyError as exc:
                if arm == ballot.DIRECT:
                    raise ReportError(
                        f"answers.{exc} (its arm is direct: the answer is sent as given, "
                        f"{question.direct_question.answer_hint} in its plain encoding)"
                    ) from None
                raise ReportError(f"answers.{exc}") from None
    asked = set(survey.relevant_from_answers(answers))
    for qid, question in survey.questions.items():
        if qid in asked and qid not in answers:
            if question.condition is not None:
                raise ReportError(f"answers.{qid}: missing; the plain answers make it relevant")
            raise ReportError(f"answers.{qid}: missing; every question must be answered")
        if qid in answers and qid not in asked:
            values = survey.condition_values(answers)
            raise ReportError(f"answers.{qid}: {survey.why_skipped(qid, values)}; leave it out")
    if not survey.split:
        return answers
    found = Answers(answers)
    found.arms = checked_arms
    return found


#: The six string fields of a well-formed report, in check order, joined by newlines.
_STRINGS_SHAPE = re.compile(
    "\n".join(
        p.pattern for p in (SURVEY_ID, _HASH, _UUID4, _HOUR, re.compile(r"[A-Za-z0-9_-]{1,128}"))
    )
    + r"\n[A-Za-z0-9_-]{1,128}"
)


def _well_formed_head(report: dict[str, Any]) -> bool:
    """Whether the fields but `answers` pass every check below, tested in one go (no messages)."""
    try:
        keys = report.keys()
        return (
            (keys == _FIELD_SET or (keys == _FIELD_SET_ARMS and _well_formed_arms(report[ARMS])))
            and type(report["v"]) is int
            and report["v"] == VERSION
            and _STRINGS_SHAPE.fullmatch("\n".join([report[f] for f in _STRING_FIELDS])) is not None
            and parse_sent_at(report["sent_at"]) is not None
        )
    except (TypeError, ValueError):
        return False


def _well_formed_arms(arms: object) -> bool:
    """Whether `arms` is an object of at most MAX_ARMS question ids to "direct"/"randomized"."""
    return (
        type(arms) is dict
        and len(arms) <= MAX_ARMS
        and all(
            type(qid) is str and _ARM_QUESTION.fullmatch(qid) and arm in ballot.ARMS
            for qid, arm in arms.items()
        )
    )


def _check_arms_shape(arms: object) -> None:
    """ReportError unless `arms` is well formed (`_well_formed_arms`), saying what is wrong."""
    if type(arms) is not dict:
        raise ReportError(
            f"{ARMS}: expected an object of question id -> 'direct' or 'randomized', got "
            f"{json.dumps(arms)[:40]}"
        )
    if len(arms) > MAX_ARMS:
        raise ReportError(f"{ARMS}: too many arms (at most {MAX_ARMS})")
    for qid, arm in arms.items():
        if type(qid) is not str or not _ARM_QUESTION.fullmatch(qid):
            raise ReportError(f"{ARMS}: {str(qid)[:64]!r} is not a question id")
        if arm not in ballot.ARMS:
            raise ReportError(
                f"{ARMS}.{qid}: expected 'direct' or 'randomized', got {json.dumps(arm)[:40]}"
            )


def answer_support(
    survey: Survey, answers: object, arms: object = None
) -> dict[str, tuple[int, ...]]:
    """The options each answer supports, by question, once every answer is checked valid for
    the survey (else ReportError, as check_answers says). A split-ballot question answered in
    the direct arm (`arms`) gives the slots of its direct question (Question.direct_question)."""
    if survey.split or arms is not None:
        checked = check_answers(survey, answers, arms)
        chosen = arms_of(checked)
        return {
            qid: q.arm_question(chosen.get(qid)).support_of(checked[qid])
            for qid, q in survey.questions.items()
            if qid in checked
        }
    try:
        if type(answers) is dict:
            if not survey.conditional:  # no per-report evaluation for a survey without skips
                if answers.keys() == survey.questions.keys():
                    return {qid: q.support_of(answers[qid]) for qid, q in survey.questions.items()}
            elif answers.keys() <= survey.questions.keys():
                support = {
                    qid: q.support_of(answers[qid])
                    for qid, q in survey.questions.items()
                    if qid in answers
                }
                if survey.relevant_from_answers(answers) == list(support):
                    return support
    except ValueError:  # SurveyError too
        pass
    check_answers(survey, answers, arms)  # raises, saying what is wrong
    raise AssertionError("check_answers accepted what validate refused")


def check_structure(report: object) -> dict[str, Any]:
    """Strict shape checks of a report, without its survey: exact fields, types, sizes, formats."""
    if type(report) is dict and _well_formed_head(report):
        return _check_answers_shape(report)
    return _check_answers_shape(_check_head(report))


def _check_head(report: object) -> dict[str, Any]:
    """The report if its fields but `answers` are well formed, else ReportError saying why."""
    if not isinstance(report, dict):
        raise ReportError(f"a report is a JSON object, got {type(report).__name__}")
    missing = [f for f in FIELDS if f not in report]
    if missing:
        raise ReportError(f"{missing[0]}: missing field")
    unknown = sorted(str(k) for k in report if k not in _FIELD_SET_ARMS)
    if unknown:
        raise ReportError(f"{unknown[0][:40]}: unknown field")
    if ARMS in report:
        _check_arms_shape(report[ARMS])
    if type(report["v"]) is not int or report["v"] != VERSION:
        raise ReportError(
            f"v: unsupported version {report['v']!r}; this aggregator speaks {VERSION}"
        )
    checks = (
        ("survey", SURVEY_ID, "a survey id"),
        ("survey_hash", _HASH, "64 hex digits"),
        ("report_id", _UUID4, "a UUID4"),
        (
            "sent_at",
            _HOUR,
            "a UTC time truncated to the hour, like 2026-11-22T18:00:00Z; "
            "no minutes, seconds or local offset",
        ),
        ("public_key", _B64URL, "unpadded base64url"),
        ("signature", _B64URL, "unpadded base64url"),
    )
    for name, pattern, what in checks:
        value = report[name]
        if not isinstance(value, str) or len(value) > 128 or not pattern.fullmatch(value):
            shown = repr(value)[:80]
            raise ReportError(f"{name}: expected {what}, got {shown}")
    try:
        parse_sent_at(report["sent_at"])
    except ValueError:
        raise ReportError(f"sent_at: not a real time: {report['sent_at']!r}") from None
    return report


def _check_answers_shape(report: dict[str, Any]) -> dict[str, Any]:
    answers = report["answers"]
    if not isinstance(answers, dict) or not answers:
        raise ReportError("answers: expected a non-empty object of question id to noisy answer")
    if len(answers) > 1000:
        raise ReportError("answers: too many answers")
    for qid, value in answers.items():
        if type(value) is float:
            raise ReportError(f"answers.{str(qid)[:64]}: floats are not allowed, got {value!r}")
        if type(value) is list and 2 <= len(value) <= 3:  # a text question's sketch answer
            parts = value
        elif type(value) is int or type(value) is str:
            parts = [value]
        else:
            raise ReportError(
                f"answers.{str(qid)[:64]}: expected an option index, a number, a bit string or "
                f"a sketch answer, got {json.dumps(value)[:40]}"
            )
        for part in parts:
            if type(part) is not int and type(part) is not str:
                raise ReportError(
                    f"answers.{str(qid)[:64]}: a sketch answer holds whole numbers and a bit "
                    f"string, got {json.dumps(value)[:40]}"
                )
            if type(part) is str and len(part) > 4096:
                raise ReportError(f"answers.{str(qid)[:64]}: answer too long")
    return report


def verified_body(report: Mapping[str, Any]) -> str:
    """The canonical JSON of a report whose signature verifies, else ReportError. The report is
    serialized once: the signed bytes are that JSON without its signature member."""
    try:
        key = signing.public_key_bytes(report["public_key"])
    except (ValueError, TypeError):
        raise ReportError(
            "public_key: not a 32-byte Ed25519 public key (of large order); sign with a fresh key"
        ) from None
    signed, body = canonical_report(report)
    try:
        signature = b64url_decode(report["signature"], length=signing.SIGNATURE_BYTES)
        valid = signing.verify_raw(key, signature, signed)
    except ValueError:
        valid = False
    if not valid:
        raise ReportError(
            "signature: does not verify; the report was altered or signed with another key"
        )
    return body.decode("utf-8")


def _plain(text: str) -> bool:
    """Whether JSON writes this text as itself between quotes (printable ASCII, no quote, no
    backslash)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def canonical_report(report: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """(`signed_bytes(report)`, `canonical_json(report)`), written directly when every key and
    string is plain (every well-formed report), else through the JSON encoder."""
    answers = report.get("answers")
    keys = report.keys()
    arms = report.get(ARMS)
    if (
        (keys == _FIELD_SET or (keys == _FIELD_SET_ARMS and type(arms) is dict))
        and type(report["v"]) is int
        and type(answers) is dict
    ):
        texts = [report[name] for name in _STRING_FIELDS]
        armed = ""
        if arms is not None:
            arm_parts = sorted(
                (qid, f'"{qid}":"{arm}"')
                for qid, arm in arms.items()
                if type(qid) is str and type(arm) is str
            )
            if len(arm_parts) != len(arms):
                return signed_bytes(report), canonical_json(report)
            texts.extend(arms)
            texts.extend(arms.values())
            armed = f',"{ARMS}":{{{",".join(part for _, part in arm_parts)}}}'

        parts = []
        for qid, value in answers.items():
            if type(value) is int:
                parts.append((qid, f'"{qid}":{value}'))
            elif type(value) is str:
                parts.append((qid, f'"{qid}":"{value}"'))
                texts.append(value)
            else:
                break
            texts.append(qid)
        if len(parts) == len(answers) and set(map(type, texts)) == {str} and _plain("".join(texts)):
            parts.sort()
            head = (
                f'{{"answers":{{{",".join(part for _, part in parts)}}}{armed},'
                f'"public_key":"{report["public_key"]}","report_id":"{report["report_id"]}",'
                f'"sent_at":"{report["sent_at"]}"'
            )
            tail = (
                f',"survey":"{report["survey"]}","survey_hash":"{report["survey_hash"]}",'
                f'"v":{report["v"]}}}'
            )
            signature = f',"signature":"{report["signature"]}"'
            return (head + tail).encode("ascii"), (head + signature + tail).encode("ascii")
    return signed_bytes(report), canonical_json(report)


def verify_report(report: Mapping[str, Any]) -> None:
    """Raise ReportError unless the signature verifies for the report's public key."""
    verified_body(report)


def parse_report(
    report: object, survey: Survey | None = None, *, verify: bool = True
) -> dict[str, Any]:
    """A fully checked report: structure, (with `survey`) its hash and answers, its signature."""
    checked = check_structure(report)
    if survey is not None:
        if checked["survey"] != survey.id:
            raise ReportError(f"survey: report is for {checked['survey']!r}, not {survey.id!r}")
        if checked["survey_hash"].lower() != survey.hash:
            raise ReportError(
                "survey_hash: does not match the survey as published; fetch the survey again"
            )
        check_answers(survey, checked["answers"])
    if verify:
        verify_report(checked)
    return checked
