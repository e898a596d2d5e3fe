#!/usr/bin/env bash
# ctest mcp_conformance: runs the official MCP conformance suite's client scenarios
# (@modelcontextprotocol/conformance, installed by scripts/setup) against
# mcp_conformance_client. Usage: mcp_conformance.sh <client executable> <scratch dir> <scenario>...
# Prints "mcp_conformance: SKIPPED ..." and succeeds only when node, or npm and the package,
# are missing; any scenario that fails fails the test, its checks printed.
set -uo pipefail
client="$1"; scratch="$2"; shift 2
src="${LIBRETTO_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
pkg=""
for cache in ${LIBRETTO_NPM_CACHE:-} "$src/.cache/npm"; do
    if [ -f "$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
        pkg="$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js"
        break
    fi
done
if ! command -v node >/dev/null 2>&1; then
    echo "mcp_conformance: SKIPPED: node is not on PATH"; exit 0
fi
if [ -z "$pkg" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "mcp_conformance: SKIPPED: npm is not on PATH and @modelcontextprotocol/conformance is not installed"; exit 0
    fi
    echo "mcp_conformance: @modelcontextprotocol/conformance is not installed: run scripts/setup" >&2; exit 1
fi
failed=0
for scenario in "$@"; do
    out="$scratch/conformance-$scenario"
    rm -rf "$out"; mkdir -p "$out"
    if node "$pkg" client --command "$client" --scenario "$scenario" --timeout 60000 -o "$out" > "$out/runner.log" 2>&1; then
        echo "PASS $scenario"
    else
        echo "FAIL $scenario"; failed=1
        cat "$out/runner.log"
        find "$out" -name checks.json -exec cat {} \;
    fi
done
exit $failed
