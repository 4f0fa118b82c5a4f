"""The Flask app factory: configuration, the store provider, error handling and blueprints."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask

from deniable.aggregator import config as settings
from deniable.aggregator.web import (
    api,
    compression,
    cors,
    db,
    gateway,
    problems,
    report_endpoint,
    respond,
    retention,
)
from deniable.aggregator.web.dashboard import init_dashboard
from deniable.aggregator.web.limits import init_limits, trust_proxies

SECRET_KEY_FILE = "secret_key"


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """A configured aggregator app: defaults, then DENIABLE_* variables, then `config`.

    No database connection is opened here (each worker opens its own on first use)."""
    app = Flask(__name__)
    app.config.from_mapping(settings.defaults())
    app.config.update(settings.from_env(os.environ))
    if config:
        app.config.update(config)
    app.config.update(settings.resolve(app.config))
    app.json.sort_keys = False  # type: ignore[attr-defined]
    db.init_app(app)
    problems.register(app)
    app.register_blueprint(api.bp)
    app.register_blueprint(respond.bp)
    init_dashboard(app)
    init_limits(app)
    cors.init_app(app)  # CORS on the respondent routes only (DENIABLE_PAGE_ORIGINS)
    compression.init_app(app)  # brotli or gzip, but the dashboard's HTML (web/compression.py)
    # WSGI layers, innermost first: the report endpoint in front of Flask, the retention tick
    # in front of every request, the trusted proxies' client address in front of everything.
    gateway.init_app(app)  # OHTTP, its reports handed to the app's outer layers (anonymity.md)
    report_endpoint.init_app(app)
    retention.init_app(app)
    trust_proxies(app)

    return app


def load_or_create_secret_key(data_dir: Path) -> str:
    """The data directory's session-signing key, created (0600) on first use, so every worker
    and every restart signs sessions alike without DENIABLE_SECRET_KEY."""
    path = data_dir / SECRET_KEY_FILE
    try:
        return path.read_text("ascii").strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)
    # A draft of its own (0600) for each caller: threads of one worker may race here too.
    fd, draft = tempfile.mkstemp(prefix=f".{SECRET_KEY_FILE}.", dir=data_dir)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key + "\n")
    try:
        os.link(draft, path)  # atomic: of two callers racing, one key wins and both read it
    except FileExistsError:
        key = path.read_text("ascii").strip()
    finally:
        os.unlink(draft)
    return key
