#!/usr/bin/env bash
# Makes a policy crate of your own from this template in one step: copies it to DIR, renames
# every name the template uses after NAME (snake_case, e.g. `fullest_first`), and points the
# alloclab dependencies at this checkout. Then rewrite `pick` in src/lib.rs and the model in
# tests/kit.rs; README.md in the copy lists the commands.
#
#   examples/policy-template/new-policy.sh ../fullest-first fullest_first
#
# What changes, for NAME = fullest_first:
#   policy-template (package), policy_template (crate)   -> fullest-first, fullest_first
#   ChunkLifo, ChunkLifoConfig, ChunkLifoModel, ...      -> FullestFirst, FullestFirstConfig, ...
#   chunk-lifo (the config's name), chunk_lifo           -> fullest-first, fullest_first
#   chunklifo (libchunklifo.so)                          -> fullestfirst (libfullestfirst.so)
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 DIR NAME   (NAME in snake_case, e.g. fullest_first)" >&2
    exit 2
fi
dest=$1
name=$2
if ! [[ $name =~ ^[a-z][a-z0-9]*(_[a-z0-9]+)*$ ]]; then
    echo "$0: NAME must be snake_case (lowercase letters and digits, words joined by _): $name" >&2
    exit 2
fi
if [ -e "$dest" ]; then
    echo "$0: $dest exists; give a directory that does not" >&2
    exit 2
fi
template="$(cd "$(dirname "$0")" && pwd)"
alloclab="$(cd "$template/../.." && pwd)"
kebab=${name//_/-}
flat=${name//_/}
camel=$(echo "$name" | sed -E 's/(^|_)([a-z])/\U\2/g')

mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
# Everything but build output. The lock files come along (renamed below), so that the copy
# builds with the dependency versions the template is tested with, not whatever is newest on
# the day it is made (and shares the template's build of them).
(cd "$template" && tar --exclude=./target --exclude='*/target' \
    --exclude=./new-policy.sh -cf - .) | tar -C "$dest" -xf -

# Longest names first, so that a short one never rewrites part of a long one.
find "$dest" -type f \( -name '*.rs' -o -name '*.toml' -o -name '*.md' -o -name Cargo.lock \) \
    -print0 |
    xargs -0 sed -i \
        -e "s/policy-template/$kebab/g" \
        -e "s/policy_template/$name/g" \
        -e "s/ChunkLifo/$camel/g" \
        -e "s/chunk-lifo/$kebab/g" \
        -e "s/chunk_lifo/$name/g" \
        -e "s/chunklifo/$flat/g"
# The alloclab crates, wherever the copy is: absolute paths to this checkout.
sed -i -e "s#path = \"\.\./\.\./verify\"#path = \"$alloclab/verify\"#" \
    -e "s#path = \"\.\./\.\.\"#path = \"$alloclab\"#" "$dest/Cargo.toml"
sed -i -e "s#path = \"\.\./\.\./\.\./verify\"#path = \"$alloclab/verify\"#" "$dest/fuzz/Cargo.toml"
sed -i -e "s#path = \"\.\./\.\./\.\./preload\"#path = \"$alloclab/preload\"#" "$dest/malloc/Cargo.toml"

left=$(grep -rIl -e policy-template -e policy_template -e ChunkLifo -e chunk-lifo -e chunklifo \
    "$dest" || true)
if [ -n "$left" ]; then
    echo "$0: names of the template are left in: $left" >&2
    exit 1
fi
if grep -rq 'path = "\.\./\.\.' "$dest"/Cargo.toml "$dest"/*/Cargo.toml; then
    echo "$0: a relative path to the alloclab checkout is left in a Cargo.toml" >&2
    exit 1
fi
echo "made $dest: crate $name, policy $camel, config \"$kebab\", lib$flat.so"
echo "next: cd $dest && cargo test --release --test kit -- --nocapture"
