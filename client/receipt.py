"""What the client hands back: a receipt per report, and the ledger's summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from deniable.shared.mechanisms import Encoded

#: Receipt statuses: the server took it, already had it, refused it, or it waits in the outbox.
STATUSES = ("accepted", "duplicate", "rejected", "queued")


@dataclass(frozen=True)
class Receipt:
    """One report's fate, with the noisy answers that left (or will leave) this device."""

    survey: str
    server: str
    report_id: str
    status: str
    reason: str | None
    epsilon: float
    epsilon_spent: float
    answers: Mapping[str, Encoded] = field(default_factory=dict)
    repeated: bool = False
    survey_hash: str = ""
    #: Each split-ballot question's arm (docs/surveys.md#split-ballot): a direct answer was
    #: sent exactly as given.
    arms: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the server holds the report (accepted now or earlier)."""
        return self.status in ("accepted", "duplicate")


@dataclass(frozen=True)
class LedgerEntry:
    """One answered survey as the ledger holds it."""

    server: str
    survey: str
    title: str
    survey_hash: str
    epsilon: float
    report_id: str
    status: str
    reason: str | None
    created_at: str
    updated_at: str
    #: For a pending report the server asked to send later: not before this UTC time.
    retry_at: str | None = None


@dataclass(frozen=True)
class Status:
    """The ledger at a glance: surveys answered, epsilon spent against the cap, what waits."""

    surveys_answered: int
    epsilon_spent: float
    epsilon_cap: float
    pending: int
    rejected: int
    entries: tuple[LedgerEntry, ...] = ()

    @property
    def epsilon_left(self) -> float:
        """How much epsilon can still be spent before the cap refuses a survey."""
        return max(0.0, self.epsilon_cap - self.epsilon_spent)
