"""Results as objects: what `analyze`, `results_document`, `breakdown`, `crosstab` and `regress`
return, in the style of statsmodels' results.

Each object is a read-only mapping of its JSON document, so `res["n"]`,
`res["questions"][0]["options"]`, `dict(res)`, iteration and `len` read it as before, and
`json.dumps(res)` writes it (a `dict` underneath whose mutators raise TypeError; nested objects
and arrays are read-only too). On top of the document each has

- `to_dict()`: a plain, mutable copy of the JSON, exactly what the HTTP API answers;
- `to_csv()`: the rows as CSV, every cell through `csvsafe` (formula-like labels neutralized);
- `summary()`: the table `deniable-aggregator` prints;
- attributes for the common fields: `n`, `confidence`, and per kind below.

With skip logic (docs/statistics.md, "Skipped questions") a question with a condition carries
`relevant` and its own `n` (the reports that asked it), and its CSV rows close with `n` and
`relevant`; an analysis that needs such a question carries `n_skipped` (reports left out) and
its CSV rows close with it. Documents without skip logic are exactly as before.

| class | from | attributes |
|---|---|---|
| `SurveyResults` | `analyze`, `results_document`, `surveys.results` | `questions` (id -> QuestionResults, in order), `simultaneous` |
| `QuestionResults` | each entry of `res["questions"]` | `id`, `type`, `mechanism`, `epsilon`, `options`, `estimates`, `conf_int()` |
| `Breakdown` | `breakdown` | `question`, `by`, `groups` (group label -> QuestionResults), `test` |
| `Crosstab` | `crosstab` | `first`, `second`, `cells`, `row_labels`, `column_labels`, `cell(a, b)` |
| `RegressionResults` | `regress` | `coefficients`, `params`, `bse`, `pvalues`, `conf_int()`, `converged`, `nobs`, `message`, `predictor`, `predictor_model` |

Copies are the object itself (nothing can change it); pickling keeps the class. The documents'
shapes are described in docs/researchers.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

from deniable.aggregator.stats.csvsafe import write_csv
from deniable.shared.questions import QUESTION_TYPES

#: The columns of the results CSV: a row per option of every question.
CSV_COLUMNS = (
    "question",
    "option",
    "support",
    "estimate",
    "stderr",
    "ci_low",
    "ci_high",
    "count",
    "share",
)
#: The option columns of a results entry (every CSV column but the question's id).
OPTION_COLUMNS = CSV_COLUMNS[1:]
BREAKDOWN_CSV_COLUMNS = ("group", "n", *OPTION_COLUMNS)
CROSSTAB_CSV_COLUMNS = ("first", "second", "estimate", "stderr", "ci_low", "ci_high")
REGRESSION_CSV_COLUMNS = ("term", "estimate", "stderr", "z", "p_value", "ci_low", "ci_high")
#: Columns added after a results CSV's when a question has a condition (skip logic): each
#: question's own n, the reports that asked it, and its condition (empty when it has none).
ASKED_CSV_COLUMNS = ("n", "relevant")
#: Added after those when a question is a split ballot (docs/statistics.md, "Split ballot"):
#: the randomized arm's n, the direct arm's n and estimate, and randomized minus direct
#: (empty cells for the other questions).
SPLIT_CSV_COLUMNS = (
    "randomized_n",
    "direct_n",
    "direct_estimate",
    "direct_stderr",
    "direct_ci_low",
    "direct_ci_high",
    "difference",
    "difference_stderr",
    "difference_ci_low",
    "difference_ci_high",
)
#: Added to a breakdown's CSV when a question it needs has a condition: the reports left out.
SKIPPED_CSV_COLUMN = "n_skipped"


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is read-only; to_dict() gives a copy to change")


def freeze(value: Any) -> Any:
    """A JSON value with its objects and arrays made read-only (read-only parts are kept)."""
    if isinstance(value, JSONObject | JSONArray):
        return value
    if isinstance(value, Mapping):
        return JSONObject(value)
    if isinstance(value, list | tuple):
        return JSONArray(value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable copy of a JSON value (dicts and lists), the same numbers and order."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


class JSONObject(dict[str, Any]):
    """A read-only JSON object: a dict, so json.dumps, dict() and == take it, whose mutators
    raise TypeError."""

    __slots__ = ()

    def __init__(self, doc: Mapping[str, Any] = MappingProxyType({}), /) -> None:
        if dict.__len__(self):
            _refuse(self)
        dict.__init__(self, ((key, self._freeze(key, value)) for key, value in doc.items()))

    def _freeze(self, key: str, value: Any) -> Any:
        """The read-only form of one member (subclasses give some members their own class)."""
        return freeze(value)

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __copy__(self) -> JSONObject:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> JSONObject:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (thaw(self),)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document as plain dicts and lists (a copy: change it freely)."""
        return thaw(self)


class JSONArray(list[Any]):
    """A read-only JSON array: a list, so json.dumps and == take it, whose mutators raise."""

    __slots__ = ()

    def __init__(self, items: Iterable[Any] = (), /) -> None:
        if list.__len__(self):
            _refuse(self)
        list.__init__(self, (freeze(item) for item in items))

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse  # type: ignore[assignment]

    def __copy__(self) -> JSONArray:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> JSONArray:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (thaw(self),)


def _cell(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _within(value: float | None, low: float, high: float) -> float | None:
    return None if value is None else min(max(float(value), low), high)


#: What a table prints beside an estimate shown at its interval's end (`shown_row`'s `clipped`).
CLIPPED_MARKS = {"below": "<", "above": ">"}


def shown_row(
    row: Mapping[str, Any], n: int, low: float = 0.0, high: float = 1.0
) -> dict[str, Any]:
    """The numbers a table or chart shows for one option (docs/researchers.md, "Reading the
    results"), each inside the interval shown beside it and inside [low, high] (0 and 1 for a
    share, an integer question's min and max for its mean): the share as the headline, the
    unbiased estimate and its interval beside it, the count n x share (never negative).

    An unbiased estimate below 0 or above 1 by chance (the JSON and CSV keep it as computed)
    is shown at the edge, and `clipped` says which ("below" or "above"); a consistent share
    that falls outside the estimate's interval (it can when several options are estimated
    below 0) is shown at the interval's nearest end."""
    ci_low, ci_high = _within(row["ci_low"], low, high), _within(row["ci_high"], low, high)
    estimate, share = row.get("estimate"), row.get("share")
    clipped = None
    if estimate is not None and ci_low is not None and ci_high is not None:
        clipped = "below" if estimate < low else "above" if estimate > high else None
        estimate = _within(estimate, ci_low, ci_high)
        share = _within(estimate if share is None else share, ci_low, ci_high)
    count = None
    if share is not None and low == 0.0 and high == 1.0:
        count = n * share
    return {
        "option": row.get("option"),
        "share": share,
        "estimate": estimate,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "count": count,
        "support": row.get("support"),
        "stderr": row.get("stderr"),
        "deff": row.get("deff"),
        "clipped": clipped,
    }


def _support(value: int | None) -> str:
    return "-" if value is None else str(value)


class Results(JSONObject):
    """What every results object has: `to_dict()`, `to_csv()`, `summary()`, `n`."""

    __slots__ = ()

    #: The CSV header; `_csv_rows` gives the rows.
    csv_columns: tuple[str, ...] = ()

    def _csv_rows(self) -> Iterator[list[Any]]:
        raise NotImplementedError

    def _columns(self) -> tuple[str, ...]:
        """The CSV header: csv_columns, and the skip-logic columns when the document has them."""
        if SKIPPED_CSV_COLUMN in self:
            return (*self.csv_columns, "n", SKIPPED_CSV_COLUMN)
        return self.csv_columns

    def _skip_cells(self) -> list[Any]:
        """The skip-logic cells closing each CSV row (none without skip logic)."""
        if SKIPPED_CSV_COLUMN in self:
            return [self["n"], self[SKIPPED_CSV_COLUMN]]
        return []

    def to_csv(self) -> str:
        """The rows as CSV (null is an empty cell; formula-like text is neutralized)."""
        return write_csv(self._columns(), self._csv_rows())

    def summary(self) -> str:
        """The table the command line prints."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"

    @property
    def n(self) -> int:
        """The number of reports."""
        return int(self["n"])


class AnalysisResults(Results):
    """A whole document: its survey, hash and confidence level besides n."""

    __slots__ = ()

    @property
    def survey(self) -> str:
        """The survey's id."""
        return str(self["survey"])

    @property
    def survey_hash(self) -> str:
        return str(self["survey_hash"])

    @property
    def confidence(self) -> float:
        """The intervals' confidence level."""
        return float(self["confidence"])

    @property
    def n_skipped(self) -> int:
        """The reports an analysis left out because they skipped a question it needs (0 when
        its questions have no condition)."""
        return int(self.get(SKIPPED_CSV_COLUMN, 0))

    def _used(self) -> str:
        """'N reports', and how many were left out when a question has a condition."""
        used = f"{self['n']} reports"
        if SKIPPED_CSV_COLUMN in self:
            used += f" ({self[SKIPPED_CSV_COLUMN]} more left out: they skipped a question)"
        return used


class QuestionResults(Results):
    """One question's results entry: its mechanism and a row per option (or `mean`, or
    candidate)."""

    __slots__ = ()
    csv_columns = CSV_COLUMNS

    @property
    def id(self) -> str:
        return str(self["id"])

    @property
    def type(self) -> str | None:
        return self.get("type")

    @property
    def mechanism(self) -> str | None:
        return self.get("mechanism")

    @property
    def epsilon(self) -> float | None:
        """The privacy cost; None for a plain question (sent as answered)."""
        return self.get("epsilon")

    @property
    def options(self) -> JSONArray:
        """The rows: option, support, estimate, stderr, ci_low, ci_high, count, share."""
        return self["options"]  # type: ignore[no-any-return]

    @property
    def estimates(self) -> dict[str, float | None]:
        """option label -> estimate (None with no reports)."""
        return {row["option"]: row["estimate"] for row in self["options"]}

    def conf_int(self) -> dict[str, tuple[float, float]]:
        """option label -> (ci_low, ci_high)."""
        return {row["option"]: (row["ci_low"], row["ci_high"]) for row in self["options"]}

    @property
    def scale(self) -> tuple[float, float]:
        """The range its numbers lie in: 0 to 1 for shares, an integer question's min to max
        for its mean."""
        if "min" in self and "max" in self:
            return float(self["min"]), float(self["max"])
        return 0.0, 1.0

    def shown(self) -> list[dict[str, Any]]:
        """The rows as tables and charts show them (`shown_row`): the share as the headline,
        every number inside its interval and the scale; the document keeps them as computed."""
        low, high = self.scale
        return [shown_row(row, int(self["n"]), low, high) for row in self["options"]]

    @property
    def relevant(self) -> str | None:
        """The question's condition (skip logic): its estimates are for the reports that asked
        it, `n` of them; None when every report holds it."""
        return self.get("relevant")

    def _columns(self) -> tuple[str, ...]:
        asked = (*CSV_COLUMNS, *ASKED_CSV_COLUMNS) if "relevant" in self else CSV_COLUMNS
        return (*asked, *SPLIT_CSV_COLUMNS) if "direct" in self else asked

    def _csv_rows(
        self, asked: bool | None = None, split: bool | None = None
    ) -> Iterator[list[Any]]:
        """A row per option; with `asked` (by default: when the question has a condition), the
        question's n and condition close each row; with `split` (by default: when it is a
        split ballot), its arms' columns (SPLIT_CSV_COLUMNS) after them."""
        closing = [self["n"], self.get("relevant")]
        for i, row in enumerate(self["options"]):
            cells = [self["id"], *(row[column] for column in OPTION_COLUMNS)]
            if asked if asked is not None else "relevant" in self:
                cells += closing
            if split if split is not None else "direct" in self:
                cells += self._arm_cells(i)
            yield cells

    def _arm_cells(self, i: int) -> list[Any]:
        """The SPLIT_CSV_COLUMNS cells of option row i (empty unless a split ballot)."""
        if "direct" not in self:
            return [None] * len(SPLIT_CSV_COLUMNS)
        direct = self["direct"]["options"][i]
        difference = self["difference"]["options"][i]
        return [
            self["n"],
            self["direct"]["n"],
            *(direct[key] for key in ("estimate", "stderr", "ci_low", "ci_high")),
            *(difference[key] for key in ("estimate", "stderr", "ci_low", "ci_high")),
        ]

    @property
    def direct(self) -> Mapping[str, Any] | None:
        """A split ballot's direct arm: its n and a row per option (None otherwise)."""
        return self.get("direct")

    @property
    def difference(self) -> Mapping[str, Any] | None:
        """A split ballot's randomized-minus-direct rows with intervals (None otherwise)."""
        return self.get("difference")

    def summary(self, of: int | None = None, legend: bool = True) -> str:
        """The question's block of the results table; `of`, the survey's n, for a question with
        a condition ("n of N reports asked it"); `legend`: say what the columns are (a survey's
        table says it once, at its end)."""
        q = self
        if QUESTION_TYPES[q["type"]].rows == "candidates" and not q["options"]:
            return f"{q['id']}  (text, {q['mechanism']}): no candidates; give --candidates"
        cost = "sent as answered" if q["epsilon"] is None else f"epsilon {q['epsilon']:.3g}"
        lines = [f"{q['id']}  ({q['type']}, {q['mechanism']}, {cost})"]
        if "relevant" in q:
            out_of = "" if of is None else f" of {of}"
            lines.append(
                f"  asked if {q['relevant']}: {q['n']}{out_of} reports asked it; the estimates "
                "are for them"
            )
        width = max([6, *(len(o["option"]) for o in q["options"])])
        deff = any("deff" in o for o in q["options"])  # weighted: the design effects
        lines.append(
            f"  {'option':<{width}}  {'share':>6}  {'estimate':>9}  {'interval':>15}  "
            f"{'stderr':>6}  {'support':>7}  {'count':>9}" + ("   deff" if deff else "")
        )
        clipped = set()
        for o in q.shown():
            interval = "-" if o["ci_low"] is None else f"[{o['ci_low']:.3f}, {o['ci_high']:.3f}]"
            mark = CLIPPED_MARKS.get(o["clipped"] or "", " ")
            clipped.add(o["clipped"])
            lines.append(
                f"  {o['option']:<{width}}  {_cell(o['share']):>6}  {_cell(o['estimate']):>8}"
                f"{mark}  {interval:>15}  {_cell(o['stderr']):>6}  {_support(o['support']):>7}  "
                f"{_cell(o['count'], 1):>9}" + (f"  {_cell(o.get('deff')):>5}" if deff else "")
            )
        lines += _footnotes(clipped, q.scale, legend)
        if "direct" in q:  # split ballot (docs/statistics.md, "Split ballot")
            lines.append(
                f"  split ballot: randomized n {q['n']}, direct n {q['direct']['n']}; "
                "direct estimate, and randomized minus direct:"
            )
            for o, d in zip(q["direct"]["options"], q["difference"]["options"], strict=True):
                lines.append(
                    f"  {o['option']:<{width}}  direct {_cell(o['estimate']):>8} "
                    f"({_cell(o['stderr'])})  difference {_cell(d['estimate']):>8} "
                    f"[{_cell(d['ci_low'])}, {_cell(d['ci_high'])}]"
                )
        return "\n".join(lines)


#: What the results tables say under their rows (docs/researchers.md, "Reading the results").
SUPPORT_NOTE = (
    "  share: the estimated share (consistent: none below 0, summing to 1); estimate: the "
    "unbiased estimate and its interval; support: the noisy reports that chose the option "
    "(randomized answers, not true ones); count: n x share"
)


def _footnotes(
    clipped: set[str | None], scale: tuple[float, float], legend: bool = True
) -> list[str]:
    """The table's legend (unless said once elsewhere), and what < and > beside an estimate
    mean."""
    lines = [SUPPORT_NOTE] if legend else []
    low, high = (f"{edge:g}" for edge in scale)
    if "below" in clipped:
        lines.append(
            f"  < the unbiased estimate fell below {low} by chance: shown at the interval's "
            "end (--json has it as computed)"
        )
    if "above" in clipped:
        lines.append(
            f"  > the unbiased estimate fell above {high} by chance: shown at the interval's "
            "end (--json has it as computed)"
        )
    return lines


def weighted_by(doc: Mapping[str, Any]) -> list[str]:
    """The line saying how the estimates are weighted (docs/statistics.md), if they are."""
    weighting = doc.get("weighting")
    return [f"weighted by {weighting['described']}"] if weighting else []


class SurveyResults(AnalysisResults):
    """A survey's results: estimates with intervals for every question (GET .../results)."""

    __slots__ = ()
    csv_columns = CSV_COLUMNS

    def _freeze(self, key: str, value: Any) -> Any:
        if key == "questions":
            return JSONArray(
                q if isinstance(q, QuestionResults) else QuestionResults(q) for q in value
            )
        return freeze(value)

    @property
    def questions(self) -> Mapping[str, QuestionResults]:
        """question id -> its QuestionResults, in the survey's order (`res["questions"]` is
        the JSON list of the same entries)."""
        return MappingProxyType({q["id"]: q for q in self["questions"]})

    @property
    def simultaneous(self) -> bool:
        """Whether the intervals hold for all of a question's options at once."""
        return bool(self["simultaneous"])

    def _asked(self) -> bool:
        """Whether a question has a condition (then every CSV row says its question's n)."""
        return any("relevant" in question for question in self["questions"])

    def _split(self) -> bool:
        """Whether a question is a split ballot (then every CSV row has the arms' columns)."""
        return any("direct" in question for question in self["questions"])

    def _columns(self) -> tuple[str, ...]:
        asked = (*CSV_COLUMNS, *ASKED_CSV_COLUMNS) if self._asked() else CSV_COLUMNS
        return (*asked, *SPLIT_CSV_COLUMNS) if self._split() else asked

    def _csv_rows(self) -> Iterator[list[Any]]:
        asked, split = self._asked(), self._split()
        for question in self["questions"]:
            yield from question._csv_rows(asked, split)

    def summary(self) -> str:
        level = f"{self['confidence']:.0%}".rstrip()
        lines = [
            f"survey {self['survey']}: {self['n']} reports, {level} intervals"
            + (" (simultaneous)" if self["simultaneous"] else "")
        ]
        lines += weighted_by(self)
        for question in self["questions"]:
            lines += ["", question.summary(self["n"], legend=False)]
        return "\n".join([*lines, "", SUPPORT_NOTE.strip()])


class Breakdown(AnalysisResults):
    """A randomized question's results within each group of a plain question."""

    __slots__ = ("_entry",)
    csv_columns = BREAKDOWN_CSV_COLUMNS

    def __init__(self, doc: Mapping[str, Any], /, entry: Mapping[str, Any] | None = None) -> None:
        """`entry`: a results entry of the question (any group's), whose id, type, mechanism
        and range each group's QuestionResults carries besides its own n and options."""
        super().__init__(doc)
        self._entry = JSONObject(entry if entry is not None else {"id": doc["question"]})

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (thaw(self), thaw(self._entry))

    @property
    def question(self) -> str:
        return str(self["question"])

    @property
    def by(self) -> str:
        """The plain question whose answers make the groups."""
        return str(self["by"])

    @property
    def groups(self) -> Mapping[str, QuestionResults]:
        """group label -> the question's results within that group (`res["groups"]` is the
        JSON list of {group, n, options})."""
        return MappingProxyType(
            {group["group"]: self._group_entry(group) for group in self["groups"]}
        )

    def _group_entry(self, group: Mapping[str, Any]) -> QuestionResults:
        entry = {**self._entry, "n": group["n"], "options": group["options"]}
        order = list(self._entry) or ["id"]
        for key in ("n", "options"):
            if key not in order:
                order.append(key)
        return QuestionResults({key: entry[key] for key in order})

    @property
    def test(self) -> JSONObject | None:
        """The Wald test that every group has the same value (None with too few groups)."""
        return self["test"]  # type: ignore[no-any-return]

    def _columns(self) -> tuple[str, ...]:
        # Its `n` column is each group's already: only the reports left out are added.
        if SKIPPED_CSV_COLUMN in self:
            return (*self.csv_columns, SKIPPED_CSV_COLUMN)
        return self.csv_columns

    def _csv_rows(self) -> Iterator[list[Any]]:
        closing = [self[SKIPPED_CSV_COLUMN]] if SKIPPED_CSV_COLUMN in self else []
        for group in self["groups"]:
            for row in group["options"]:
                yield [
                    group["group"],
                    group["n"],
                    *(row[column] for column in OPTION_COLUMNS),
                    *closing,
                ]

    def summary(self) -> str:
        by = self["by"]
        lines = [f"{self['question']} by {by}: {self._used()}, {self['confidence']:.0%} intervals"]
        lines += weighted_by(self)
        clipped: set[str | None] = set()
        scale = (0.0, 1.0)
        for group, entry in zip(self["groups"], self.groups.values(), strict=True):
            lines.append(f"{by} = {group['group']}  (n = {group['n']})")
            scale = entry.scale
            for row in entry.shown():
                mark = {"below": "<", "above": ">"}.get(row["clipped"] or "", " ")
                clipped.add(row["clipped"])
                lines.append(
                    f"  {row['option']:<20} share {_cell(row['share'])}  estimate "
                    f"{_cell(row['estimate'])}{mark} [{_cell(row['ci_low'])}, "
                    f"{_cell(row['ci_high'])}]  se {_cell(row['stderr'])}"
                    + (f"  deff {_cell(row['deff'])}" if row["deff"] is not None else "")
                )
        lines += [line.strip() for line in _footnotes(clipped, scale, legend=False)]
        test = self["test"]
        if test:
            lines.append(
                f"no difference between groups: chi2 = {test['statistic']:.3f}, "
                f"df = {test['df']}, p = {test['p_value']:.4g}"
            )
        return "\n".join(lines)


class Crosstab(AnalysisResults):
    """The joint distribution of two questions: a cell per pair of options."""

    __slots__ = ("_index",)
    csv_columns = CROSSTAB_CSV_COLUMNS

    def __init__(self, doc: Mapping[str, Any], /) -> None:
        super().__init__(doc)
        self._index = {(cell["first"], cell["second"]): cell for cell in self["cells"]}

    @property
    def first(self) -> str:
        return str(self["first"])

    @property
    def second(self) -> str:
        return str(self["second"])

    @property
    def cells(self) -> JSONArray:
        """The cells: first, second, estimate, stderr, ci_low, ci_high (first's options outer)."""
        return self["cells"]  # type: ignore[no-any-return]

    @property
    def row_labels(self) -> tuple[str, ...]:
        """The first question's options, in order."""
        return tuple(dict.fromkeys(cell["first"] for cell in self["cells"]))

    @property
    def column_labels(self) -> tuple[str, ...]:
        """The second question's options, in order."""
        return tuple(dict.fromkeys(cell["second"] for cell in self["cells"]))

    def cell(self, first: str, second: str) -> JSONObject:
        """The cell of option `first` of the first question and `second` of the second
        (KeyError if there is none)."""
        return self._index[(first, second)]  # type: ignore[no-any-return]

    def _csv_rows(self) -> Iterator[list[Any]]:
        closing = self._skip_cells()
        for cell in self["cells"]:
            yield [*(cell[column] for column in CROSSTAB_CSV_COLUMNS), *closing]

    def summary(self) -> str:
        lines = [
            f"{self['first']} x {self['second']}: {self._used()}, "
            f"{self['confidence']:.0%} intervals"
        ]
        lines += weighted_by(self)
        clipped: set[str | None] = set()
        for cell in self["cells"]:
            shown = shown_row(cell, self.n)
            mark = {"below": "<", "above": ">"}.get(shown["clipped"] or "", " ")
            clipped.add(shown["clipped"])
            lines.append(
                f"  {cell['first']:<16} {cell['second']:<16} {_cell(shown['estimate'])}{mark} "
                f"[{_cell(shown['ci_low'])}, {_cell(shown['ci_high'])}]  se {_cell(cell['stderr'])}"
            )
        lines += [line.strip() for line in _footnotes(clipped, (0.0, 1.0), legend=False)]
        return "\n".join(lines)


class RegressionResults(AnalysisResults):
    """A fitted logistic regression of a randomized answer: coefficients with standard errors,
    or `converged` False and a `message` (separation, collinearity) with null numbers. With a
    randomized `predictor` (a plain outcome, rr's rrreg.predictor), `coefficients` are the
    outcome's model and `predictor_model` the randomized answer's on the same covariates."""

    __slots__ = ()
    csv_columns = REGRESSION_CSV_COLUMNS

    @property
    def formula(self) -> str:
        return str(self["formula"])

    @property
    def converged(self) -> bool:
        return bool(self["converged"])

    @property
    def message(self) -> str | None:
        """Why the fit failed (None when it converged)."""
        return self.get("message")

    @property
    def nobs(self) -> int:
        """The number of reports fitted (statsmodels' name for n)."""
        return self.n

    @property
    def coefficients(self) -> JSONArray:
        """A row per term: term, estimate, stderr, z, p_value, ci_low, ci_high."""
        return self["coefficients"]  # type: ignore[no-any-return]

    @property
    def predictor(self) -> str | None:
        """The randomized question used as a predictor (None for rrreg's model)."""
        return self.get("predictor")

    @property
    def predictor_model(self) -> JSONObject | None:
        """The randomized predictor's own logistic model, {"coefficients": [rows]}, or None."""
        return self.get("predictor_model")

    @property
    def params(self) -> dict[str, float | None]:
        """term -> coefficient."""
        return {row["term"]: row["estimate"] for row in self["coefficients"]}

    @property
    def bse(self) -> dict[str, float | None]:
        """term -> standard error."""
        return {row["term"]: row["stderr"] for row in self["coefficients"]}

    @property
    def pvalues(self) -> dict[str, float | None]:
        """term -> two-sided p-value of the Wald z."""
        return {row["term"]: row["p_value"] for row in self["coefficients"]}

    def conf_int(self) -> dict[str, tuple[float | None, float | None]]:
        """term -> (ci_low, ci_high) at the results' confidence level."""
        return {row["term"]: (row["ci_low"], row["ci_high"]) for row in self["coefficients"]}

    def _columns(self) -> tuple[str, ...]:
        """With a randomized predictor, a first column says which model a row is of."""
        columns = super()._columns()
        return columns if self.get("predictor") is None else ("model", *columns)

    def _csv_rows(self) -> Iterator[list[Any]]:
        closing = self._skip_cells()
        if self.get("predictor") is not None:
            for model, rows in (
                ("outcome", self["coefficients"]),
                ("predictor", self["predictor_model"]["coefficients"]),
            ):
                for row in rows:
                    yield [model, *(row[column] for column in REGRESSION_CSV_COLUMNS), *closing]
            return
        for row in self["coefficients"]:
            yield [*(row[column] for column in REGRESSION_CSV_COLUMNS), *closing]

    def summary(self) -> str:
        """The fit's first line, then a row per term (or why the fit failed)."""
        lines = [
            f"{self['formula']}: {self._used()}, log-likelihood "
            f"{self['log_likelihood']:.3f}, {self['iterations']} iterations"
        ]
        if not self["converged"]:
            lines.append(f"the fit failed: {self.get('message')}")
            return "\n".join(lines)
        lines += weighted_by(self)
        tables: list[tuple[str | None, Any]] = [(None, self["coefficients"])]
        if (predictor := self.get("predictor")) is not None:
            outcome = self["outcome"]
            sigma = f", sigma {outcome['sigma']:.4f}" if "sigma" in outcome else ""
            tables = [
                (f"{outcome['question']} ({outcome['model']}{sigma}):", self["coefficients"]),
                (
                    f"{predictor} (randomized; its logistic model on the covariates):",
                    self["predictor_model"]["coefficients"],
                ),
            ]
        level = f"{self['confidence']:.0%}"
        for title, rows in tables:
            if title is not None:
                lines.append(title)
            lines.append(
                f"  {'term':<24} {'estimate':>9} {'stderr':>9} {'z':>8} {'p':>9}  {level} interval"
            )
            for row in rows:
                lines.append(
                    f"  {row['term']:<24} {row['estimate']:>9.4f} {row['stderr']:>9.4f} "
                    f"{row['z']:>8.3f} {row['p_value']:>9.3g}  "
                    f"[{row['ci_low']:.4f}, {row['ci_high']:.4f}]"
                )
        return "\n".join(lines)
