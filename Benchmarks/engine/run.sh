#!/usr/bin/env bash
# Engine benchmark: HTTPTestServer (release) against nginx serving the same bytes, then SSE fan-out.
#
#   Benchmarks/engine/run.sh [--no-build] [--duration 10s] [--streams 10000] [--events 50]
#
# Loopback only; every load is bounded in time (wrk -d, h2load -n/-T, the fan-out client --timeout).
# Prints a Markdown table; copy it into docs/benchmarks.md ("Engine") with the date and machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=1
duration=10s
streams=10000
events=50
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0 ;;
        --duration) duration="$2"; shift ;;
        --streams) streams="$2"; shift ;;
        --events) events="$2"; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

for tool in wrk nginx curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps --bench" >&2; exit 1; }
done
python=.venv/bin/python
[ -x "$python" ] || { echo "missing .venv: run scripts/install-deps" >&2; exit 1; }

# HTTPTESTSERVER=path runs another build (e.g. debug, to check this script) and skips building.
if [ -n "${HTTPTESTSERVER:-}" ]; then
    binary="$HTTPTESTSERVER"
else
    if [ "$build" = 1 ]; then
        echo "== swift build -c release --product HTTPTestServer" >&2
        swift build -c release --product HTTPTestServer >&2
    fi
    binary="$(swift build -c release --show-bin-path)/HTTPTestServer"
fi

work=$(mktemp -d)
chmod 755 "$work"  # nginx workers run as nobody and must read the served files
server_pid=""
nginx_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_server() { # sets server_pid and port
    "$binary" --host 127.0.0.1 --port 0 --max-pending-bytes 1048576 >"$work/server.out" 2>"$work/server.err" &
    server_pid=$!
    for _ in $(seq 1 100); do grep -q '^LISTENING' "$work/server.out" && break; sleep 0.1; done
    port=$(awk '/^LISTENING/ {print $2}' "$work/server.out")
    [ -n "$port" ] || { echo "server did not start: $(cat "$work/server.err")" >&2; exit 1; }
}
stop_server() {
    kill "$server_pid" && wait "$server_pid" || true
    server_pid=""
}

# --- our server
start_server
ours="http://127.0.0.1:$port"

# --- nginx with the same 2560 bytes as a static file (worker count = cores, like our loops)
mkdir -p "$work/nginx/html" "$work/nginx/logs"
curl -sS "$ours/static" -o "$work/nginx/html/static"
printf 'ok' >"$work/nginx/html/health"
nginx_port=$(free_port)
nginx_h2_port=$(free_port)
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes $(nproc);
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    default_type application/json;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nginx_port;
        listen 127.0.0.1:$nginx_h2_port http2;
        root $work/nginx/html;
    }
}
EOF
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$nginx_port/health" >/dev/null && break; sleep 0.1; done
theirs="http://127.0.0.1:$nginx_port"

# Sanity: both serve the same bytes.
cmp <(curl -sS "$ours/static") <(curl -sS "$theirs/static") || { echo "static bodies differ" >&2; exit 1; }

rows=()
wrk_row() { # name url
    local out rps p50 p99
    out=$(wrk -t2 -c64 -d"$duration" --latency "$2")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1=="50%" {print $2}' <<<"$out")
    p99=$(awk '$1=="99%" {print $2}' <<<"$out")
    if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then p99="$p99 ($(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | tr '\n' ' '))"; fi
    rows+=("| $1 | wrk -t2 -c64 -d$duration | $rps | $p50 | $p99 |")
}
h2load_row() { # name url
    local out rps
    if ! out=$(h2load -n 200000 -c 64 -m 10 -t 2 -T 60 "$2" 2>&1); then rows+=("| $1 | h2load | failed | | |"); return; fi
    rps=$(awk '/^finished in/ {print $4}' <<<"$out")
    local ok
    ok=$(awk '/^requests:/ {print $8, $9}' <<<"$out" | tr -d ,)
    rows+=("| $1 | h2load -n200k -c64 -m10 -t2 ($ok) | $rps | | |")
}

echo "== wrk" >&2
wrk_row "engine GET /static (2560 B)" "$ours/static"
wrk_row "nginx GET /static (2560 B)" "$theirs/static"
wrk_row "engine GET /health" "$ours/health"
wrk_row "nginx GET /health" "$theirs/health"

if command -v h2load >/dev/null; then
    echo "== h2load" >&2
    if curl -sf --http2-prior-knowledge "$ours/health" >/dev/null; then
        h2load_row "engine h2c GET /static" "$ours/static"
    else
        rows+=("| engine h2c GET /static | h2load | no h2c on this build | | |")
    fi
    h2load_row "nginx h2c GET /static" "http://127.0.0.1:$nginx_h2_port/static"
fi

# A fresh server for the fan-out, so its RSS growth is the streams' and not what wrk left behind.
stop_server
start_server
echo "== SSE fan-out ($streams streams, $events events)" >&2
fanout=$("$python" Benchmarks/engine/sse_fanout.py --port "$port" --streams "$streams" --events "$events" \
    --server-pid "$server_pid" --timeout 180 --json)
echo "$fanout" >&2
stop_server
start_server
echo "== SSE fan-out, publishes pipelined in one burst" >&2
fanout_burst=$("$python" Benchmarks/engine/sse_fanout.py --port "$port" --streams "$streams" --events "$events" \
    --server-pid "$server_pid" --timeout 180 --burst --json)
echo "$fanout_burst" >&2

echo
echo "| what | tool | req/s | p50 | p99 |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
"$python" - "$fanout" "$fanout_burst" <<'EOF'
import json, sys
runs = [json.loads(arg) for arg in sys.argv[1:]]
print("| SSE fan-out | one publish at a time | publishes pipelined |")
print("|---|---|---|")
def row(label, fmt):
    print(f"| {label} | " + " | ".join(fmt(r) for r in runs) + " |")
row("idle streams opened", lambda r: f"{r['streams']} in {r['open_seconds']} s")
row("server RSS before → with idle streams", lambda r: f"{r.get('server_rss_before_kib')} → {r.get('server_rss_idle_kib')} KiB")
row("server RSS per idle stream", lambda r: f"{r.get('rss_per_idle_stream_bytes')} B")
row("events published", lambda r: f"{r['events']} in {r['publish_seconds']} s (each reached ≥ {r['subscribers_reached_min']})")
row("deliveries", lambda r: f"{r['delivered']} / {r['expected']}, {r['streams_lost']} streams lost")
row("deliveries/s", lambda r: f"{r['deliveries_per_second']}")
row("latency p50 / p99 (client-bound)", lambda r: f"{r['latency_p50_ms']} / {r['latency_p99_ms']} ms")
row("server RSS while active", lambda r: f"{r['server_rss_active_kib']} KiB")
EOF
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u '+%Y-%m-%d %H:%M UTC')"
