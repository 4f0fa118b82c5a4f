"""The costliest inputs that are still within the default limits: an XLSForm and text surveys a
hostile researcher could make, answered by hostile respondents. The time and peak memory of
importing or analysing each, in a child process of its own.

    python benchmarks/worst_within_limits.py [--only NAME ...] [--reports 2000]

- XLSForm "7 languages of shared strings": 100 questions of 256 options, every label in seven
  languages (the most the element budget holds), each label and text as long as allowed
  (options 200 characters, questions 2,000) and written once in the shared strings: 0.8 MB of
  zip become a survey document of 38 MB.
- text "rappor beyond its bits": three rappor questions of 1,000 candidates (32 bits, 32
  hashes, 32 cohorts: more candidates than Bloom bits, so every results request runs the
  selection) and 50 candidates asked for, 6.5 M decoder cells of the 8 M allowed.
- text "cms, 100 questions" and "hcms, 100 questions": 100 questions of 1,024 hash functions
  and 2 columns, 22 candidates and the 50 asked for (7.9 M decoder cells): the most hashing one
  results request may ask for.

Respondents of the text surveys send uniformly random bits (any respondent may: the bits are
noise to the aggregator), signed as any report is. Each child prints its seconds and VmHWM
beside the peak of a process that only imports the aggregator. No target: the figures are the
worst the defaults allow (docs/security.md).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import xlsform_limits as forms  # noqa: E402 - the workbook writer of the XLSForm benchmark


def shared_strings_form(languages: int = 7) -> bytes:
    """100 questions of 256 options in `languages` languages, every text as long as allowed
    and each distinct text once in the shared strings."""
    names = forms.LANGUAGES[:languages]
    labels = [f"label::{name}" for name in names]
    index: dict[str, int] = {}

    def text(tag: str, length: int) -> str:
        return (tag + " " + "x" * length)[:length]

    survey: list[list[Any]] = [
        ["type", "name", *labels, "deniable::mechanism", "deniable::epsilon"]
    ]
    for q in range(100):
        survey.append(
            [f"select_one l{q}", f"q{q}", *[text(f"Q{q} {n}", 2000) for n in names], "grr", 1]
        )
    choices: list[list[Any]] = [["list_name", "name", *labels]]
    for q in range(100):
        for o in range(256):
            choices.append([f"l{q}", f"o{o}", *[text(f"O{o} {n}", 200) for n in names]])
    settings = [["form_id", "form_title"], ["worst", "The worst form"]]
    sheets = {
        name: _sheet(rows, index)
        for name, rows in (("survey", survey), ("choices", choices), ("settings", settings))
    }
    items = "".join(
        f"<si><t>{forms.escape(s)}</t></si>" for s in sorted(index, key=index.__getitem__)
    )
    strings = forms.DECLARATION + f'<sst xmlns="{forms.MAIN}">{items}</sst>'.encode()
    return forms.pack(forms.package(sheets, **{"xl/sharedStrings.xml": strings}))


def _sheet(rows: list[list[Any]], index: dict[str, int]) -> bytes:
    """A worksheet whose texts are shared strings (added to `index`)."""
    out = []
    for r, cells in enumerate(rows, start=1):
        out.append(f'<row r="{r}">')
        for c, value in enumerate(cells, start=1):
            ref = f"{forms.column_letters(c)}{r}"
            if isinstance(value, int):
                out.append(f'<c r="{ref}"><v>{value}</v></c>')
            else:
                out.append(f'<c r="{ref}" t="s"><v>{index.setdefault(value, len(index))}</v></c>')
        out.append("</row>")
    body = "".join(out)
    return (
        forms.DECLARATION
        + f'<worksheet xmlns="{forms.MAIN}"><sheetData>{body}</sheetData></worksheet>'.encode()
    )


def text_survey(kind: str) -> dict[str, Any]:
    """One of the two text surveys."""
    if kind == "rappor":
        params = {"k": 32, "h": 32, "m": 32, "f": "1/2", "p": "1/2", "q": "3/4"}
        shape = [("rappor", params, 1000)] * 3
    else:  # cms or hcms
        shape = [(kind, {"k": 1024, "m": 2}, 22)] * 100
    questions = []
    for i, (mechanism, params, count) in enumerate(shape):
        question: dict[str, Any] = {
            "id": f"t{i}",
            "text": "Which one?",
            "type": "text",
            "mechanism": mechanism,
            mechanism: params,
            "candidates": [f"word {i} {j}" for j in range(count)],
        }
        if mechanism != "rappor":
            question["epsilon"] = 4
        questions.append(question)
    return {"id": f"worst-{kind}", "title": "The worst text survey", "questions": questions}


EXTRA = [f"asked {i}" for i in range(50)]


def hostile_reports(doc: dict[str, Any], count: int, seed: int) -> list[dict[str, Any]]:
    """`count` signed reports whose sketch answers are uniformly random bits."""
    from deniable.shared import Survey
    from deniable.shared.report import build_report
    from deniable.shared.signing import generate_key

    survey = Survey.from_dict(doc)
    rng = random.Random(seed)
    reports = []
    for _ in range(count):
        answers: dict[str, Any] = {}
        for qid, question in survey.questions.items():
            sketch = question.randomizer
            if sketch.name == "rappor":
                bits = "".join(rng.choice("01") for _ in range(sketch.k))
                answers[qid] = [rng.randrange(sketch.m), bits]
            elif sketch.name == "hcms":
                answers[qid] = [rng.randrange(sketch.k), rng.randrange(sketch.m), rng.randrange(2)]
            else:
                bits = "".join(rng.choice("01") for _ in range(sketch.m))
                answers[qid] = [rng.randrange(sketch.k), bits]
        reports.append(build_report(survey, answers, generate_key()))
    return reports


def peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def child(name: str, path: str) -> None:
    """Import the form, or analyse the text survey, at `path`; one JSON line."""
    import deniable.aggregator  # noqa: F401 - what the baseline holds
    from deniable.aggregator import analyze
    from deniable.aggregator.forms import XLSFormError, read_xlsform

    data = Path(path).read_bytes()
    start_peak = peak_mib()
    start = time.perf_counter()
    if name == "baseline":
        said = "imports only"
    elif name.startswith("xlsform"):
        try:
            doc = read_xlsform(data).document
            said = f"imported: {len(doc['questions'])} questions, {len(json.dumps(doc)):,} bytes"
        except XLSFormError as exc:
            said = f"refused: {exc}"[:200]
    else:
        given = json.loads(data)
        result = analyze(given["survey"], given["reports"], candidates=EXTRA)
        said = f"analysed: {result.to_dict()['n']} reports"
    print(
        json.dumps(
            {"seconds": time.perf_counter() - start, "peak": peak_mib(), "start": start_peak,
             "said": said}
        )
    )  # fmt: skip


def measure(name: str, data: bytes) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile() as file:
        file.write(data)
        file.flush()
        done = subprocess.run(
            [sys.executable, __file__, "--child", name, file.name],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", help="names (or parts of names) to run")
    parser.add_argument("--reports", type=int, default=2000, help="hostile reports per survey")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    cases = {
        "baseline": lambda: b"",
        "xlsform: 7 languages of shared strings": shared_strings_form,
        "text: rappor beyond its bits (3 questions)": lambda: _text("rappor", args.reports),
        "text: cms, 100 questions of k 1024": lambda: _text("cms", args.reports),
        "text: hcms, 100 questions of k 1024": lambda: _text("hcms", args.reports),
    }
    print(f"{'case':46} {'input KiB':>9} {'time s':>7} {'peak MiB':>9} {'at start':>9}  outcome")
    for name, build in cases.items():
        if args.only and name != "baseline" and not any(o in name for o in args.only):
            continue
        data = build()
        got = measure(name, data)
        print(
            f"{name:46} {len(data) / 1024:9.0f} {got['seconds']:7.2f} {got['peak']:9.0f} "
            f"{got['start']:9.0f}  {got['said']}",
            flush=True,
        )


def _text(kind: str, count: int) -> bytes:
    doc = text_survey(kind)
    return json.dumps({"survey": doc, "reports": hostile_reports(doc, count, 1)}).encode()


if __name__ == "__main__":
    main()
