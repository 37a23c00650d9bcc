#!/usr/bin/env bash
# Profiles the server under a side-by-side load and writes text summaries
# (pprof -top) next to the raw profiles.
#   usage: scripts/profile.sh OUTDIR [NAME [lifecycle|ingest]]     (run from the project root)
# It builds ./cmd/server and the load tool (PERFKIT, default ../shared/perf),
# starts its own redis-server on 6391 and the server on 18181 with profiles on
# 127.0.0.1:6061, runs rounds of the load (`perftool lifecycle -n 6000 -c 50`, or
# `perftool ingest -n 20000 -c 50`: 50 hooks, 50 posting clients) while it takes a 10 s
# CPU profile, then takes the allocation profile (every allocation since start).
set -eu
out=${1:?usage: scripts/profile.sh OUTDIR [NAME [lifecycle|ingest]]}; name=${2:-lifecycle}; load=${3:-lifecycle}
case $load in
  lifecycle) n=6000 ;;
  ingest) n=20000 ;;
  *) echo "load must be lifecycle or ingest"; exit 2 ;;
esac
kit=${PERFKIT:-../shared/perf}
port=6391; http=18181; debug=127.0.0.1:6061; secret=perf-secret-0123456789abcdef0123456789abcd
work=$(mktemp -d); mkdir -p "$out"
cleanup() { [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null; [ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
(cd "$kit/tool" && go build -o "$work/perftool" .)
go build -o "$work/server" ./cmd/server
if redis-cli -p $port ping >/dev/null 2>&1; then echo "port $port is taken"; exit 1; fi
redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >/dev/null 2>&1 & rpid=$!
for i in $(seq 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
TASKHOOK_DEBUG_ADDR=$debug TASKHOOK_HOOK_RATE_LIMIT=1000 TASKHOOK_HOOK_BURST=100000 TASKHOOK_ADDR=127.0.0.1:$http \
  TASKHOOK_REDIS_URL=redis://127.0.0.1:$port/0 TASKHOOK_JWT_SECRET=$secret TASKHOOK_PUBLIC_URL=http://127.0.0.1:$http \
  "$work/server" >"$work/server.log" 2>&1 & spid=$!
for i in $(seq 100); do curl -fsS http://127.0.0.1:$http/readyz >/dev/null 2>&1 && break; sleep 0.1; done
round() { "$work/perftool" "$load" -url http://127.0.0.1:$http -secret $secret -n $n -c 50; }
# A first round, unprofiled, split into the server's CPU and Redis's.
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
s0=$(ticks $spid); r0=$(ticks $rpid)
round
s1=$(ticks $spid); r1=$(ticks $rpid)
echo "cpu per $load: server $(( (s1 - s0) * 10000 / n ))us, redis $(( (r1 - r0) * 10000 / n ))us"
# One round takes a few seconds: rounds follow each other until the 10 s
# profile is taken.
curl -fsS -o "$out/$name-cpu.pprof" "http://$debug/debug/pprof/profile?seconds=10" & cpid=$!
while kill -0 $cpid 2>/dev/null; do
  round
done
wait $cpid
curl -fsS -o "$out/$name-allocs.pprof" "http://$debug/debug/pprof/allocs"
go tool pprof -top -nodecount=40 "$work/server" "$out/$name-cpu.pprof" >"$out/$name-cpu.txt" 2>/dev/null
go tool pprof -top -nodecount=40 -sample_index=alloc_space "$work/server" "$out/$name-allocs.pprof" >"$out/$name-allocs.txt" 2>/dev/null
go tool pprof -top -cum -nodecount=60 "$work/server" "$out/$name-cpu.pprof" >"$out/$name-cpu-cum.txt" 2>/dev/null
echo "wrote $out/$name-cpu.txt $out/$name-allocs.txt $out/$name-cpu-cum.txt"
