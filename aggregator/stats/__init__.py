"""Statistics: estimates with intervals from tallies, offline re-analysis of exported reports,
survey planning and simulated respondents.

Pure computation over tallies and report dicts (numpy); the mechanism math itself lives once in
`deniable.shared`.
"""

from deniable.aggregator.stats.analyze import analyze
from deniable.aggregator.stats.estimate import results_csv, results_document
from deniable.aggregator.stats.joint import AnalysisError, breakdown, crosstab
from deniable.aggregator.stats.regress import regress
from deniable.aggregator.stats.results import (
    Breakdown,
    Crosstab,
    QuestionResults,
    RegressionResults,
    SurveyResults,
)
from deniable.aggregator.stats.series_results import SeriesResults
from deniable.aggregator.stats.waves import series_results

__all__ = [
    "AnalysisError",
    "Breakdown",
    "Crosstab",
    "QuestionResults",
    "RegressionResults",
    "SeriesResults",
    "SurveyResults",
    "analyze",
    "breakdown",
    "crosstab",
    "regress",
    "results_csv",
    "results_document",
    "series_results",
]
