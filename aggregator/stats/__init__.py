"""Statistics: estimates with intervals from tallies, offline re-analysis of exported reports,
survey planning and simulated respondents.

Pure computation over tallies and report dicts (numpy); the mechanism math itself lives once in
`deniable.shared`.
"""

from deniable.aggregator.stats.analyze import analyze
from deniable.aggregator.stats.estimate import results_csv, results_document
from deniable.aggregator.stats.joint import AnalysisError, breakdown, crosstab
from deniable.aggregator.stats.regress import regress

__all__ = [
    "AnalysisError",
    "analyze",
    "breakdown",
    "crosstab",
    "regress",
    "results_csv",
    "results_document",
]
