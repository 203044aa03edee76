#!/bin/sh
# Fixture ROCm mirror for the test harness: build (cached), serve on 127.0.0.1, print its variables.
#   tests/harness/mirror/mirror.sh start   build into .cache/mirror/www if needed, start the server (idempotent)
#   tests/harness/mirror/mirror.sh stop    stop the server
#   tests/harness/mirror/mirror.sh env     print export lines for eval: GPULAB_MIRROR_URL, _FINGERPRINT, _KEY_URL,
#                                          _WRONG_KEY_URL (an unrelated key, for wrong-fingerprint tests), and the
#                                          Core SDK stream's _CORE_URL, _CORE_KEY_URL, _CORE_FINGERPRINT
#   tests/harness/mirror/mirror.sh status  say whether it runs, and where
# State lives in .cache/mirror/ (GPULAB_MIRROR_STATE overrides): www/, port, pid, server.log, faults.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
state=${GPULAB_MIRROR_STATE:-$(cd "$here/../../.." && pwd)/.cache/mirror}
python=${PYTHON:-python3}
www=$state/www

die() { echo "mirror.sh: $*" >&2; exit 1; }

port() { cat "$state/port" 2>/dev/null || true; }

# answers PORT: true when serve.py answers on PORT, whatever the status (faults may make it 503 on purpose).
answers() {
    "$python" - "$1" <<'PY' 2>/dev/null
import sys, urllib.error, urllib.request
try:
    reply = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/rocm/rocm.gpg.key", timeout=2)
except urllib.error.HTTPError as err:
    reply = err
sys.exit(0 if reply.headers.get("Server", "").startswith("gpulab-fixture-mirror") else 1)
PY
}

running() {
    pid=$(cat "$state/pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -n "$(port)" ] && answers "$(port)"
}

start() {
    mkdir -p "$state"
    exec 9>"$state/start.lock"
    flock 9  # parallel scenarios: one builds and starts, the others reuse
    "$python" "$here/build_mirror.py" --out "$www" || die "building the mirror failed (see above)"
    if running; then
        echo "mirror.sh: reusing the server on port $(port) (pid $(cat "$state/pid"))"
        return 0
    fi
    stop_server
    setsid "$python" "$here/serve.py" --root "$www" --port-file "$state/port" --pid-file "$state/pid" \
        --faults "$state/faults" \
        </dev/null >>"$state/server.log" 2>&1 9>&- &  # 9>&-: the server must not hold the start lock
    tries=0
    until running; do
        tries=$((tries + 1))
        if [ "$tries" -gt 100 ]; then
            stop_server
            die "the server did not answer within 10 s; see $state/server.log"
        fi
        sleep 0.1
    done
    echo "mirror.sh: serving $www on http://127.0.0.1:$(port)/ (pid $(cat "$state/pid"), log $state/server.log)"
}

stop_server() {
    pid=$(cat "$state/pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        tries=0
        while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 50 ]; do tries=$((tries + 1)); sleep 0.1; done
    fi
    rm -f "$state/pid" "$state/port"
}

case ${1:-} in
    start) start ;;
    stop) stop_server; echo "mirror.sh: stopped" ;;
    env)
        running || die "no mirror server is running; run: $0 start"
        echo "export GPULAB_MIRROR_URL=http://127.0.0.1:$(port)"
        echo "export GPULAB_MIRROR_FINGERPRINT=$(cat "$www/fingerprint")"
        echo "export GPULAB_MIRROR_KEY_URL=http://127.0.0.1:$(port)/rocm/rocm.gpg.key"
        echo "export GPULAB_MIRROR_WRONG_KEY_URL=http://127.0.0.1:$(port)/rocm/wrong.gpg.key"
        # The Core SDK stream (stable.repo.amd.com's layout): the folder of <distro>/ folders, its own key.
        echo "export GPULAB_MIRROR_CORE_URL=http://127.0.0.1:$(port)/rocm/core/packages"
        echo "export GPULAB_MIRROR_CORE_KEY_URL=http://127.0.0.1:$(port)/rocm/gpg/packages.gpg"
        echo "export GPULAB_MIRROR_CORE_FINGERPRINT=$(cat "$www/core-fingerprint")"
        ;;
    status)
        if running; then echo "mirror.sh: running on port $(port) (pid $(cat "$state/pid")), root $www"
        else echo "mirror.sh: not running"; exit 3; fi
        ;;
    *) die "usage: $0 start|stop|env|status" ;;
esac
