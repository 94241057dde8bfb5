#!/usr/bin/env bash
# Install Chromium (Debian's package) for the browser tests unless it is
# already on PATH or named by $CHROMIUM. Running it again changes nothing.
set -euo pipefail

if [ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "chromium: not installed and no apt-get here; install Chromium by hand (or set CHROMIUM to its path)" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
echo "chromium: installing (apt-get install chromium)"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
chromium --version
