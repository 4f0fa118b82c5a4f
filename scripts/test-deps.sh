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
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "test-deps: need ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
