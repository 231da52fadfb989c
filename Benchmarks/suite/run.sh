#!/usr/bin/env bash
# Side-by-side benchmark suite: the gateway, the Hummingbird 2 reference and nginx under
# the same workloads (`jetstream bench`), one Markdown table with ratios to the gateway and the
# issue's goals met/missed. The logic is in suite.py (Python 3 standard library only).
#
#   Benchmarks/suite/run.sh                  # builds release binaries, then the full suite
#   Benchmarks/suite/run.sh --smoke          # tiny sizes, ~2 minutes after the builds
#   Benchmarks/suite/run.sh --no-build --only get,post --targets gateway,nginx --duration 5
#   Benchmarks/suite/run.sh --update-docs    # also rewrites the suite section of docs/benchmarks.md
#   Benchmarks/suite/run.sh --help           # every option
#
# Needs nginx (and wrk for --wrk): scripts/install-deps --bench, or pass --install-deps. Loopback only; every step is
# bounded by a timeout; every server started is stopped on exit. Raw results (all JSON) go to
# Benchmarks/suite/results/<UTC timestamp>.json. Exit status 1 when any bench failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v python3 >/dev/null || { echo "missing python3" >&2; exit 1; }
# --install-deps: scripts/install-deps --bench first (apt packages incl. nginx and wrk, the .venv).
args=()
for arg in "$@"; do
    if [ "$arg" = --install-deps ]; then scripts/install-deps --bench; else args+=("$arg"); fi
done
set -- "${args[@]+"${args[@]}"}"
if [[ " $* " != *" --help "* && " $* " != *" -h "* ]]; then
    wants_nginx=1
    for ((i = 1; i <= $#; i++)); do
        if [ "${!i}" = --targets ]; then j=$((i + 1)); [[ ",${!j}," == *",nginx,"* ]] || wants_nginx=0; fi
    done
    if [ "$wants_nginx" = 1 ] && ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
        echo "missing nginx: run scripts/install-deps --bench" >&2
        exit 1
    fi
    if [[ " $* " == *" --wrk "* ]] && ! command -v wrk >/dev/null; then
        echo "missing wrk: run scripts/install-deps --bench" >&2
        exit 1
    fi
fi
exec python3 Benchmarks/suite/suite.py "$@"
