"""Split ballot (docs/statistics.md, "Split ballot"): the arm drawn on the device with the exact
share, and the randomized-minus-direct difference whose interval covers in simulation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from deniable.aggregator.stats.ballot import difference_row, split_ballot
from deniable.aggregator.stats.estimate import question_results, z_value
from deniable.shared import Survey
from deniable.shared.ballot import DIRECT, RANDOMIZED, check_arms, draw_arm, parse_share
from deniable.shared.survey import Question


def _binary(epsilon: float = 1.0) -> Question:
    survey = Survey.from_dict(
        {
            "id": "sb",
            "title": "Split ballot",
            "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": epsilon}],
        }
    )
    return survey.questions["q"]


def _direct(question: Question) -> Question:
    plain = question.kind.sent_as_answered(tuple(question.options), None, None, "")
    return Question(question.id, question.text, question.type, tuple(question.options), plain)


@pytest.mark.parametrize("share", [Fraction(1, 4), Fraction(1, 3), Fraction(1, 1000)])
def test_the_arm_share_over_100000_devices(share: Fraction) -> None:
    n = 100_000
    direct = sum(draw_arm(share) == DIRECT for _ in range(n))
    expected = n * float(share)
    sd = math.sqrt(n * float(share) * (1 - float(share)))
    assert abs(direct - expected) <= 4.5 * sd


def test_only_the_two_arms_are_drawn() -> None:
    assert {draw_arm(Fraction(1, 2)) for _ in range(200)} == {DIRECT, RANDOMIZED}


@pytest.mark.parametrize("value", [0, 1, 0.0005, "0.9995", -0.1, "1/0", True, None, "half"])
def test_a_share_outside_the_open_interval_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="direct_share"):
        parse_share(value, field="questions[0].direct_share")


def test_shares_as_decimals_and_fractions() -> None:
    assert parse_share(0.25, field="f") == Fraction(1, 4)
    assert parse_share("1/3", field="f") == Fraction(1, 3)


def test_arms_must_cover_exactly_the_split_questions_asked() -> None:
    assert check_arms({"q": "direct"}, ["q"], ["q", "r"]) == {"q": "direct"}
    assert check_arms(None, ["q"], ["r"]) == {}
    with pytest.raises(ValueError, match=r"arms\.q: missing"):
        check_arms(None, ["q"], ["q"])
    with pytest.raises(ValueError, match=r"arms\.q: missing"):
        check_arms({}, ["q"], ["q"])
    with pytest.raises(ValueError, match=r"arms\.r: not a split-ballot question"):
        check_arms({"q": "direct", "r": "direct"}, ["q"], ["q", "r"])
    with pytest.raises(ValueError, match=r"arms\.q: not in this report"):
        check_arms({"q": "direct"}, ["q"], ["r"])
    with pytest.raises(ValueError, match=r"arms\.q: expected 'direct' or 'randomized'"):
        check_arms({"q": "plain"}, ["q"], ["q"])
    with pytest.raises(ValueError, match="arms: expected an object"):
        check_arms(["q"], ["q"], ["q"])


def test_the_difference_is_randomized_minus_direct_with_summed_variances() -> None:
    row = difference_row(
        "yes", {"estimate": 0.30, "stderr": 0.03}, {"estimate": 0.20, "stderr": 0.04}, 1.96
    )
    assert row["estimate"] == pytest.approx(0.10)
    assert row["stderr"] == pytest.approx(0.05)
    assert row["ci_low"] == pytest.approx(0.10 - 1.96 * 0.05)
    assert row["ci_high"] == pytest.approx(0.10 + 1.96 * 0.05)
    empty = difference_row("yes", {"estimate": None, "stderr": None}, {"estimate": 0.2}, 1.96)
    assert empty["estimate"] is None and empty["ci_low"] is None


def test_the_direct_arm_is_estimated_as_a_plain_question() -> None:
    question = _binary()
    z = z_value(0.95)
    randomized = question_results(question, 400, [250, 150], z)
    out = split_ballot(randomized, _direct(question), 100, [70, 30], z)
    assert out["direct"]["n"] == 100
    yes = out["direct"]["options"][1]
    assert yes["option"] == "yes"
    assert yes["estimate"] == pytest.approx(0.30)
    assert yes["stderr"] == pytest.approx(math.sqrt(0.3 * 0.7 / 100), rel=0.02)
    diff = out["difference"]["options"][1]
    assert diff["estimate"] == pytest.approx(randomized["options"][1]["estimate"] - 0.30)


@pytest.mark.parametrize(("truth_randomized", "truth_direct"), [(0.3, 0.3), (0.3, 0.2)])
def test_the_difference_interval_covers_in_simulation(
    truth_randomized: float, truth_direct: float
) -> None:
    # 2,000 surveys of 2,000 devices, a quarter asked directly; the true difference is what
    # randomized response makes people admit beyond the direct question (0 or 0.1 here).
    question, rng, z = _binary(1.0), np.random.default_rng(20261126), z_value(0.95)
    direct_q, p, q = _direct(question), question.p_star, question.q_star
    runs, covered = 2000, 0
    for _ in range(runs):
        direct = rng.random(2000) < 0.25
        nd = int(direct.sum())
        nr = 2000 - nd
        truth = rng.random(nr) < truth_randomized
        noisy = np.where(truth, rng.random(nr) < p, rng.random(nr) < q)
        yes_r, yes_d = int(noisy.sum()), int((rng.random(nd) < truth_direct).sum())
        entry = question_results(question, nr, [nr - yes_r, yes_r], z)
        row = split_ballot(entry, direct_q, nd, [nd - yes_d, yes_d], z)["difference"]["options"][1]
        covered += row["ci_low"] <= truth_randomized - truth_direct <= row["ci_high"]
    assert 0.93 <= covered / runs <= 0.97


def _split_survey() -> Survey:
    return Survey.from_dict(
        {
            "id": "sbw",
            "title": "Split ballot, weighted",
            "design": {"strata": "region", "population": {"N": 1000, "S": 3000}},
            "questions": [
                {
                    "id": "region",
                    "text": "R?",
                    "type": "categorical",
                    "options": ["N", "S"],
                    "mechanism": "none",
                },
                {"id": "q", "text": "Q?", "type": "binary", "epsilon": 2.0, "direct_share": 0.5},
            ],
        }  # fmt: skip
    )


def _reports(survey: Survey, n: int) -> list[dict[str, object]]:
    from deniable.shared.report import make_report
    from deniable.shared.signing import generate_key

    return [
        make_report(
            survey,
            {"region": "NS"[i % 2], "q": i % 3 == 0},
            generate_key(),
            arms={"q": DIRECT if i % 4 < 1 else RANDOMIZED},
        )
        for i in range(n)
    ]


def test_weighted_results_and_joint_counts_use_the_randomized_arm_only() -> None:
    from deniable.aggregator.stats.analyze import analyze, answer_counts, arm_id

    survey = _split_survey()
    reports = _reports(survey, 200)
    for weighted in (True, False):
        entry = analyze(survey, reports, weighted=weighted)["questions"][1]
        assert entry["direct"]["n"] == 50 and entry["n"] == 150
        assert entry["direct"]["options"][1]["estimate"] == pytest.approx(17 / 50)
    counts = answer_counts(survey, reports, ["region", "q"])
    assert sum(c for (_, q), c in counts.items() if q is None) == 50  # direct: left out
    arms = answer_counts(survey, reports, [arm_id("q")])
    assert arms == {(DIRECT,): 50, (RANDOMIZED,): 150}
    assert sum(answer_counts(survey, reports, ["q"], direct=True).values()) == 200
