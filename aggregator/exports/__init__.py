"""Exports of a survey's answers for R, Stata and SPSS (docs/analysis.md, "Exports for R, Stata
and SPSS"): one service function per export, called alike by the API, the dashboard and the
CLI, each checking the one rule of access.py ("export") and logging itself (audit.py).

- `answers_csv`: one row per report, a column per question id, the wire-encoded noisy answers
  and the plain answers (the shape `--answers FILE.csv` reads), streamed (memory flat).
- `stat_file`: the same rows as Stata .dta or SPSS .sav through pyreadstat, with variable
  labels from the question texts (a randomized question's starting "RANDOMIZED (noisy, not the
  true answer): "), value labels from the options ("noisy yes" for a randomized one), a 0/1
  column per option for a question answered with a mark per option (select-all, oue), and
  the randomization parameters in the file's notes. Built in memory, so refused above
  MAX_EXPORT_CELLS.
- `analysis_script`: an R script that reads answers.csv and fits any formula regress accepts
  with R's rr (rrreg, or rrreg.predictor for a randomized predictor), the design's p, p0 and
  p1 filled in; without a formula, each randomized yes/no question's share. The formula is
  data: read by regress's grammar, written out again from its syntax tree into an R string
  literal escaped by `r_string`.

A question a report skipped (skip logic) is a missing value: an empty CSV cell, a system
missing number or an empty string.
"""

from deniable.aggregator.exports.rscript import (
    RModel,
    analysis_script,
    design_of,
    r_model,
    r_script,
    r_string,
    r_terms,
)
from deniable.aggregator.exports.tables import (
    FORMATS,
    MAX_EXPORT_CELLS,
    NOISY,
    RANDOMIZED_LABEL,
    Column,
    answers_csv,
    columns,
    csv_text,
    notes,
    stat_file,
    variable_names,
    write_stat_file,
)

__all__ = [
    "FORMATS",
    "MAX_EXPORT_CELLS",
    "NOISY",
    "RANDOMIZED_LABEL",
    "Column",
    "RModel",
    "analysis_script",
    "answers_csv",
    "columns",
    "csv_text",
    "design_of",
    "notes",
    "r_model",
    "r_script",
    "r_string",
    "r_terms",
    "stat_file",
    "variable_names",
    "write_stat_file",
]
