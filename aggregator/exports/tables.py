"""answers.csv, Stata .dta and SPSS .sav exports of a survey's reports (docs/analysis.md,
"Exports for R, Stata and SPSS"): the rows, their labels and notes, and the service functions
`answers_csv` (streamed) and `stat_file` (built in memory, so refused above MAX_EXPORT_CELLS).
A question a report skipped (skip logic) is a missing value."""

from __future__ import annotations

import math
import os
import re
import struct
import tempfile
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from deniable.aggregator import access, audit
from deniable.aggregator.access import Principal
from deniable.aggregator.exports.rscript import design_of
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.stats.csvsafe import write_csv
from deniable.aggregator.store import Store, SurveyRecord
from deniable.aggregator.store.pool import StoreProvider
from deniable.aggregator.store.survey_cache import SurveyCache
from deniable.shared.canonical import canonical_json, parse_json
from deniable.shared.sketches import Sketch
from deniable.shared.survey import Survey

#: Reports x columns a .dta or .sav export may hold (it is built in memory: about 80 MB of
#: numbers at the limit); above it the export is refused, and answers.csv (streamed) is the way.
MAX_EXPORT_CELLS = 5_000_000
#: The export formats of `deniable-aggregator export --format`.
FORMATS = ("csv", "dta", "sav", "r")
#: Stata's longest variable name and label, and SPSS's longest value label in UTF-8 bytes.
STATA_NAME, STATA_LABEL, SPSS_VALUE_LABEL = 32, 80, 120

StatFormat = Literal["dta", "sav"]
#: The start of a Stata format 118/119 file, up to its byte order (LSF or MSF).
_DTA_HEAD = re.compile(rb"<stata_dta><header><release>11[89]</release><byteorder>(LSF|MSF)<")


#: The start of a randomized question's variable label: its cells are noisy reports, and a
#: tabulation of them is not an estimate (docs/analysis.md).
RANDOMIZED_LABEL = "RANDOMIZED (noisy, not the true answer): "
#: The start of a randomized question's value labels ("noisy yes", "noisy <option>").
NOISY = "noisy "


@dataclass(frozen=True)
class Column:
    """One column of a .dta/.sav file: its name there, its label and what its cells hold (a
    question's answer, or one option's 0/1 mark of a question answered with a mark per
    option: a select-all question, or oue)."""

    qid: str
    name: str
    label: str
    #: Value -> label, for answers that are an option index or a 0/1 mark (every cell is a
    #: number: an option index, a 0/1 mark or an integer).
    values: dict[int, str] | None
    #: The option whose mark the column holds (a mark per option), else None.
    option: int | None = None


# -- the rows -------------------------------------------------------------------------------------
def _answers(body: str) -> dict[str, Any]:
    """A stored report's answers (stored reports were checked when they arrived)."""
    answers = parse_json(body).get("answers")
    return answers if isinstance(answers, dict) else {}


def csv_text(answer: Any) -> str:
    """A wire answer as answers.csv writes it: a number, a string of 0/1, a sketch answer as
    JSON; a skipped question is empty (write_csv quotes and defuses it)."""
    if answer is None:
        return ""
    if isinstance(answer, list):
        return canonical_json(answer).decode("utf-8")
    return str(answer)


def answers_csv(stores: StoreProvider, survey_id: str, *, who: Principal) -> Iterator[str]:
    """answers.csv, streamed: a header of question ids, then one line per report in arrival
    order. The rule is checked and the export logged now; the lines are read later from a
    store of their own (memory flat in the number of reports)."""
    with stores.borrowed() as store:
        record = access.authorize(store, who, survey_id, "export")
        audit.record(store, who, survey_id, "answers.csv")
    qids = list(Survey.from_stored(record.resolved).questions)

    def lines() -> Iterator[str]:
        yield write_csv(qids, ())  # the header alone
        with stores.borrowed() as store:
            for body in store.iter_report_bodies(survey_id):
                answers = _answers(body)
                yield write_csv([csv_text(answers.get(qid)) for qid in qids], ())

    return lines()


# -- Stata and SPSS -------------------------------------------------------------------------------
#: Names neither Stata nor SPSS takes for a variable (compared without case).
_RESERVED = frozenset(
    "all and by eq ge gt le lt ne not or to with _all _b byte _coef _cons double float if in "
    "int long _n _pi _pred _rc _skip strl using".split()
)
#: Stata's string storage types (str1 ... str2045, strL) cannot name a variable either.
_STORAGE_TYPE = re.compile(r"str(?:[0-9]+|l)", re.IGNORECASE)


def _reserved(name: str) -> bool:
    """Whether Stata or SPSS refuses `name` as a variable name."""
    return name.casefold() in _RESERVED or _STORAGE_TYPE.fullmatch(name) is not None


def variable_names(qids: Sequence[str]) -> dict[str, str]:
    """Question id -> a name Stata and SPSS both take: '-' becomes '_', a leading digit gets a
    'q', at most 32 characters, reserved words and repeats get a suffix."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    #: The last suffix each base (without case) was given: the ones before it were taken or
    #: reserved then and still are, so the next of that base starts there (ids sharing their
    #: first 32 characters, 25,600 option columns, once took minutes trying them all again).
    last: dict[str, int] = {}
    for qid in qids:
        base = qid.replace("-", "_")
        if not base[0].isalpha():
            base = "q" + base
        base = base[:STATA_NAME]
        k = last.get(base.casefold(), 1)
        name = base if k == 1 else _suffixed(base, k)
        # Each turn tries a new suffix, and only finitely many names are taken or reserved: the
        # loop always ends (a suffixed name is never a storage type such as str80).
        while name.casefold() in taken or _reserved(name):
            k += 1
            name = _suffixed(base, k)
        names[qid] = name
        taken.add(name.casefold())
        last[base.casefold()] = k
    return names


def _suffixed(base: str, k: int) -> str:
    """`base` with the suffix `_k`, cut to fit STATA_NAME."""
    suffix = f"_{k}"
    return base[: STATA_NAME - len(suffix)] + suffix


def _short(text: str, limit: int) -> str:
    """Text cut to `limit` characters (with an ellipsis when cut) and on one line."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _bytes_short(text: str, limit: int) -> str:
    """Text cut to `limit` UTF-8 bytes (SPSS counts bytes), on one line."""
    line = _short(text, limit)
    while len(line.encode("utf-8")) > limit:
        line = line[:-2] + "…"
    return line


def columns(survey: Survey) -> tuple[list[Column], list[str]]:
    """The columns of a .dta/.sav export, and the question ids left out (text questions:
    their sketch answers are in answers.csv). A randomized question's label starts with
    RANDOMIZED_LABEL and its value labels with "noisy "; a question answered with a mark per
    option (select-all, oue) is a 0/1 column per option, `<qid>_<k>` (k from 1), labelled with
    its option."""
    kept: list[tuple[str, int | None]] = []  # (question id, option) of each column
    left: list[str] = []
    for qid, question in survey.questions.items():
        if isinstance(question.randomizer, Sketch):
            left.append(qid)
        elif question.randomizer.bit_string:
            kept += [(qid, k) for k in range(len(question.options))]
        else:
            kept.append((qid, None))
    names = variable_names([qid if k is None else f"{qid}_{k + 1}" for qid, k in kept])
    out: list[Column] = []
    for qid, k in kept:
        question = survey.questions[qid]
        prefix = "" if question.plain else RANDOMIZED_LABEL
        noisy = "" if question.plain else NOISY
        name = names[qid if k is None else f"{qid}_{k + 1}"]
        if k is not None:
            label = _short(f"{prefix}{question.options[k]}: {question.text}", STATA_LABEL)
            values = {0: f"{noisy}no", 1: f"{noisy}yes"}
        else:
            label = _short(prefix + question.text, STATA_LABEL)
            values = None
            if question.low is None and question.options:
                values = {i: noisy + option for i, option in enumerate(question.options)}
        out.append(Column(qid, name, label, values, k))
    return out, left


def notes(survey: Survey, cols: Sequence[Column], left: Sequence[str]) -> list[str]:
    """The file's notes: the survey, each question's mechanism and probabilities, the names
    that differ from the question ids and the questions left out."""
    lines = [
        f"deniable survey {survey.id}, survey hash {survey.hash}.",
        "One row per report: the noisy answer of each randomized question, the plain answer "
        "of each plain one; missing: the question was not asked (skip logic).",
    ]
    marks: dict[str, list[str]] = {}  # a question's per-option columns, by question id
    for col in cols:
        if col.option is not None:
            marks.setdefault(col.qid, []).append(col.name)
    for col in cols:
        question = survey.questions[col.qid]
        if col.option is not None and col.name != marks[col.qid][0]:
            continue  # a question's note is said once, at its first column
        where = col.qid if col.name == col.qid else f"{col.qid} (variable {col.name})"
        if col.qid in marks:
            where = f"{col.qid} (variables {', '.join(marks[col.qid])}, one per option)"
        if question.plain:
            lines.append(f"{where}: plain (mechanism none), sent exactly as answered.")
            continue
        p_star = Fraction(question.randomizer.p_star)
        q_star = Fraction(question.randomizer.q_star)
        line = (
            f"{where}: mechanism {question.mechanism}, epsilon {question.epsilon:.6g}, "
            f"p* = {p_star}, q* = {q_star}"
        )
        if question.kind.rows == "yes":
            design = design_of(question)
            line += (
                f"; rr::rrreg design forced-known with p = {design['p']}, p1 = {design['p1']}, "
                f"p0 = {design['p0']}"
            )
        elif col.option is not None:
            line += "; each option's column is its noisy mark (1: the report marks it)"
        lines.append(
            line + "; a tabulation of these noisy answers is not an estimate: see the results."
        )
    for qid in left:
        lines.append(f"{qid}: a text question, left out (its sketch answers are in answers.csv).")
    return lines


def _frame(cols: Sequence[Column], bodies: Iterator[str]) -> Any:
    """The pandas DataFrame of the rows (numbers as floats with NaN for missing)."""
    import pandas as pd

    data: dict[str, list[Any]] = {col.name: [] for col in cols}
    for body in bodies:
        answers = _answers(body)
        for col in cols:
            answer = answers.get(col.qid)
            if answer is None:
                data[col.name].append(math.nan)
            elif col.option is not None:  # one option's mark of a string of 0/1
                data[col.name].append(float(str(answer)[col.option] == "1"))
            else:
                data[col.name].append(float(answer))
    return pd.DataFrame({col.name: pd.Series(data[col.name], dtype="float64") for col in cols})


def _stata_notes(path: str, lines: Sequence[str]) -> None:
    """Write `lines` as the .dta file's notes (`notes` in Stata: the characteristics
    _dta[note0] = their number and _dta[note1..]), which pyreadstat does not write: the
    characteristics section of format 118/119 is filled in and the map's offsets after it
    moved by as many bytes."""
    with open(path, "rb") as handle:
        blob = handle.read()
    head = _DTA_HEAD.match(blob)
    if head is None:
        raise ValueError("unexpected .dta layout: not a format 118/119 header")
    order = "<" if head.group(1) == b"LSF" else ">"
    # The map is the `<map>` whose second entry is its own offset: the file label (the
    # survey's title) comes before it and may spell "<map>" too.
    at_map = -1
    for found in re.finditer(rb"<map>", blob):
        entries = blob[found.end() : found.end() + 16]
        if len(entries) == 16 and struct.unpack(f"{order}2Q", entries)[1] == found.start():
            at_map = found.end()
            break
    if at_map < 0:
        raise ValueError("unexpected .dta layout: no map")
    offsets = list(struct.unpack(f"{order}14Q", blob[at_map : at_map + 112]))
    start = offsets[8]
    if blob[start : start + 17] != b"<characteristics>":
        raise ValueError("unexpected .dta layout: no characteristics where the map says")

    def entry(name: str, text: str) -> bytes:
        body = b"_dta".ljust(129, b"\0") + name.encode().ljust(129, b"\0")
        body += text.encode("utf-8") + b"\0"
        return b"<ch>" + struct.pack(f"{order}I", len(body)) + body + b"</ch>"

    added = entry("note0", str(len(lines))) + b"".join(
        entry(f"note{i}", line) for i, line in enumerate(lines, start=1)
    )
    offsets = [o + len(added) if o > start else o for o in offsets]
    at = start + 17
    blob = (
        blob[:at_map]
        + struct.pack(f"{order}14Q", *offsets)
        + blob[at_map + 112 : at]
        + added
        + blob[at:]
    )
    with open(path, "wb") as handle:
        handle.write(blob)


def write_stat_file(survey: Survey, bodies: Iterator[str], fmt: StatFormat, path: str) -> None:
    """Write the reports' rows to `path` as .dta or .sav with labels and notes (pure: no
    store, no access check)."""
    import pyreadstat

    cols, left = columns(survey)
    frame = _frame(cols, bodies)
    lines = notes(survey, cols, left)
    labels = {col.name: col.label for col in cols}
    title = _short(survey.title, STATA_LABEL)
    if fmt == "dta":
        values = {c.name: c.values for c in cols if c.values}
        pyreadstat.write_dta(
            frame, path, file_label=title, column_labels=labels, variable_value_labels=values
        )
        _stata_notes(path, lines)
        return
    values = {
        c.name: {k: _bytes_short(v, SPSS_VALUE_LABEL) for k, v in c.values.items()}
        for c in cols
        if c.values
    }
    wrapped = [part for line in lines for part in textwrap.wrap(line, 80)]
    pyreadstat.write_sav(
        frame,
        path,
        file_label=_bytes_short(survey.title, 64),
        column_labels=labels,
        variable_value_labels=values,
        note=wrapped,
    )


def stat_file(
    store: Store,
    survey_id: str,
    fmt: StatFormat,
    *,
    who: Principal,
    cache: SurveyCache | None = None,
    max_cells: int = MAX_EXPORT_CELLS,
) -> bytes:
    """The survey's rows as a Stata .dta or SPSS .sav file. ActionError too-large (checked
    before any row is read) when reports x columns exceed `max_cells`: answers.csv streams."""
    record = access.authorize(store, who, survey_id, "export")
    survey = _survey(record, cache)
    reports, _ = store.tallies(survey_id)
    width = max(1, len(columns(survey)[0]))
    if reports * width > max_cells:
        raise ActionError(
            "too-large",
            f"export.{fmt}: {reports:,} reports x {width} columns is over {max_cells:,} cells; "
            "download answers.csv instead (streamed, no limit)",
        )
    handle, path = tempfile.mkstemp(suffix=f".{fmt}")
    os.close(handle)
    try:
        write_stat_file(survey, store.iter_report_bodies(survey_id), fmt, path)
        with open(path, "rb") as out:
            data = out.read()
    finally:
        os.unlink(path)
    audit.record(store, who, survey_id, f"export.{fmt}")
    return data


def _survey(record: SurveyRecord, cache: SurveyCache | None) -> Survey:
    return cache.survey(record) if cache is not None else Survey.from_stored(record.resolved)
