"""static/deniable.js against the conformance vectors in Chromium: canonical JSON, survey
hashes and an Ed25519 signature byte for byte as the Python protocol makes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FOLDER = Path(__file__).resolve().parents[1] / "conformance"


def load(name: str) -> Any:
    return json.loads((FOLDER / name).read_text("utf-8"))


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_module_matches_every_vector(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")  # any page of the origin can import the module
    got = page.evaluate(
        """async ([canonical, hashes, signed]) => {
            const m = await import('/static/deniable.js');
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
            return { texts, digests, text, signature: await m.signText(key, text) };
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
