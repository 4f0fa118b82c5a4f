"""The memo of permanent responses: memoized randomization for a series' repeated questions.

A longitudinal question (docs/surveys.md#waves) is randomized in two rounds: the device draws
a *permanent* response once per (server, series, question, true value), keeps it here, and
randomizes that permanent response again, with fresh coins, in every wave. Averaging the
waves' reports then reveals no more than the permanent response, which cost epsilon_perm once.

The memo lives in the ledger's SQLite file and is read and written inside the ledger's
BEGIN IMMEDIATE transaction, so two processes answering at once cannot draw two permanent
responses for one value. It never stores the true value as a field: a row is keyed by an
HMAC of (server, series, question, its parameters, true value) under a random secret kept in
the same file, and holds only the permanent response and the epsilon_perm it charged. (Anyone
who can read the file can still test each possible value against the keys: the memo is as
private as the ledger and the keys, docs/respondents.md.)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass

from deniable.client.errors import ClientError
from deniable.client.urls import normalize_url
from deniable.shared import waves
from deniable.shared.canonical import canonical_json
from deniable.shared.mechanisms import Encoded
from deniable.shared.survey import Question, Survey

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memo_secret ("
    " id INTEGER PRIMARY KEY CHECK (id = 1), secret BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS memo ("
    " key TEXT PRIMARY KEY,"
    " permanent TEXT NOT NULL,"
    " epsilon_perm REAL NOT NULL,"
    " created_at TEXT NOT NULL)",
)
#: Bytes of the memo's HMAC secret.
SECRET_BYTES = 32


@dataclass(frozen=True)
class Memoized:
    """A report's answers with the longitudinal ones drawn through the memo, and what the
    report charges: the other randomized questions' epsilons plus epsilon_perm for each
    longitudinal question whose true value has no permanent response yet."""

    answers: dict[str, Encoded]
    epsilon: float
    new_values: tuple[str, ...]


def refuse_shared(survey: Survey) -> None:
    """ClientError if the survey has longitudinal questions and is answered on a shared
    device: the memo would mix the permanent responses of everyone using the device."""
    if survey.device == "shared" and waves.longitudinal_questions(survey):
        raise ClientError(
            f"survey {survey.id!r} repeats questions across waves, which needs each "
            "respondent's own device to remember their permanent answers; it cannot be "
            "answered on a shared device"
        )


def _prepare(conn: sqlite3.Connection) -> bytes:
    """The memo's tables (created on first use) and its secret (drawn on first use)."""
    for statement in _SCHEMA:
        conn.execute(statement)
    row = conn.execute("SELECT secret FROM memo_secret WHERE id = 1").fetchone()
    if row is not None:
        return bytes(row[0])
    secret = secrets.token_bytes(SECRET_BYTES)
    conn.execute("INSERT INTO memo_secret (id, secret) VALUES (1, ?)", (secret,))
    return secret


def memo_key(secret: bytes, server: str, series: str, question: Question, truth: int) -> str:
    """The row key of one (server, series, question, true value): an HMAC, so that the true
    value is no field of the memo. The question's parameters (type, options, mechanism and
    epsilons) are part of it: a wave that changes them draws (and charges) afresh."""
    params = {
        "question": question.id,
        "type": question.type,
        "options": question.options,
        "mechanism": question.mechanism,
        "longitudinal": waves.longitudinal_doc(question),
    }
    message = canonical_json(
        {"server": normalize_url(server), "series": series, "params": params, "truth": truth}
    )
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def memoized_answers(
    conn: sqlite3.Connection,
    server: str,
    survey: Survey,
    answers: Mapping[str, Encoded],
    truth: Mapping[str, object],
    arms: Mapping[str, str] | None = None,
    *,
    now: str,
) -> Memoized:
    """`answers` (randomized for every asked question) with each longitudinal question's
    answer drawn again through the memo: its permanent response (drawn and kept now if its
    true value has none) randomized with the instantaneous round. Runs inside the ledger's
    transaction on `conn`."""
    refuse_shared(survey)
    if survey.series is None:
        raise ClientError(f"survey {survey.id!r} has longitudinal questions but no series")
    secret = _prepare(conn)
    out = dict(answers)
    charged_others = survey.epsilon_of(
        [qid for qid in answers if survey.questions[qid].longitudinal is None], arms
    )
    new_costs: list[float] = []
    new_values: list[str] = []
    for qid in answers:
        question = survey.questions[qid]
        chain = question.longitudinal
        if chain is None:
            continue
        index = question.truth_of(truth[qid])
        assert isinstance(index, int)
        key = memo_key(secret, server, survey.series, question, index)
        row = conn.execute("SELECT permanent FROM memo WHERE key = ?", (key,)).fetchone()
        if row is None:
            permanent = chain.permanent(index)
            conn.execute(
                "INSERT INTO memo (key, permanent, epsilon_perm, created_at) VALUES (?, ?, ?, ?)",
                (key, json.dumps(permanent), float(chain.epsilon), now),
            )
            new_costs.append(float(chain.epsilon))
            new_values.append(qid)
        else:
            try:
                permanent = chain.validate_memo(json.loads(row[0]))
            except (TypeError, ValueError):
                raise ClientError(
                    f"the ledger's memo holds a damaged permanent answer for question {qid!r}"
                ) from None
        out[qid] = chain.instantaneous(permanent)
    return Memoized(out, math.fsum([charged_others, *new_costs]), tuple(new_values))


def would_charge(
    conn: sqlite3.Connection,
    server: str,
    survey: Survey,
    truth: Mapping[str, object],
    arms: Mapping[str, str] | None = None,
) -> float:
    """What answering `survey` with `truth` would charge (nothing is drawn or kept): the other
    randomized questions' epsilons and epsilon_perm per longitudinal value not yet memoized."""
    secret = _prepare(conn)
    total: list[float] = []
    others: list[str] = []
    for qid in survey.relevant(truth):
        value = truth[qid]
        question = survey.questions[qid]
        chain = question.longitudinal
        if chain is None:
            others.append(qid)
            continue
        index = question.truth_of(value)
        assert isinstance(index, int) and survey.series is not None
        key = memo_key(secret, server, survey.series, question, index)
        if conn.execute("SELECT 1 FROM memo WHERE key = ?", (key,)).fetchone() is None:
            total.append(float(chain.epsilon))
    return math.fsum([survey.epsilon_of(others, arms), *total])


def memo_size(conn: sqlite3.Connection) -> int:
    """How many permanent responses this device keeps."""
    _prepare(conn)
    return int(conn.execute("SELECT COUNT(*) FROM memo").fetchone()[0])
