"""Researcher authentication for the API: a bearer token of an account (docs/accounts.md),
checked on every request so that a revoked or expired token is refused on its next one."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flask import g, request

from deniable.aggregator import access
from deniable.aggregator.access import Principal
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.surveys import utc_now
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.problems import Problem
from deniable.aggregator.web.statuses import refusal_status

F = TypeVar("F", bound=Callable[..., Any])

REALM = 'Bearer realm="deniable"'
#: Longest Authorization header value read: a token is 43 characters; more is not a token.
MAX_TOKEN_CHARS = 512


def bearer_token() -> str | None:
    """The token of the request's `Authorization: Bearer ...` header, if any."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticated(token: str) -> Principal:
    """The principal a bearer token speaks for, or a 401 problem (invalid_token) that says
    whether the token is unknown, revoked or expired and what to do."""
    try:
        if len(token) > MAX_TOKEN_CHARS:
            raise ActionError(
                "unauthenticated", "the bearer token is not valid here; it is too long"
            )
        return access.authenticate(get_store(), token, utc_now())
    except ActionError as exc:
        raise Problem(
            refusal_status(exc),
            str(exc),
            headers={"WWW-Authenticate": f'{REALM}, error="invalid_token"'},
        ) from None


def researcher_required(view: F) -> F:
    """Refuse the view with 401 problem+json unless the request carries a live researcher
    token; the principal it speaks for is kept for the request (`principal()`)."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        token = bearer_token()
        if token is None:
            raise Problem(
                401,
                "researcher endpoint: send Authorization: Bearer <token>; "
                "an admin makes one with `deniable-aggregator token create ACCOUNT` "
                "(or `deniable-aggregator create-token`, an admin's)",
                headers={"WWW-Authenticate": REALM},
            )
        g.principal = authenticated(token)
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def principal() -> Principal:
    """Who the current request speaks for (set by `researcher_required`, or by the dashboard's
    session check); a view reached without either is a programming error."""
    who = g.get("principal")
    if not isinstance(who, Principal):
        raise RuntimeError("principal() outside a view guarded by researcher_required")
    return who
