"""The conformance vectors in tests/conformance/ are what the Python protocol produces (the
browser module is held to the same files in tests/browser/test_conformance_js.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from deniable.shared import Survey
from deniable.shared.canonical import canonical_json
from deniable.shared.report import signed_bytes, verify_report

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "tests" / "conformance"


def load(name: str) -> object:
    return json.loads((FOLDER / name).read_text("utf-8"))


def test_the_vector_files_are_what_the_generator_writes_today():
    spec = importlib.util.spec_from_file_location(
        "vectors", ROOT / "scripts" / "conformance_vectors.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, content in module.vectors().items():
        assert load(name) == content, f"{name} is stale: run scripts/conformance_vectors.py"


@pytest.mark.parametrize("case", load("canonical.json"), ids=lambda c: c["canonical"][:30])
def test_canonical_json(case):
    assert canonical_json(case["value"]) == case["canonical"].encode("utf-8")


@pytest.mark.parametrize("case", load("survey_hashes.json"), ids=lambda c: c["survey"]["id"])
def test_survey_hashes(case):
    survey = Survey.from_dict(case["survey"])
    assert survey.to_dict() == case["survey"] and survey.hash == case["hash"]


def test_the_signed_report_verifies_and_signs_the_canonical_text():
    vector = load("signed_report.json")
    report = vector["report"]
    assert signed_bytes(report) == vector["signed_text"].encode("utf-8")
    verify_report(report)
    tampered = {**report, "answers": {**report["answers"], "smokes": 0}}
    with pytest.raises(Exception, match="signature"):
        verify_report(tampered)
