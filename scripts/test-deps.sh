#!/usr/bin/env bash
# Installs the system packages the test suite needs. Idempotent and quick when all is there.
set -euo pipefail
need=()
# Debian's Chromium, driven by Playwright in tests/browser (never `playwright install`).
if [ ! -x /usr/bin/chromium ]; then
    need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "test-deps: need ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
