#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module for a short while, one target
# per `go test -fuzz` invocation (go fuzzes one target at a time).
#
#   scripts/fuzz.sh            every func FuzzXxx(...) in the module's *_test.go files
#
# Settings (environment):
#   FUZZTIME   how much each target runs: a count such as 1000x (the default:
#              the same work on any machine) or a duration such as 10s
#   GO         the go command (go)
#
# Run it through scripts/test-env.sh (as `make test` does) when the targets
# need Redis. New crashers are written to the package's testdata/fuzz/, which
# is kept in git as corpus.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

FUZZTIME=${FUZZTIME:-1000x}
GO=${GO:-go}

log() { printf 'fuzz: %s\n' "$*" >&2; }

# "pkgdir name" per target; directories go ignores (.x, _x, testdata) are skipped.
targets=$(
	find . -mindepth 1 \( -name '.*' -o -name '_*' -o -name testdata -o -name vendor \) -prune \
		-o -type f -name '*_test.go' -print |
		while read -r file; do
			sed -nE 's/^func (Fuzz([A-Z0-9_][A-Za-z0-9_]*)?)\(.*/\1/p' "$file" |
				while read -r name; do
					printf '%s %s\n' "$(dirname "$file")" "$name"
				done
		done | LC_ALL=C sort -u
)

if [ -z "$targets" ]; then
	log "no fuzz targets (func FuzzXxx in *_test.go) yet: skipping"
	exit 0
fi

# corpus_files DIR NAME: the saved inputs of target NAME, one a line.
corpus_files() {
	find "$1/testdata/fuzz/$2" -type f 2>/dev/null | LC_ALL=C sort || true
}

mkdir -p .tmp
out=$(mktemp .tmp/fuzz.XXXXXX)
trap 'rm -f "$out"' EXIT

log "$(wc -l <<<"$targets" | tr -d ' ') target(s), $FUZZTIME each"
failed=()
while read -r dir name; do
	log "$name in $dir"
	before=$(corpus_files "$dir" "$name")
	status=0
	"$GO" test -race -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$dir" </dev/null 2>&1 |
		tee "$out" || status=$?
	[ "$status" = 0 ] && continue
	# Go's fuzz coordinator can fail a target with a bare "context deadline
	# exceeded" when a duration -fuzztime ends while a worker is busy
	# (golang/go#75804, not fixed in go1.26). That failure writes no input;
	# a real one always saves its input under testdata/fuzz/NAME/.
	if [ "$(corpus_files "$dir" "$name")" = "$before" ] &&
		grep -A1 -- "^--- FAIL: $name " "$out" | grep -qx '    context deadline exceeded'; then
		log "$name: ignoring Go's spurious 'context deadline exceeded' at the end of -fuzztime (golang/go#75804; no failing input was found)"
		continue
	fi
	failed+=("$name ($dir)")
done <<<"$targets"

if [ "${#failed[@]}" -gt 0 ]; then
	log "FAILED: ${failed[*]}"
	log "a failing input is saved under the package's testdata/fuzz/; rerun it with go test -run=NAME/ID"
	exit 1
fi
log "all targets passed"
