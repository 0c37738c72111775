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
