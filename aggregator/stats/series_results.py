"""A series' results as an object (stats/results.py's style): what stats/waves.py's
`series_results` returns.

A read-only mapping of the JSON document `{"series", "confidence", "waves": [{"wave",
"survey", "results"}], "changes": [...], "trend": [...]}` (docs/statistics.md, "Waves"), with

- `to_dict()`: a plain, mutable copy of the JSON, exactly what the HTTP API answers;
- `to_csv()`: one row per wave estimate, change and trend, in SERIES_CSV_COLUMNS;
- `summary()`: the table `deniable-aggregator series results` prints;
- `shown_changes()`: the changes as tables show them (`shown_change`);
- `series`, `confidence`, `waves` (wave number -> SurveyResults), `changes`, `trend`, and
  `change(question, option, from_wave, to_wave)` between any two waves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from deniable.aggregator.stats.results import (
    CLIPPED_MARKS,
    JSONArray,
    Results,
    SurveyResults,
    _cell,
    shown_row,
)

#: The series CSV: `kind` is wave (a wave's estimate; from_wave = to_wave = the wave), change
#: (to_wave's estimate minus from_wave's) or trend (the OLS slope per wave from from_wave to
#: to_wave).
SERIES_CSV_COLUMNS = (
    "kind",
    "question",
    "option",
    "from_wave",
    "to_wave",
    "estimate",
    "stderr",
    "ci_low",
    "ci_high",
)


class SeriesResults(Results):
    """The results of a series of waves: each wave's survey results, changes and trends."""

    __slots__ = ()

    csv_columns = SERIES_CSV_COLUMNS

    @property
    def series(self) -> str:
        """The series id."""
        return str(self["series"])

    @property
    def confidence(self) -> float:
        """The confidence level of every interval."""
        return float(self["confidence"])

    @property
    def waves(self) -> dict[int, SurveyResults]:
        """Wave number -> that wave's survey results, in wave order."""
        return {w["wave"]: SurveyResults(w["results"]) for w in self["waves"]}

    @property
    def changes(self) -> JSONArray:
        """The changes between consecutive waves, per question option."""
        return self["changes"]

    @property
    def trend(self) -> JSONArray:
        """The linear trend per question option (slope per wave)."""
        return self["trend"]

    def change(self, question: str, option: str, from_wave: int, to_wave: int) -> dict[str, Any]:
        """The change of `option` of `question` between any two waves, as a `changes` entry."""
        from deniable.aggregator.stats.waves import change_between

        return change_between(self, question, option, from_wave, to_wave)

    def shown_changes(self) -> list[dict[str, Any]]:
        """The changes as the dashboard and `summary()` show them (`shown_change`)."""
        return [shown_change(c) for c in self["changes"]]

    def _csv_rows(self) -> Iterator[list[Any]]:
        followed = {(c["question"], c["option"]) for c in self["changes"]}
        for w in self["waves"]:
            for entry in w["results"].get("questions", ()):
                for o in entry["options"]:
                    if (entry["id"], o["option"]) in followed:
                        yield [
                            "wave",
                            entry["id"],
                            o["option"],
                            w["wave"],
                            w["wave"],
                            *(o.get(key) for key in ("estimate", "stderr", "ci_low", "ci_high")),
                        ]
        for c in self["changes"]:
            yield ["change", *_cells(c, c["from_wave"], c["to_wave"])]
        for t in self["trend"]:
            first, last = (t["waves"][0], t["waves"][-1]) if t["waves"] else (None, None)
            yield ["trend", *_cells(t, first, last)]

    def summary(self) -> str:
        """Per followed option: each wave's estimate, the changes and the trend."""
        lines = [
            f"series {self.series}: {len(self['waves'])} waves "
            f"({', '.join(str(w['wave']) for w in self['waves'])}), "
            f"intervals at {self.confidence:.0%}"
        ]
        for w in self["waves"]:
            lines.append(
                f"  wave {w['wave']}: survey {w['survey']}, n {w['results'].get('n', '-')}"
            )
        trends = {(t["question"], t["option"]): t for t in self["trend"]}
        changes = self.shown_changes()
        for (qid, option), t in trends.items():
            lines.append(f"{qid} = {option}")
            for c in changes:
                if (c["question"], c["option"]) == (qid, option):
                    mark = CLIPPED_MARKS.get(c["clipped"] or "", " ")
                    lines.append(
                        f"  change {c['from_wave']} -> {c['to_wave']}: "
                        f"{_cell(c['estimate']):>7}{mark}({_cell(c['stderr'])})  "
                        f"[{_cell(c['ci_low'])}, {_cell(c['ci_high'])}]"
                    )
            lines.append(
                f"  trend per wave:   {_cell(t['estimate']):>7} ({_cell(t['stderr'])})  "
                f"[{_cell(t['ci_low'])}, {_cell(t['ci_high'])}]"
            )
        if not trends:
            lines.append("no question is asked in two or more waves")
        if any(c["clipped"] for c in changes):
            lines.append(
                "  < > the unbiased change fell beyond its range (±1 for a share) by chance: "
                "shown at the interval's end (--json has it as computed)"
            )
        return "\n".join(lines)


def _cells(row: Mapping[str, Any], first: int | None, last: int | None) -> list[Any]:
    return [
        row["question"],
        row["option"],
        first,
        last,
        row["estimate"],
        row["stderr"],
        row["ci_low"],
        row["ci_high"],
    ]


def shown_change(change: Mapping[str, Any]) -> dict[str, Any]:
    """A change as tables show it (docs/researchers.md, "Reading the results"): one beyond
    its range by chance (±1 for a share; its interval is clipped there, the JSON keeps the
    estimate as computed) at the interval's end, `clipped` saying which side. An estimate lies
    inside its unclipped interval, so outside the clipped one means beyond the range."""
    if change["estimate"] is None or change["stderr"] is None:
        return {**change, "clipped": None}
    shown = shown_row(change, 0, change["ci_low"], change["ci_high"])
    return {**change, "estimate": shown["estimate"], "clipped": shown["clipped"]}
