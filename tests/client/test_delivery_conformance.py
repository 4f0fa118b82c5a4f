"""deniable.client.delivery against tests/conformance/delivery.json, the delivery policy that
deniable.js passes too (tests/browser/test_conformance_js.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deniable.client.delivery import Delivery, classify

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "conformance" / "delivery.json").read_text("utf-8")
)


def expected(case: dict[str, Any]) -> Delivery:
    want = case["expected"]
    return Delivery(want["outcome"], want["reason"], want["retry_after_seconds"])


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_the_python_client_follows_every_delivery_vector(case: dict[str, Any]) -> None:
    headers = dict(case["headers"])
    if case["content_type"] is not None:
        headers["Content-Type"] = case["content_type"]
    body = case["body"].encode("utf-8")
    got = classify(case["status"], headers, body, case["report_id"], case["index"], case["now"])
    assert got == expected(case)


def test_the_vectors_cover_the_policy() -> None:
    """Every status the policy names, with and without problem+json, in the vectors."""
    seen = {(c["status"], "problem+json" in (c["content_type"] or "").lower()) for c in VECTORS}
    for status in (400, 401, 403, 404, 409, 413, 422, 408, 425, 429, 500, 502, 503, 504):
        assert (status, True) in seen and (status, False) in seen, status
    outcomes = {c["expected"]["outcome"] for c in VECTORS}
    assert outcomes == {"accepted", "duplicate", "queued", "rejected"}
    assert any(c["index"] is not None for c in VECTORS)
