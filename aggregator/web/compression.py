"""Compressed responses (Flask-Compress): brotli or gzip, as the request's Accept-Encoding asks.

Every text response is compressed (HTML, CSS, JavaScript, JSON, CSV, SVG), streamed ones
chunk by chunk (brotli: memory stays flat for answers.csv and reports.jsonl), except the
dashboard's HTML pages: they carry the session's CSRF token beside text a request can put on
the page (a query string), which compression would leak to an attacker who can watch sizes
(BREACH; docs/security.md). The respondent page, its modules and the JSON API carry no such
secret (the API's credentials are bearer tokens a browser never adds by itself).
"""

from __future__ import annotations

from flask import Flask, Response, request
from flask_compress import Compress

#: What is compressed (by its content type; problem+json and CSV besides Flask-Compress's own).
MIMETYPES = (
    "text/html",
    "text/css",
    "text/plain",
    "text/csv",
    "text/javascript",
    "application/javascript",
    "application/json",
    "application/problem+json",
    "application/x-ndjson",
    "image/svg+xml",
)
#: Whole responses: brotli, else gzip; streamed ones: brotli only (gzip cannot stream here).
ALGORITHMS = ("br", "gzip")
STREAMING_ALGORITHMS = ("br",)
#: The blueprint whose HTML pages are never compressed (they carry a CSRF token).
UNCOMPRESSED_HTML_BLUEPRINT = "dashboard"


def init_app(app: Flask) -> None:
    """Compress the app's text responses (but the dashboard's HTML)."""
    app.config.setdefault("COMPRESS_MIMETYPES", list(MIMETYPES))
    app.config.setdefault("COMPRESS_ALGORITHM", list(ALGORITHMS))
    app.config.setdefault("COMPRESS_ALGORITHM_STREAMING", list(STREAMING_ALGORITHMS))
    app.config["COMPRESS_REGISTER"] = False  # our own hook below decides what is compressed
    compress = Compress(app)

    @app.after_request
    def _compress(response: Response) -> Response:
        if response.mimetype == "text/html" and request.blueprint == UNCOMPRESSED_HTML_BLUEPRINT:
            return response
        return compress.after_request(response)
