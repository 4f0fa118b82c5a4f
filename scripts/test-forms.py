#!/usr/bin/env python3
"""Real public XLSForms for the tests (tests/forms/SOURCES.md), taken from pinned packages.

The forms are never committed: this script downloads each pinned source distribution once
(`pip download`, into a cache: $DENIABLE_TEST_FORMS_CACHE, else ~/.cache/deniable/test-forms),
checks its sha256 against the pin below, and extracts the chosen forms into tests/forms/real/
(git-ignored). It is idempotent and quick when all is there.

    python scripts/test-forms.py            # fetch (if needed) and extract
    python scripts/test-forms.py --sources  # print tests/forms/SOURCES.md as it must be
    python scripts/test-forms.py --report   # how many import as-is, with the privacy choice
                                            # added, and with --drop-unsupported too
    python scripts/test-forms.py --demo-form OUT.xlsx  # `make demo`'s real form, with the
                                            # privacy choice added
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "forms" / "real"
STAMP = REAL / ".extracted"


@dataclass(frozen=True)
class Package:
    """A pinned source distribution and where its forms come from."""

    name: str
    version: str
    archive: str
    sha256: str
    license: str
    project: str
    prefix: str  # the extracted forms' file names start with it


PYXFORM = Package(
    "pyxform",
    "1.0.0",
    "pyxform-1.0.0.tar.gz",
    "8e59c90588c9d00d2b6ef4f42393529bfbc69cb8fe8ea6314be441aa8032e041",
    "BSD-2-Clause (pyxform's LICENSE: Copyright (c) 2015, XLSForm)",
    "pyxform, ODK's XLSForm converter, by the XLSForm project: its test forms",
    "pyxform",
)
OSM = Package(
    "osm-fieldwork",
    "0.4.0",
    "osm-fieldwork-0.4.0.tar.gz",
    "145011a7d918ac35237fe7953235b3e630e10318a024c2fde2a8dd340a1aa2b1",
    "GPL-3.0-only (the package's LICENSE.md)",
    "osm-fieldwork by the Humanitarian OpenStreetMap Team (HOT): its field-mapping forms",
    "hot",
)
XLSCONV = Package(
    "xlsconv",
    "2.0.1",
    "xlsconv-2.0.1.tar.gz",
    "1b5e940c500dd88b54b67dd76c60c115205ab58fba856ee032ec662a9f250839",
    "MIT (the package's LICENSE: Copyright (c) 2016-2024 S. Andrew Sheppard)",
    "xlsconv (XLSForm to Django models) by wq.io: its test form",
    "wq",
)
PACKAGES = (PYXFORM, OSM, XLSCONV)
#: The real form `make demo` creates a survey from (in English and French).
DEMO_FORM = "hot-waterpoints.xls"

_PYX = "pyxform-1.0.0/pyxform/tests"
_HOT = "osm-fieldwork-0.4.0/osm_fieldwork/xlsforms"
#: (package, path inside its archive, where the form comes from when known).
FORMS: tuple[tuple[Package, str, str], ...] = (
    (PYXFORM, f"{_PYX}/example_xls/tutorial.xls", "ODK's XLSForm tutorial (a household roster)"),
    (PYXFORM, f"{_PYX}/example_xls/widgets.xls", "ODK Collect's widgets sample form"),
    (
        PYXFORM,
        f"{_PYX}/example_xls/xlsform_spec_test.xlsx",
        "the XLSForm specification's test form",
    ),
    (
        PYXFORM,
        f"{_PYX}/example_xls/flat_xlsform_test.xlsx",
        "the XLSForm specification's test form",
    ),
    (
        PYXFORM,
        f"{_PYX}/example_xls/attribute_columns_test.xlsx",
        "the XLSForm specification's test form",
    ),
    (
        PYXFORM,
        f"{_PYX}/example_xls/unknown_question_type.xls",
        "a Nigerian field mapping form (DRG)",
    ),
    (
        PYXFORM,
        f"{_PYX}/bug_example_xls/cascades_old.xls",
        "a construction-site survey reported to pyxform",
    ),
    (PYXFORM, f"{_PYX}/bug_example_xls/cascades_old_with_no_cascade_sheet.xls", "the same survey"),
    (PYXFORM, f"{_PYX}/bug_example_xls/ict_survey_fails.xls", "an ICT survey reported to pyxform"),
    (
        PYXFORM,
        f"{_PYX}/bug_example_xls/excel_with_macros.xlsm",
        "a willingness-to-pay survey (WTP v1101)",
    ),
    (PYXFORM, f"{_PYX}/bug_example_xls/ODKValidateWarnings.xlsx", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/bad_calc.xlsx", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/badly_named_choices_sheet.xls", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/blank_second_row.xls", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/default_time_demo.xls", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/group_name_test.xls", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/not_closed_group_test.xls", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/spaces_in_choices_header.xls", "a form served by Ona"),
    (PYXFORM, f"{_PYX}/bug_example_xls/xl_date_ambiguous.xlsx", ""),
    (PYXFORM, f"{_PYX}/bug_example_xls/xl_date_ambiguous_v1.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/allow_comment_rows_test.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/another_loop.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/calculate.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/calculate_without_calculation.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/cascading_select_test.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/cascading_select_test_equivalent.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/choice_filter_test.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/choice_name_as_type.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/choice_name_same_as_select_name.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/duplicate_columns.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/gps.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/group.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/group_names_must_be_unique.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/hidden.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/include.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/include_json.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/instance_xmlns_test.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/loop.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/new_cascading_select.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/old_cascades.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/or_other.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/pull_data.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/repeat_date_test.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/search_and_select.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/select_one_external.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/settings.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/simple_loop.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/sms_info.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/specify_other.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/style_settings.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/survey_no_name.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/table-list.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/text_and_integer.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/text_and_integer_xlsx.xlsx", ""),
    (PYXFORM, f"{_PYX}/example_xls/warnings.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/xml_escaping.xls", ""),
    (PYXFORM, f"{_PYX}/example_xls/yes_or_no_question.xls", ""),
    *(
        (OSM, f"{_HOT}/{name}", "HOT's OpenStreetMap field mapping (Field Mapping Tasking Manager)")
        for name in (
            "amenities.xls",
            "buildings.xls",
            "camping.xls",
            "cemeteries.xls",
            "education.xls",
            "health.xls",
            "highways.xls",
            "historical.xls",
            "hotspring.xls",
            "landusage.xls",
            "landuse.xls",
            "nature.xls",
            "places.xls",
            "religious.xls",
            "solidwaste.xlsx",
            "test.xls",
            "thamel.xls",
            "toilets.xls",
            "transportation.xls",
            "waste_collection.xlsx",
            "wastedisposal.xls",
            "waterpoints.xls",
            "waterways.xls",
        )
    ),
    (XLSCONV, "xlsconv-2.0.1/tests/files/input_types.xls", "wq.io's form of every input type"),
)


def target(package: Package, member: str) -> str:
    """The extracted form's file name: its package's prefix and its own name."""
    return f"{package.prefix}-{member.rsplit('/', 1)[-1]}"


def cache_dir() -> Path:
    given = os.environ.get("DENIABLE_TEST_FORMS_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deniable" / "test-forms"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(package: Package, cache: Path) -> Path:
    """The package's archive in the cache, downloaded once and checked against its pin."""
    path = cache / package.archive
    if path.exists() and sha256(path) == package.sha256:
        return path
    path.unlink(missing_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--dest",
        str(cache),
        f"{package.name}=={package.version}",
    ]
    subprocess.run(command, check=True)
    if not path.exists():
        raise SystemExit(f"test-forms: pip saved no {package.archive} in {cache}")
    got = sha256(path)
    if got != package.sha256:
        path.unlink()
        raise SystemExit(
            f"test-forms: {package.archive} has sha256 {got}, not the pinned {package.sha256}"
        )
    return path


def _fingerprint() -> str:
    text = "\n".join(f"{p.archive} {p.sha256} {m}" for p, m, _ in FORMS)
    return hashlib.sha256(text.encode()).hexdigest()


def extract() -> int:
    """Every chosen form in tests/forms/real/ (quick when the stamp says they all are)."""
    names = [target(p, m) for p, m, _ in FORMS]
    if (
        STAMP.exists()
        and STAMP.read_text().strip() == _fingerprint()
        and all((REAL / n).exists() for n in names)
    ):
        return len(names)
    cache = cache_dir()
    REAL.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        wanted = {m: target(p, m) for p, m, _ in FORMS if p is package}
        with tarfile.open(fetch(package, cache), "r:gz") as archive:
            for member, name in wanted.items():
                found = archive.getmember(member)  # KeyError names a pin gone wrong
                if not found.isfile():
                    raise SystemExit(f"test-forms: {member} is not a file in {package.archive}")
                source = archive.extractfile(found)
                assert source is not None
                (REAL / name).write_bytes(source.read())
    STAMP.write_text(_fingerprint() + "\n")
    return len(names)


def real_forms() -> list[Path]:
    """Every extracted real form, in the order of FORMS; an AssertionError saying what to run
    when one is missing."""
    paths = [REAL / target(p, m) for p, m, _ in FORMS]
    missing = [p.name for p in paths if not p.exists()]
    assert not missing, (
        f"{len(missing)} real XLSForms missing from {REAL} ({missing[0]}...): run "
        "`python scripts/test-forms.py` (it downloads them)"
    )
    return paths


def with_privacy(data: bytes, epsilon: float = 1.0) -> bytes:
    """A form as .xlsx with the privacy choice a researcher adds (docs/xlsform.md, "Bring your
    ODK/Kobo form"): the settings' default epsilon, and `none` in `deniable::mechanism` on the
    questions asked plainly: those a condition reads (a condition reads only plain answers) and
    the integers without a full range. Nothing else of the form changes."""
    from openpyxl import Workbook

    from deniable.aggregator.forms.rows import Asks, kind_of, parse_range
    from deniable.aggregator.forms.workbook import read_book

    book = read_book(data)
    out = Workbook()
    out.remove(out.active)
    for name in ("survey", "choices", "settings"):
        sheet = book.sheets.get(name)
        if sheet is None and name != "settings":
            continue
        headers = list(sheet.headers) if sheet else []
        rows = [dict(row) for row in sheet.rows] if sheet else []
        if name == "survey":
            constraint = next((h for h in headers if _is(h, "constraint")), None)
            headers.append("deniable::mechanism")
            gates = _gates(headers, rows)
            for row in rows:
                kind = kind_of(row.get("type", ""))
                if kind.what != "question":
                    continue
                if row.get("name") in gates and kind.asks is not Asks.WORDS:
                    row["deniable::mechanism"] = "none"
                if kind.asks is Asks.WHOLE_NUMBER:
                    given = (
                        parse_range(row.get(constraint, ""), row.get("name"))
                        if constraint
                        else None
                    )
                    low, high = given or kind.bounds
                    if low is None or high is None:
                        row["deniable::mechanism"] = "none"
        else:
            if name == "settings":
                headers.append("deniable::epsilon")
                rows = rows[:1] or [{}]
                rows[0]["deniable::epsilon"] = str(epsilon)
        written = out.create_sheet(name)
        written.append(headers)
        for row in rows:
            written.append([row.get(h) for h in headers])
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def _is(header: str, key: str) -> bool:
    """Whether a survey header is `key` as pyxform reads it (`bind:relevant`, `relevance`...)."""
    from deniable.aggregator.forms.columns import read_columns

    return read_columns("survey", [header])[0].key == key


def _gates(headers: list[str], rows: list[dict[str, str]]) -> set[str]:
    """The names the form's conditions read."""
    from pyxform.parsing.sheet_headers import clean_text_values

    from deniable.aggregator.forms import relevance

    columns = [h for h in headers if _is(h, "relevant")]
    found: set[str] = set()
    for row in rows:
        for column in columns:
            try:
                tree = relevance.parse_xlsform(clean_text_values(row.get(column) or ""))
            except relevance.ConditionError:
                continue
            found.update(relevance.referenced(tree))
    return found


def outcome(path: Path) -> dict[str, bool]:
    """Whether a form imports as-is, with the privacy choice added, and with it and
    drop_unsupported."""
    from deniable.aggregator.forms import XLSFormError, import_xlsform

    data = path.read_bytes()
    found = {}
    for key, added, drop in (
        ("as-is", False, False),
        ("privacy", True, False),
        ("drop", True, True),
    ):
        try:
            form = with_privacy(data) if added else data
            import_xlsform(form, filename=path.name, drop_unsupported=drop)
        except XLSFormError:
            found[key] = False
        else:
            found[key] = True
    return found


def sources() -> str:
    """tests/forms/SOURCES.md as it must be."""
    lines = [
        "# Real public XLSForms used by the tests",
        "",
        "None of these forms is committed. `python scripts/test-forms.py` (run by",
        "`scripts/test-deps.sh`, so by `make test`) downloads each pinned source distribution below",
        "with pip, checks its sha256, and extracts the forms into `tests/forms/real/` (git-ignored)",
        "under the names listed. This file is what `python scripts/test-forms.py --sources` prints;",
        "a test checks they agree.",
        "",
        "| package | license | sha256 of the archive |",
        "|---|---|---|",
    ]
    for package in PACKAGES:
        lines.append(
            f"| {package.name} {package.version} (`{package.archive}`): {package.project} "
            f"| {package.license} | `{package.sha256}` |"
        )
    lines += [
        "",
        "| file in tests/forms/real | package | path inside it | origin, where known |",
        "|---|---|---|---|",
    ]
    for package, member, origin in FORMS:
        lines.append(
            f"| `{target(package, member)}` | {package.name} {package.version} | `{member}` "
            f"| {origin or '—'} |"
        )
    return "\n".join(lines) + "\n"


def report() -> None:
    """Counts of the real forms that import as-is, with the privacy choice added (the helper
    of tests/forms/realforms.py), and with --drop-unsupported too."""
    counts = {"as-is": 0, "privacy": 0, "drop": 0}
    for package, member, _ in FORMS:
        name = target(package, member)
        result = outcome(REAL / name)
        for key in counts:
            counts[key] += result[key]
        print(f"{name}: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in result.items()))
    total = len(FORMS)
    print(
        f"\n{total} real forms: {counts['as-is']} import as-is, {counts['privacy']} with only the "
        f"privacy choice added, {counts['drop']} with the privacy choice and --drop-unsupported"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", action="store_true", help="print SOURCES.md")
    parser.add_argument("--report", action="store_true", help="count what imports")
    parser.add_argument(
        "--demo-form", type=Path, metavar="OUT", help=f"write {DEMO_FORM} with privacy added"
    )
    args = parser.parse_args()
    if args.sources:
        sys.stdout.write(sources())
        return
    count = extract()
    if args.report:
        report()
        return
    if args.demo_form:
        args.demo_form.parent.mkdir(parents=True, exist_ok=True)
        args.demo_form.write_bytes(with_privacy((REAL / DEMO_FORM).read_bytes()))
        print(f"test-forms: {args.demo_form}: {DEMO_FORM} with the privacy choice added")
        return
    print(f"test-forms: {count} real XLSForms in {REAL.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
