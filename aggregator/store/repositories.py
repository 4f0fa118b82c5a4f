"""The store's repositories: one abstract class per concern (surveys, reports, retention,
accounts and tokens, roles, the audit log, dashboard sessions, invitations), each a few
methods over the records of records.py. `Store` (base.py) is all of them on one connection
owner, the database a backend opens once; a service needs only the repository of its concern.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from deniable.aggregator.store.records import (
    FOLD_AT,
    Account,
    AuditEntry,
    BodyCounter,
    EnrollOutcome,
    Grant,
    NewReport,
    Recount,
    Role,
    StoredReport,
    StoreError,
    StoreOutcome,
    SurveyRecord,
    TokenRecord,
)


class SurveyRepository(ABC):
    """Surveys: created once with zero tallies, read, closed."""

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


class ReportRepository(ABC):
    """Reports: the batch transaction that stores them with their tallies, and the reads
    estimates and analyses need (tallies, bodies, answer patterns)."""

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


class RetentionRepository(ABC):
    """Verification and retention (see recount.py): recounting the tallies from the bodies,
    purging old bodies."""

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


class AccountRepository(ABC):
    """Researchers: accounts and their tokens (stored as hashes)."""

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


class RoleRepository(ABC):
    """Roles on surveys, with the last-owner check in the transaction that changes one."""

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


class AuditRepository(ABC):
    """The audit log: appended to, read, and purged past its retention, never changed."""

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


class SessionRepository(ABC):
    """Dashboard sessions (times as format_timestamp writes them, so they compare as text)."""

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


class InvitationRepository(ABC):
    """Invite-only surveys: invitation codes (as hashes) and enrolled keys."""

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
