"""The real public XLSForms the tests read (tests/forms/SOURCES.md): scripts/test-forms.py
extracts them and holds the privacy choice a researcher adds to one (`with_privacy`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "test_forms_script", ROOT / "scripts/test-forms.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()
REAL = SCRIPT.REAL
real_forms = SCRIPT.real_forms
with_privacy = SCRIPT.with_privacy
outcome = SCRIPT.outcome
