#!/bin/sh
# The measurements of docs/PERFORMANCE.md, "Purging and huge blocks": builds the four C programs
# here, then runs each under liballoclab.so before (purge:threshold,huge_cache:0: the system
# calls of the library before issue 42), after (the default) and with a 10 s decay, timed and
# under `strace -f -c`. Run from the repository root after `cargo build --release -p liballoclab`.
set -eu
here=$(dirname "$0")
out=${TMPDIR:-/tmp}/alloclab-purge
mkdir -p "$out"
for p in loop2 large idle; do gcc -O2 -o "$out/$p" "$here/$p.c"; done
gcc -O2 -pthread -o "$out/prodcons" "$here/prodcons.c"
SO=$PWD/target/release/liballoclab.so
for conf in purge:threshold,huge_cache:0 '' purge:decay:10000; do
  for prog in "$out/loop2 500" "$out/large 2000" "$out/prodcons"; do
    echo "### ALLOCLAB_CONF=$conf $prog"
    LD_PRELOAD=$SO ALLOCLAB_CONF=$conf /usr/bin/time -f '%e s wall, %S s sys, %M KB max RSS' $prog >/dev/null
    LD_PRELOAD=$SO ALLOCLAB_CONF=$conf strace -f -c -e trace=mmap,munmap,madvise,mremap,brk \
      -o "$out/strace.txt" $prog >/dev/null
    cat "$out/strace.txt"
  done
  LD_PRELOAD=$SO ALLOCLAB_CONF=$conf "$out/idle"
done
