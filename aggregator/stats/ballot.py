"""Split-ballot comparison: the randomized-response estimate beside the direct one.

A split-ballot question is asked directly to a random share of devices and randomized for the
rest (docs/statistics.md, "Split ballot"). The arms are independent samples (each device draws its
arm with the secure source), so the difference's variance is the sum of the two arms' variances
and its interval is the normal one at the results' level. The direct arm's estimate is a plain
question's, computed by the same code as every plain question (estimate.question_results).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from deniable.aggregator.stats.estimate import question_results
from deniable.shared.survey import Question

_ROW = ("option", "estimate", "stderr", "ci_low", "ci_high")


def _direct_row(row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in _ROW}


def difference_row(
    label: str, randomized: Mapping[str, Any], direct: Mapping[str, Any], z: float
) -> dict[str, Any]:
    """Randomized minus direct for one option, with its standard error and normal interval
    (null when either arm has no estimate or no standard error yet)."""
    a, b = randomized.get("estimate"), direct.get("estimate")
    sa, sb = randomized.get("stderr"), direct.get("stderr")
    if a is None or b is None:
        return {"option": label, "estimate": None, "stderr": None, "ci_low": None, "ci_high": None}
    estimate = float(a) - float(b)
    if sa is None or sb is None:
        return {
            "option": label,
            "estimate": estimate,
            "stderr": None,
            "ci_low": None,
            "ci_high": None,
        }
    stderr = math.hypot(float(sa), float(sb))
    return {
        "option": label,
        "estimate": estimate,
        "stderr": stderr,
        "ci_low": estimate - z * stderr,
        "ci_high": estimate + z * stderr,
    }


def split_ballot(
    randomized: Mapping[str, Any],
    direct_question: Question,
    direct_n: int,
    direct_counts: Sequence[int],
    z: float,
) -> dict[str, Any]:
    """The `direct` and `difference` parts of a split-ballot question's results entry.

    `randomized` is the question's entry from the randomized arm's reports only; the direct
    arm's reports were counted as a plain question's (`direct_counts`, `direct_n`)."""
    direct = question_results(direct_question, direct_n, direct_counts, z)
    rows = {row["option"]: row for row in direct["options"]}
    return {
        "direct": {
            "n": direct_n,
            "options": [_direct_row(row) for row in direct["options"]],
        },
        "difference": {
            "options": [
                difference_row(row["option"], row, rows[row["option"]], z)
                for row in randomized["options"]
            ]
        },
    }
