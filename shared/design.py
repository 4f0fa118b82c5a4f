"""A survey's sampling design: strata, clusters, population sizes and raking margins.

Strata and clusters are plain questions (e.g. an enumerator-entered region and village); the
aggregator weights every estimate by the design (docs/statistics.md, "Weights and designs").
Everything here is validated when the survey is created, with errors naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from deniable.shared.questions import fail

if TYPE_CHECKING:
    from deniable.shared.survey import Question

_FIELDS = ("strata", "clusters", "population", "rake")
#: The largest population size N_h a stratum may declare (beyond any country's census).
MAX_POPULATION = 10**12
#: Raking margins a design may give (each a plain question with every option's share).
MAX_MARGINS = 8
#: How far from 1 a margin's shares may sum (they are population shares, given as decimals).
SHARE_TOLERANCE = 1e-9
#: The most design cells (strata x clusters x each margin's options) a design may have: the
#: weighted analyses hold a row per cell and answer, so this bounds their memory.
MAX_DESIGN_CELLS = 1_000_000


@dataclass(frozen=True)
class Design:
    """The validated design of a survey (every part optional)."""

    strata: str | None = None
    clusters: str | None = None
    population: Mapping[str, int] | None = None
    rake: Mapping[str, Mapping[str, float]] | None = None

    @property
    def questions(self) -> tuple[str, ...]:
        """The plain questions the design reads per report: strata, clusters, margins."""
        named = [self.strata, self.clusters, *(self.rake or {})]
        return tuple(dict.fromkeys(q for q in named if q is not None))

    def to_dict(self) -> dict[str, Any]:
        """The design as the survey document gives it (part of the survey's hash)."""
        doc: dict[str, Any] = {}
        if self.strata is not None:
            doc["strata"] = self.strata
        if self.clusters is not None:
            doc["clusters"] = self.clusters
        if self.population is not None:
            doc["population"] = dict(self.population)
        if self.rake is not None:
            doc["rake"] = {qid: dict(margin) for qid, margin in self.rake.items()}
        return doc

    def describe(self) -> str:
        """The design in a few words, for the dashboard and the CLI ("weighted by ...")."""
        parts = []
        if self.strata is not None:
            parts.append(f"strata {self.strata}")
            if self.population is not None:
                parts.append("population sizes")
        if self.clusters is not None:
            parts.append(f"clusters {self.clusters}")
        if self.rake:
            parts.append("raking to " + ", ".join(self.rake))
        return "; ".join(parts) or "no design"

    @classmethod
    def from_dict(
        cls, raw: object, questions: Mapping[str, Question], where: str = "design"
    ) -> Design:
        """Validate a design against the survey's questions; SurveyError says what and where."""
        if not isinstance(raw, dict):
            raise fail(
                where, f"expected an object with any of {', '.join(_FIELDS)}, got {raw!r:.60}"
            )
        unknown = sorted(str(k) for k in set(raw) - set(_FIELDS))
        if unknown:
            raise fail(
                f"{where}.{unknown[0][:40]}", f"unknown field; allowed: {', '.join(_FIELDS)}"
            )
        if not raw:
            raise fail(where, f"an empty design; give any of {', '.join(_FIELDS)} or leave it out")
        strata = _grouping(raw, "strata", questions, where)
        clusters = _grouping(raw, "clusters", questions, where)
        if strata is not None and strata == clusters:
            raise fail(f"{where}.clusters", "the clusters cannot be the strata question itself")
        population = None
        if "population" in raw:
            if strata is None:
                raise fail(
                    f"{where}.population",
                    'population sizes are per stratum: name the strata question in "strata"',
                )
            population = _population(raw["population"], questions[strata], f"{where}.population")
        rake = None
        if "rake" in raw:
            rake = _rake(raw["rake"], questions, f"{where}.rake")
        design = cls(strata=strata, clusters=clusters, population=population, rake=rake)
        cells = design_cells(design.questions, questions)
        if cells > MAX_DESIGN_CELLS:
            raise fail(
                where,
                f"{cells:,} cells (the options of {', '.join(design.questions)} multiplied), "
                f"more than {MAX_DESIGN_CELLS:,}; use fewer margins or coarser questions",
            )
        return design


def design_cells(qids: tuple[str, ...], questions: Mapping[str, Question]) -> int:
    """How many combinations of answers these plain questions have (the product of their
    options), stopping once past MAX_DESIGN_CELLS."""
    cells = 1
    for qid in qids:
        cells *= max(1, len(questions[qid].options))
        if cells > MAX_DESIGN_CELLS:
            break
    return cells


def _plain_question(
    qid: object, questions: Mapping[str, Question], where: str, role: str
) -> Question:
    """The plain binary or categorical question `qid`, asked of everyone."""
    if not isinstance(qid, str) or qid not in questions:
        known = ", ".join(q for q, question in questions.items() if question.plain) or "none"
        raise fail(
            where, f"no question {str(qid)[:40]!r}; {role} name a plain question (plain: {known})"
        )
    question = questions[qid]
    if not question.plain:
        raise fail(
            where,
            f"{qid!r} is randomized; {role} must be plain questions (mechanism none), whose "
            "answers are known per report",
        )
    if not question.kind.groups:
        raise fail(
            where, f"{qid!r} is a plain {question.type} question; {role} take binary or categorical"
        )
    if getattr(question, "relevant", None):
        raise fail(
            where,
            f"{qid!r} has a skip-logic condition (relevant); {role} must be asked of everyone",
        )
    return question


def _grouping(
    raw: Mapping[str, Any], name: str, questions: Mapping[str, Question], where: str
) -> str | None:
    if name not in raw:
        return None
    qid = raw[name]
    _plain_question(qid, questions, f"{where}.{name}", name)
    return str(qid)


def _population(raw: object, strata: Question, where: str) -> Mapping[str, int]:
    """N_h for every option of the strata question, positive whole numbers."""
    labels = strata.options
    if not isinstance(raw, dict):
        raise fail(where, f"expected an object {{option label: population size}} of {strata.id!r}")
    for label in raw:
        if label not in labels:
            raise fail(
                f"{where}.{str(label)[:40]}",
                f"not an option of {strata.id!r}; its options: {', '.join(labels)}",
            )
    out: dict[str, int] = {}
    for label in labels:
        if label not in raw:
            raise fail(where, f"no population size for stratum {label!r}; give every stratum's")
        size = raw[label]
        if isinstance(size, float) and size.is_integer():
            size = int(size)
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_POPULATION:
            raise fail(
                f"{where}.{label}",
                f"expected a whole number of people from 1 to {MAX_POPULATION:,}, got {size!r:.40}",
            )
        out[label] = size
    return MappingProxyType(out)


def _rake(
    raw: object, questions: Mapping[str, Question], where: str
) -> Mapping[str, Mapping[str, float]]:
    """Population shares of every option of each margin's plain question, summing to 1."""
    if not isinstance(raw, dict) or not raw:
        raise fail(where, "expected an object {plain question: {option label: population share}}")
    if len(raw) > MAX_MARGINS:
        raise fail(where, f"at most {MAX_MARGINS} margins, got {len(raw)}")
    margins: dict[str, Mapping[str, float]] = {}
    for qid, shares in raw.items():
        here = f"{where}.{str(qid)[:40]}"
        question = _plain_question(qid, questions, here, "raking margins")
        if not isinstance(shares, dict):
            raise fail(here, "expected an object {option label: population share}")
        for label in shares:
            if label not in question.options:
                raise fail(
                    f"{here}.{str(label)[:40]}",
                    f"not an option of {qid!r}; its options: {', '.join(question.options)}",
                )
        margin: dict[str, float] = {}
        for label in question.options:
            if label not in shares:
                raise fail(here, f"no share for {label!r}; give every option's population share")
            share = shares[label]
            if (
                isinstance(share, bool)
                or not isinstance(share, int | float)
                or not math.isfinite(share)
                or not 0 < share <= 1
            ):
                raise fail(f"{here}.{label}", f"expected a share in (0, 1], got {share!r:.40}")
            margin[label] = float(share)
        total = math.fsum(margin.values())
        if abs(total - 1.0) > SHARE_TOLERANCE:
            raise fail(here, f"the shares sum to {total!r}, not 1; give population shares")
        margins[qid] = MappingProxyType(margin)
    return MappingProxyType(margins)
