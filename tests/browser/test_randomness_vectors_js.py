"""The page's probability.js and mechanisms.js draw from a byte source as docs/randomness.md
says, in Chromium: every vector of tests/conformance/randomness.json (written by an
independent reference), and the same answers as the Python library on many seeded byte
strings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.shared.test_randomness_vectors import VECTORS, Exhausted, Reader, draw, seeded_cases
from tests.static_host import StaticHost

STATIC = Path(__file__).resolve().parents[2] / "aggregator" / "web" / "static"

#: Runs each case in the page: (answer, bytes read), or ["short", 0] when the bytes run out.
RUN = """async ([surveys, cases]) => {
    const p = await import('/probability.js');
    const m = await import('/mechanisms.js');
    return cases.map((c) => {
      const data = Uint8Array.from(c.bytes.match(/../g) || [], (b) => parseInt(b, 16));
      let pos = 0;
      const randomBytes = (n) => {
        if (pos + n > data.length) throw new Error('short');
        pos += n;
        return data.slice(pos - n, pos);
      };
      const survey = surveys[c.survey];
      const q = survey.questions.find((x) => x.id === c.question);
      const options = { randomBytes };
      try {
        let got;
        if (c.draw === 'uniform') got = p.randomBelow(c.value, randomBytes);
        else if (c.draw === 'coin') got = p.flip(p.parseProbability(c.value), randomBytes);
        else if (c.draw === 'arms') {
          // The page draws every split-ballot question's arm: a survey of those asked.
          const asked = survey.questions.filter((x) => c.value.includes(x.id));
          got = m.drawArms({ ...survey, questions: asked }, options);
        } else if (c.draw === 'answer') got = m.randomize(q, c.value, options);
        else if (c.draw === 'permanent') got = m.permanentResponse(q, m.trueIndex(q, c.value), options);
        else got = m.instantaneousResponse(q, c.value, options);
        return [got, pos];
      } catch (error) {
        if (error.message === 'short') return ['short', 0];
        return ['error', error.message];
      }
    });
}"""


@pytest.fixture(scope="module")
def static_host() -> Iterator[StaticHost]:
    """The static files served as the aggregator serves them (any origin can import them)."""
    host = StaticHost(STATIC)
    yield host
    host.close()


def run(page: Any, host: StaticHost, cases: list[dict[str, Any]]) -> list[Any]:
    page.goto(f"{host.url}/respond.css")  # any page of the origin can import the module
    return page.evaluate(RUN, [VECTORS["surveys"], cases])


def test_the_browser_draws_each_vectors_answer_from_exactly_its_bytes(
    page: Any, static_host: StaticHost
) -> None:
    vectors = VECTORS["vectors"]
    got = run(page, static_host, vectors)
    wrong = [
        (v["question"] or v["draw"], v["value"], v["bytes"], v["answer"], g)
        for v, g in zip(vectors, got, strict=True)
        if g != [v["answer"], len(v["bytes"]) // 2]
    ]
    assert not wrong, wrong[:5]
    assert len(got) == len(vectors) > 150


def test_the_browser_and_python_agree_on_many_seeded_byte_strings(
    page: Any, static_host: StaticHost
) -> None:
    cases = seeded_cases(1128, 25)
    expected = []
    for case in cases:
        source = Reader(case["bytes"])
        try:
            answer = draw(case["survey"], case["question"], case["draw"], case["value"], source)
            expected.append([answer, source.pos])
        except Exhausted:
            expected.append(["short", 0])
    sent = [{**case, "bytes": case["bytes"].hex()} for case in cases]
    got = run(page, static_host, sent)
    wrong = [(c, e, g) for c, e, g in zip(sent, expected, got, strict=True) if e != g]
    assert not wrong, wrong[:3]
    assert sum(e[0] != "short" for e in expected) > len(cases) // 2


#: Probability texts at the grammar's edges: both languages accept the same ones, as the same
#: fraction, and refuse the rest (a sign, an exponent, a space, another script's digits, 19
#: digits, over 1, a zero denominator).
PROBABILITY_TEXTS = [
    "0.8", ".5", "1", "0", "1.", "2/3", "0/1", "1/1", " 0.25 ", "0." + "9" * 18,
    "0." + "9" * 19, "+0.5", "-0", "1e-3", "0.5 ", "1 / 3", "٠.٥", "2", "3/2", "1/0", "", ".",
    "0x1", "1_0", "1" * 19 + "/" + "1" * 19,
    # Surrounded by what only one language's strip dropped (U+FEFF: String.trim; U+001C and
    # U+0085: str.strip) or both (U+3000): each was read by one and refused by the other.
    "\ufeff0.5", "0.5\ufeff", "\x1c0.5", "\x850.5", "\u30000.5", "\t0.5\n",
]  # fmt: skip


def test_the_browser_and_python_read_probabilities_by_one_grammar(
    page: Any, static_host: StaticHost
) -> None:
    from deniable.shared.probability import parse_probability

    expected: list[Any] = []
    for text in PROBABILITY_TEXTS:
        try:
            fraction = parse_probability(text, field="p")
            expected.append([str(fraction.numerator), str(fraction.denominator)])
        except ValueError:
            expected.append(None)
    page.goto(f"{static_host.url}/respond.css")
    got = page.evaluate(
        """async (texts) => {
            const p = await import('/probability.js');
            const gcd = (a, b) => (b === 0n ? a : gcd(b, a % b));
            return texts.map((t) => {
              try {
                const { num, den } = p.parseProbability(t);
                const g = gcd(num, den) || 1n;
                return [String(num / g), String(den / g)];
              } catch (e) { return null; }
            });
        }""",
        PROBABILITY_TEXTS,
    )
    assert got == expected
    assert expected.count(None) == 19  # each refusal above, in both languages
