#!/usr/bin/env bash
# Start gate for clusters without native sidecars: wait until each earlier server of the pod answers on
# its /health, each within its own startup budget, then exec the server. Two vLLM processes that start
# together on one GPU mis-size each other's KV cache, so the order matters; a fixed sleep does not keep it.
#
#   wait-for-health.sh --url URL --timeout SECONDS [--url URL --timeout SECONDS]... -- COMMAND [ARGS...]
#
# Environment: COLO_HEALTH_POLL_S (default 5) between attempts.
set -euo pipefail

poll_s="${COLO_HEALTH_POLL_S:-5}"

fail() {
  echo "wait-for-health: error: $*" >&2
  exit 1
}

urls=()
timeouts=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --url)
      [[ $# -ge 2 ]] || fail "--url needs a value"
      urls+=("$2")
      shift 2
      ;;
    --timeout)
      [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || fail "--timeout needs whole seconds"
      timeouts+=("$2")
      shift 2
      ;;
    --)
      shift
      break
      ;;
    *) fail "unexpected argument '$1'; usage: --url URL --timeout SECONDS ... -- COMMAND" ;;
  esac
done
((${#urls[@]} > 0)) || fail "give at least one --url"
((${#urls[@]} == ${#timeouts[@]})) || fail "give one --timeout per --url"
[[ $# -gt 0 ]] || fail "no command after --"

healthy() {
  if command -v curl >/dev/null 2>&1; then
    curl --silent --fail --max-time 5 --output /dev/null "$1"
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1" 2>/dev/null
  fi
}

for i in "${!urls[@]}"; do
  url="${urls[$i]}"
  timeout_s="${timeouts[$i]}"
  started=$SECONDS
  until healthy "$url"; do
    if ((SECONDS - started >= timeout_s)); then
      fail "${url} did not answer within ${timeout_s}s (its startup budget); not starting '$1'"
    fi
    sleep "$poll_s"
  done
  echo "wait-for-health: ${url} is healthy after $((SECONDS - started))s" >&2
done
exec "$@"
