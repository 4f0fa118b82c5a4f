# Two entry points: `make demo` and `make test` (`make test-fast` for the inner loop). Both
# create .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Two test workers per core: most tests wait on a server, a browser or a subprocess, and the
# second worker keeps the core busy meanwhile (on 2 cores: 491 s instead of 636 s).
WORKERS ?= $(shell $(PYTHON) -c "import os; print(2 * (os.cpu_count() or 1))")

.PHONY: demo test test-fast lint format bench docs docs-settings i18n i18n-compile clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --group bench
	touch $(STAMP)

# The example surveys, and one from a real public XLSForm (HOT's waterpoints form, fetched from
# its pinned package with the privacy choice added: tests/forms/SOURCES.md).
# Without the registry (offline), the demo runs on the example surveys alone.
demo: $(STAMP)
	$(BIN)/python scripts/test-forms.py --demo-form build/demo-form.xlsx \
		|| echo "demo: the real form could not be fetched; the demo runs without it" >&2
	$(BIN)/deniable-aggregator demo \
		$$(test -f build/demo-form.xlsx && echo --xlsform build/demo-form.xlsx --drop-unsupported)

# Worksteal: an idle worker takes tests from a busy one's queue, so one slow module does not
# leave a core idle; the 25 slowest tests are printed (what to speed up next).
test: $(STAMP)
	bash scripts/test-deps.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n $(WORKERS) --dist worksteal --durations=25

# The inner loop: everything but the browser, end-to-end, install and PostgreSQL tests (the
# markers tests/conftest.py sets); make test still runs them all.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(WORKERS) --dist worksteal -m "not browser and not e2e and not install and not postgres"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python benchmarks/client.py
	$(BIN)/python benchmarks/ingest.py
	$(BIN)/python benchmarks/analysis.py
	$(BIN)/python benchmarks/results_cpu.py
	$(BIN)/python benchmarks/accuracy.py --numbers-only
	$(BIN)/python benchmarks/weighted.py
	$(BIN)/python benchmarks/predictor.py

docs: $(STAMP)
	$(BIN)/mkdocs build --strict

docs-settings: $(STAMP)
	$(BIN)/python scripts/docs_settings.py

# The product's own words (docs/translations.md): extract the texts into the template and
# merge it into each language's catalog; then, once translated, compile the .mo files.
i18n: $(STAMP)
	$(BIN)/python scripts/i18n.py extract
	$(BIN)/python scripts/i18n.py update

i18n-compile: $(STAMP)
	$(BIN)/python scripts/i18n.py compile
	$(BIN)/python scripts/i18n.py check

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .ruff_cache
