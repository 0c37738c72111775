#!/usr/bin/env bash
# Start-up of a tiny program (`malloc(64); return 0`) under each allocator: the issue-11 target
# "within 1.10x of glibc's start-up", measured the way README.md's "Speed" section says.
#
#   scripts/startup.sh [ROUNDS] [RUNS]        (defaults 21 and 100)
#
# Each round runs the program RUNS times in a row per allocator, the allocators in a shuffled
# order (so that drifts of the machine spread over all of them), and records the time of the
# RUNS runs. The table gives, per allocator, the median over the rounds, the ratio of medians
# against glibc (`system`) with a 95% percentile bootstrap interval (2000 resamples of the
# rounds, each allocator resampled on its own, seed 1), and the minor page faults of one run.
# Needs a release build of liballoclab.so (`cargo build --release -p liballoclab`), a C
# compiler, python3, and Debian's libjemalloc2 and libmimalloc2.0 (rows for missing ones are
# left out). Run it on a quiet machine: it measures the whole machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-21}
runs=${2:-100}
so="$PWD/${CARGO_TARGET_DIR:-target}/release/liballoclab.so"
[ -f "$so" ] || { echo "no $so: run cargo build --release -p liballoclab first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include <stdlib.h>\nint main(void) { void *volatile p = malloc(64); (void)p; return 0; }\n' \
    > "$work/tiny.c"
cc -O2 -fno-builtin -o "$work/tiny" "$work/tiny.c"

declare -A lib=([system]= [lifo]="$so" [lifo-tcache]="$so")
declare -A conf=([system]= [lifo]=config:lifo [lifo-tcache]=config:lifo-tcache)
names=(system lifo lifo-tcache)
for peer in jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2; do
    path="/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/${peer#*:}"
    if [ -f "$path" ]; then
        lib[${peer%%:*}]=$path
        conf[${peer%%:*}]=
        names+=("${peer%%:*}")
    else
        echo "left out: ${peer%%:*} ($path not found)" >&2
    fi
done

# Minor page faults of one run of the program alone: wait4's rusage of a posix_spawn'ed child
# (a fork would count the parent's copy-on-write faults too).
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
faults() {
    LD_PRELOAD=$1 ALLOCLAB_CONF=$2 "$work/faults" "$work/tiny"
}

for a in "${names[@]}"; do
    echo "faults $a $(faults "${lib[$a]}" "${conf[$a]}")"
done > "$work/faults.txt"
for _ in $(seq "$rounds"); do
    for a in $(printf '%s\n' "${names[@]}" | shuf); do
        s=$(date +%s%N)
        for _ in $(seq "$runs"); do
            LD_PRELOAD=${lib[$a]} ALLOCLAB_CONF=${conf[$a]} "$work/tiny"
        done
        echo "time $a $(( ($(date +%s%N) - s) / 1000 ))"
    done
done > "$work/times.txt"

python3 - "$work/times.txt" "$work/faults.txt" "$runs" <<'EOF'
import random, statistics, sys
times, faults = {}, {}
for line in open(sys.argv[1]):
    _, name, us = line.split()
    times.setdefault(name, []).append(int(us))
for line in open(sys.argv[2]):
    _, name, n = line.split()
    faults[name] = n
runs = int(sys.argv[3])
base = times["system"]
rng = random.Random(1)
def resample(xs):
    return [rng.choice(xs) for _ in xs]
print(f"{len(base)} rounds of {runs} runs; time per run in microseconds")
print(f"| allocator | median per run | ratio to system | 95% interval | minor faults |")
print(f"|---|---|---|---|---|")
for name, xs in times.items():
    med = statistics.median(xs)
    ratios = sorted(statistics.median(resample(xs)) / statistics.median(resample(base))
                    for _ in range(2000))
    lo, hi = ratios[49], ratios[1949]
    print(f"| {name} | {med / runs:.1f} | {med / statistics.median(base):.3f} "
          f"| [{lo:.3f}, {hi:.3f}] | {faults[name]} |")
EOF
