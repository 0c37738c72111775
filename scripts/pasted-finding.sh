#!/usr/bin/env bash
# A finding the conformance kit prints, pasted into the crate it was printed for, compiles and
# fails with the same finding (issue 26). The crate is made from examples/policy-template, as a
# user makes theirs, in a scratch directory, with a bug put into its policy (the highest chunk
# first instead of the lowest). The steps:
#
#   1. the template's kit test (`tests/kit.rs`) on the buggy policy fails, printing the finding;
#   2. the `#[test]` it printed, appended as is to `tests/kit.rs`, compiles;
#   3. that test fails, with the finding's check at the finding's step.
#
# scripts/test.sh runs it in its template step. CARGO_TARGET_DIR (default: target/ of the
# checkout) is shared with the template's own build; TEMPLATE_CARGO_FLAGS adds flags to every
# cargo command (`--no-default-features` leaves the peers' C builds out).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
# shellcheck disable=SC2206
flags=(${TEMPLATE_CARGO_FLAGS:-})
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() {
    echo "pasted-finding: $*" >&2
    exit 1
}

# The template crate alone (not its drop-in malloc or fuzz crates), its paths pointed at this
# checkout.
tar -C "$root/examples/policy-template" --exclude=./target --exclude=./fuzz --exclude=./malloc \
    -cf - . | tar -C "$work" -xf -
cd "$work"
sed -i -e "s#path = \"../..\"#path = \"$root\"#" \
    -e "s#path = \"../../verify\"#path = \"$root/verify\"#" \
    -e 's#^members = \[".", "malloc"\]#members = ["."]#' Cargo.toml
grep -q "path = \"$root/verify\"" Cargo.toml || fail "Cargo.toml: the verify path was not rewritten"
python3 - <<'EOF'
import sys
path = "src/lib.rs"
text = open(path).read()
old = "chunk_of(r.addr()) < chunk_of(b.addr())"
if text.count(old) != 1:
    sys.exit(f"{path}: the policy's comparison is not there once; update this script")
open(path, "w").write(text.replace(old, "chunk_of(r.addr()) > chunk_of(b.addr())"))
EOF

# 1. The kit finds the bug and prints the finding.
if cargo test "${flags[@]}" --target-dir "$target" --test kit -- --exact chunk_lifo_conforms \
    >kit.log 2>&1; then
    cat kit.log
    fail "the kit passed the policy with the bug"
fi
finding="$(grep -A1 -m1 "panicked at" kit.log | tail -n 1)"
echo "the kit's finding: $finding"
[[ $finding =~ ^chunk-lifo:\ step\ ([0-9]+):\ ([A-Za-z]+) ]] ||
    { cat kit.log; fail "the report does not start with the one-line finding"; }
step="${BASH_REMATCH[1]}"
check="${BASH_REMATCH[2]}"
awk '/^#\[test\]$/ { p = 1 } p { print } p && /^}$/ { exit }' kit.log >snippet.rs
[ -s snippet.rs ] || { cat kit.log; fail "no #[test] in the report"; }
grep -q "type Model = crate::ChunkLifoModel;" snippet.rs ||
    { cat snippet.rs; fail "the model is not named as tests/kit.rs names it"; }
grep -q "policy_template::ChunkLifo" snippet.rs ||
    { cat snippet.rs; fail "the policy is not named as the crate names it"; }
! grep -q "Aborting shrinking" kit.log || fail "proptest's shrinking notice is in the output"

# 2. Pasted as printed, it compiles.
cat snippet.rs >>tests/kit.rs
cargo test "${flags[@]}" --target-dir "$target" --test kit --no-run >build.log 2>&1 ||
    { cat snippet.rs build.log; fail "the pasted test does not compile"; }

# 3. It fails, with the same finding.
if cargo test "${flags[@]}" --target-dir "$target" --test kit -- --exact counterexample \
    >replay.log 2>&1; then
    cat snippet.rs replay.log
    fail "the pasted test passed"
fi
grep -q "check: $check, step: $step," replay.log ||
    { cat snippet.rs replay.log; fail "the pasted test failed otherwise than with $check at step $step"; }
echo "pasted-finding: the printed test ($(grep -c 'vec!\[Op::' snippet.rs) lines of operations) compiles in the template-made crate and fails with $check at step $step"
