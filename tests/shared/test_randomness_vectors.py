"""Randomness from a byte source (docs/randomness.md): the Python library draws exactly what the
independent reference (tests/conformance/reference_randomness.py) draws from the same bytes,
on every vector of tests/conformance/randomness.json and on many seeded byte strings; the
browser module is held to the same file (tests/browser/test_randomness_vectors_js.py)."""

from __future__ import annotations

import importlib.util
import json
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from deniable.shared import Survey
from deniable.shared.probability import Coin, randbelow

FOLDER = Path(__file__).resolve().parents[1] / "conformance"
VECTORS = json.loads((FOLDER / "randomness.json").read_text("utf-8"))


def reference() -> Any:
    """tests/conformance/reference_randomness.py as a module (it is no package)."""
    spec = importlib.util.spec_from_file_location(
        "reference_randomness", FOLDER / "reference_randomness.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Exhausted(Exception):
    """The draw wanted more bytes than it was given."""


class Reader:
    """A byte source over fixed bytes that refuses to read past them."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def __call__(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Exhausted(f"read past the {len(self.data)} bytes given")
        self.pos += n
        return self.data[self.pos - n : self.pos]


SURVEYS = {name: Survey.from_dict(doc) for name, doc in VECTORS["surveys"].items()}


def draw(survey_name: str, qid: str | None, kind: str, value: Any, source: Reader) -> Any:
    """deniable's draw of one vector: the public API a respondent's device calls."""
    survey = SURVEYS[survey_name]
    if kind == "uniform":
        return randbelow(value, source)
    if kind == "coin":
        return Coin(Fraction(value)).flip(source)
    if kind == "arms":
        return survey.draw_arms(value, random_bytes=source)
    question = survey.questions[qid]  # type: ignore[index]
    if kind == "answer":
        return question.randomize(value, random_bytes=source)
    chain = question.longitudinal
    assert chain is not None
    if kind == "permanent":
        return chain.permanent(question.truth_of(value), random_bytes=source)
    assert kind == "wave"
    return chain.instantaneous(value, random_bytes=source)


def test_the_vector_file_is_what_the_reference_writes() -> None:
    assert VECTORS == json.loads(json.dumps(reference().vectors()))


def test_the_vectors_surveys_are_resolved_as_deniable_resolves_them() -> None:
    """The parameters the reference read are those deniable publishes for these surveys."""
    for name, doc in VECTORS["surveys"].items():
        assert SURVEYS[name].to_dict() == doc


def test_every_mechanism_and_type_has_vectors_reaching_each_path() -> None:
    covered = {(v["survey"], v["question"]) for v in VECTORS["vectors"]}
    for name, doc in VECTORS["surveys"].items():
        for q in doc["questions"]:
            assert (name, q["id"]) in covered or name == "ballot", q["id"]
    kinds = {v["draw"] for v in VECTORS["vectors"]}
    assert kinds == {"uniform", "coin", "answer", "permanent", "wave", "arms"}
    rows = {v["answer"][1] for v in VECTORS["vectors"] if v["question"] == "hcms"}
    columns = {v["answer"][0] for v in VECTORS["vectors"] if v["question"] == "hcms"}
    assert rows == set(range(8)) and columns == {0, 1, 2}  # hcms's row and hash both drawn
    # Rejection sampling: uniform(3) reads a rejected 0b11 before its answer; a coin's byte
    # equal to its probability's first digit reads on.
    assert any(
        v["draw"] == "uniform" and v["value"] == 3 and len(v["bytes"]) > 2
        for v in VECTORS["vectors"]
    )
    assert any(v["draw"] == "coin" and len(v["bytes"]) > 2 for v in VECTORS["vectors"])


@pytest.mark.parametrize(
    "vector",
    VECTORS["vectors"],
    ids=[f"{i}-{v['question'] or v['draw']}" for i, v in enumerate(VECTORS["vectors"])],
)
def test_python_draws_each_vectors_answer_from_exactly_its_bytes(vector: dict[str, Any]) -> None:
    source = Reader(bytes.fromhex(vector["bytes"]))
    got = draw(vector["survey"], vector["question"], vector["draw"], vector["value"], source)
    assert got == vector["answer"]
    assert source.pos == len(source.data)  # every byte given was read, no more


def seeded_cases(seed: int, per_question: int) -> list[dict[str, Any]]:
    """Random true values and byte strings over every question of the vectors' surveys."""
    rng = random.Random(seed)
    cases = []
    words = ["Lagos", "kano", "Port Harcourt", "jos", "ibadan", "ÉCOLE  Ĳ"]
    for name, doc in VECTORS["surveys"].items():
        for q in doc["questions"]:
            for _ in range(per_question):
                if q["type"] == "integer":
                    value: Any = rng.randint(q["min"], q["max"])
                elif q["type"] == "multi":
                    value = [o for o in q["options"] if rng.random() < 0.5]
                elif q["type"] == "text":
                    value = rng.choice(words)
                else:
                    value = rng.choice(q["options"])
                data = rng.randbytes(rng.choice([1, 2, 3, 40, 4096]))
                cases.append({"survey": name, "question": q["id"], "value": value, "bytes": data})
                if "longitudinal" in q:
                    memo = draw(name, q["id"], "permanent", value, Reader(rng.randbytes(200)))
                    cases.append({**cases[-1], "draw": "wave", "value": memo})
                    cases.append({**cases[-2], "draw": "permanent"})
        split = [q["id"] for q in doc["questions"] if "direct_share" in q]
        if split:
            for _ in range(per_question):
                asked = [qid for qid in split if rng.random() < 0.7]
                data = rng.randbytes(40)
                cases.append({"survey": name, "question": None, "draw": "arms", "value": asked})
                cases[-1]["bytes"] = data
    for case in cases:
        case.setdefault("draw", "answer")
    return cases


def outcome(fn: Any, data: bytes) -> tuple[Any, int]:
    """(answer, bytes read), or ("short", 0) when the bytes run out first."""
    source = Reader(data)
    try:
        return fn(source), source.pos
    except Exhausted:
        return "short", 0


def test_python_and_the_reference_agree_on_many_seeded_byte_strings() -> None:
    ref = reference()
    cases = seeded_cases(20261128, 40)
    agreed = 0
    for case in cases:
        survey = VECTORS["surveys"][case["survey"]]
        question = next((q for q in survey["questions"] if q["id"] == case["question"]), None)

        def by_reference(
            source: Reader, case: dict[str, Any] = case, question: Any = question, survey=survey
        ) -> Any:
            stream = ref.Stream("", 0)
            stream.next_byte = lambda: source(1)[0]
            return ref.DRAWS[case["draw"]](survey, question, case["value"], stream)

        def by_deniable(source: Reader, case: dict[str, Any] = case) -> Any:
            return draw(case["survey"], case["question"], case["draw"], case["value"], source)

        mine, theirs = outcome(by_deniable, case["bytes"]), outcome(by_reference, case["bytes"])
        assert mine == theirs, case
        agreed += mine != ("short", 0)
    assert agreed > len(cases) // 2  # most cases had bytes enough to finish
