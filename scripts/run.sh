#!/usr/bin/env bash
# make run: build the server and run it in the foreground, flags as arguments.
#
# With no JWT secret (the embedded store) the server keeps its development
# secret in .tmp/dev-secret (TASKHOOK_DEV_SECRET_FILE overrides), so the
# token it prints, and a console tab signed in with it, outlive a restart.
# Ctrl-C stops it: the server drains and this script ends with status 0, so
# make reports no error.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .tmp
"${GO:-go}" build -o .tmp/taskhook-run ./cmd/server
export TASKHOOK_DEV_SECRET_FILE="${TASKHOOK_DEV_SECRET_FILE:-.tmp/dev-secret}"

# Ctrl-C signals the whole foreground group: the server drains on it, and
# this shell waits for that instead of dying of the signal first.
trap ':' INT
status=0
.tmp/taskhook-run "$@" || status=$?
# 130: a second Ctrl-C ended the drain; that too is the user's stop.
if [ "$status" -eq 130 ]; then
  status=0
fi
exit "$status"
