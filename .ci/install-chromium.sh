#!/usr/bin/env bash
# Installs Debian's chromium, which the reports package's HTML test drives
# headless to check that report.html's charts are drawn. Idempotent: does
# nothing when /usr/bin/chromium already exists.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium
