"""The protocol both sides agree on: surveys, mechanisms, reports, signatures and errors.

Pure Python (no numpy): the client installs it without the aggregator's dependencies.
"""

from deniable.shared.canonical import b64url_decode, b64url_encode, canonical_json, sha256_hex
from deniable.shared.errors import DeniableError, ReportError, SurveyError
from deniable.shared.mechanisms import GRR, MECHANISMS, OUE, RR, Coins, Encoded, Mechanism
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
from deniable.shared.survey import Question, Survey

__all__ = [
    "GRR",
    "MECHANISMS",
    "OUE",
    "RR",
    "Coins",
    "DeniableError",
    "Encoded",
    "Mechanism",
    "Question",
    "ReportError",
    "Survey",
    "SurveyError",
    "b64url_decode",
    "b64url_encode",
    "build_report",
    "canonical_json",
    "check_answers",
    "hour_now",
    "make_report",
    "parse_report",
    "randomize_answers",
    "sha256_hex",
    "sign_report",
    "signed_bytes",
    "verify_report",
]
