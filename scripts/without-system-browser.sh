#!/usr/bin/env bash
# Runs a command with every system Chromium hidden, to show that the tests need no browser beyond the
# one `npm install` brings (the @sparticuz/chromium package, test/support/browser.ts). In a private
# mount namespace of its own (needs root: `unshare -m`), each system browser executable that exists is
# covered by /dev/null and each browser folder by an empty tmpfs; CHROMIUM_PATH is unset. Nothing
# outside the command's namespace changes.
#
#   scripts/without-system-browser.sh                 # the console's browser test
#   scripts/without-system-browser.sh npm test        # any other command
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -eq 0 ]; then
  set -- node --test --test-concurrency=1 test/console-browser.test.ts
fi

exec unshare --mount --propagation private bash -c '
  set -euo pipefail
  for file in /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome \
    /usr/bin/google-chrome-stable /usr/bin/chrome /usr/bin/headless_shell; do
    if [ -e "$file" ]; then mount --bind /dev/null "$file" && echo "hidden: $file"; fi
  done
  for dir in /usr/lib/chromium /usr/lib/chromium-browser /opt/google "${HOME:-/root}/.cache/ms-playwright"; do
    if [ -d "$dir" ]; then mount -t tmpfs tmpfs "$dir" && echo "hidden: $dir"; fi
  done
  unset CHROMIUM_PATH
  export PATH="$PWD/node_modules/.bin:$PATH"
  export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$PWD/.tmp/compile-cache}"
  for name in chromium chromium-browser google-chrome google-chrome-stable chrome headless_shell; do
    found="$(command -v "$name" || true)"
    if [ -n "$found" ] && [ -s "$found" ]; then echo "a system browser is still visible: $found" >&2; exit 1; fi
  done
  echo "no system browser visible; running: $*"
  exec "$@"
' without-system-browser "$@"
