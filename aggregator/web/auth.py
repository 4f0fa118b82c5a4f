"""Researcher authentication: bearer tokens made by `deniable-aggregator create-token`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flask import request

from deniable.aggregator.credentials import token_matches
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.problems import Problem

F = TypeVar("F", bound=Callable[..., Any])

REALM = 'Bearer realm="deniable"'


def bearer_token() -> str | None:
    """The token of the request's `Authorization: Bearer ...` header, if any."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_researcher_token(token: str) -> bool:
    """Whether the token is one create-token made (compared in constant time)."""
    return token_matches(token, get_store().token_hashes())


def researcher_required(view: F) -> F:
    """Refuse the view with 401 problem+json unless the request carries a researcher token."""

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        token = bearer_token()
        if token is None:
            raise Problem(
                401,
                "researcher endpoint: send Authorization: Bearer <token>; "
                "make a token with `deniable-aggregator create-token`",
                headers={"WWW-Authenticate": REALM},
            )
        if not is_researcher_token(token):
            raise Problem(
                401,
                "the bearer token is not valid here; make one with `deniable-aggregator create-token`",
                headers={"WWW-Authenticate": f'{REALM}, error="invalid_token"'},
            )
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]
