"""Errors the client raises on purpose; all derive from ClientError (a DeniableError)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deniable.shared.errors import DeniableError

if TYPE_CHECKING:
    from deniable.client.receipt import Receipt


class ClientError(DeniableError):
    """A failure the respondent can act on; the message is one line saying what to do."""


class NetworkError(ClientError):
    """The server could not be reached (refused, timed out, name not found, TLS failure)."""


class ServerError(ClientError):
    """The server answered, but not with what the protocol promises (e.g. a 500 or bad JSON)."""


class SurveyChangedError(ClientError):
    """The survey the server published does not match its own hash (changed or tampered)."""


class SurveyClosedError(ClientError):
    """The survey no longer accepts answers."""


class EnrollmentError(ClientError):
    """The server refused to enroll this device's key (e.g. an invalid or used invitation)."""


class EpsilonCapError(ClientError):
    """Answering would take the total epsilon spent past the respondent's cap."""

    def __init__(self, message: str, *, spent: float, cap: float, needed: float) -> None:
        super().__init__(message)
        self.spent = spent
        self.cap = cap
        self.needed = needed


class RejectedError(ClientError):
    """The server rejected a stored report; `receipt` holds what was sent and the reason."""

    def __init__(self, message: str, *, receipt: Receipt) -> None:
        super().__init__(message)
        self.receipt = receipt
