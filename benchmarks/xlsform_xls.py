"""Legacy .xls XLSForms at and over the limits (docs/xlsform.md#limits): the time and peak memory
of importing each, in a child process of its own.

    python benchmarks/xlsform_xls.py

The workbooks are written by tests/forms/xls.py (an OLE2 file of BIFF8 records, no library):
the largest valid form (100 questions of 256 options, labelled in four languages), the densest
workbook under the cell limit (MULRK records, six bytes a cell, 25,601 rows of choices), one
over the cell limit, and one of 65,535 rows of text (over the row limit). Each child imports
deniable.aggregator.forms, then times `read_xlsform` and reports its peak resident memory
(VmHWM) beside the interpreter's at start. Target: every hostile form refused in under 2 s and
200 MB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "forms"))

import xls  # noqa: E402 - the tests' .xls writer

from deniable.aggregator.forms.legacy import MAX_XLS_CELLS  # noqa: E402

CHILD = """
import json, re, sys, time
from deniable.aggregator.forms import XLSFormError, read_xlsform
import xlrd, pyxform.xls2json
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
data = open(sys.argv[1], "rb").read()
start = peak()
began = time.perf_counter()
try:
    doc = read_xlsform(data, filename="form.xls").document
    said = f"imported: {len(doc['questions'])} questions"
except XLSFormError as exc:
    said = "refused: " + exc.problems[0][:70]
print(json.dumps({"seconds": time.perf_counter() - began, "peak": peak(), "start": start,
                  "said": said}))
"""
LANGUAGES = ("English (en)", "French (fr)", "Arabic (ar)", "Swahili (sw)")


def largest() -> bytes:
    labels = [f"label::{name}" for name in LANGUAGES]
    survey = [["type", "name", *labels, "deniable::epsilon"]]
    survey += [[f"select_one l{i}", f"q{i}", *(f"Q{i}?",) * 4, 1] for i in range(100)]
    choices = [["list_name", "name", *labels]]
    choices += [[f"l{i}", f"o{j}", *(f"Option {j}",) * 4] for i in range(100) for j in range(256)]
    return xls.workbook({"survey": survey, "choices": choices})


def cases() -> dict[str, bytes]:
    survey = [["type", "name", "label"], ["text", "q", "Q?"]]
    return {
        "largest valid form (100 questions x 256 options, 4 languages)": largest(),
        "densest under the cell limit (25,601+ rows of 7 cells)": xls.workbook(
            {"survey": survey, "choices": xls.mulrk_rows(28_000, 7)}
        ),
        f"over the cell limit ({MAX_XLS_CELLS:,})": xls.workbook(
            {"survey": survey, "choices": xls.mulrk_rows(40_000, 7)}
        ),
        "65,535 rows of text (over the row limit)": xls.workbook(
            {
                "survey": [["type", "name", "label"]]
                + [["text", f"q{i}", "Q?"] for i in range(65_534)]
            }
        ),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, data in cases().items():
            path = Path(folder) / "form.xls"
            path.write_bytes(data)
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
            )
            got = json.loads(out.stdout)
            print(
                f"{name}: {len(data):,} bytes, {got['seconds']:.2f} s, peak {got['peak']} MB "
                f"(at start {got['start']} MB): {got['said']}"
            )


if __name__ == "__main__":
    main()
