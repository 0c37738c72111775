#!/usr/bin/env bash
# Writes preload/so/startup.order: the symbols of liballoclab.so that a tiny program's
# start-up runs or touches, which preload/so/build.rs asks the linker to lay out first, so that
# start-up faults in a few pages of the library instead of one page per function (issue 11).
#
# The file names symbols exactly as the current toolchain mangles them for the release
# profile: after a Rust update (or a change of the release profile, the workspace's version or
# its dependencies), run this again; edits to the code rename only the few internal symbols
# that LLVM suffixes with `.llvm.<hash>`, but a change of a type or a signature the start-up
# code uses renames the functions that use it. A stale file costs only speed (names it lists
# that no longer exist are skipped), so the test suite checks it: `--check` fails, naming them,
# when a symbol the file lists is not in the release build of liballoclab.so.
#
# Needs valgrind (callgrind) and a C compiler. Functions: those callgrind sees run in
# liballoclab.so while a program allocates, reallocates and frees a little and exits, under
# the default config and `config:lifo`. Data: the small statics (below), so that the few that
# start-up writes share pages (the large buffers, such as the allocation log's, stay out of
# the way).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--check" ]; then
    target="${CARGO_TARGET_DIR:-target}"
    so="$target/release/liballoclab.so"
    [ -e "$so" ] || { echo "$so: build it first (cargo build --release -p liballoclab)"; exit 1; }
    missing=$(comm -23 <(grep -v '^#' preload/so/startup.order | sort -u) \
        <(nm --defined-only "$so" | awk '{ print $3 }' | sort -u))
    if [ -n "$missing" ]; then
        echo "preload/so/startup.order names $(echo "$missing" | wc -l) symbols that $so does not"
        echo "define (start-up then faults in more pages); run scripts/startup-order.sh:"
        echo "$missing" | c++filt | sed 's/^/  /'
        exit 1
    fi
    echo "preload/so/startup.order: all $(grep -vc '^#' preload/so/startup.order) symbols are in $so"
    exit 0
fi

nice -n 10 cargo build --release -p liballoclab
so=$PWD/target/release/liballoclab.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/tiny.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
int main(void) {
    void *volatile p = malloc(64);
    void *volatile q = calloc(4, 100);
    p = realloc(p, 200);
    free(q);
    free(p);
    char *volatile s = strdup("start-up");
    free(s);
    return 0;
}
EOF
cc -O2 -fno-builtin -o "$tmp/tiny" "$tmp/tiny.c"

# Functions, in the order callgrind reports them: those of the default config first, then
# those of `config:lifo` (the other config the README's start-up row measures; every config
# is its own set of monomorphized functions).
: > "$tmp/functions"
for conf in "" config:lifo; do
    ALLOCLAB_CONF=$conf LD_PRELOAD=$so valgrind --tool=callgrind --demangle=no -q \
        --callgrind-out-file="$tmp/cg" "$tmp/tiny"
    callgrind_annotate --inclusive=no --threshold=100 "$tmp/cg" |
        grep -F "[$so]" |
        sed -E 's/^.*:([^ ]+) \[.*$/\1/' |
        grep -v '^0x' >> "$tmp/functions"
done

# Small statics: the alloclab crates' (below a page), then the standard library's and the
# unwinder's writable ones (below 1 KiB: among them those the loader relocates, and std's
# argument store, which its constructor writes), so that the few statics start-up writes
# share pages with what the loader writes anyway; the large buffers come after them.
nm -S --defined-only "$so" |
    awk '$3 ~ /^[dDbBrR]$/ { print $2, $3, $4 }' > "$tmp/statics.sized"
paste -d ' ' "$tmp/statics.sized" <(cut -d ' ' -f 3 "$tmp/statics.sized" | c++filt) |
    awk '{
        # Sizes are hexadecimal: strip the leading zeros and count the digits left.
        size = $1; sub(/^0+/, "", size)
        small = length(size) <= 2 || (length(size) == 3 && size ~ /^[0-3]/)
        if ($4 ~ /^alloclab/ && length(size) <= 3) print "1", $3
        else if ($4 !~ /^alloclab/ && $2 ~ /^[dDbB]$/ && small) print "2", $3
    }' | sort -s -k 1,1 | cut -d ' ' -f 2 > "$tmp/statics"

{
    echo "# Written by scripts/startup-order.sh; read by preload/so/build.rs. Do not edit."
    awk '!seen[$0]++' "$tmp/functions" "$tmp/statics"
} > preload/so/startup.order
echo "preload/so/startup.order: $(grep -vc '^#' preload/so/startup.order) symbols" \
    "($(sort -u "$tmp/functions" | wc -l) functions, $(wc -l < "$tmp/statics") statics)"
