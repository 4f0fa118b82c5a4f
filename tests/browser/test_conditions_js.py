"""static/conditions.js in Chromium against the skip-logic vectors (tests/conformance/
conditions.json): the same grammar, refusal categories, results and questions asked as
deniable.shared.conditions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deniable.shared.questions import QUESTION_TYPES

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "conformance" / "conditions.json").read_text("utf-8")
)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_module_matches_every_condition_vector(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")  # any page of the origin can import it
    got = page.evaluate(
        """async (v) => {
            const m = await import('/static/conditions.js');
            const kinds = await import('/static/mechanisms.js');
            const category = (f) => {
              try { f(); return null; } catch (e) {
                if (!(e instanceof m.ConditionError)) return `not a ConditionError: ${e}`;
                return e.category;
              }
            };
            return {
              parse: v.parse.map((c) => category(() => m.parseCondition(c.condition))),
              check: v.check.map((c) => category(
                () => m.checkCondition(m.parseCondition(c.condition), v.check_survey, c.on))),
              evaluate: v.evaluate.map((c) => m.evaluate(m.parseCondition(c.condition), c.values)),
              evaluateSets: v.evaluate.map((c) => m.evaluate(
                m.parseCondition(c.condition),
                new Map(Object.entries(c.values).map(
                  ([k, x]) => [k, Array.isArray(x) ? new Set(x) : x])))),
              plain: v.relevant.map((c) => m.relevantQuestions(v.relevant_survey, c.plain)),
              wire: v.relevant.map((c) => m.relevantQuestions(v.relevant_survey, c.wire)),
              kinds: Object.fromEntries(v.types.map((type) => [type, kinds.conditionKind({ type })])),
            };
        }""",
        {**VECTORS, "types": list(QUESTION_TYPES)},
    )
    assert got["parse"] == [c["error"] for c in VECTORS["parse"]]
    assert got["check"] == [c["error"] for c in VECTORS["check"]]
    assert got["evaluate"] == [c["result"] for c in VECTORS["evaluate"]]
    assert got["evaluateSets"] == [c["result"] for c in VECTORS["evaluate"]]
    expected = [c["relevant"] for c in VECTORS["relevant"]]
    assert got["plain"] == expected and got["wire"] == expected
    assert got["kinds"] == {name: kind.condition_kind for name, kind in QUESTION_TYPES.items()}


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_refuses_hostile_text_without_hanging(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")
    got = page.evaluate(
        """async () => {
            const m = await import('/static/conditions.js');
            const category = (text) => {
              try { m.parseCondition(text); return null; } catch (e) { return e.category; }
            };
            return [
              category('('.repeat(5000000)),
              category('not '.repeat(200) + "a == 'b'"),
              category("constructor == 'x'"),
              category("__proto__ == 'x'"),
              m.evaluate(m.parseCondition("constructor != 'x'"), {}),
              m.evaluate(m.parseCondition("constructor == 'x'"), {}),
              category(42),
            ];
        }"""
    )
    assert got == ["too-long", "too-deep", None, "syntax", True, False, "syntax"]
