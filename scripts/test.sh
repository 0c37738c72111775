#!/usr/bin/env bash
# The whole test suite: what CI runs (through .ci/run) and what README.md names.
# Each step prints a banner; the first failure stops the run.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s ===\n' "$*"; }

step "format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings

step "unit, integration and doc tests"
cargo test --workspace

step "liballoclab.so: the release build under the preload tests"
# `cargo test` above ran them on the dev build (debug assertions on); this is the library
# `cargo build --release -p liballoclab` ships.
cargo build --release -p liballoclab
preload_target="${CARGO_TARGET_DIR:-target}"
case "$preload_target" in /*) ;; *) preload_target="$PWD/$preload_target" ;; esac
ALLOCLAB_SO="$preload_target/release/liballoclab.so" cargo test -p alloclab-preload --tests

# ---- verification suite (alloclab-verify, fuzz/; VERIFY.md) ----------------------------------
# Each cfg build gets a target directory of its own: RUSTFLAGS changes invalidate a shared one.
verify_target="${CARGO_TARGET_DIR:-target}"

step "loom models (preemption bound 5; 1 for three-thread models; VERIFY.md)"
RUSTFLAGS="--cfg loom" cargo test -p alloclab-verify --release --target-dir "$verify_target/loom"

step "seeded bugs: each caught, by the check its test names"
RUSTFLAGS="--cfg alloclab_seeded" cargo test -p alloclab-verify --release \
    --target-dir "$verify_target/seeded" --test seeded_engine
RUSTFLAGS="--cfg loom --cfg alloclab_seeded" cargo test -p alloclab-verify --release \
    --target-dir "$verify_target/loom-seeded" --test loom_seeded

step "fuzz smoke: every target briefly, from its committed seeds"
# New inputs go to a scratch corpus, never into fuzz/seeds. FUZZ_SECONDS scales the run.
(cd fuzz && cargo fuzz build -s none)
for target in $(cd fuzz && cargo fuzz list); do
    scratch="$(mktemp -d)"
    if ! (cd fuzz && cargo fuzz run -s none "$target" "$scratch" "seeds/$target" -- \
        -max_total_time="${FUZZ_SECONDS:-15}" -rss_limit_mb=4096 -print_final_stats=1 \
        >"$scratch.log" 2>&1); then
        cat "$scratch.log"
        exit 1
    fi
    echo "$target: $(grep -E "^stat::(number_of_executed_units|average_exec_per_sec)" "$scratch.log" | tr '\n' ' ')"
    rm -rf "$scratch" "$scratch.log"
done
