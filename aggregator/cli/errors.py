"""Errors at the CLI's edge: library errors become one line on stderr and exit status 1."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import click

from deniable.shared.errors import DeniableError
from deniable.shared.terminal import shown

F = TypeVar("F", bound=Callable[..., Any])


class CLIError(click.ClickException):
    """A failure the user can act on: `error: ...` on stderr, exit status 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {shown(self.format_message(), lines=True)}", err=True)


def friendly(command: F) -> F:
    """Turn the errors a user can act on into one line on stderr, never a traceback."""

    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (DeniableError, sqlite3.Error) as exc:
            raise CLIError(str(exc)) from None
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            raise CLIError(f"{exc.strerror or exc}{where}") from None

    return wrapped  # type: ignore[return-value]
