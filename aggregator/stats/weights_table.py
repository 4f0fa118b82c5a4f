"""A weights table: a weight per combination of plain answers, brought by the researcher.

The shape (docs/statistics.md, "Weights and designs") is a CSV with a header naming one or more
plain binary or categorical questions and a `weight` column, then one row per combination of
their option labels with its weight (a positive number), e.g.

    region,sex,weight
    north,f,1.8
    north,m,2.1
    ...

Every respondent's combination must have a row. It is read before any report is: at most
MAX_WEIGHTS_BYTES of text and MAX_WEIGHT_ROWS rows, no formula, no code; every weight from
MIN_WEIGHT to MAX_WEIGHT, so that no sum of weights over the reports can overflow a float (a
weight of 1e308 made every estimate NaN, and the results' JSON invalid).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from deniable.aggregator.stats.errors import AnalysisError
from deniable.shared.survey import Survey

#: The largest weights table read (bytes of CSV text): checked before parsing.
MAX_WEIGHTS_BYTES = 1_000_000
#: The most rows a weights table may have.
MAX_WEIGHT_ROWS = 10_000
#: The smallest and the largest weight taken: a respondent standing for a billion people, or
#: for a billionth of one, is a mistake; within them sums over any number of reports are finite.
MIN_WEIGHT = 1e-9
MAX_WEIGHT = 1e9
#: The column that holds the weights.
WEIGHT_COLUMN = "weight"


class WeightsError(AnalysisError):
    """The weights table is not one this survey can use; the message says where and why."""


@dataclass(frozen=True)
class WeightTable:
    """Weights keyed by the option indices of `questions` (plain questions, in column order)."""

    questions: tuple[str, ...]
    weights: MappingProxyType[tuple[int, ...], float]

    def describe(self) -> str:
        """A few words for the results ("weights by region, sex")."""
        return f"a weights table by {', '.join(self.questions)}"


def parse_weights(text: str | bytes, survey: Survey) -> WeightTable:
    """The weights table in `text` for `survey`; WeightsError names the line and the fix."""
    if isinstance(text, bytes):
        if len(text) > MAX_WEIGHTS_BYTES:
            raise WeightsError(f"weights: at most {MAX_WEIGHTS_BYTES:,} bytes of CSV, got more")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise WeightsError("weights: the CSV is not UTF-8 text") from None
    if not isinstance(text, str):
        raise WeightsError("weights: expected CSV text")
    if len(text.encode("utf-8")) > MAX_WEIGHTS_BYTES:
        raise WeightsError(f"weights: at most {MAX_WEIGHTS_BYTES:,} bytes of CSV, got more")
    text = text.removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise WeightsError(
            "weights: empty; give a header of plain question ids and a weight column"
        ) from None
    except csv.Error as exc:
        raise WeightsError(f"weights, line 1: not CSV ({exc})") from None
    if header.count(WEIGHT_COLUMN) != 1:
        raise WeightsError(
            f"weights, line 1: the header needs exactly one {WEIGHT_COLUMN!r} column beside "
            "the plain questions' ids"
        )
    keys = [h for h in header if h != WEIGHT_COLUMN]
    if not keys:
        raise WeightsError(
            "weights, line 1: name at least one plain question beside the weight column"
        )
    if len(set(keys)) != len(keys):
        raise WeightsError("weights, line 1: a question is named twice")
    questions = []
    for qid in keys:
        question = survey.questions.get(qid)
        if question is None or not question.plain or not question.kind.groups:
            raise WeightsError(
                f"weights, line 1: {qid[:40]!r} is not a plain binary or categorical question of "
                f"survey {survey.id!r}; weights are keyed by such questions' answers"
            )
        questions.append(question)
    at = header.index(WEIGHT_COLUMN)
    table: dict[tuple[int, ...], float] = {}
    try:
        for line, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(table) >= MAX_WEIGHT_ROWS:
                raise WeightsError(f"weights: at most {MAX_WEIGHT_ROWS:,} rows")
            if len(row) != len(header):
                raise WeightsError(
                    f"weights, line {line}: {len(row)} cells, the header has {len(header)}"
                )
            cells = [cell.strip() for i, cell in enumerate(row) if i != at]
            key = []
            for question, label in zip(questions, cells, strict=True):
                if label not in question.options:
                    raise WeightsError(
                        f"weights, line {line}: {label[:40]!r} is not an option of "
                        f"{question.id!r}; its options: {', '.join(question.options)}"
                    )
                key.append(question.options.index(label))
            weight = _weight(row[at].strip(), line)
            if tuple(key) in table:
                raise WeightsError(f"weights, line {line}: this combination was given before")
            table[tuple(key)] = weight
    except csv.Error as exc:
        raise WeightsError(f"weights: not CSV ({exc})") from None
    if not table:
        raise WeightsError("weights: no rows; give a weight for every combination of answers")
    return WeightTable(tuple(keys), MappingProxyType(table))


def _weight(cell: str, line: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or len(cell) > 40:
        raise WeightsError(f"weights, line {line}: weight {cell[:40]!r} is not a positive number")
    if not MIN_WEIGHT <= value <= MAX_WEIGHT:
        raise WeightsError(
            f"weights, line {line}: weight {cell[:40]!r} is outside {MIN_WEIGHT:g} to "
            f"{MAX_WEIGHT:g}; scale the weights (only their ratios matter to the estimates)"
        )
    return value


def weights_from_request(raw: Any, survey: Survey) -> WeightTable | None:
    """A weights table from a request's `weights` (CSV text; None or empty for none)."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise WeightsError("weights: expected the weights table as CSV text")
    return parse_weights(raw, survey)
