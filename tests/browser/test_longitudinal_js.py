"""static/deniable.js's memoized mechanisms (L-GRR, L-OSUE) against the Python protocol's
exact probabilities (tests/conformance/longitudinal.json, scripts/conformance_vectors.py), in
Chromium: the wave's survey hash, and each round's draws (the permanent response from a true
value, the report from a permanent response) distributed as Python's channel."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "conformance" / "longitudinal.json").read_text("utf-8")
)
#: Draws per row of each round's channel.
DRAWS = 20_000
#: Per cell, |share - p| <= Z sd + 1/DRAWS: with about 120 cells a correct sampler fails
#: < 1 in 100,000 (5.5 sd: 4e-8 per cell); a round with a wrong p (0.07 off, the gap between
#: L-GRR's rounds here) is 14 sd away.
Z = 5.5


def within(counts: dict[str, int], probabilities: list[str], outputs: list[Any]) -> list[str]:
    """The cells whose share is further from Python's exact probability than the bound."""
    bad = []
    for output, text in zip(outputs, probabilities, strict=True):
        p = float(Fraction(text))
        share = counts.get(json.dumps(output), 0) / DRAWS
        if abs(share - p) > Z * math.sqrt(p * (1 - p) / DRAWS) + 1 / DRAWS:
            bad.append(f"{output}: {share:.4f} vs {p:.4f}")
    return bad


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_memoized_rounds_are_pythons(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")  # any page of the origin can import the module
    got = page.evaluate(
        """async ([vectors, draws]) => {
            const m = await import('/static/deniable.js');
            const count = (draw) => {
              const counts = {};
              for (let i = 0; i < draws; i += 1) {
                const key = JSON.stringify(draw());
                counts[key] = (counts[key] || 0) + 1;
              }
              return counts;
            };
            const out = { hash: await m.surveyHash(vectors.survey), questions: [] };
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
    problems = []
    for case, mine in zip(VECTORS["questions"], got["questions"], strict=True):
        assert mine["longitudinal"]
        assert mine["once"] in case["outputs"]
        for i, row in enumerate(case["memo"]):
            problems += [
                f"{case['id']} memo of {i}: {b}"
                for b in within(mine["memo"][i], row, case["outputs"])
            ]
        for m, row in enumerate(case["report"]):
            problems += [
                f"{case['id']} report of {case['outputs'][m]}: {b}"
                for b in within(mine["report"][m], row, case["outputs"])
            ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_damaged_memo_is_refused(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")
    refused = page.evaluate(
        """async (survey) => {
            const m = await import('/static/deniable.js');
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
