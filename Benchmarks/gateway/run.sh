#!/usr/bin/env bash
# Gateway benchmark: the throughput and latency of `jetstream serve` (release, --no-access-log, demo
# schema) on loopback — reads of a scope's state, durable change-set writes, event fan-out to many
# SSE subscribers, and start-up time over a full store.
#
#   Benchmarks/gateway/run.sh [--no-build] [--duration 10s] [--fanout "1000:100 10000:100 10000:20"]
#       [--fanout-events 1000] [--fanout-rate 100] [--fanout-processes 2] [--fanout-clients "c python"]
#       [--restart-changesets 1000000] [--restart-scopes 100] [--restart-flags "SERVER FLAGS"]
#       [--only get,post,fanout,restart] [--profile DIR]
#
# Workloads (each against a fresh server in a fresh data directory, except get+post which share one):
#   get      wrk -t2 -c64 on GET /v1/scopes/demo after 10 shapes were added (~2.5 KB of state)
#   post     wrk -s post.lua -t2 -c32: valid change sets, durable commits (synchronous=FULL), on one
#            scope, then spread over 32 scopes
#   fanout   sse_fanout.py: S subscribers on one scope, --fanout-events change sets POSTed at R per
#            second (--fanout "S:R …"; R defaults to --fanout-rate); the
#            subscribers run in C (sse_subscribers.c, built here with cc) and/or Python (asyncio+uvloop)
#   restart  fill a store with N change sets over HTTP (wrk, 100 writers on 100 scopes), then time
#            process start → "listening" 3 times (median). --restart-flags go to both the filling
#            and the restarted server; the worst case (every change set replayed at start) is
#            --restart-scopes 1 --restart-flags "--history-limit 1000000 --snapshot-interval 0"
# Smoke run (seconds): run.sh --no-build --duration 2s --fanout 50:20 --fanout-events 20
#                      --restart-changesets 2000 --restart-scopes 10
# --profile DIR records the server with `perf record -g` during each get/post/fanout row and writes
# DIR/<row>.txt (flat profile, demangled); the figures of such a run are perturbed by perf.
# Loopback only; every load is bounded in time (wrk -d, the fan-out client's --timeout, the fill's -d).
# Prints a Markdown table; copy it into docs/benchmarks.md ("Gateway") with the date and machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=Benchmarks/gateway

build=1
duration=10s
fanout="1000:100 10000:100 10000:20"
fanout_events=1000
fanout_rate=100
fanout_processes=""
fanout_clients="c python"
restart_changesets=1000000
restart_scopes=100
restart_flags=""
only="get,post,fanout,restart"
profile_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0 ;;
        --duration) duration="$2"; shift ;;
        --fanout) fanout="$2"; shift ;;
        --fanout-events) fanout_events="$2"; shift ;;
        --fanout-rate) fanout_rate="$2"; shift ;;
        --fanout-processes) fanout_processes="$2"; shift ;;
        --fanout-clients) fanout_clients="$2"; shift ;;
        --restart-changesets) restart_changesets="$2"; shift ;;
        --restart-scopes) restart_scopes="$2"; shift ;;
        --restart-flags) restart_flags="$2"; shift ;;
        --only) only="$2"; shift ;;
        --profile) profile_dir="$2"; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
wants() { [[ ",$only," == *",$1,"* ]]; }

for tool in wrk curl; do
    command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps" >&2; exit 1; }
done
python=.venv/bin/python
[ -x "$python" ] || { echo "missing .venv: run scripts/install-deps" >&2; exit 1; }

# JETSTREAM=path runs another build (e.g. debug, to check this script) and skips building.
if [ -n "${JETSTREAM:-}" ]; then
    binary="$JETSTREAM"
else
    if [ "$build" = 1 ]; then
        echo "== swift build -c release --product jetstream" >&2
        swift build -c release --product jetstream >&2
    fi
    binary="$(swift build -c release --show-bin-path)/jetstream"
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# 10k event streams need 10k descriptors in the server too.
ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d)
server_pid=""
fill_pid=""
cleanup() {
    if [ -n "$fill_pid" ]; then kill "$fill_pid" 2>/dev/null || true; fi
    if [ -n "$profile_pid" ]; then kill "$profile_pid" 2>/dev/null || true; fi
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; fi
    rm -rf "$work"
}
trap cleanup EXIT

start_server() { # data-dir [flags…]; sets server_pid, port, base
    local dir="$1"; shift
    mkdir -p "$dir"
    "$binary" serve --host 127.0.0.1 --port 0 --data-dir "$dir" --no-access-log "$@" \
        >"$work/server.out" 2>"$work/server.err" &
    server_pid=$!
    for _ in $(seq 1 600); do grep -q 'listening on' "$work/server.out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/server.out")
    [ -n "$port" ] || { echo "server did not start: $(cat "$work/server.err")" >&2; exit 1; }
    base="http://127.0.0.1:$port"
}
stop_server() {
    kill "$server_pid" && wait "$server_pid" || true
    server_pid=""
}
cpu_seconds() { awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat"; }

profile_pid=""
profile_start() { # slug
    [ -n "$profile_dir" ] || return 0
    mkdir -p "$profile_dir"
    perf record -e cpu-clock -F 499 -g -p "$server_pid" -o "$profile_dir/$1.data" 2>/dev/null &
    profile_pid=$!
    profile_slug=$1
}
profile_stop() {
    [ -n "$profile_pid" ] || return 0
    kill -INT "$profile_pid"; wait "$profile_pid" || true
    profile_pid=""
    # self time per symbol, then time including callees; the .data file stays for `perf report -i`
    { perf report -i "$profile_dir/$profile_slug.data" --no-children --sort dso,symbol -g none --stdio 2>/dev/null
      echo "==== including callees"
      perf report -i "$profile_dir/$profile_slug.data" --children --sort symbol -g none --stdio 2>/dev/null
    } | grep -v '^$' | swift demangle --simplified >"$profile_dir/$profile_slug.txt" || true
    echo "profile: $profile_dir/$profile_slug.txt" >&2
}

rows=()
notes=()
wrk_row() { # name command… — runs wrk, adds a row with req/s, p50, p99, failures, server and wrk CPU
    local name="$1"; shift
    local out rps p50 p99 failures cpu0 cpu1 secs shown client_cpu=""
    local perf_pid=""
    rm -f "$work/fsyncs.txt"
    if [ "${count_fsyncs:-0}" = 1 ] && command -v perf >/dev/null; then
        # fsync/fdatasync calls of the server while wrk runs (tracepoints; silently skipped if unavailable)
        perf stat -x, -e syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync -p "$server_pid" \
            -o "$work/fsyncs.txt" -- sleep "${duration%s}" 2>/dev/null &
        perf_pid=$!
    fi
    profile_start "$(tr -c 'A-Za-z0-9\n' '-' <<<"$name" | tr -s '-')"
    cpu0=$(cpu_seconds "$server_pid")
    if [ -x /usr/bin/time ]; then
        out=$(/usr/bin/time -f '%U %S' -o "$work/wrk.time" "$@")
        client_cpu=$(awk -v s="${duration%s}" '{printf ", wrk CPU %d%%", 100*($1+$2)/s}' "$work/wrk.time")
    else
        out=$("$@")
    fi
    cpu1=$(cpu_seconds "$server_pid")
    profile_stop
    fsyncs=""
    if [ -n "$perf_pid" ]; then
        wait "$perf_pid" || true
        fsyncs=$(awk -F, '/^[0-9]/ {n += $1} END {if (NR) print n}' "$work/fsyncs.txt" 2>/dev/null || true)
    fi
    echo "$out" >&2
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1=="50%" {print $2}' <<<"$out")
    p99=$(awk '$1=="99%" {print $2}' <<<"$out")
    failures=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | tr '\n' ' ' || true)
    secs=${duration%s}
    shown="$*"; shown=${shown//$base/http://127.0.0.1:PORT}; shown=${shown//$work\//}
    rows+=("| $name | \`$shown\` | $rps req/s | $p50 | $p99 | ${failures:-0 non-2xx}; server CPU $(awk -v a="$cpu0" -v b="$cpu1" -v s="$secs" 'BEGIN{printf "%d%%", 100*(b-a)/s}')$client_cpu |")
}

if wants get || wants post; then
    start_server "$work/data-main"
    echo "== server $base (pid $server_pid)" >&2
fi

if wants get; then
    size=$("$python" $here/bench_helper.py shapes --port "$port" --scope demo --count 10)
    echo "== GET state ($size bytes)" >&2
    wrk_row "GET /v1/scopes/demo ($size B)" wrk -t2 -c64 -d"$duration" --latency "$base/v1/scopes/demo"
fi

if wants post; then
    threads=2
    "$python" $here/bench_helper.py scopes --port "$port" --prefix canvas-one --count 1 --out "$work/one.txt"
    "$python" $here/bench_helper.py scopes --port "$port" --prefix canvas-w --count 32 --out "$work/w32.txt"
    for spread in one w32; do
        before=$("$python" $here/bench_helper.py versions --port "$port" --prefix "canvas-${spread/w32/w}")
        if [ "$spread" = one ]; then label="POST change set, 32 writers, 1 scope"; else label="POST change set, 32 writers, 32 scopes"; fi
        echo "== $label" >&2
        count_fsyncs=1 wrk_row "$label" wrk -s $here/post.lua -t$threads -c32 -d"$duration" --latency "$base" -- "$work/$spread.txt" $threads
        after=$("$python" $here/bench_helper.py versions --port "$port" --prefix "canvas-${spread/w32/w}")
        committed=$((after - before))
        notes+=("$label: $committed change sets committed (versions advanced) during the run${fsyncs:+; $fsyncs fsync/fdatasync calls by the server = $(awk -v c="$committed" -v f="$fsyncs" 'BEGIN {printf "%.1f", f ? c / f : 0}') change sets per fsync}")
    done
fi
[ -n "$server_pid" ] && stop_server

if wants fanout; then
    if [[ " $fanout_clients " == *" c "* ]]; then
        command -v cc >/dev/null || { echo "missing cc for the C fan-out client (or pass --fanout-clients python)" >&2; exit 1; }
        cc -O2 -o "$work/sse_subscribers" $here/sse_subscribers.c
    fi
    for spec in $fanout; do
      subscribers=${spec%%:*}
      rate=$fanout_rate
      [[ "$spec" == *:* ]] && rate=${spec#*:}
      for client in $fanout_clients; do
        processes=${fanout_processes:-$(( subscribers > 2000 ? 2 : 1 ))}
        # A fresh server each time, so that its RSS growth is these streams' only.
        # 8 source addresses carry the streams: lift the per-address and total stream limits.
        start_server "$work/data-fanout-$subscribers-$client" --max-pending-bytes 4194304 \
            --max-streams-per-client 100000 --max-streams 100000
        "$python" $here/bench_helper.py scopes --port "$port" --prefix canvas-fanout --count 1 --out "$work/fanout.txt"
        echo "== SSE fan-out: $subscribers subscribers in $processes $client processes, $fanout_events change sets at $rate/s" >&2
        command=(sse_fanout.py --port "$port" --scope canvas-fanout0 --subscribers "$subscribers"
                 --processes "$processes" --events "$fanout_events" --rate "$rate" --server-pid "$server_pid")
        [ "$client" = c ] && command+=(--c-client "$work/sse_subscribers")
        profile_start "fanout-$subscribers-$rate-$client"
        result=$("$python" $here/"${command[@]}" --json)
        profile_stop
        echo "$result" >&2
        rows+=("$("$python" - "$result" "${command[*]}" <<'EOF'
import json, re, sys
r = json.loads(sys.argv[1])
shown = re.sub(r"--port \d+", "--port PORT", sys.argv[2])
shown = re.sub(r"--server-pid \d+", "--server-pid PID", shown)
shown = re.sub(r"--c-client \S+", "--c-client sse_subscribers", shown)
cpu = ", ".join(f"{k} {v}%" for k, v in r["cpu_percent"].items())
print(f"| SSE fan-out, {r['subscribers']} subscribers, 1 scope, {r['events']} change sets at {r['rate']:g}/s, {r['client']} client | `{shown}` "
      f"| {r['deliveries_per_second']} deliveries/s ({r['deliveries']} of {r['expected']}) "
      f"| {r['latency_p50_ms']} ms | {r['latency_p99_ms']} ms "
      f"| POST→delivery p90 {r['latency_p90_ms']} ms, max {r['latency_max_ms']} ms; missing {r['missing']}, "
      f"duplicate {r['duplicate']}, streams lost {r['streams_lost']}; streams opened in {r['open_seconds']} s; "
      f"server RSS {r['server_rss_before_kib']} → {r['server_rss_idle_kib']} KiB idle "
      f"= {r['rss_per_idle_stream_bytes']} B per idle stream, {r['server_rss_active_kib']} KiB active; "
      f"POSTs {r['post_statuses']} p50 {r['post_p50_ms']} ms p99 {r['post_p99_ms']} ms in {r['publish_seconds']} s; "
      f"CPU {cpu} |")
EOF
)")
        stop_server
      done
    done
fi

if wants restart; then
    data="$work/data-restart"
    # shellcheck disable=SC2086 # the flags are words
    start_server "$data" $restart_flags
    "$python" $here/bench_helper.py scopes --port "$port" --prefix canvas-r --count "$restart_scopes" --out "$work/r.txt"
    created=$("$python" $here/bench_helper.py versions --port "$port" --prefix canvas-r)
    threads=2
    quota=$(( restart_changesets / threads ))
    echo "== fill: $restart_changesets change sets over $restart_scopes scopes" >&2
    fill_started=$(date +%s.%N)
    connections=$(( restart_scopes > 32 ? restart_scopes : 32 ))
    wrk -s $here/post.lua -t$threads -c$connections -d1200s "$base" -- "$work/r.txt" $threads $quota \
        >"$work/fill.out" &
    fill_pid=$!
    target=$(( created + quota * threads ))
    # wrk cannot stop early: watch the committed versions, then end it (wrk prints its summary on SIGINT).
    previous=-1 stalled=0
    while kill -0 "$fill_pid" 2>/dev/null; do
        logged=$("$python" $here/bench_helper.py versions --port "$port" --prefix canvas-r)
        [ "$logged" -ge "$target" ] && break
        if [ "$logged" = "$previous" ]; then stalled=$((stalled + 1)); else stalled=0; fi
        [ "$stalled" -ge 10 ] && { echo "fill stalled at $logged of $target" >&2; break; }
        previous=$logged
        sleep 1
    done
    fill_seconds=$(awk -v a="$fill_started" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    kill -INT "$fill_pid" 2>/dev/null || true
    wait "$fill_pid" || true
    fill=$(cat "$work/fill.out")
    echo "$fill" >&2
    logged=$("$python" $here/bench_helper.py versions --port "$port" --prefix canvas-r)
    logged=$(( logged - created ))
    stop_server
    size=$(du -sh "$data" | cut -f1)
    echo "== restart ($logged change sets logged, $size)" >&2
    restart=$("$python" $here/bench_helper.py restart --repeat 3 --verify-prefix canvas-r -- "$binary" serve --host 127.0.0.1 --port 0 \
        --data-dir "$data" --no-access-log $restart_flags)
    echo "$restart" >&2
    median=$(sed 's/.*"median_seconds": \([0-9.]*\).*/\1/' <<<"$restart")
    runs=$(sed 's/.*"runs_seconds": \[\(.*\)\].*/\1/' <<<"$restart")
    recovered=$(sed -n 's/.*"recovered_version_sum": \([0-9]*\).*/\1/p' <<<"$restart")
    [ "$recovered" = "$(( logged + created ))" ] || notes+=("RESTART LOST DATA: versions summed to $recovered after restart, $(( logged + created )) before")
    rows+=("| restart, $logged change sets logged in $restart_scopes scopes ($size data dir) | \`jetstream serve --data-dir D --no-access-log${restart_flags:+ $restart_flags}\`, start → listening, 3× | median $median s | | | runs $runs s; every scope back at its version; ${restart_flags:-defaults: --history-limit 10000 --snapshot-interval 1000} |")
    rows+=("| fill for the restart: POST, $connections writers, $restart_scopes scopes | \`wrk -s post.lua -t$threads -c$connections -d1200s URL -- r.txt $threads $quota\` | $(awk -v n="$logged" -v s="$fill_seconds" 'BEGIN{printf "%d", n/s}') req/s | | | $logged change sets committed in $fill_seconds s (until the versions reached the target); $(grep -E 'Non-2xx|Socket errors' <<<"$fill" | tr -s ' ' | tr '\n' ' ' || true) |")
fi

echo
echo "| workload | command | throughput | p50 | p99 | notes |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
for note in "${notes[@]+"${notes[@]}"}"; do echo "- $note"; done
echo "- machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2}') GiB, load generator and server on the same cores; data dir on $(df -T "$work" | awk 'NR==2 {print $2}'); load average before the run $load_before, after $(cut -d' ' -f1-3 /proc/loadavg); server run with --no-access-log; $(date -u '+%Y-%m-%d %H:%M UTC')"
