"""The researcher dashboard: log in with a token, list surveys, read charts, create and close;
the people of a survey, accounts and tokens, and the audit log (docs/accounts.md).

Server-rendered HTML (Jinja) that works without JavaScript; one small static script reloads a
survey page when new reports arrive. Every page but the login needs a session made from a live
researcher token, and every page and action passes the session's principal to the service
functions, which apply the one rule (aggregator/access.py): a survey the principal may not see
is this dashboard's 404 page, word for word the page of an unknown id; a visible survey and a
forbidden action is a 403 page saying which role it needs; buttons and forms the principal may
not use are not shown. Every form carries a CSRF token (Flask-WTF's, checked here, so the JSON
API with its bearer tokens is not affected).

One blueprint (`dashboard`, so every endpoint keeps its name), its routes by resource:
`base` (the blueprint, the guard, headers and the one refusal handler), `login`, `reading`
(the survey list, a survey's and a series' pages), `analysis`, `files` (downloads, made by
web/downloads.py as the API's), `writing` (a new survey, invitations, closing) with its
`planners`, `people`, `accounts` and `audit_log`.
"""

from __future__ import annotations

from flask import Flask

# Each module adds its routes to the one blueprint when imported.
from deniable.aggregator.web.dashboard import (  # noqa: F401
    accounts,
    analysis,
    audit_log,
    files,
    login,
    people,
    reading,
    writing,
)
from deniable.aggregator.web.dashboard.base import bp, configure


def init_dashboard(app: Flask) -> None:
    """Register the dashboard on an app: the blueprint and the session cookie settings."""
    configure(app)
    app.register_blueprint(bp)
