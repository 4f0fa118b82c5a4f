"""static/mechanisms.js's memoized mechanisms (L-GRR, L-OSUE) in Chromium, a smoke test: the
wave's survey hash as Python's (tests/conformance/longitudinal.json), and each round draws
answers of the right shape with the secure source. Each round's draws are pinned byte for
byte by tests/browser/test_randomness_vectors_js.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "conformance" / "longitudinal.json").read_text("utf-8")
)
#: Draws of each round per true value or memo (a smoke test: the outputs' shape).
DRAWS = 200


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_memoized_rounds_draw_pythons_outputs(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")  # any page of the origin can import the module
    got = page.evaluate(
        """async ([vectors, draws]) => {
            const m = await import('/static/mechanisms.js');
            const { surveyHash } = await import('/static/canonical.js');
            const count = (draw) => {
              const counts = {};
              for (let i = 0; i < draws; i += 1) {
                const key = JSON.stringify(draw());
                counts[key] = (counts[key] || 0) + 1;
              }
              return counts;
            };
            const out = { hash: await surveyHash(vectors.survey), questions: [] };
            for (const case_ of vectors.questions) {
              const q = vectors.survey.questions.find((x) => x.id === case_.id);
              out.questions.push({
                longitudinal: m.isLongitudinal(q),
                memo: case_.memo.map((_, i) => count(() => m.permanentResponse(q, i))),
                report: case_.outputs.map((memo) => count(() => m.instantaneousResponse(q, memo))),
                once: m.randomize(q, 0),
              });
            }
            return out;
        }""",
        [VECTORS, DRAWS],
    )
    assert got["hash"] == VECTORS["hash"]
    for case, mine in zip(VECTORS["questions"], got["questions"], strict=True):
        assert mine["longitudinal"]
        assert mine["once"] in case["outputs"]
        outputs = {json.dumps(output) for output in case["outputs"]}
        for counts in mine["memo"] + mine["report"]:
            assert set(counts) <= outputs and sum(counts.values()) == DRAWS
            assert len(counts) > 1  # fresh coins: one output 200 times is below 1e-8


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_damaged_memo_is_refused(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")
    refused = page.evaluate(
        """async (survey) => {
            const m = await import('/static/mechanisms.js');
            const [smokes, , mood] = survey.questions;
            const out = [];
            for (const [q, memo] of [[smokes, 2], [smokes, '1'], [mood, '0101'], [mood, 1]]) {
              try { m.instantaneousResponse(q, memo); out.push(false); }
              catch (error) { out.push(error.message.includes('damaged')); }
            }
            return out;
        }""",
        VECTORS["survey"],
    )
    assert refused == [True, True, True, True]
