#!/usr/bin/env bash
# testcount.sh counts the module's tests and assertions, so a refactor that
# moves tests can show it kept every one: run it before and after and compare.
#
#   scripts/testcount.sh          the counts
#   scripts/testcount.sh names    every test, fuzz and benchmark function name,
#                                 sorted (diff two lists to see what went missing)
#
# Counted in every *_test.go file (directories go ignores, .x, _x, testdata and
# vendor, are skipped):
#   func Test/Fuzz/Benchmark   top-level functions taking *testing.T, F or B
#                              (TestMain, which takes *testing.M, is not a test)
#   Fatal, Fatalf, Error,      calls on t, tb, b or f, the names the tests give
#   Errorf, Fail, FailNow      their testing.T, TB, B and F; commented-out lines
#                              are left out
#   require/assert             testify calls, should any appear
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

files=$(
	find . -mindepth 1 \( -name '.*' -o -name '_*' -o -name testdata -o -name vendor \) -prune \
		-o -type f -name '*_test.go' -print | sort
)
if [ -z "$files" ]; then
	echo "testcount: no *_test.go files under $ROOT" >&2
	exit 1
fi

# code prints the files without their comment-only lines.
code() { printf '%s\n' "$files" | xargs grep -hv '^[[:space:]]*//' || true; }

# count prints how many matches of the extended regexp $1 the code holds.
count() { code | { grep -oE "$1" || true; } | wc -l | tr -d ' '; }

test_re='^func Test[A-Za-z0-9_]*\([A-Za-z0-9_]+ \*testing\.T\)'
fuzz_re='^func Fuzz[A-Za-z0-9_]*\([A-Za-z0-9_]+ \*testing\.F\)'
bench_re='^func Benchmark[A-Za-z0-9_]*\([A-Za-z0-9_]+ \*testing\.B\)'

if [ "${1:-}" = names ]; then
	code | { grep -oE "$test_re|$fuzz_re|$bench_re" || true; } | sed -E 's/^func ([A-Za-z0-9_]+)\(.*/\1/' | sort
	exit 0
fi

recv='\b(t|tb|b|f)\.'
fatal=$(count "${recv}Fatal\(")
fatalf=$(count "${recv}Fatalf\(")
errorc=$(count "${recv}Error\(")
errorf=$(count "${recv}Errorf\(")
fail=$(count "${recv}(Fail|FailNow)\(")
testify=$(count '\b(require|assert)\.[A-Z][A-Za-z]*\(')

printf '%-16s %6d\n' \
	"test files" "$(printf '%s\n' "$files" | wc -l)" \
	"func Test" "$(count "$test_re")" \
	"func Fuzz" "$(count "$fuzz_re")" \
	"func Benchmark" "$(count "$bench_re")" \
	"Fatal" "$fatal" \
	"Fatalf" "$fatalf" \
	"Error" "$errorc" \
	"Errorf" "$errorf" \
	"Fail, FailNow" "$fail" \
	"require/assert" "$testify" \
	"assertions" "$((fatal + fatalf + errorc + errorf + fail + testify))"
