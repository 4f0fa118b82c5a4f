"""A worked example: who is more likely to have had contact with armed groups?

A survey asks the sensitive question by randomized response and three plain covariates.
Simulated respondents answer from a known logistic model; each randomizes on "its device"
and signs its report exactly as the client does. The script writes the survey and the signed
reports, so the regression can be run by the CLI as a researcher would:

    python examples/regression.py [--respondents 10000] [--out DIR]
    deniable-aggregator regress contact "contact ~ region + adult + school" \\
        --survey DIR/contact-survey.json --reports DIR/contact-reports.jsonl

It prints the true coefficients beside the estimates.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from deniable.aggregator import regress
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

SURVEY = {
    "id": "contact",
    "title": "Contact with armed groups",
    "questions": [
        {
            "id": "contact",
            "text": "Have you ever had contact with an armed group?",
            "type": "binary",
            "epsilon": 1.5,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "none",
        },
        {"id": "adult", "text": "Over 25?", "type": "binary", "mechanism": "none"},
        {
            "id": "school",
            "text": "Years of schooling?",
            "type": "integer",
            "min": 0,
            "max": 20,
            "mechanism": "none",
        },
    ],
}
FORMULA = "contact ~ region + adult + school"
#: The true model: intercept, region[south], region[east], adult, years of schooling.
TRUTH = {
    "Intercept": -1.0,
    "region[T.south]": 0.8,
    "region[T.east]": -0.5,
    "adult": 0.6,
    "school": -0.05,
}


def respondents(n: int, seed: int) -> list[dict[str, object]]:
    """True answers drawn from the model (covariates at random, the outcome logistic)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        region = rng.choice(["north", "south", "east"])
        adult = rng.random() < 0.6
        school = rng.randint(0, 20)
        eta = (
            TRUTH["Intercept"]
            + TRUTH["region[T.south]"] * (region == "south")
            + TRUTH["region[T.east]"] * (region == "east")
            + TRUTH["adult"] * adult
            + TRUTH["school"] * school
        )
        contact = rng.random() < 1 / (1 + math.exp(-eta))
        out.append({"contact": contact, "region": region, "adult": adult, "school": school})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--respondents", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", type=Path, default=Path("."))
    args = ap.parse_args()
    survey = Survey.from_dict(SURVEY)
    reports = [
        make_report(survey, t, generate_key()) for t in respondents(args.respondents, args.seed)
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "contact-survey.json").write_text(json.dumps(SURVEY, indent=2) + "\n")
    with (args.out / "contact-reports.jsonl").open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in reports)
    fit = regress(survey, reports, FORMULA)
    print(f"{FORMULA}: {fit['n']} signed reports, converged: {fit['converged']}")
    print(f"  {'term':<18} {'truth':>7} {'estimate':>9} {'stderr':>8}  95% interval      covers")
    for row in fit["coefficients"]:
        true = TRUTH[row["term"]]
        covers = "yes" if row["ci_low"] <= true <= row["ci_high"] else "no"
        print(
            f"  {row['term']:<18} {true:>7.2f} {row['estimate']:>9.3f} {row['stderr']:>8.3f}  "
            f"[{row['ci_low']:6.3f}, {row['ci_high']:6.3f}]  {covers}"
        )


if __name__ == "__main__":
    main()
