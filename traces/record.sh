#!/usr/bin/env bash
# Records the bundled traces that come from real programs (traces/README.md lists them):
# each program runs once on liballoclab.so with ALLOCLAB_CONF=log:<file> (the allocation log,
# logalloc's format), on the workload in traces/inputs/, in a clean environment; the log is
# compressed with zstd -19 into traces/ and replayed once to check it.
#
#   traces/record.sh                  # every trace
#   traces/record.sh python3 gcc      # some: python3, lua5.4, sqlite3, gcc
#
# Needs Debian's python3, lua5.4, sqlite3 and gcc (.ci/run installs them), and zstd. A new
# recording is a new trace (addresses, and the interleaving of threads, differ from run to
# run): update the calls column of traces/README.md from what this prints.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
cargo build --release -q -p liballoclab -p alloclab
so="$target/release/liballoclab.so"
alloclab="$target/release/alloclab"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# A clean, fixed environment: nothing of the caller's (PYTHONSTARTUP, locale, ...) leaks in.
clean() {
    env -i PATH=/usr/bin:/bin LC_ALL=C TZ=UTC HOME="$tmp" "$@"
}

version() {
    dpkg-query -W -f '${Package} ${Version}' "$1" 2>/dev/null || echo "$1 (version unknown)"
}

# finish NAME LOG PACKAGE COMMAND: compresses LOG into traces/NAME.log.zst, replays it (which
# parses every line), and prints what the README line needs.
finish() {
    local name="$1" log="$2" package="$3" command="$4"
    local out="traces/$name.log.zst"
    zstd -19 -q -f "$log" -o "$out"
    "$alloclab" replay "$out" --config lifo >"$tmp/replay.txt"
    printf '%s: %s lines, %s threads, %s bytes; %s; recorded %s by: %s\n  %s\n' \
        "$out" "$(wc -l <"$log")" "$(awk '{print $2}' "$log" | sort -u | wc -l)" \
        "$(stat -c %s "$out")" "$(version "$package")" "$(date -u +%F)" "$command" \
        "$(grep -m1 'calls:' "$tmp/replay.txt" | sed 's/^ *//')"
}

record_python3() {
    clean PYTHONHASHSEED=0 PYTHONMALLOC=malloc LD_PRELOAD="$so" \
        ALLOCLAB_CONF="log:$tmp/python3.log" \
        /usr/bin/python3 -s -B traces/inputs/workload.py >/dev/null
    finish python3-stdlib "$tmp/python3.log" python3 \
        "PYTHONMALLOC=malloc PYTHONHASHSEED=0 python3 -s -B traces/inputs/workload.py"
}

record_lua5.4() {
    clean LD_PRELOAD="$so" ALLOCLAB_CONF="log:$tmp/lua.log" \
        /usr/bin/lua5.4 traces/inputs/workload.lua >/dev/null
    finish lua5.4 "$tmp/lua.log" lua5.4 "lua5.4 traces/inputs/workload.lua"
}

record_sqlite3() {
    clean LD_PRELOAD="$so" ALLOCLAB_CONF="log:$tmp/sqlite3.log" \
        /usr/bin/sqlite3 -batch "$tmp/orders.db" ".read traces/inputs/workload.sql" >/dev/null
    finish sqlite3 "$tmp/sqlite3.log" sqlite3 \
        "sqlite3 -batch orders.db '.read traces/inputs/workload.sql' (a new database file)"
}

record_gcc() {
    # One file per process (%p): the driver, cc1 and as. The trace is cc1's, the compiler
    # proper, by far the largest.
    mkdir "$tmp/gcc"
    clean LD_PRELOAD="$so" ALLOCLAB_CONF="log:$tmp/gcc/gcc.%p.log" \
        /usr/bin/gcc -O2 -g -c traces/inputs/workload.c -o "$tmp/gcc/workload.o"
    local cc1
    cc1="$(ls -S "$tmp"/gcc/gcc.*.log | head -n 1)"
    finish gcc-cc1 "$cc1" gcc-12 \
        "gcc -O2 -g -c traces/inputs/workload.c (the log of cc1, one of its three processes)"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python3 lua5.4 sqlite3 gcc)
for n in "${names[@]}"; do
    case "$n" in
    python3 | lua5.4 | sqlite3 | gcc) "record_$n" ;;
    *)
        echo "record.sh: unknown trace '$n' (python3, lua5.4, sqlite3, gcc)" >&2
        exit 2
        ;;
    esac
done
