"""The respondent side: keys, ledger and outbox, HTTP calls and the `deniable` CLI.

    from deniable.client import Client
    client = Client("http://127.0.0.1:8000")
    receipt = client.answer("health-2026", {"smokes": "yes", "cannabis": "no", "party": "B"})
    print(receipt.status, receipt.answers)   # what actually left the device

Importing this package needs only requests, cryptography and platformdirs (never Flask, numpy
or sqlite-utils); it prints nothing, configures no logging and keeps no global state.
"""

from deniable.client.client import DEFAULT_EPSILON_CAP, Client, check_true_answers
from deniable.client.errors import (
    ClientError,
    EnrollmentError,
    EpsilonCapError,
    NetworkError,
    RejectedError,
    ServerError,
    SurveyChangedError,
    SurveyClosedError,
)
from deniable.client.explain import explain_survey
from deniable.client.http import client_version
from deniable.client.receipt import LedgerEntry, Receipt, Status
from deniable.client.researcher import Researcher

__version__ = client_version()

__all__ = [
    "DEFAULT_EPSILON_CAP",
    "Client",
    "ClientError",
    "EnrollmentError",
    "EpsilonCapError",
    "LedgerEntry",
    "NetworkError",
    "Receipt",
    "RejectedError",
    "Researcher",
    "ServerError",
    "Status",
    "SurveyChangedError",
    "SurveyClosedError",
    "__version__",
    "check_true_answers",
    "explain_survey",
]
