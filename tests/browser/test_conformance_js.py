"""The page's protocol modules against the conformance vectors in Chromium, each vector file
run on the module that holds its concern: canonical JSON and survey hashes (canonical.js), an
Ed25519 signature (signing.js) byte for byte as the Python protocol makes them, text hashing
(text.js) and the delivery policy (delivery.js); and deniable.js, the module the page imports,
re-exports each of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deniable.shared.page import PROTOCOL

FOLDER = Path(__file__).resolve().parents[1] / "conformance"


def load(name: str) -> Any:
    return json.loads((FOLDER / name).read_text("utf-8"))


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_module_matches_every_vector(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")  # any page of the origin can import the module
    got = page.evaluate(
        """async ([canonical, hashes, signed]) => {
            const m = await import('/static/canonical.js');
            const { signText } = await import('/static/signing.js');
            const texts = canonical.map((c) => m.canonicalJSON(c.value));
            const digests = [];
            for (const h of hashes) digests.push(await m.surveyHash(h.survey));
            const hexBytes = (h) => Uint8Array.from(h.match(/../g), (b) => parseInt(b, 16));
            const key = await crypto.subtle.importKey(
              'jwk',
              { kty: 'OKP', crv: 'Ed25519', d: m.b64url(hexBytes(signed.secret_key_hex)),
                x: m.b64url(hexBytes(signed.public_key_hex)) },
              { name: 'Ed25519' }, false, ['sign']);
            const { signature, ...unsigned } = signed.report;
            const text = m.canonicalJSON(unsigned);
            return { texts, digests, text, signature: await signText(key, text) };
        }""",
        [load("canonical.json"), load("survey_hashes.json"), load("signed_report.json")],
    )
    expected = [c["canonical"] for c in load("canonical.json")]
    mismatches = [(e, g) for e, g in zip(expected, got["texts"], strict=True) if e != g]
    assert not mismatches
    assert got["digests"] == [h["hash"] for h in load("survey_hashes.json")]
    signed = load("signed_report.json")
    assert got["text"] == signed["signed_text"]
    assert got["signature"] == signed["report"]["signature"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_normalizes_and_hashes_text_as_python_does(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")
    got = page.evaluate(
        """async (cases) => {
            const m = await import('/static/text.js');
            return cases.map((c) => {
              const text = m.normalizeText(c.text);
              return {
                normalized: text,
                hash: m.textHash(text).toString(),
                columns: [0, 1, 2, 3].map((j) => m.sketchColumn(j, text, 1024)),
                bloom: [0, 1, 2].map((c) => [...m.bloomBits(c, text, 2, 32)].sort((a, b) => a - b)),
              };
            });
        }""",
        load("text.json"),
    )
    for case, mine in zip(load("text.json"), got, strict=True):
        expected = {key: case[key] for key in ("normalized", "hash", "columns", "bloom")}
        assert mine == expected, case["text"][:40]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browsers_sha256_is_webcryptos(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")
    same = page.evaluate(
        """async () => {
            const m = await import('/static/text.js');
            const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
            for (const size of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
              const data = new Uint8Array(size).map((_, i) => (i * 37 + size) & 255);
              const web = hex(await crypto.subtle.digest('SHA-256', data));
              if (hex(m.sha256(data)) !== web) return size;
            }
            return true;
        }"""
    )
    assert same is True, f"differs at {same} bytes"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_module_follows_every_delivery_vector(live_server: Any, page: Any) -> None:
    """classifyDelivery in Chromium against delivery.json, which the Python client passes too
    (tests/client/test_delivery_conformance.py)."""
    cases = load("delivery.json")
    page.goto(f"{live_server.url}/s/nothing-here")
    got = page.evaluate(
        """async (cases) => {
            const m = await import('/static/delivery.js');
            return cases.map((c) => {
              const retry = Object.entries(c.headers).find(([k]) => k.toLowerCase() === 'retry-after');
              const d = m.classifyDelivery(c.status, c.content_type, retry ? retry[1] : null,
                                           c.body, c.report_id, c.index, c.now);
              return { outcome: d.outcome, reason: d.reason, retry_after_seconds: d.retryAfter };
            });
        }""",
        cases,
    )
    wrong = [(c["name"], g) for c, g in zip(cases, got, strict=True) if g != c["expected"]]
    assert not wrong
    assert len(got) == len(cases) > 100


@pytest.mark.parametrize("backend", ["sqlite"])
def test_deniable_js_re_exports_every_protocol_module(live_server: Any, page: Any) -> None:
    """The page, the service worker, memo.js and other importers reach every part through
    deniable.js: each export of each module is the entry point's, the very same object."""
    page.goto(f"{live_server.url}/s/nothing-here")
    parts = [name for name in PROTOCOL if name != "deniable.js"]
    got = page.evaluate(
        """async (parts) => {
            const entry = await import('/static/deniable.js');
            const out = {};
            for (const part of parts) {
              const m = await import(`/static/${part}`);
              const names = Object.keys(m);
              out[part] = { count: names.length, not: names.filter((n) => entry[n] !== m[n]) };
            }
            const api = ['randomize', 'canonicalJSON', 'surveyHash'].map((n) => typeof entry[n]);
            return { out, api };
        }""",
        parts,
    )
    assert {part: found["not"] for part, found in got["out"].items()} == {p: [] for p in parts}
    assert all(found["count"] > 0 for found in got["out"].values())
    assert got["api"] == ["function"] * 3  # the API docs/respondents.md names
