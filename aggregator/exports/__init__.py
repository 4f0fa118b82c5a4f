"""Exports of a survey's answers for R, Stata and SPSS (docs/analysis.md, "Exports for R, Stata
and SPSS"): one service function per export, called alike by the API, the dashboard and the
CLI, each checking the one rule of access.py ("export") and logging itself (audit.py).

- `answers_csv`: one row per report, a column per question id, the wire-encoded noisy answers
  and the plain answers (the shape `--answers FILE.csv` reads), streamed (memory flat).
- `stat_file`: the same rows as Stata .dta or SPSS .sav through pyreadstat, with variable
  labels from the question texts, value labels from the options and the randomization
  parameters in the file's notes. Built in memory, so refused above MAX_EXPORT_CELLS.
- `analysis_script`: an R script that reads answers.csv and fits a formula with rr::rrreg, the
  design's p, p0 and p1 filled in. The formula is data: only the characters of
  R_FORMULA_CHARS, question ids and operators, and it is written into an R string literal
  escaped by `r_string`, so nothing of it can leave the string.

A question a report skipped (skip logic) is a missing value: an empty CSV cell, a system
missing number or an empty string.
"""

from deniable.aggregator.exports.rscript import (
    MAX_R_FORMULA,
    R_FORMULA_CHARS,
    RFormula,
    analysis_script,
    check_r_formula,
    design_of,
    r_script,
    r_string,
)
from deniable.aggregator.exports.tables import (
    FORMATS,
    MAX_EXPORT_CELLS,
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
    "MAX_R_FORMULA",
    "R_FORMULA_CHARS",
    "Column",
    "RFormula",
    "analysis_script",
    "answers_csv",
    "check_r_formula",
    "columns",
    "csv_text",
    "design_of",
    "notes",
    "r_script",
    "r_string",
    "stat_file",
    "variable_names",
    "write_stat_file",
]
