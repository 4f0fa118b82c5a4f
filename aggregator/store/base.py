"""The storage interface: the few operations the aggregator needs, whatever database is behind it.

SQLite (sqlite.py) and PostgreSQL (postgres.py) implement it, over the statements they share
in sql.py, so a third backend writes only its own SQL. Every method is one short transaction; the one that
writes reports takes the write lock up front and stores a batch, its tally increments and the
report counts together, so an accepted report is never lost or counted twice.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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


class Store(ABC):
    """Narrow storage interface of the aggregator."""

    @abstractmethod
    def migrate(self) -> int:
        """Bring the schema to the current version; returns that version."""

    @abstractmethod
    def ping(self) -> None:
        """Raise StoreError unless the database answers."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""

    # surveys
    @abstractmethod
    def create_survey(
        self,
        survey_id: str,
        resolved_json: str,
        survey_hash: str,
        questions: Mapping[str, int],
        now: str,
        owner: int | None = None,
    ) -> bool:
        """Store a new survey with zero tallies (questions: id -> option count, in order) and,
        in the same transaction, the `owner` account's owner role on it; False when the id is
        taken (nothing changes then)."""

    @abstractmethod
    def get_survey(self, survey_id: str) -> SurveyRecord | None:
        """The survey, or None."""

    @abstractmethod
    def list_surveys(self) -> list[SurveyRecord]:
        """Every survey, oldest first."""

    @abstractmethod
    def close_survey(self, survey_id: str, now: str) -> SurveyRecord | None:
        """Stop accepting reports (idempotent); the updated survey, or None if unknown."""

    # reports
    @abstractmethod
    def add_reports(self, reports: Sequence[NewReport], received_hour: str) -> list[StoreOutcome]:
        """Store a batch in one transaction, in order, each checked for duplicates and replays,
        with its tally increments and report count; an outcome per report. The arrival time is
        kept to the hour only (a finer time helps link a report to a person)."""

    @abstractmethod
    def stored_report(self, report_id: str) -> StoredReport | None:
        """The stored canonical body (PURGED_BODY once purged), key and survey of a report."""

    @abstractmethod
    def tallies(self, survey_id: str) -> tuple[int, dict[str, list[int]]]:
        """(number of reports, question id -> support count per option), one consistent read."""

    @abstractmethod
    def iter_report_bodies(self, survey_id: str, *, chunk: int = 1000) -> Iterator[str]:
        """Every stored report body of a survey in arrival order, fetched `chunk` rows at a time."""

    @abstractmethod
    def pattern_counts(self, survey_id: str) -> dict[str, int]:
        """The survey's answer patterns (NewReport.pattern) and how many stored reports (whose
        bodies are kept) have each, as kept in the reports' transactions."""

    def fold_patterns(self, survey_id: str, *, at: float = FOLD_AT) -> bool:
        """Fold the survey's answer pattern counters into one row per pattern, if the backend
        spreads them over shards (see PostgresStore) and they hold `at` rows per pattern or
        more; whether it folded. Reads are then as cheap as the distinct patterns allow;
        counts never change."""
        return False

    def answer_counts(
        self, survey_id: str, question_ids: Sequence[str]
    ) -> dict[tuple[Any, ...], int]:
        """How many stored reports (whose bodies are kept) sent each combination of noisy
        answers to these questions (not text ones), summed by the database from the answer
        patterns: what breakdowns, cross-tabs and regressions need, in time and memory that
        grow with the distinct patterns, never with the reports. A question a report skipped
        is None in its combination."""
        return dict(self.iter_answer_counts(survey_id, question_ids))

    @abstractmethod
    def iter_answer_counts(
        self, survey_id: str, question_ids: Sequence[str]
    ) -> Iterator[tuple[tuple[Any, ...], int]]:
        """answer_counts as (combination, count) pairs read from the database as they are
        consumed, so that a caller folding them in chunks holds a chunk, not every distinct
        combination."""

    # verification and retention (see recount.py)
    @abstractmethod
    def recount(self, survey_id: str, count: BodyCounter, *, repair: bool = False) -> Recount:
        """Recount n and tallies from the stored report bodies (plus what retention purged),
        and the answer patterns from the stored bodies, in one consistent snapshot; with
        `repair`, in one write transaction that also replaces the stored n, tallies and
        patterns by the recount. Returns what was found before any repair."""

    @abstractmethod
    def purge_reports(self, survey_id: str, before_hour: str, count: BodyCounter) -> int:
        """Delete the bodies of reports received before `before_hour` in one transaction, moving
        their counts to the survey's purged totals (tallies and n stay as they are) and taking
        their answer patterns away (analyses read the kept reports); the random report_id and
        public_key stay, so a resent report is never counted twice. How many."""

    # researchers: accounts and their tokens
    @abstractmethod
    def create_account(self, name: str, admin: bool, now: str) -> Account | None:
        """A new account; None when the name is taken."""

    @abstractmethod
    def get_account(self, name: str) -> Account | None:
        """The account of this name."""

    @abstractmethod
    def list_accounts(self) -> list[Account]:
        """Every account, by name."""

    @abstractmethod
    def add_token(
        self,
        token_hash: str,
        account_id: int,
        name: str,
        now: str,
        *,
        expires_at: str | None = None,
        read_only: bool = False,
        surveys: Sequence[str] | None = None,
    ) -> TokenRecord:
        """Remember a researcher token of the account by its hash (its id is the hash's first
        12 hex digits)."""

    @abstractmethod
    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        """The stored token with this hash (live or not: the caller checks `live`)."""

    @abstractmethod
    def list_tokens(self, account_id: int | None = None) -> list[TokenRecord]:
        """Every token (of one account), revoked and expired ones too, oldest first."""

    @abstractmethod
    def revoke_token(self, token_id: str, now: str) -> TokenRecord | None:
        """Mark the token revoked (kept for the audit log's sake) and delete the dashboard
        sessions opened with it, in one transaction; None when no token has this id. Revoking
        twice keeps the first time."""

    @abstractmethod
    def remove_tokens(self, name: str, now: str | None = None) -> int:
        """Revoke every token made with this name that is live at `now` (default: the present;
        `revoke-token --name`), ending their dashboard sessions in the same transaction; how
        many there were."""

    def add_admin_token(self, token_hash: str, name: str, now: str) -> TokenRecord:
        """A token labelled `name` of the admin account `name`, made if absent (what
        `create-token` and the tests' fixtures use); ValueError when an account of that name
        exists and is not an admin (its tokens must not become admin tokens)."""
        account = self.get_account(name) or self.create_account(name, True, now)
        account = account or self.get_account(name)  # made meanwhile by another process
        if account is None:
            raise StoreError(f"the account {name!r} could neither be made nor found")
        if not account.admin:
            raise ValueError(
                f"the account {name!r} is not an admin; name another account, or make tokens "
                f"of {name!r} with `deniable-aggregator token create {name}`"
            )
        return self.add_token(token_hash, account.id, name, now)

    # roles on surveys
    @abstractmethod
    def grant(self, survey_id: str, account_id: int, role: Role, now: str) -> None:
        """Give the account this role on the survey (replacing the role it had);
        LastOwnerError, and nothing changed, if that demotes the survey's last owner."""

    @abstractmethod
    def revoke_grant(self, survey_id: str, account_id: int) -> bool:
        """Take the account's role on the survey away; False if it had none; LastOwnerError,
        and nothing changed, if it is the survey's last owner."""

    @abstractmethod
    def grants(self, survey_id: str) -> list[Grant]:
        """Who has which role on the survey, by account name."""

    @abstractmethod
    def roles_of(self, account_id: int) -> dict[str, Role]:
        """Survey id -> the account's role on it."""

    # the audit log: appended to, read, and purged past its retention, never changed
    @abstractmethod
    def append_audit(self, entry: AuditEntry) -> None:
        """Add one entry at the end of the log."""

    @abstractmethod
    def iter_audit(
        self, *, survey: str | None = None, since: str | None = None
    ) -> Iterator[AuditEntry]:
        """The log's entries in the order they were appended (of one survey; at or after
        `since`), streamed."""

    @abstractmethod
    def purge_audit(self, before: str) -> int:
        """Delete the entries older than `before` (DENIABLE_AUDIT_RETENTION_DAYS); how many."""

    # dashboard sessions (times as format_timestamp writes them, so they compare as text)
    @abstractmethod
    def open_session(
        self, session_hash: str, token_hash: str, created_at: str, expires_at: str
    ) -> bool:
        """Store a dashboard session by the sha256 of its random id, tied to the token that
        opened it; False (nothing stored) when that token is gone, revoked or expired at
        `created_at`. Purges expired sessions."""

    @abstractmethod
    def session_token(self, session_hash: str, now: str, *, opened_after: str) -> str | None:
        """The token hash of a live session: known, its token stored, not revoked and not
        expired at `now`, the session not expired at `now` and opened after `opened_after`;
        else None (and a dead session is deleted)."""

    @abstractmethod
    def end_session(self, session_hash: str, now: str) -> None:
        """Delete the session (every copy of its cookie ends) and every expired one."""

    # invite-only surveys
    @abstractmethod
    def add_invitations(self, survey_id: str, code_hashes: Sequence[str], now: str) -> None:
        """Remember single-use invitation codes by their hashes."""

    @abstractmethod
    def enroll(self, survey_id: str, public_key: str, code_hash: str) -> EnrollOutcome:
        """Spend an invitation code to enroll a key, atomically; a key already enrolled keeps
        its enrollment and spends nothing. Which code enrolled which key is never stored."""

    @abstractmethod
    def is_enrolled(self, survey_id: str, public_key: str) -> bool:
        """Whether the key may report to the invite-only survey."""


def open_store(config: Mapping[str, Any], *, writer: bool = False) -> Store:
    """The store the configuration names (SQLite under DATA_DIR unless DATABASE_URL says else);
    a `writer` (a worker's group-commit store) gets SQLite's larger writer cache."""
    url = config.get("DATABASE_URL")
    if url:
        return _open_url(url, config)
    from deniable.aggregator.store.sqlite import SQLiteStore

    return SQLiteStore.in_data_dir(
        config["DATA_DIR"],
        busy_timeout=config.get("BUSY_TIMEOUT", 10_000),
        synchronous=config.get("SQLITE_SYNCHRONOUS", "FULL"),
        cache_mib=config.get("SQLITE_WRITER_CACHE_MIB") if writer else None,
    )


def _open_url(url: str, config: Mapping[str, Any]) -> Store:
    """The server database DENIABLE_DATABASE_URL names (PostgreSQL)."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            f"DENIABLE_DATABASE_URL={url.split('://')[0]}://...: only postgresql:// URLs are "
            "supported; unset it to use SQLite under DENIABLE_DATA_DIR"
        )
    try:
        from deniable.aggregator.store.postgres import PostgresStore
    except ImportError:
        raise StoreError(
            "DENIABLE_DATABASE_URL names PostgreSQL, but psycopg is not installed: "
            "pip install 'deniable[postgres]'"
        ) from None
    return PostgresStore(url, timeout=config.get("BUSY_TIMEOUT", 10_000) / 1000)
