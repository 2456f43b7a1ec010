#!/usr/bin/env bash
# Headless Chromium for the HTML report's browser test, from the system's packages (Debian's
# `chromium`). Idempotent: nothing happens when it is already installed. Where the packages
# cannot be installed (not root, no apt-get), it says so: the browser test then fails in CI (.ci/run
# sets CI) and skips elsewhere.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing Chromium from the system's packages (apt-get install chromium)"
  apt-get install -y -qq --no-install-recommends chromium >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
else
  echo "setup: no chromium and no way to install it here (needs root and apt-get): the browser test fails in CI, skips elsewhere"
fi
