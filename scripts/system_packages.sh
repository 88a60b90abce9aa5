#!/usr/bin/env bash
# The Debian packages the tests need, installed when they are missing: Chromium drives the browser tests (never a
# browser downloaded by `playwright install`); node runs the JavaScript's unit tests; the text packages are the corpus
# the shipped model's held-out figures are rebuilt from. As root with apt-get this installs them; otherwise it prints the one command to run and fails.
set -euo pipefail
PACKAGES="chromium nodejs fortunes fortunes-min wordnet-base dict-gcide python3-doc"

# `dpkg -s` also succeeds for a package removed with its configuration left behind: ask for the installed state.
installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

missing=""
for p in $PACKAGES; do installed "$p" || missing="$missing $p"; done
[ -z "$missing" ] && exit 0

command="apt-get update && apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "The tests need Debian packages that are missing:$missing. Install them with: sudo sh -c '$command'" >&2
    exit 1
fi
echo "Installing Debian packages the tests need:$missing"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
