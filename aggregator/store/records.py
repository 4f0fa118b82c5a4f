"""What the store keeps and gives back: its records (surveys, accounts, tokens, grants, audit
entries, reports, recounts), the outcomes of its writes and its errors. Plain data, no SQL."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from deniable.shared import ballot
from deniable.shared.errors import DeniableError


class StoreError(DeniableError):
    """The database cannot be used (unreachable, newer schema, unsupported URL...)."""


class LastOwnerError(ValueError):
    """A role change refused because it would leave the survey without an owner (checked in
    the transaction that makes it, so two owners removing each other cannot both succeed)."""


@dataclass(frozen=True)
class SurveyRecord:
    """A stored survey: its resolved form and hash, and the aggregator's state about it."""

    id: str
    resolved_json: str
    hash: str
    created_at: str
    closed_at: str | None
    report_count: int

    @property
    def resolved(self) -> dict[str, Any]:
        """The resolved survey document (`Survey.to_dict()` when it was created)."""
        return json.loads(self.resolved_json)

    @property
    def closed(self) -> bool:
        """Whether the survey was closed by hand (closes_at is the Survey's business)."""
        return self.closed_at is not None


#: The account a token of no name belongs to when a database is upgraded to accounts
#: (`create-token`'s default name).
UNNAMED = "researcher"

#: A researcher's role on one survey (admins need none: they see every survey).
Role = Literal["owner", "analyst"]


@dataclass(frozen=True)
class Account:
    """A researcher (or a team): tokens belong to it, roles on surveys are granted to it."""

    id: int
    name: str
    admin: bool
    created_at: str


@dataclass(frozen=True)
class TokenRecord:
    """A stored researcher token (never the token itself: only its sha256 is stored).

    `id` is public (the first 12 hex digits of that sha256): lists, revocation and the audit
    log name a token by it. `surveys` narrows what the account may see to those surveys
    (None: no narrowing); `read_only` drops every action that changes something."""

    id: str
    account: str
    account_id: int
    admin: bool
    name: str
    created_at: str
    expires_at: str | None
    read_only: bool
    surveys: tuple[str, ...] | None
    revoked_at: str | None

    def live(self, now: str) -> bool:
        """Not revoked and not expired at `now` (times compare as text)."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


@dataclass(frozen=True)
class Grant:
    """An account's role on a survey."""

    survey_id: str
    account: str
    account_id: int
    role: Role
    granted_at: str


@dataclass(frozen=True)
class AuditEntry:
    """One researcher action on the audit log: who (account and token id, never the token),
    which survey (None for account-wide actions), what, with which parameters (never a
    report's content). `time` as format_timestamp writes it."""

    time: str
    account: str
    token_id: str | None
    survey: str | None
    action: str
    params: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of one line of `deniable-aggregator audit --json`."""
        return {
            "time": self.time,
            "account": self.account,
            "token_id": self.token_id,
            "survey": self.survey,
            "action": self.action,
            "params": dict(self.params),
        }


class NewReport(NamedTuple):
    """A checked, verified report ready to store, with the options each answer supports and
    its answer pattern (`deniable.shared.report.answer_pattern`: what analyses count)."""

    report_id: str
    survey_id: str
    public_key: str
    body: str
    support: Mapping[str, Sequence[int]]
    pattern: str


#: Fold a survey's answer pattern shards (Store.fold_patterns) once they hold this many rows
#: per distinct pattern: reads then cost at most about this many rows a pattern.
FOLD_AT = 2.0
#: A purged report keeps this empty body (and its random report_id and public key).
PURGED_BODY = ""
#: `answer_counts` reads a split-ballot question's arm for the id ARM_PREFIX + its id (no
#: question id can start with it): "direct", "randomized", or None (docs/wire-format.md).
ARM_PREFIX = ballot.ARM_PREFIX


class StoredReport(NamedTuple):
    """What the store keeps of a report that may be sent again: its body, key and survey."""

    body: str
    public_key: str
    survey_id: str


def resend_outcome(
    stored: StoredReport, body: str, public_key: str, survey_id: str
) -> StoreOutcome:
    """A verified report under a stored report_id: "duplicate" for the same bytes, or for a
    purged report sent again by the key that sent it, to the same survey (its bytes are
    gone); else "conflict"."""
    if stored.body == body:
        return "duplicate"
    purged = stored.body == PURGED_BODY
    if purged and (stored.public_key, stored.survey_id) == (public_key, survey_id):
        return "duplicate"
    return "conflict"


#: What storing one report did: stored, already stored (same body), the report_id taken by a
#: different body, the key already answered the survey, or the survey closed meanwhile.
StoreOutcome = Literal["accepted", "duplicate", "conflict", "answered", "closed"]
EnrollOutcome = Literal["enrolled", "already", "unknown-code", "used-code"]

#: Counts report bodies: (number of reports, question id -> support count per option, answer
#: pattern -> reports).
BodyCounter = Callable[[Iterable[str]], tuple[int, dict[str, list[int]], dict[str, int]]]


@dataclass(frozen=True)
class Recount:
    """A survey's stored n and tallies beside a recount: the stored reports plus the purged
    ones; and its answer patterns' counts beside those of the stored reports (a purge takes
    its reports' patterns away: analyses read the reports whose bodies are kept)."""

    stored_n: int
    stored: dict[str, list[int]]
    counted_n: int
    counted: dict[str, list[int]]
    purged_n: int
    stored_patterns: dict[str, int]
    counted_patterns: dict[str, int]

    @property
    def consistent(self) -> bool:
        """Whether the stored n, tallies and answer patterns equal the recount."""
        return (
            self.stored_n == self.counted_n
            and self.stored == self.counted
            and self.stored_patterns == self.counted_patterns
        )
