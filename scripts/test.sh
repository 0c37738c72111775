#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run calls only this) and what README.md names. It
# installs what it needs first, so a fresh machine needs nothing but cargo and apt.
# Each step prints a banner; the first failure stops the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each banner also says how long the step before it took; the end prints every step's seconds.
step_started=$SECONDS
step_names=()
step_seconds=()
step_done() {
    if [ -n "${step_name:-}" ]; then
        local took=$((SECONDS - step_started))
        printf '=== %s: %d s ===\n' "$step_name" "$took"
        step_names+=("$step_name")
        step_seconds+=("$took")
    fi
}
step() {
    step_done
    step_name="$*"
    step_started=$SECONDS
    printf '\n=== %s ===\n' "$*"
}
summary() {
    printf '\n=== seconds per step ===\n'
    local i
    for i in "${!step_names[@]}"; do
        printf '%6d  %s\n' "${step_seconds[$i]}" "${step_names[$i]}"
    done
}
# A run stopped by a signal is a failure, never "all steps passed".
trap 'exit 130' INT
trap 'exit 143' TERM
# A job still running in the background (the cargo-fuzz install) ends with the run.
background_pid=""
trap 'rc=$?; if [ -n "$background_pid" ]; then kill "$background_pid" 2>/dev/null || true; fi; step_done; summary; if [ $rc -eq 0 ]; then printf "=== all steps passed in %d s ===\n" "$SECONDS"; else printf "=== FAILED in step: %s (after %d s) ===\n" "$step_name" "$SECONDS"; fi' EXIT

# Every command that can run long runs under a time limit (`limit SECONDS command...`), and
# every test under nextest's per-test limit (.config/nextest.toml: killed after 5 minutes and
# named), so that a hang fails the suite within minutes and says where, instead of waiting
# for CI's own limit. The limits are ceilings, several times what each step takes.
limit() {
    local secs=$1
    shift
    local rc=0
    timeout -k 30 "$secs" "$@" || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        printf '=== TIMED OUT after %d s: %s ===\n' "$secs" "$*"
    fi
    return "$rc"
}

step "set-up: what a fresh machine lacks"
# The suite needs more than cargo: rustfmt and clippy, the programs liballoclab.so's tests run
# under LD_PRELOAD (preload/tests), a C++ compiler for the peers (snmalloc), slurm and munge
# for the job-array test (papers/slurm), strace for `compare --syscalls` (tests/compare.rs),
# and cargo-fuzz for the fuzz smoke step. Install
# whatever is missing (apt-get as root, or through sudo), so that this one command works on a
# fresh machine.
rustup component add rustfmt clippy >/dev/null 2>&1 || true
# cargo-fuzz compiles (half a minute on two cores) while apt-get downloads and unpacks, into a
# log printed only if it fails; the step waits for it, so a failure fails this step. It is only
# a driver that runs cargo and the fuzz binaries, so it is built unoptimized (half the time).
if ! cargo fuzz --version 2>/dev/null | grep -q "0.13.1"; then
    cargo_fuzz_log="$(mktemp)"
    CARGO_PROFILE_RELEASE_OPT_LEVEL=0 cargo install cargo-fuzz --version 0.13.1 --locked >"$cargo_fuzz_log" 2>&1 &
    background_pid=$!
fi
missing=""
for pkg in python3 perl lua5.4 sqlite3 gcc g++ git slurm-wlm munge strace; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then apt=(apt-get); else apt=(sudo apt-get); fi
    echo "installing:$missing"
    "${apt[@]}" update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq $missing
fi
# cargo-nextest runs the tests, each under a time limit; a fresh machine of this kind has it,
# any other gets it built.
if ! cargo nextest --version >/dev/null 2>&1; then
    limit 1200 cargo install cargo-nextest --locked
fi
if [ -n "$background_pid" ]; then
    if ! wait "$background_pid"; then
        cat "$cargo_fuzz_log"
        echo "cargo install cargo-fuzz failed"
        exit 1
    fi
    background_pid=""
    rm -f "$cargo_fuzz_log"
    cargo fuzz --version
fi

step "format and lints"
cargo fmt --all --check
limit 1800 cargo clippy --workspace --all-targets -- -D warnings

step "unit, integration and doc tests"
# The preload tests run programs under the dev build of liballoclab.so. Left to them, they build
# it with `cargo build -p liballoclab`, whose features (those of one package) are not the
# workspace's, so that the engine and the policies would be compiled a second time; built here
# with the workspace's (and, with `--tests`, the dev-dependencies' features, as `cargo test`
# resolves them), it shares the build of everything it links and costs one link.
limit 1800 cargo build --workspace --lib --tests
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
ALLOCLAB_SO="$target_dir/debug/liballoclab.so" \
    ALLOCLAB_PRODUCTION_SO="$target_dir/debug/liballoclab_production.so" \
    ALLOCLAB_DEBUG_SO="$target_dir/debug/liballoclab_debug.so" \
    ALLOCLAB_PROBE_SO="$target_dir/debug/liballoclab_probe.so" \
    limit 2400 cargo nextest run --workspace --no-fail-fast
# nextest runs no doc tests: cargo's own runner does.
limit 900 cargo test --workspace --doc

step "compare on a real slurm cluster: a 3-task job array of shards, merged (papers/slurm)"
# A single-node cluster started and stopped by the script (as root: slurmd runs jobs as their
# user); the dev build `cargo test` made.
if [ "$(id -u)" -eq 0 ]; then
    ALLOCLAB="${CARGO_TARGET_DIR:-target}/debug/alloclab" limit 600 papers/slurm/test-local-cluster.sh
else
    echo "SKIPPED: the slurm cluster test runs daemons as root (run scripts/test.sh as root)"
fi

step "liballoclab.so: the release build under the preload tests"
# `cargo test` above ran them on the dev build (debug assertions on); this is the library
# `cargo build --release -p liballoclab` ships, with the production and debug builds of one
# config beside it (preload/tests/builds.rs).
limit 1800 cargo build --release -p liballoclab -p liballoclab-production -p liballoclab-debug
# The start-up layout (preload/so/startup.order) must name this build's symbols.
scripts/startup-order.sh --check
# The preload test binaries `cargo test --workspace` built above, run again: `cargo test -p
# alloclab-preload` would build them with that package's features alone (not the workspace's)
# and so compile half the workspace again in the dev profile, for the same tests.
preload_tests="$(cargo test --workspace --tests --no-run --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["executable"] and m["profile"]["test"] \
            and m["manifest_path"] == sys.argv[1]:
        print(m["executable"])
' "$PWD/preload/Cargo.toml")"
[ -n "$preload_tests" ] || { echo "no preload test binaries found"; exit 1; }
for test_binary in $preload_tests; do
    echo "running $test_binary"
    (cd preload && ALLOCLAB_SO="$target_dir/release/liballoclab.so" \
        ALLOCLAB_PRODUCTION_SO="$target_dir/release/liballoclab_production.so" \
        ALLOCLAB_DEBUG_SO="$target_dir/release/liballoclab_debug.so" limit 600 "$test_binary")
done

step "liballoclab_probe.so: the release build under its tests"
# Built as `compare --metrics` users build it; its tests time a seeded slow allocator.
limit 1200 cargo build --release -p alloclab-probe-so
ALLOCLAB_PROBE_SO="$target_dir/release/liballoclab_probe.so" \
    limit 900 cargo nextest run -p alloclab-probe --test preload

# ---- verification suite (alloclab-verify, fuzz/; VERIFY.md) ----------------------------------
# One target directory for every cfg: cargo (since PR 14830, late 2024; measured with 1.95) names each artifact after the
# RUSTFLAGS it was built with, so the builds of different cfgs sit side by side and none
# invalidates another.
# They build with the `verify` profile (release's optimization without its LTO: Cargo.toml).
# The seeded-bug switch is an untracked atomic read outside every model (core/src/platform/seeded.rs),
# so a build with `--cfg alloclab_seeded` runs the plain models unchanged and the seeded ones
# too: the loom and the shuttle steps build once each, not twice.
verify_target="${CARGO_TARGET_DIR:-target}"

step "loom models (preemption bound 5; 1 for three-thread models) and the seeded bugs loom must catch (VERIFY.md)"
RUSTFLAGS="--cfg loom --cfg alloclab_seeded" limit 2400 cargo nextest run -p alloclab-verify \
    --cargo-profile verify --target-dir "$verify_target" --no-fail-fast

step "shuttle random walks: 8 threads over whole heaps, random and PCT schedulers (VERIFY.md)"
RUSTFLAGS="--cfg shuttle --cfg alloclab_seeded" limit 1800 cargo nextest run -p alloclab-verify \
    --cargo-profile verify --target-dir "$verify_target" --test shuttle_walk --test shuttle_seeded

step "seeded engine bugs: each caught, by the check its test names"
RUSTFLAGS="--cfg alloclab_seeded" limit 1800 cargo nextest run -p alloclab-verify \
    --cargo-profile verify --target-dir "$verify_target" --test seeded_engine

step "fuzz smoke: every target briefly, from its committed seeds"
# New inputs go to a scratch corpus, never into fuzz/seeds. FUZZ_SECONDS scales the run.
(cd fuzz && limit 1800 cargo fuzz build -s none)
for target in $(cd fuzz && cargo fuzz list); do
    scratch="$(mktemp -d)"
    if ! (cd fuzz && limit 300 cargo fuzz run -s none "$target" "$scratch" "seeds/$target" -- \
        -max_total_time="${FUZZ_SECONDS:-5}" -rss_limit_mb=4096 -print_final_stats=1 \
        >"$scratch.log" 2>&1); then
        cat "$scratch.log"
        exit 1
    fi
    echo "$target: $(grep -E "^stat::(number_of_executed_units|average_exec_per_sec)" "$scratch.log" | tr '\n' ' ')"
    rm -rf "$scratch" "$scratch.log"
done

step "the policy template (examples/policy-template): format, lints, kit, drop-in malloc"
# A crate of its own, as a user's is: built into this target directory to share dependencies.
template_target="${CARGO_TARGET_DIR:-target}"
case "$template_target" in /*) ;; *) template_target="$PWD/$template_target" ;; esac
(
    cd examples/policy-template
    cargo fmt --all --check
    limit 1200 cargo clippy --workspace --all-targets --target-dir "$template_target" -- -D warnings
    limit 1200 cargo test --workspace --target-dir "$template_target"
)
step "the policy template: a crate made from it by new-policy.sh builds, every name changed"
scratch="$(mktemp -d)"
examples/policy-template/new-policy.sh "$scratch/fullest-first" fullest_first
(cd "$scratch/fullest-first" && limit 900 cargo check --workspace --all-targets --target-dir "$template_target")
rm -rf "$scratch"
step "the policy template: a finding the kit prints, pasted into a template-made crate, compiles and fails"
# A scratch copy of the template with a bug in its policy, built into the same target directory
# as the step above (the same features), so that only the copy's own crate is built.
CARGO_TARGET_DIR="$template_target" limit 900 scripts/pasted-finding.sh
step "the policy template: its loom test"
(
    cd examples/policy-template
    # Built as the suite's loom step is (the same RUSTFLAGS, profile and target directory), so
    # that the crates they share are built once.
    RUSTFLAGS="--cfg loom --cfg alloclab_seeded" limit 1200 cargo test --profile verify \
        --no-default-features --test loom --target-dir "$template_target"
)
step "the policy template: its shuttle walks"
(
    cd examples/policy-template
    # As the template's loom step: the suite's shuttle build, shared.
    RUSTFLAGS="--cfg shuttle --cfg alloclab_seeded" limit 1200 cargo test --profile verify \
        --no-default-features --test shuttle --target-dir "$template_target"
)
step "the policy template: its fuzz target"
# The template's fuzz target, as a user runs it, sharing the build of the targets above.
scratch="$(mktemp -d)"
if ! (cd examples/policy-template/fuzz && limit 300 cargo fuzz run -s none --target-dir "$PWD/../../../fuzz/target" \
    heap_ops "$scratch" -- -max_total_time="${FUZZ_SECONDS:-5}" -rss_limit_mb=4096 \
    -print_final_stats=1 >"$scratch.log" 2>&1); then
    cat "$scratch.log"
    exit 1
fi
echo "policy-template heap_ops: $(grep -E "^stat::(number_of_executed_units|average_exec_per_sec)" "$scratch.log" | tr '\n' ' ')"
rm -rf "$scratch" "$scratch.log"
