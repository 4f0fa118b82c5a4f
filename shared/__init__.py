"""The protocol both sides agree on: surveys, mechanisms, reports, signatures and errors.

Pure Python (no numpy): the client installs it without the aggregator's dependencies.
"""

from deniable.shared.canonical import b64url_decode, b64url_encode, canonical_json, sha256_hex
from deniable.shared.conditions import ConditionError, relevant_from_answers
from deniable.shared.errors import DeniableError, ReportError, SurveyError
from deniable.shared.languages import SurveyText
from deniable.shared.mechanisms import (
    GRR,
    MECHANISMS,
    OUE,
    RR,
    Coins,
    Encoded,
    Mechanism,
    MultiRR,
    OneBit,
)
from deniable.shared.questions import QUESTION_TYPES, QuestionType
from deniable.shared.report import (
    build_report,
    check_answers,
    hour_now,
    make_report,
    parse_report,
    randomize_answers,
    sign_report,
    signed_bytes,
    verify_report,
)
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.survey import Question, Survey
from deniable.shared.text import normalize_text, text_hash

__all__ = [
    "CMS",
    "GRR",
    "HCMS",
    "MECHANISMS",
    "OUE",
    "RAPPOR",
    "RR",
    "Coins",
    "ConditionError",
    "DeniableError",
    "Encoded",
    "Mechanism",
    "MultiRR",
    "OneBit",
    "QUESTION_TYPES",
    "Question",
    "QuestionType",
    "ReportError",
    "Survey",
    "SurveyText",
    "Sketch",
    "SurveyError",
    "b64url_decode",
    "b64url_encode",
    "build_report",
    "canonical_json",
    "check_answers",
    "hour_now",
    "make_report",
    "normalize_text",
    "parse_report",
    "randomize_answers",
    "relevant_from_answers",
    "sha256_hex",
    "sign_report",
    "signed_bytes",
    "text_hash",
    "verify_report",
]
