#!/usr/bin/env bash
# Start or stop the Docker daemon the docker suite runs against (Debian's docker.io, as root).
#
#   .ci/dockerd.sh start    start dockerd unless one already answers on the socket; wait until it answers
#   .ci/dockerd.sh stop     stop the dockerd this script started (its pidfile); nothing else
#   .ci/dockerd.sh status   say whether a daemon answers on the socket
#   .ci/dockerd.sh memlock  print the hard memlock limit of the dockerd this script started, in bytes or
#                           "unlimited" (a container cannot get more: Triton's memlock=-1 needs "unlimited")
#
# Loopback only: no bridge, no iptables rules, so containers run with host networking. Everything the
# daemon keeps (images, containers, its pidfile and log) lives under $PYTEST_TRITON_DOCKERD_DIR
# (default /var/lib/pytest-triton-dockerd), so images stay cached between CI runs on one machine.
# The socket is the default one (/var/run/docker.sock) so that docker, docker-py and testcontainers
# find it without DOCKER_HOST; set PYTEST_TRITON_DOCKERD_SOCKET to use another (and export DOCKER_HOST).
set -euo pipefail

state_dir=${PYTEST_TRITON_DOCKERD_DIR:-/var/lib/pytest-triton-dockerd}
socket=${PYTEST_TRITON_DOCKERD_SOCKET:-/var/run/docker.sock}
pidfile=$state_dir/dockerd.pid
log=$state_dir/dockerd.log
wait_s=${PYTEST_TRITON_DOCKERD_WAIT:-60}

say() { echo "dockerd.sh: $*" >&2; }

answers() { DOCKER_HOST="unix://$socket" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

our_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start() {
  if answers; then
    say "a daemon already answers on $socket (server $(DOCKER_HOST="unix://$socket" docker version --format '{{.Server.Version}}')): nothing to do"
    return 0
  fi
  command -v dockerd >/dev/null || { say "dockerd not found: install it with 'apt-get install -y docker.io'"; return 1; }
  command -v docker >/dev/null || { say "the docker CLI is not found: install it with 'apt-get install -y docker.io'"; return 1; }
  [ "$(id -u)" -eq 0 ] || { say "dockerd must run as root (this is uid $(id -u))"; return 1; }
  local pid
  if pid=$(our_pid); then
    say "dockerd (pid $pid) runs but does not answer on $socket yet; waiting"
  else
    mkdir -p "$state_dir/data" "$state_dir/exec"
    rm -f "$pidfile"
    # setsid: the daemon outlives this script and the CI step that ran it
    setsid dockerd \
      --host="unix://$socket" \
      --data-root="$state_dir/data" \
      --exec-root="$state_dir/exec" \
      --pidfile="$pidfile" \
      --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
      >>"$log" 2>&1 </dev/null &
    pid=$!
  fi
  local deadline=$((SECONDS + wait_s))
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "dockerd exited while starting; the end of $log:"
      tail -n 20 "$log" >&2 || true
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      say "dockerd (pid $pid) did not answer on $socket within ${wait_s}s; the end of $log:"
      tail -n 20 "$log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  say "dockerd answers on $socket (data in $state_dir/data, log $log)"
}

stop() {
  local pid
  if ! pid=$(our_pid); then
    say "no dockerd started by this script runs (pidfile $pidfile): nothing to stop"
    return 0
  fi
  kill -TERM "$pid"
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      say "dockerd (pid $pid) did not stop within 30s after SIGTERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.5
  done
  say "dockerd (pid $pid) stopped"
}

memlock() {
  local pid
  pid=$(our_pid) || { say "no dockerd started by this script runs (pidfile $pidfile)"; return 1; }
  awk '/^Max locked memory/ {print $5}' "/proc/$pid/limits"
}

case "${1:-}" in
  start) start ;;
  memlock) memlock ;;
  stop) stop ;;
  status)
    if answers; then say "a daemon answers on $socket"; else say "no daemon answers on $socket"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status|memlock" >&2; exit 2 ;;
esac
