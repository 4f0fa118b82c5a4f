"""Simulated respondents: known true answers, real mechanisms, real signed reports.

Each simulated respondent draws true answers from a distribution per question and randomizes
them with the survey's own mechanisms (`make_report`, exact coins from `secrets`) under a
fresh Ed25519 key; `comparison` sets the estimates beside the truth. The true answers are
drawn with a seedable generator: they stand for a population, not for anyone's secret.
Pure: posting the reports over HTTP is the CLI's (aggregator/cli/simulate_http.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deniable.shared import DeniableError, Survey, make_report
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.questions import zipf
from deniable.shared.survey import Question

#: Per question: option probabilities (binary, categorical); each option's probability of
#: being selected (multi); or value -> probability (integer).
Truth = dict[str, Any]


class SimulationError(DeniableError):
    """The simulation cannot run as asked; the message says why."""


def default_truth(survey: Survey) -> Truth:
    """A fixed skewed truth: 30% yes for binary questions, weights k, k-1, ..., 1 over the
    options (categorical) or over five points from min to max (integer), and option i of a
    multi question selected with probability 0.4 / (i + 1)."""
    return {qid: q.kind.default_truth(q) for qid, q in survey.questions.items()}


def _text_truth(q: Question, given: dict[str, object]) -> dict[str, float]:
    """answer -> share over a text question's answers: {"zipf": s, "words": [...]}, or shares
    by answer (normalized; they must add up to 1)."""
    if "zipf" in given or "words" in given:
        exponent, words = given.get("zipf", 1.1), given.get("words")
        if isinstance(exponent, bool) or not isinstance(exponent, int | float) or exponent < 0:
            raise SimulationError(f"truth.{q.id}.zipf: expected an exponent >= 0, got {exponent!r}")
        if not isinstance(words, list) or not words:
            raise SimulationError(f"truth.{q.id}.words: expected a list of answers, got {words!r}")
        given = dict(zipf([str(w) for w in words], float(exponent)))
    truth: dict[str, float] = {}
    for label, value in given.items():
        try:
            text = q.text_of(label)
        except DeniableError:
            raise SimulationError(f"truth.{q.id}: {label!r} is not an answer") from None
        truth[text] = truth.get(text, 0.0) + _probability(q, label, value)
    total = math.fsum(truth.values())
    if abs(total - 1) > 1e-6:
        raise SimulationError(f"truth.{q.id}: the shares add up to {total:g}, not 1")
    return truth


def _probability(q: Question, label: object, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise SimulationError(
            f"truth.{q.id}.{label}: expected a probability from 0 to 1, got {value!r}"
        )
    return float(value)


def _integer_truth(q: Question, given: dict[str, object]) -> dict[int, float]:
    """value -> probability over an integer question's range; they must add up to 1."""
    truth: dict[int, float] = {}
    for label, value in given.items():
        try:
            number = q.normalize(label)
        except DeniableError:
            raise SimulationError(
                f"truth.{q.id}: {label!r} is not a whole number from {q.low} to {q.high}"
            ) from None
        truth[int(number)] = truth.get(int(number), 0.0) + _probability(q, label, value)  # type: ignore[arg-type]
    total = math.fsum(truth.values())
    if abs(total - 1) > 1e-6:
        raise SimulationError(f"truth.{q.id}: the probabilities add up to {total:g}, not 1")
    return truth


def _multi_truth(q: Question, given: dict[str, object]) -> list[float]:
    """Each option's probability of being selected (independently); an option not named is
    never selected."""
    probs = [0.0] * q.k
    for label, value in given.items():
        try:
            index = q.index_of(label)
        except DeniableError:
            raise SimulationError(
                f"truth.{q.id}: no option {label!r}; options are {', '.join(q.options)}"
            ) from None
        probs[index] = _probability(q, label, value)
    return probs


def _question_truth(q: Question, given: object) -> Any:
    if not isinstance(given, dict) or not given:
        examples = {"mean": '{"0": 0.5, "3": 0.5}', "marks": '{"cannabis": 0.3}'}
        example = examples.get(q.kind.rows, '{"yes": 0.3}')
        kind = "value" if q.kind.rows == "mean" else "option"
        raise SimulationError(
            f"truth.{q.id}: expected an object of {kind}: probability, like {example}"
        )
    shaped = {"mean": _integer_truth, "candidates": _text_truth, "marks": _multi_truth}
    if q.kind.rows in shaped:
        return shaped[q.kind.rows](q, given)
    probs: list[float | None] = [None] * q.k
    for label, value in given.items():
        try:
            index = q.index_of(label)
        except DeniableError:
            allowed = ", ".join(q.options)
            raise SimulationError(
                f"truth.{q.id}: no option {label!r}; options are {allowed}"
            ) from None
        probs[index] = _probability(q, label, value)
    given_total = math.fsum(p for p in probs if p is not None)
    missing = [i for i, p in enumerate(probs) if p is None]
    if given_total > 1 + 1e-9:
        raise SimulationError(
            f"truth.{q.id}: the probabilities add up to {given_total:g}, more than 1"
        )
    if not missing and abs(given_total - 1) > 1e-6:
        raise SimulationError(f"truth.{q.id}: the probabilities add up to {given_total:g}, not 1")
    rest = max(0.0, 1.0 - given_total) / len(missing) if missing else 0.0
    return [rest if p is None else p for p in probs]


def parse_truth(survey: Survey, text: str | None) -> Truth:
    """The truth from JSON text or a JSON file; questions not named get the default truth."""
    truth = default_truth(survey)
    if text is None:
        return truth
    raw = text
    if not text.lstrip().startswith("{"):
        try:
            raw = Path(text).read_text(encoding="utf-8")
        except OSError as exc:
            raise SimulationError(
                f"--truth: {text!r} is neither JSON nor a readable file ({exc.strerror})"
            ) from None
    try:
        doc = parse_json(raw)
    except JSONTextError as exc:
        raise SimulationError(f"--truth: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise SimulationError("--truth: expected an object of question id: {option: probability}")
    for qid, given in doc.items():
        if qid not in survey.questions:
            raise SimulationError(f"truth.{qid}: no such question in survey {survey.id!r}")
        truth[qid] = _question_truth(survey.questions[qid], given)
    return truth


def draw_answers(survey: Survey, truth: Truth, rng: random.Random) -> dict[str, object]:
    """One respondent's true answers (option indices, numbers, sets of indices) drawn from the
    truth, to the questions the survey asks them: with skip logic, those its plain answers
    make relevant (`Survey.relevant`), as a device asks them."""
    answers: dict[str, object] = {}
    for qid, q in survey.questions.items():
        answers[qid] = q.kind.draw(q, truth[qid], rng)
    if not any(getattr(q, "relevant", None) for q in survey.questions.values()):
        return answers
    plain = {qid: answers[qid] for qid, q in survey.questions.items() if q.plain}
    return {qid: answers[qid] for qid in survey.relevant(plain)}


def true_value(question: Question, given: Any, option: int) -> float:
    """The population value a results row estimates: an option's share, or the true mean."""
    return question.kind.true_value(given, option)


def truth_candidates(survey: Survey, truth: Truth) -> list[str]:
    """The answers of text questions' truths that the survey does not list as candidates, to
    ask the results for (at most 50, the most frequent first)."""
    extra: list[str] = []
    for qid, q in survey.questions.items():
        if q.kind.rows == "candidates":
            ranked = sorted(truth[qid], key=lambda w: -truth[qid][w])
            extra += [w for w in ranked if w not in q.candidates and w not in extra]
    return extra[:50]


def respondent_reports(
    survey: Survey, truth: Truth, keys: Sequence[Any], rng: random.Random
) -> list[dict[str, Any]]:
    """One signed report per key (a simulated respondent each), in order."""
    return [make_report(survey, draw_answers(survey, truth, rng), key) for key in keys]


def comparison(survey: Survey, truth: Truth, results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per option: truth beside the estimate and its interval, and whether the interval holds it."""
    rows = []
    for entry in results["questions"]:
        question = survey.questions[entry["id"]]
        for i, option in enumerate(entry["options"]):
            if question.kind.rows == "candidates":  # rows are ranked
                t = truth[entry["id"]].get(option["option"], 0.0)
            else:
                t = true_value(question, truth[entry["id"]], i)
            rows.append(
                {
                    "question": entry["id"],
                    "option": option["option"],
                    "truth": t,
                    "estimate": option["estimate"],
                    "ci_low": option["ci_low"],
                    "ci_high": option["ci_high"],
                    "covered": option["ci_low"] <= t <= option["ci_high"],
                }
            )
    return rows


def format_comparison(rows: Sequence[Mapping[str, Any]], confidence: float) -> str:
    """The comparison as a text table."""
    qw = max([8, *(len(r["question"]) for r in rows)])
    ow = max([6, *(len(str(r["option"])) for r in rows)])
    head = f"{'question':<{qw}}  {'option':<{ow}}  {'truth':>7}  {'estimate':>8}  {f'{confidence:.0%} interval':>18}  "
    lines = [head + "holds truth"]
    for r in rows:
        est = "—" if r["estimate"] is None else f"{r['estimate']:.4f}"
        interval = f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
        lines.append(
            f"{r['question']:<{qw}}  {str(r['option']):<{ow}}  {r['truth']:>7.4f}  {est:>8}  "
            f"{interval:>18}  {'yes' if r['covered'] else 'NO'}"
        )
    held = sum(r["covered"] for r in rows)
    lines.append(f"{held} of {len(rows)} intervals hold the truth")
    return "\n".join(lines)
