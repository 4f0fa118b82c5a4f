"""Reading request bodies: JSON only, strictly parsed, within the size limit."""

from __future__ import annotations

from typing import Any

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from deniable.aggregator.web.problems import Problem
from deniable.shared.canonical import JSONTextError, parse_json


def json_body(*, required: bool = True) -> Any:
    """The request's JSON value; 415 for another content type, 400 for malformed JSON,
    413 over the body limit. NaN and Infinity are refused; nesting too deep for the parser
    is a 400, not a crash."""
    data = request.get_data(cache=False)
    limit = request.max_content_length
    if limit is not None and request.content_length is None and len(data) >= limit:
        raise RequestEntityTooLarge()  # a chunked body stops at the limit instead of failing
    if not data and not required:
        return None
    mimetype = request.mimetype or ""
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        shown = request.content_type or "none"
        raise Problem(
            415, f"send the body as JSON with Content-Type: application/json (got {shown})"
        )
    try:
        return parse_json(data)
    except JSONTextError as exc:
        raise Problem(400, f"malformed JSON: {exc}; send one JSON value") from None


def json_object() -> dict[str, Any]:
    """The request's JSON body, which must be an object."""
    value = json_body()
    if not isinstance(value, dict):
        raise Problem(422, f"expected a JSON object, got {type(value).__name__}")
    return value
