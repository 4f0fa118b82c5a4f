"""Aggregator settings: defaults, and the DENIABLE_* environment variables that override them."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from deniable.shared.errors import DeniableError

DEFAULT_DATA_DIR = "./deniable-data"


class ConfigError(DeniableError):
    """A setting has a value the aggregator cannot use; the message names it and what is allowed."""


def _whole(name: str, low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            bound = f"from {low}" + (f" to {high}" if high is not None else "")
            raise ConfigError(f"{name}: expected a whole number {bound}, got {text!r}")
        return value

    return parse


def _confidence(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < 1:
            raise ConfigError(
                f"{name}: expected a confidence level between 0 and 1, like 0.95, got {text!r}"
            )
        return value

    return parse


def _seconds(name: str, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 <= value <= high:
            raise ConfigError(f"{name}: expected seconds from 0 to {high:g}, got {text!r}")
        return value

    return parse


def _synchronous(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().upper()
        if value not in ("FULL", "NORMAL", "EXTRA"):
            raise ConfigError(f"{name}: expected FULL, NORMAL or EXTRA, got {text!r}")
        return value

    return parse


def _rate(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        from limits import parse_many

        try:
            parse_many(text)
        except ValueError:
            raise ConfigError(
                f"{name}: expected a rate like 60/minute or '10/second;500/hour', got {text!r}"
            ) from None
        return text.strip()

    return parse


#: Flask config key -> (environment variable, parser, default).
SETTINGS: dict[str, tuple[str, Callable[[str], Any], Any]] = {
    "DATA_DIR": ("DENIABLE_DATA_DIR", str, DEFAULT_DATA_DIR),
    "DATABASE_URL": ("DENIABLE_DATABASE_URL", str, None),
    "MAX_CONTENT_LENGTH": ("DENIABLE_MAX_BODY", _whole("DENIABLE_MAX_BODY", 1024), 8 * 1024 * 1024),
    # sent_at is truncated to the hour on the device, and an outbox may resend a day later.
    "CLOCK_SKEW": ("DENIABLE_CLOCK_SKEW", _whole("DENIABLE_CLOCK_SKEW", 3600), 2 * 24 * 3600),
    "CONFIDENCE": ("DENIABLE_CONFIDENCE", _confidence("DENIABLE_CONFIDENCE"), 0.95),
    "MAX_BATCH": ("DENIABLE_MAX_BATCH", _whole("DENIABLE_MAX_BATCH", 1, 100_000), 1000),
    "MAX_INVITATIONS": ("DENIABLE_MAX_INVITATIONS", _whole("DENIABLE_MAX_INVITATIONS", 1), 10_000),
    "SECRET_KEY": ("DENIABLE_SECRET_KEY", str, None),
    "BUSY_TIMEOUT": ("DENIABLE_BUSY_TIMEOUT", _whole("DENIABLE_BUSY_TIMEOUT", 0), 10_000),
    # FULL: an accepted report survives a power cut, as "nothing accepted is ever lost" promises.
    "SQLITE_SYNCHRONOUS": (
        "DENIABLE_SQLITE_SYNCHRONOUS",
        _synchronous("DENIABLE_SQLITE_SYNCHRONOUS"),
        "FULL",
    ),
    # Page cache (MiB) of each worker's one writing SQLite connection: inserts into a large
    # survey's random-keyed indexes touch more pages than SQLite's 2 MiB default holds.
    "SQLITE_WRITER_CACHE_MIB": (
        "DENIABLE_SQLITE_WRITER_CACHE_MIB",
        _whole("DENIABLE_SQLITE_WRITER_CACHE_MIB", 1, 65_536),
        64,
    ),
    "RATE_LIMIT": ("DENIABLE_RATE_LIMIT", _rate("DENIABLE_RATE_LIMIT"), None),
    # Failed dashboard logins allowed per client address (in memory only), and their delay.
    "LOGIN_LIMIT": ("DENIABLE_LOGIN_LIMIT", _rate("DENIABLE_LOGIN_LIMIT"), "10/minute"),
    "LOGIN_FAILURE_DELAY": (
        "DENIABLE_LOGIN_FAILURE_DELAY",
        _seconds("DENIABLE_LOGIN_FAILURE_DELAY", 10),
        0.5,
    ),
    # A dashboard session ends this many hours after its login, even from a copied cookie.
    "SESSION_HOURS": ("DENIABLE_SESSION_HOURS", _whole("DENIABLE_SESSION_HOURS", 1, 24 * 365), 12),
    # Reverse proxies in front that set X-Forwarded-For/-Proto (0: none, trust no header).
    "TRUSTED_PROXIES": ("DENIABLE_TRUSTED_PROXIES", _whole("DENIABLE_TRUSTED_PROXIES", 0, 5), 0),
    # Raw reports older than this many days are purged (tallies and n stay); None keeps them.
    "RETENTION_DAYS": ("DENIABLE_RETENTION_DAYS", _whole("DENIABLE_RETENTION_DAYS", 1), None),
    # Work one request may ask for, checked before it starts (stats/limits.py, docs/security.md).
    "MAX_MODEL_COLUMNS": (
        "DENIABLE_MAX_MODEL_COLUMNS",
        _whole("DENIABLE_MAX_MODEL_COLUMNS", 1, 100_000),
        200,
    ),
    "MAX_MODEL_CELLS": (
        "DENIABLE_MAX_MODEL_CELLS",
        _whole("DENIABLE_MAX_MODEL_CELLS", 1),
        20_000_000,
    ),
    "MAX_DECODER_CELLS": (
        "DENIABLE_MAX_DECODER_CELLS",
        _whole("DENIABLE_MAX_DECODER_CELLS", 1),
        8_000_000,
    ),
    "DECODER_CACHE_BYTES": (
        "DENIABLE_DECODER_CACHE_BYTES",
        _whole("DENIABLE_DECODER_CACHE_BYTES", 0),
        256 * 1024 * 1024,
    ),
    # At most the survey format's own maximum (shared/survey.py MAX_QUESTIONS): only lowers it.
    "MAX_QUESTIONS": ("DENIABLE_MAX_QUESTIONS", _whole("DENIABLE_MAX_QUESTIONS", 1, 100), 100),
    "MAX_SURVEY_SKETCH_CELLS": (
        "DENIABLE_MAX_SURVEY_SKETCH_CELLS",
        _whole("DENIABLE_MAX_SURVEY_SKETCH_CELLS", 1),
        262_144,
    ),
}


def defaults() -> dict[str, Any]:
    """Every setting at its default value."""
    return {key: default for key, (_, _, default) in SETTINGS.items()}


def from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings given as DENIABLE_* environment variables, parsed; ConfigError if invalid."""
    found: dict[str, Any] = {}
    for key, (variable, parse, _) in SETTINGS.items():
        text = environ.get(variable)
        if text is not None and text != "":
            found[key] = parse(text)
    return found


def resolve(config: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, normalized values of settings given directly (e.g. create_app overrides)."""
    fixed: dict[str, Any] = {}
    data_dir = config.get("DATA_DIR") or DEFAULT_DATA_DIR
    fixed["DATA_DIR"] = str(Path(os.fspath(data_dir)).expanduser().absolute())
    confidence = config.get("CONFIDENCE")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 < confidence < 1
    ):
        raise ConfigError(f"CONFIDENCE: expected a number between 0 and 1, got {confidence!r}")
    for key in ("MAX_BATCH", "CLOCK_SKEW", "MAX_INVITATIONS", "BUSY_TIMEOUT"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    return fixed
