#!/usr/bin/env bash
# test-env.sh gives the tests the Redis servers they need: a standalone Redis
# and a fresh local 3-node Redis Cluster. It installs Redis (and chromium, for
# the browser tests) when it is missing, starts what is not already running,
# prints the environment for the tests and stops, by pid, only what it started
# itself.
#
#   scripts/test-env.sh exec -- CMD [ARGS...]
#       Start fresh servers, run CMD with the environment below, stop the
#       servers when CMD ends (also on failure or Ctrl-C); exit with CMD's status.
#       This is what `make test` and `make bench` use.
#   scripts/test-env.sh up     Start (or reuse) servers for interactive work and
#                              print `export` lines: eval "$(scripts/test-env.sh up)"
#   scripts/test-env.sh env    Print the `export` lines of the servers from `up`.
#   scripts/test-env.sh down   Stop the servers from `up` and any left over by a
#                              run that was killed.
#
# Exported to the tests:
#   TASKHOOK_TEST_REDIS_URL         standalone Redis, e.g. redis://127.0.0.1:6379/0
#   TASKHOOK_TEST_REDIS_CLUSTER     host:port of the 3 cluster nodes, comma-separated
#   TASKHOOK_TEST_REQUIRE_REDIS=1   tests fail rather than skip when Redis is missing
#   TASKHOOK_TEST_REDIS_SERVER_BIN  redis-server, for tests that run a throwaway Redis
#   TASKHOOK_TEST_CHROMIUM          chromium, for the browser tests (installed when missing)
#
# Settings (environment):
#   TASKHOOK_TEST_REDIS_URL          if set, used as is: no standalone is probed or started
#   TASKHOOK_TEST_STANDALONE_PORT    port probed for a running standalone Redis (6379)
#   TASKHOOK_TEST_OWN_REDIS_PORT     first port tried for our own standalone (7201)
#   TASKHOOK_TEST_CLUSTER_PORT       first port tried for the cluster nodes (7101)
#   TASKHOOK_TEST_WAIT_SECONDS       deadline of each wait for a server (60)
#
# A Redis found running (the machine's own) is used, never flushed, never stopped.
# Everything this script starts lives under .tmp/test-env/ in the repository.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
STATE_ROOT="$ROOT/.tmp/test-env"
DEV_DIR="$STATE_ROOT/dev"

STANDALONE_PORT=${TASKHOOK_TEST_STANDALONE_PORT:-6379}
OWN_REDIS_PORT=${TASKHOOK_TEST_OWN_REDIS_PORT:-7201}
CLUSTER_PORT=${TASKHOOK_TEST_CLUSTER_PORT:-7101}
WAIT_SECONDS=${TASKHOOK_TEST_WAIT_SECONDS:-60}
CLUSTER_NODES=3
PORT_ATTEMPTS=200

REDIS_SERVER=""
REDIS_CLI=""
APT_UPDATED=0
RUN_DIR=""

log() { printf 'test-env: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

for n in "$STANDALONE_PORT" "$OWN_REDIS_PORT" "$CLUSTER_PORT" "$WAIT_SECONDS"; do
	[[ $n =~ ^[0-9]+$ ]] || die "expected a number in the TASKHOOK_TEST_* settings, got '$n'"
done

# with_timeout SECONDS CMD...: run CMD, killed after SECONDS when timeout(1) exists.
if command -v timeout >/dev/null 2>&1; then
	TIMEOUT_BIN=timeout
elif command -v gtimeout >/dev/null 2>&1; then
	TIMEOUT_BIN=gtimeout
else
	TIMEOUT_BIN=""
fi
with_timeout() {
	local secs=$1
	shift
	if [ -n "$TIMEOUT_BIN" ]; then
		"$TIMEOUT_BIN" -k 2 "$secs" "$@"
	else
		"$@"
	fi
}

# rcli PORT ARGS...: one redis-cli command against 127.0.0.1:PORT, CRs removed.
rcli() {
	local port=$1
	shift
	with_timeout 5 "$REDIS_CLI" -h 127.0.0.1 -p "$port" "$@" </dev/null 2>/dev/null | tr -d '\r'
}

# ---------------------------------------------------------------------------
# Tools

# install_packages PKG...: apt-get install, non-interactive; apt-get update once.
install_packages() {
	command -v apt-get >/dev/null 2>&1 ||
		die "need $*, and apt-get is not available: install it by hand"
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "need $*: run as root or install it by hand"
		sudo=(sudo -n)
	fi
	if [ "$APT_UPDATED" = 0 ]; then
		log "apt-get update"
		with_timeout 600 ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
			apt-get -q -o DPkg::Lock::Timeout=300 update </dev/null >&2 ||
			die "apt-get update failed"
		APT_UPDATED=1
	fi
	log "apt-get install $*"
	with_timeout 900 ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
		apt-get -q -y -o DPkg::Lock::Timeout=300 install --no-install-recommends "$@" </dev/null >&2 ||
		die "apt-get install $* failed"
}

ensure_tools() {
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		log "redis-server or redis-cli not found: installing redis-server"
		install_packages redis-server
		hash -r
	fi
	REDIS_SERVER=$(command -v redis-server) || die "redis-server still not found after installing it"
	REDIS_CLI=$(command -v redis-cli) || die "redis-cli still not found after installing it"

	# go test -race needs cgo, so a C compiler.
	if command -v go >/dev/null 2>&1; then
		local cc
		cc=$(go env CC 2>/dev/null || true)
		if [ -n "$cc" ] && ! command -v "$cc" >/dev/null 2>&1; then
			log "C compiler '$cc' not found (go test -race needs it): installing gcc"
			install_packages gcc libc6-dev
		fi
	fi
	ensure_chromium
}

# ensure_chromium installs chromium (for the browser tests of channels/web)
# when it is missing. A failed install is not fatal: those tests then say
# why they skip, or fail under CI=true.
CHROMIUM=""
ensure_chromium() {
	local name
	for name in chromium chromium-browser google-chrome; do
		CHROMIUM=$(command -v "$name" 2>/dev/null) && return 0
	done
	if [ ! -x /usr/bin/chromium ]; then
		log "chromium not found (the browser tests need it): installing chromium"
		if ! (install_packages chromium); then
			log "warning: could not install chromium; the browser tests will skip (or fail under CI=true)"
			CHROMIUM=""
			return 0
		fi
		APT_UPDATED=1
		hash -r
	fi
	CHROMIUM=$(command -v chromium 2>/dev/null || true)
	[ -n "$CHROMIUM" ] || [ ! -x /usr/bin/chromium ] || CHROMIUM=/usr/bin/chromium
}

# ---------------------------------------------------------------------------
# Processes and ports

# pid_alive PID: the process exists and is not a zombie.
pid_alive() {
	local pid=$1 stat
	kill -0 "$pid" 2>/dev/null || return 1
	if [ -r "/proc/$pid/stat" ]; then
		stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
		stat=${stat##*) }
		[ "${stat%% *}" != Z ] || return 1
	fi
	return 0
}

# pid_start_time PID: the kernel's start time of PID (empty without /proc), to
# tell a live owner from a later process that reuses its pid.
pid_start_time() {
	local stat fields
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	# After "comm)" the fields start at field 3 (state); starttime is field 22.
	read -r -a fields <<<"$stat"
	printf '%s' "${fields[19]:-}"
}

# is_our_redis DIR: the redis-server recorded in DIR runs, and is the one we
# started there (its working directory is DIR), not some other process that
# got the pid.
is_our_redis() {
	local dir=$1 pid port
	pid=$(cat "$dir/redis.pid" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	pid_alive "$pid" || return 1
	if [ -d "/proc/$pid" ]; then
		[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$dir" ] || return 1
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q redis || return 1
	else
		port=$(cat "$dir/port" 2>/dev/null) || return 1
		ps -o command= -p "$pid" 2>/dev/null | grep -q "redis.*:$port" || return 1
	fi
}

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	# shellcheck disable=SC2016 # $1 expands in the inner bash.
	with_timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# port_free PORT: PORT and its cluster bus port (PORT+10000) are both free.
port_free() {
	local port=$1
	[ "$port" -le 55535 ] || return 1
	! port_in_use "$port" && ! port_in_use $((port + 10000))
}

# start_redis DIR PORT [ARGS...]: start a daemonized redis-server in DIR on
# PORT and wait until it answers. Returns 1 when the port turned out to be
# taken (the caller tries another one); dies on any other failure.
start_redis() {
	local dir=$1 port=$2
	shift 2
	mkdir -p "$dir"
	rm -f "$dir/redis.pid" "$dir/redis.log" "$dir/nodes.conf" "$dir/start.err"
	printf '%s\n' "$port" >"$dir/port"
	if ! "$REDIS_SERVER" \
		--port "$port" --bind 127.0.0.1 --protected-mode yes \
		--dir "$dir" --save '' --appendonly no \
		--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
		"$@" </dev/null >"$dir/start.err" 2>&1; then
		cat "$dir/start.err" >&2
		die "redis-server did not start in $dir"
	fi

	local deadline=$((SECONDS + WAIT_SECONDS)) pid="" served=""
	while :; do
		pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
		if [ -n "$pid" ]; then
			# Answered by our process, not by one that won a race for the port.
			served=$(rcli "$port" info server | sed -n 's/^process_id://p' || true)
			if [ "$served" = "$pid" ] && is_our_redis "$dir"; then
				return 0
			fi
		fi
		if grep -qE 'Address already in use|Could not create server TCP listening socket' \
			"$dir/redis.log" 2>/dev/null; then
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tail -n 20 "$dir/redis.log" >&2 2>/dev/null || true
			stop_redis "$dir"
			die "redis-server on port $port did not answer within ${WAIT_SECONDS}s (log above)"
		fi
		sleep 0.1
	done
}

# start_redis_on_free_port DIR FIRST_PORT [ARGS...]: start_redis on the first
# free port from FIRST_PORT on; sets STARTED_PORT.
STARTED_PORT=""
start_redis_on_free_port() {
	local dir=$1 first=$2 port=$2 tries=0
	shift 2
	while [ "$tries" -lt "$PORT_ATTEMPTS" ]; do
		if port_free "$port"; then
			if start_redis "$dir" "$port" "$@"; then
				STARTED_PORT=$port
				return 0
			fi
			log "port $port was taken meanwhile, trying the next one"
		fi
		port=$((port + 1))
		tries=$((tries + 1))
	done
	die "no free port found in $PORT_ATTEMPTS ports from $first"
}

# stop_redis DIR: stop the redis-server we started in DIR, if it still runs.
stop_redis() {
	local dir=$1 pid deadline
	if is_our_redis "$dir"; then
		pid=$(cat "$dir/redis.pid")
		kill -TERM "$pid" 2>/dev/null || true
		deadline=$((SECONDS + 10))
		while pid_alive "$pid"; do
			if [ "$SECONDS" -ge "$deadline" ]; then
				log "redis-server pid $pid ignored SIGTERM for 10s: sending SIGKILL"
				kill -KILL "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.1
		done
	fi
	rm -f "$dir/redis.pid"
}

# ---------------------------------------------------------------------------
# Standalone

# standalone_answers PORT: a standalone (non-cluster) Redis answers PING there.
standalone_answers() {
	local port=$1
	[ "$(rcli "$port" ping || true)" = PONG ] || return 1
	rcli "$port" info server | grep -qx 'redis_mode:standalone'
}

# ---------------------------------------------------------------------------
# Cluster

cluster_ready() {
	local port info check
	for port in "$@"; do
		info=$(rcli "$port" cluster info) || return 1
		grep -qx 'cluster_state:ok' <<<"$info" || return 1
		grep -qx 'cluster_slots_assigned:16384' <<<"$info" || return 1
		grep -qx 'cluster_slots_ok:16384' <<<"$info" || return 1
		grep -qx "cluster_known_nodes:$#" <<<"$info" || return 1
	done
	check=$(with_timeout 10 "$REDIS_CLI" --cluster check "127.0.0.1:$1" </dev/null 2>&1 | tr -d '\r') || true
	grep -q 'All 16384 slots covered' <<<"$check" || return 1
	grep -q 'All nodes agree about slots configuration' <<<"$check" || return 1
}

start_cluster() {
	local dir=$1 i port=$CLUSTER_PORT ports=() addrs=()
	for i in $(seq 1 "$CLUSTER_NODES"); do
		start_redis_on_free_port "$dir/node-$i" "$port" \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000
		ports+=("$STARTED_PORT")
		addrs+=("127.0.0.1:$STARTED_PORT")
		port=$((STARTED_PORT + 1))
	done
	log "creating a ${CLUSTER_NODES}-node Redis Cluster on ports ${ports[*]}"
	if ! with_timeout 60 "$REDIS_CLI" --cluster create "${addrs[@]}" \
		--cluster-replicas 0 --cluster-yes </dev/null >"$dir/create.log" 2>&1; then
		cat "$dir/create.log" >&2
		die "redis-cli --cluster create failed (output above)"
	fi

	local deadline=$((SECONDS + WAIT_SECONDS))
	until cluster_ready "${ports[@]}"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			for port in "${ports[@]}"; do
				log "cluster info of 127.0.0.1:$port:"
				rcli "$port" cluster info | head -n 7 >&2 || true
			done
			die "the cluster did not reach cluster_state:ok with all slots covered within ${WAIT_SECONDS}s"
		fi
		sleep 0.2
	done
	CLUSTER_ADDRS=$(
		IFS=,
		printf '%s' "${addrs[*]}"
	)
	printf '%s\n' "${ports[@]}" >"$dir/ports"
}

# ---------------------------------------------------------------------------
# State: one directory per set of servers

# stop_state DIR: stop every server started under DIR and remove DIR.
stop_state() {
	local dir=$1 d
	[ -d "$dir" ] || return 0
	for d in "$dir/standalone" "$dir"/cluster/node-*; do
		[ -d "$d" ] && stop_redis "$d"
	done
	rm -rf "$dir"
}

# reap_stale: stop the servers of `exec` runs whose script is gone (killed
# before it could clean up).
reap_stale() {
	local dir owner pid start
	for dir in "$STATE_ROOT"/run-*; do
		[ -d "$dir" ] || continue
		owner=$(cat "$dir/owner" 2>/dev/null || true)
		pid=${owner%% *}
		start=${owner#* }
		if [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid" && [ "$(pid_start_time "$pid")" = "$start" ]; then
			continue
		fi
		log "stopping servers left over by an earlier run (${dir##*/})"
		stop_state "$dir"
	done
}

# The lock serializes port picking and start-up between concurrent runs.
lock() {
	mkdir -p "$STATE_ROOT"
	command -v flock >/dev/null 2>&1 || return 0
	exec 9>"$STATE_ROOT/.lock"
	flock -w 300 9 || die "another test-env.sh held $STATE_ROOT/.lock for 300s"
}
unlock() {
	command -v flock >/dev/null 2>&1 || return 0
	flock -u 9 2>/dev/null || true
	exec 9>&-
}

# export_line NAME VALUE: a shell line exporting VALUE single-quoted.
export_line() {
	local q="'\\''"
	printf "export %s='%s'\n" "$1" "${2//\'/$q}"
}

# start_env DIR: start the servers into DIR and write DIR/env.sh.
start_env() {
	local dir=$1 url
	mkdir -p "$dir"
	: >"$dir/standalone.port"

	if [ -n "${TASKHOOK_TEST_REDIS_URL:-}" ]; then
		url=$TASKHOOK_TEST_REDIS_URL
		log "standalone: TASKHOOK_TEST_REDIS_URL from the environment"
	elif standalone_answers "$STANDALONE_PORT"; then
		url="redis://127.0.0.1:$STANDALONE_PORT/0"
		printf '%s\n' "$STANDALONE_PORT" >"$dir/standalone.port"
		log "standalone: the Redis already running on 127.0.0.1:$STANDALONE_PORT (used as is: never flushed, never stopped)"
	else
		log "standalone: no Redis answers on 127.0.0.1:$STANDALONE_PORT, starting our own"
		start_redis_on_free_port "$dir/standalone" "$OWN_REDIS_PORT"
		url="redis://127.0.0.1:$STARTED_PORT/0"
		printf '%s\n' "$STARTED_PORT" >"$dir/standalone.port"
		log "standalone: our own redis-server on 127.0.0.1:$STARTED_PORT (pid $(cat "$dir/standalone/redis.pid"))"
	fi

	CLUSTER_ADDRS=""
	start_cluster "$dir/cluster"
	log "cluster: $CLUSTER_ADDRS ready (cluster_state:ok, all slots covered)"

	{
		export_line TASKHOOK_TEST_REDIS_URL "$url"
		export_line TASKHOOK_TEST_REDIS_CLUSTER "$CLUSTER_ADDRS"
		export_line TASKHOOK_TEST_REQUIRE_REDIS 1
		export_line TASKHOOK_TEST_REDIS_SERVER_BIN "$REDIS_SERVER"
		[ -z "$CHROMIUM" ] || export_line TASKHOOK_TEST_CHROMIUM "$CHROMIUM"
	} >"$dir/env.sh"
}

# env_healthy DIR: every server listed in DIR still answers.
env_healthy() {
	local dir=$1 port ports=()
	[ -f "$dir/env.sh" ] && [ -f "$dir/cluster/ports" ] || return 1
	port=$(cat "$dir/standalone.port" 2>/dev/null || true)
	if [ -n "$port" ]; then
		standalone_answers "$port" || return 1
	fi
	while read -r port; do
		ports+=("$port")
	done <"$dir/cluster/ports"
	[ "${#ports[@]}" -gt 0 ] && cluster_ready "${ports[@]}"
}

# warn_dead DIR: say so when a server we started died while the command ran.
warn_dead() {
	local d
	for d in "$1/standalone" "$1"/cluster/node-*; do
		[ -d "$d" ] || continue
		if ! is_our_redis "$d"; then
			log "warning: redis-server in ${d#"$ROOT"/} (port $(cat "$d/port" 2>/dev/null)) died during the run; its log ends:"
			tail -n 20 "$d/redis.log" >&2 2>/dev/null || true
		fi
	done
}

# ---------------------------------------------------------------------------
# Commands

cmd_exec() {
	[ "${1:-}" = "--" ] && shift
	[ $# -gt 0 ] || die "usage: $0 exec -- CMD [ARGS...]"
	ensure_tools
	lock
	reap_stale
	RUN_DIR="$STATE_ROOT/run-$$"
	trap on_exit EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir -p "$RUN_DIR"
	printf '%s %s\n' "$$" "$(pid_start_time "$$")" >"$RUN_DIR/owner"
	start_env "$RUN_DIR"
	unlock

	# shellcheck disable=SC1091
	. "$RUN_DIR/env.sh"
	log "TASKHOOK_TEST_REDIS_URL=$TASKHOOK_TEST_REDIS_URL"
	log "TASKHOOK_TEST_REDIS_CLUSTER=$TASKHOOK_TEST_REDIS_CLUSTER"
	log "TASKHOOK_TEST_REQUIRE_REDIS=$TASKHOOK_TEST_REQUIRE_REDIS"
	log "TASKHOOK_TEST_REDIS_SERVER_BIN=$TASKHOOK_TEST_REDIS_SERVER_BIN"
	log "TASKHOOK_TEST_CHROMIUM=${TASKHOOK_TEST_CHROMIUM:-(none: the browser tests skip, or fail under CI=true)}"
	log "running: $*"

	local status=0
	"$@" || status=$?
	exit "$status"
}

# begin_cleanup STATUS starts an exit trap's cleanup: it runs once, and no
# failure in it stops it. A signal can reach a subshell before it drops the
# inherited traps; only the script itself cleans up, and a subshell exits
# with STATUS here.
begin_cleanup() {
	[ "${BASHPID:-$$}" = "$$" ] || exit "$1"
	set +e
	trap - EXIT HUP INT TERM
}

on_exit() {
	local status=$?
	begin_cleanup "$status"
	if [ -n "$RUN_DIR" ] && [ -d "$RUN_DIR" ]; then
		[ "$status" = 0 ] || warn_dead "$RUN_DIR"
		stop_state "$RUN_DIR"
		log "stopped the servers this run started"
	fi
	exit "$status"
}

on_up_failure() {
	local status=$?
	begin_cleanup "$status"
	stop_state "$DEV_DIR"
	exit "$status"
}

cmd_up() {
	ensure_tools
	lock
	reap_stale
	if env_healthy "$DEV_DIR"; then
		log "already up (scripts/test-env.sh down stops it)"
	else
		stop_state "$DEV_DIR"
		# Leave nothing half-started behind when start-up fails.
		trap on_up_failure EXIT
		trap 'exit 129' HUP
		trap 'exit 130' INT
		trap 'exit 143' TERM
		start_env "$DEV_DIR"
		trap - EXIT HUP INT TERM
		log "up (scripts/test-env.sh down stops it)"
	fi
	unlock
	cat "$DEV_DIR/env.sh"
}

cmd_env() {
	[ -f "$DEV_DIR/env.sh" ] || die "not up: run eval \"\$(scripts/test-env.sh up)\""
	cat "$DEV_DIR/env.sh"
}

cmd_down() {
	if [ ! -d "$STATE_ROOT" ]; then
		log "nothing to stop"
		return 0
	fi
	lock
	stop_state "$DEV_DIR"
	reap_stale
	unlock
	log "down"
}

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p;}' "${BASH_SOURCE[0]}"
}

case "${1:-}" in
exec)
	shift
	cmd_exec "$@"
	;;
up) cmd_up ;;
env) cmd_env ;;
down) cmd_down ;;
-h | --help | help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
