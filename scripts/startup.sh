#!/usr/bin/env bash
# Start-up of a tiny program (`malloc(64); return 0`) under each allocator: the issue-11 target
# "within 1.10x of glibc's start-up", measured the way README.md's "Speed" section says.
#
#   scripts/startup.sh [ROUNDS] [OUT]        (defaults 41 and startup-out)
#
# The times come from `alloclab compare --programs --workloads startup`: each measurement is
# 100 processes of the program in a row (their mean is recorded), the allocators in a shuffled
# order in every round, and OUT/report.md gives the medians, the ratios to glibc (`system`)
# with bootstrap intervals and the Mann-Whitney verdicts (docs/MEASURING.md). This script then
# prints the wall-time rows and the minor page faults of one run of the program per allocator
# (a `posix_spawn`ed child's `wait4` count: a fork would count the parent's copy-on-write
# faults too). Beside the allocators, `empty` preloads a library that does nothing: what
# preloading costs before any allocator code runs. Needs release builds of the command and of
# liballoclab.so (`cargo build --release -p alloclab -p liballoclab`), a C compiler, and
# Debian's libjemalloc2 and libmimalloc2.0 (subjects that are missing are left out). Run it on
# a quiet machine: it measures the whole machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-41}
out=${2:-startup-out}
target=${CARGO_TARGET_DIR:-target}/release
for f in alloclab liballoclab.so; do
    [ -f "$target/$f" ] || { echo "no $target/$f: run cargo build --release -p alloclab -p liballoclab first" >&2; exit 1; }
done
so="$PWD/$target/liballoclab.so"
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

subjects=system,lifo,lifo-tcache
declare -A lib=([system]= [lifo]="$so" [lifo-tcache]="$so")
declare -A conf=([system]= [lifo]=config:lifo [lifo-tcache]=config:lifo-tcache)
names=(system lifo lifo-tcache)
for peer in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2; do
    path="/usr/lib/$multiarch/${peer#*:}"
    if [ -f "$path" ]; then
        subjects+=",${peer%%:*}"
        lib[${peer%%:*}]=$path
        conf[${peer%%:*}]=
        names+=("${peer%%:*}")
    else
        echo "left out: ${peer%%:*} ($path not found)" >&2
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The floor of any preloaded allocator: a library with one function and no constructor, whose
# whole cost is the dynamic loader's (finding, mapping and relocating one more object, and
# one more object in every symbol lookup).
echo 'int alloclab_empty_library(void) { return 0; }' > "$work/empty.c"
cc -O2 -shared -fPIC -o "$work/libempty.so" "$work/empty.c"
subjects+=",empty"
names+=(empty)
lib[empty]=$work/libempty.so
conf[empty]=

"$target/alloclab" compare --programs --workloads startup --subjects "$subjects" \
    --preload empty="$work/libempty.so" --reps "$rounds" --no-progress --out "$out" 2>&1 \
    | grep -v '^wrote ' || true
[ -f "$out/report.md" ] || { echo "alloclab compare wrote no report" >&2; exit 1; }
printf '#include <stdlib.h>\nint main(void) { void *volatile p = malloc(64); (void)p; return 0; }\n' \
    > "$work/tiny.c"
cc -O2 -fno-builtin -o "$work/tiny" "$work/tiny.c"
cat > "$work/faults.c" <<'EOF_C'
#include <spawn.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    pid_t pid;
    int status;
    struct rusage ru;
    (void)argc;
    if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) != 0) return 1;
    if (wait4(pid, &status, 0, &ru) < 0 || status != 0) return 1;
    printf("%ld\n", ru.ru_minflt);
    return 0;
}
EOF_C
cc -O2 -o "$work/faults" "$work/faults.c"

echo "wall time per run ($rounds rounds of 100 runs; $out/report.md has every metric):"
echo "| metric | subject | n | median [95% CI] | vs system [95% CI] | p (Holm) | verdict |"
echo "|---|---|---|---|---|---|---|"
grep -E '^\| wall \|' "$out/report.md"
echo
echo "| allocator | minor page faults of one run |"
echo "|---|---|"
for a in "${names[@]}"; do
    echo "| $a | $(LD_PRELOAD=${lib[$a]} ALLOCLAB_CONF=${conf[$a]} "$work/faults" "$work/tiny") |"
done
