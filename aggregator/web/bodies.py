"""Reading request bodies: JSON only, strictly parsed, within the size limit."""

from __future__ import annotations

from typing import Any

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wsgi import get_content_length, get_input_stream

from deniable.aggregator.web.problems import Problem
from deniable.shared.canonical import JSONTextError, parse_json


def read_body(environ: dict[str, Any], max_content_length: int | None) -> bytes:
    """A WSGI request's body through werkzeug's size check (what Flask's request reads through):
    413 over the limit, a chunked body that reaches it too."""
    stream = get_input_stream(environ, max_content_length=max_content_length)
    length = get_content_length(environ)
    # With its length known, read it in one call: read() goes in 64 KiB chunks, each a fresh
    # 64 KiB buffer, which costs a small report more than its parsing.
    data = stream.read(length) if length is not None else stream.read()
    _refuse_chunked_at_limit(data, length, max_content_length)
    return data


def _refuse_chunked_at_limit(data: bytes, length: int | None, limit: int | None) -> None:
    if limit is not None and length is None and len(data) >= limit:
        raise RequestEntityTooLarge()  # a chunked body stops at the limit instead of failing


def parse_json_body(data: bytes, content_type: str | None, *, required: bool = True) -> Any:
    """The JSON value of a body; 415 for another content type, 400 for malformed JSON. NaN and
    Infinity are refused; nesting too deep for the parser is a 400, not a crash."""
    if not data and not required:
        return None
    mimetype = (content_type or "").partition(";")[0].strip().lower()
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise Problem(
            415,
            f"send the body as JSON with Content-Type: application/json (got {content_type or 'none'})",
        )
    try:
        return parse_json(data)
    except JSONTextError as exc:
        raise Problem(400, f"malformed JSON: {exc}; send one JSON value") from None


def json_body(*, required: bool = True) -> Any:
    """The Flask request's JSON value (see parse_json_body), within the body limit (413)."""
    data = request.get_data(cache=False)
    _refuse_chunked_at_limit(data, request.content_length, request.max_content_length)
    return parse_json_body(data, request.content_type, required=required)


def json_object() -> dict[str, Any]:
    """The request's JSON body, which must be an object."""
    value = json_body()
    if not isinstance(value, dict):
        raise Problem(422, f"expected a JSON object, got {type(value).__name__}")
    return value
