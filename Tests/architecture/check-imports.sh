#!/usr/bin/env bash
# Module boundaries, checked on the import lines of Sources/: dependencies point down
# (docs/CONTRIBUTING.md, "Modules"). A file that imports a module its layer must not know fails
# the check with file:line and the rule it breaks.
#
#   Tests/architecture/check-imports.sh                           # check the tree
#   CHECK_IMPORTS_SELFTEST=1 Tests/architecture/check-imports.sh  # first prove it catches a violation
#
# An import is a line that starts (after attributes such as @testable and an access level) with
# `import`; `// import X` in a comment does not. Only import lines are checked, not the
# dependencies Package.swift declares.
set -euo pipefail
cd "$(dirname "$0")/../.."

# One rule a line: the modules (folders under a layer folder of Sources/) | the modules they must
# not import | why.
RULES=(
    "ScopeEngine|HTTPServer SocketLoop HTTPTypes HTTP1 HTTP2 HTTPCompression Gateway GatewayServer CLinuxIO PostgresStore CLibPQ CSQLite|the scope engine knows nothing of HTTP or sockets, and stores only through the Store interface"
    "JetstreamModel JetstreamJSON|Store ScopeEngine HTTPServer SocketLoop HTTPTypes Gateway GatewayServer|the model core has no I/O, no store and no HTTP"
    "SocketLoop|HTTPServer HTTPTypes HTTP1 HTTP2 Gateway GatewayServer ScopeEngine|the socket loop knows nothing of HTTP or scopes"
    "HTTPServer HTTP1 HTTP2|Gateway GatewayServer ScopeEngine Store JetstreamModel|the HTTP engine knows nothing of scopes, the engine or the store"
    "LoadGenerator|JetstreamModel Gateway GatewayServer ScopeEngine|the load generator is a client: HTTP and JSON, not the model or the server"
    "JetstreamClient|SocketLoop CLinuxIO HTTP1 HTTP2 HTTPCompression HTTPServer Gateway GatewayServer ScopeEngine Store LoadGenerator|the Swift client speaks HTTP through Foundation only (URLSession), never the server's engine"
    "Store PostgresStore|JetstreamModel JetstreamJSON ScopeEngine HTTPServer SocketLoop HTTPTypes HTTP1 HTTP2 Gateway GatewayServer|the stores keep bytes: no model, no engine, no HTTP"
    "ServerSentEvents|SocketLoop CLinuxIO HTTP1 HTTP2 HTTPCompression HTTPServer HTTPTypes Gateway GatewayServer ScopeEngine Store LoadGenerator JetstreamModel JetstreamJSON Jetstream|the SSE parser is pure stdlib, shared by the load generator and Swift clients"
)

# Checks the tree rooted at $1: prints each violation and a summary; fails when it found one or
# a rule names a folder that does not exist.
check_tree() {
    (
        cd "$1"
        local rule folders forbidden why folder module pattern hits violations=0 files=0
        for rule in "${RULES[@]}"; do
            IFS='|' read -r folders forbidden why <<<"$rule"
            for name in $folders; do
                folder=$(find Sources -mindepth 2 -maxdepth 2 -type d -name "$name" | head -n 1)
                if [ -z "$folder" ]; then
                    echo "architecture: module $name is named in a rule but no Sources/<layer>/$name exists: update the rules"
                    return 1
                fi
                files=$((files + $(find "$folder" -name '*.swift' | wc -l)))
                for module in $forbidden; do
                    pattern="^[[:space:]]*(@[A-Za-z_]+[[:space:]]+)*((public|package|internal|fileprivate|private)[[:space:]]+)?"
                    pattern+="import[[:space:]]+((struct|class|enum|protocol|typealias|func|let|var)[[:space:]]+)?$module([.[:space:];]|$)"
                    hits=$(grep -rnE --include='*.swift' "$pattern" "$folder" || true)
                    [ -z "$hits" ] && continue
                    while IFS= read -r hit; do
                        echo "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): $name must not import $module ($why)"
                        violations=$((violations + 1))
                    done <<<"$hits"
                done
            done
        done
        echo "architecture: $violations violations in $files files"
        [ "$violations" -eq 0 ]
    )
}

# The self-test: a copy of the tree's rule folders in which one ScopeEngine file imports
# HTTPServer (in several spellings) must fail at that file and line; a commented import must not.
self_test() {
    local sample form output
    tree=$(mktemp -d "${TMPDIR:-/tmp}/check-imports.XXXXXX")
    trap 'rm -rf "$tree"' EXIT
    mkdir -p "$tree/Sources"
    cp -r --parents Sources/Engine/ScopeEngine Sources/Model/JetstreamModel Sources/Model/JetstreamJSON \
        Sources/Transport/SocketLoop Sources/Transport/HTTPServer Sources/Transport/HTTP1 Sources/Transport/HTTP2 \
        Sources/Tools/LoadGenerator Sources/Clients/ServerSentEvents Sources/Clients/JetstreamClient \
        Sources/Engine/Store Sources/Engine/PostgresStore "$tree/"
    sample=Sources/Engine/ScopeEngine/RecentChangeSets.swift
    check_tree "$tree" >/dev/null || { echo "architecture self-test: the unmodified copy fails"; return 1; }
    for form in 'import HTTPServer' '@testable import HTTPServer' 'public import HTTPServer' \
        'import struct HTTPServer.Router'; do
        { echo "$form"; cat "$sample"; } >"$tree/$sample"
        if output=$(check_tree "$tree"); then
            echo "architecture self-test: '$form' in a copy of $sample was not caught"
            return 1
        fi
        grep -q "^Sources/Engine/ScopeEngine/RecentChangeSets.swift:1: ScopeEngine must not import HTTPServer" <<<"$output" \
            || { echo "architecture self-test: '$form' was not reported at line 1: $output"; return 1; }
    done
    { echo "// import HTTPServer"; cat "$sample"; } >"$tree/$sample"
    check_tree "$tree" >/dev/null || { echo "architecture self-test: a commented import was reported"; return 1; }
    rm -rf "$tree"
    trap - EXIT
    echo "architecture self-test: a forbidden import is caught (4 spellings), a commented one is not"
}

if [ "${CHECK_IMPORTS_SELFTEST:-0}" = 1 ]; then
    self_test
fi
check_tree .
