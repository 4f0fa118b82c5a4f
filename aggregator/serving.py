"""Serving the app with werkzeug's threaded server (gunicorn is for deployments: see deploy/)."""

from __future__ import annotations

from flask import Flask
from werkzeug.serving import WSGIRequestHandler, run_simple


class _QuietRequestHandler(WSGIRequestHandler):
    """Logs errors but no request lines: those would record respondents' IP addresses."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


def serve(app: Flask, host: str, port: int) -> None:
    """Serve until interrupted, one thread per request, no reloader and no debugger."""
    run_simple(
        host,
        port,
        app,
        threaded=True,
        use_reloader=False,
        use_debugger=False,
        request_handler=_QuietRequestHandler,
    )
