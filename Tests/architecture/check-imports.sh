#!/usr/bin/env bash
# Module boundaries, checked on the import lines of Sources/: dependencies point down
# (docs/CONTRIBUTING.md, "Modules"). A file that imports a module its layer must not know fails
# the check with file:line and the rule it breaks.
#
#   Tests/architecture/check-imports.sh                           # check the tree
#   CHECK_IMPORTS_SELFTEST=1 Tests/architecture/check-imports.sh  # first prove it catches a violation
#
# Recognised: `import X`, `@testable import X`, `@_exported import X`, `public import X`,
# `internal import X` (any attributes, any access level, `import struct X.Y` and the like).
# Comments, block comments and multi-line string literals are not imports. Only import lines are
# checked, not the dependencies Package.swift declares.
#
# Output: `architecture: N violations in M files`, then a last line `1 passed, 0 failed` (exit 0)
# or `0 passed, 1 failed` (exit 1), which CI's log reader counts.
set -euo pipefail
cd "$(dirname "$0")/../.."

# One rule a line: the module folders under Sources/ | the modules they must not import | why.
RULES=(
    "ScopeEngine|HTTPServer SocketLoop HTTPTypes HTTP1 HTTP2 HTTPCompression Gateway GatewayServer CLinuxIO|the scope engine knows nothing of HTTP or sockets"
    "JetstreamModel JetstreamJSON|Store ScopeEngine HTTPServer SocketLoop HTTPTypes Gateway GatewayServer|the model core has no I/O, no store and no HTTP"
    "SocketLoop|HTTPServer HTTPTypes HTTP1 HTTP2 Gateway GatewayServer ScopeEngine|the socket loop knows nothing of HTTP or scopes"
    "HTTPServer HTTP1 HTTP2|Gateway GatewayServer ScopeEngine Store JetstreamModel|the HTTP engine knows nothing of scopes, the engine or the store"
    "LoadGenerator|JetstreamModel Gateway GatewayServer ScopeEngine|the load generator is a client: HTTP and JSON, not the model or the server"
)

# Prints `path:line: <folder> must not import <module> (<why>)` for each forbidden import of the
# Swift files in `folders`; paths are relative to the current directory.
# Arguments: folders (space-separated, under Sources/), forbidden modules, why.
scan_rule() {
    local folders=$1 forbidden=$2 why=$3 folder
    for folder in $folders; do
        find "Sources/$folder" -type f -name '*.swift' -print0 | sort -z \
            | xargs -0 -r awk -v folder="$folder" -v forbidden="$forbidden" -v why="$why" '
                BEGIN {
                    n = split(forbidden, names, " ")
                    for (i = 1; i <= n; i++) banned[names[i]] = 1
                    statement = "^[ \t]*(@[A-Za-z_][A-Za-z0-9_]*(\\([^)]*\\))?[ \t]+)*"
                    statement = statement "((public|package|internal|fileprivate|private|open)[ \t]+)?"
                    statement = statement "import[ \t]+((typealias|struct|class|enum|protocol|let|var|func)[ \t]+)?"
                    statement = statement "[A-Za-z_][A-Za-z0-9_]*"
                }
                FNR == 1 { comment = 0; literal = 0 }
                {
                    line = $0
                    # Inside a multi-line string literal until the line that closes it.
                    if (literal) {
                        if (index(line, "\"\"\"")) literal = 0
                        next
                    }
                    # Drop block comments (Swift nests them), then line comments.
                    code = ""
                    while (length(line) > 0) {
                        if (comment > 0) {
                            opening = index(line, "/*"); closing = index(line, "*/")
                            if (closing == 0 && opening == 0) { line = ""; break }
                            if (opening > 0 && (closing == 0 || opening < closing)) {
                                comment++; line = substr(line, opening + 2)
                            } else {
                                comment--; line = substr(line, closing + 2)
                            }
                        } else {
                            opening = index(line, "/*")
                            if (opening == 0) { code = code line; line = ""; break }
                            code = code substr(line, 1, opening - 1) " "
                            comment = 1; line = substr(line, opening + 2)
                        }
                    }
                    slash = index(code, "//")
                    if (slash) code = substr(code, 1, slash - 1)
                    # A line that opens a multi-line string literal (an odd number of """).
                    rest = code; quotes = 0
                    while ((at = index(rest, "\"\"\"")) > 0) { quotes++; rest = substr(rest, at + 3) }
                    if (quotes % 2 == 1) literal = 1
                    count = split(code, parts, ";")
                    for (p = 1; p <= count; p++) {
                        if (match(parts[p], statement)) {
                            found = substr(parts[p], RSTART, RLENGTH)
                            module = found
                            sub(/.*[ \t]/, "", module)
                            if (module in banned)
                                printf "%s:%d: %s must not import %s (%s)\n", FILENAME, FNR, folder, module, why
                        }
                    }
                }' || return 1
    done
}

# Checks the tree rooted at $1: prints each violation, then the summary line. Returns 1 when it
# found a violation or could not check (a rule's folder is missing, no Swift file at all).
check_tree() {
    (
        cd "$1"
        local rule folders forbidden why folder files=0 violations=0 output
        for rule in "${RULES[@]}"; do
            IFS='|' read -r folders forbidden why <<<"$rule"
            for folder in $folders; do
                if [ ! -d "Sources/$folder" ]; then
                    echo "architecture: Sources/$folder is named in a rule of $0 but does not exist: update the rules"
                    return 1
                fi
                files=$((files + $(find "Sources/$folder" -type f -name '*.swift' | wc -l)))
            done
            if ! output=$(scan_rule "$folders" "$forbidden" "$why"); then
                echo "architecture: the scan of ${folders// /, } failed (see the error above)"
                return 1
            fi
            if [ -n "$output" ]; then
                echo "$output"
                violations=$((violations + $(printf '%s\n' "$output" | wc -l)))
            fi
        done
        if [ "$files" -eq 0 ]; then
            echo "architecture: no Swift files found under Sources/: nothing was checked"
            return 1
        fi
        echo "architecture: $violations violations in $files files"
        [ "$violations" -eq 0 ]
    )
}

fail() {
    echo "$1"
    echo "0 passed, 1 failed"
    exit 1
}

# The self-test: a temporary tree with every rule folder, holding one ScopeEngine file of ours
# with a forbidden import added, must fail at that file and line, once for every import form the
# checker claims to recognise; the unmodified copy, and one with the import only in comments and
# a string literal, must pass.
self_test() {
    local sample tree relative line form output rule folders forbidden why folder
    sample=$(find Sources/ScopeEngine -type f -name '*.swift' | sort | head -n 1)
    [ -n "$sample" ] || fail "architecture self-test: no Swift file in Sources/ScopeEngine to copy"
    tree=$(mktemp -d "${TMPDIR:-/tmp}/check-imports.XXXXXX")
    trap 'rm -rf "$tree"' EXIT
    for rule in "${RULES[@]}"; do
        IFS='|' read -r folders forbidden why <<<"$rule"
        for folder in $folders; do mkdir -p "$tree/Sources/$folder"; done
    done
    relative=$sample
    cp "$sample" "$tree/$relative"
    check_tree "$tree" >/dev/null \
        || fail "architecture self-test: an unmodified copy of $sample fails the check"

    # The added import goes after the file's own imports, as someone would write it.
    line=$(grep -n '^import ' "$sample" | tail -n 1 | cut -d: -f1 || true)
    line=$((${line:-0} + 1))
    for form in 'import HTTPServer' '@testable import HTTPServer' '@_exported import HTTPServer' \
        'public import HTTPServer' 'internal import HTTPServer' 'import struct HTTPServer.Router'; do
        { head -n $((line - 1)) "$sample"; echo "$form"; tail -n +"$line" "$sample"; } >"$tree/$relative"
        if output=$(check_tree "$tree"); then
            fail "architecture self-test: '$form' added to a copy of $sample was not caught"
        fi
        grep -q "^$relative:$line: ScopeEngine must not import HTTPServer " <<<"$output" \
            || fail "architecture self-test: '$form' was not reported at $relative:$line; the checker said: $output"
    done

    { cat "$sample"; printf '%s\n' '// import HTTPServer' '/* import HTTPServer' '   import SocketLoop */' \
        'let notAnImport = """' 'import HTTPServer' '"""'; } >"$tree/$relative"
    output=$(check_tree "$tree") \
        || fail "architecture self-test: imports inside comments or a string literal were reported: $output"

    rm -rf "$tree"
    trap - EXIT
    echo "architecture self-test: a copy of $sample with a forbidden import fails the check (6 import forms); comments and strings do not"
}

if [ "${CHECK_IMPORTS_SELFTEST:-0}" = 1 ]; then
    self_test
fi
if check_tree .; then
    echo "1 passed, 0 failed"
else
    echo "0 passed, 1 failed"
    exit 1
fi
