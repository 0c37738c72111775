#!/usr/bin/env bash
# Hand-written mutants: realistic bugs in code cargo-mutants does not mutate (it skips `unsafe
# fn`, which is where the engine's page handling lives: purging, resizing large allocations in
# place, the huge allocations' page-map updates) and bugs of the kind a person writes rather
# than an operator swap (an arena choice that ignores the thread, a wrong modulo). Each entry
# replaces one exact piece of source text; the script applies it, runs the tests, restores the
# file, and prints caught/MISSED. VERIFY.md, "Mutation testing", has the results.
#
#   scripts/hand-mutants.sh                 # every mutant, the default test selection
#   scripts/hand-mutants.sh purge-off-by-one    # the named ones only
#   HAND_MUTANT_TESTS="--test model_based" scripts/hand-mutants.sh   # another selection
#
# It works on a copy of the tree (HAND_MUTANT_DIR, /tmp/alloclab-hand-mutants by default, with
# its own target directory: the first run builds everything once), never on the checkout.
# Exit status: the number of mutants missed.
set -uo pipefail
cd "$(dirname "$0")/.."
work=${HAND_MUTANT_DIR:-/tmp/alloclab-hand-mutants}
mkdir -p "$work/src"
tar --exclude=./target --exclude=./.git --exclude=./fuzz/target -cf - . | tar -C "$work/src" -xf -
cd "$work/src"
export CARGO_TARGET_DIR="$work/target"
# Not incremental: an interrupted run must not leave half-written incremental state behind.
export CARGO_INCREMENTAL=0
mkdir -p "$work/logs"

tests=${HAND_MUTANT_TESTS:-"--test arena_spread --test conformance --test large_and_huge \
--test quickcheck_page_map --test regressions --test seeded_policies"}

# id@@file@@exact text (found exactly once)@@replacement
mutants=(
    "purge-off-by-one@@core/src/back/arena/pages.rs@@        self.stats.active_pages -= n;
        // SAFETY: the pages are now free pages of our chunk.
        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max {@@        self.stats.active_pages -= n;
        // SAFETY: the pages are now free pages of our chunk.
        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages >= self.dirty_max {"
    "purge-never@@core/src/back/arena/pages.rs@@        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max {
            self.purge(self.dirty_max / 2);@@        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max {
            let _ = self.dirty_max / 2;"
    "purge-too-early@@core/src/back/arena/pages.rs@@        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max {@@        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max / 2 {"
    "purge-too-far@@core/src/back/arena/pages.rs@@        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max {
            self.purge(self.dirty_max / 2);@@        unsafe { self.coalesce_insert(chunk, page, n) };
        if self.stats.dirty_pages > self.dirty_max {
            self.purge(0);"
    "purge-stops-late@@core/src/back/arena/pages.rs@@            while !e.is_null() && self.stats.dirty_pages > target {@@            while !e.is_null() && self.stats.dirty_pages >= target {"
    "default-dirty-limit-ignored@@core/src/heap/init.rs@@            let dirty_max = if self.options.dirty_max_pages == usize::MAX {
                C::DIRTY_MAX_PAGES@@            let dirty_max = if self.options.dirty_max_pages == usize::MAX {
                usize::MAX"
    "shrink-purge-off-by-one@@core/src/back/arena/large.rs@@                self.coalesce_insert(chunk, page + new, n);
                if self.stats.dirty_pages > self.dirty_max {@@                self.coalesce_insert(chunk, page + new, n);
                if self.stats.dirty_pages >= self.dirty_max {"
    "shrink-purge-never@@core/src/back/arena/large.rs@@                self.coalesce_insert(chunk, page + new, n);
                if self.stats.dirty_pages > self.dirty_max {@@                self.coalesce_insert(chunk, page + new, n);
                if false {"
    "shrink-moves@@core/src/back/arena/large.rs@@            if new < old {
                for i in new..old {@@            if new < old {
                if true { return false; }
                for i in new..old {"
    "grow-never-in-place@@core/src/back/arena/large.rs@@            let need = new - old;
            let next = page + old;@@            let need = new - old;
            if need > 0 { return false; }
            let next = page + old;"
    "grow-refuses-exact-fit@@core/src/back/arena/large.rs@@            if (*ne).kind() != FREE || (*ne).len() < need {@@            if (*ne).kind() != FREE || (*ne).len() <= need {"
    "grow-splits-exact-fit@@core/src/back/arena/large.rs@@            if flen > need {
                self.set_free_run_ends(chunk, next + need, flen - need);@@            if flen >= need {
                self.set_free_run_ends(chunk, next + need, flen - need);"
    "grow-forgets-stats@@core/src/back/arena/large.rs@@            self.stats.large_allocated += need * PAGE;
        }
        true@@        }
        true"
    "grow-past-chunk-end@@core/src/back/arena/large.rs@@            if next >= CHUNK_PAGES {
                return false;@@            if next > CHUNK_PAGES {
                return false;"
    "huge-free-keeps-map@@core/src/back/huge/shard.rs@@        self.with(|h| {
            map.clear(addr, size);@@        self.with(|h| {
            let _ = map;"
    "huge-free-clears-first-chunk@@core/src/back/huge/shard.rs@@        self.with(|h| {
            map.clear(addr, size);@@        self.with(|h| {
            map.clear(addr, size.min(crate::size_class::CHUNK));"
    "huge-shrink-keeps-map@@core/src/back/huge/shard.rs@@                map.clear(keep, end - keep);@@                let _ = (keep, end);"
    "huge-move-keeps-old@@core/src/back/huge/shard.rs@@        map.clear(addr, old);
        let moved@@        let moved"
    "page-map-clear-short@@core/src/meta/page_map.rs@@        let mut a = addr;
        while a < addr + len {
            if let Some((r, l)) = Self::split(a) {@@        let mut a = addr;
        while a + crate::size_class::CHUNK < addr + len {
            if let Some((r, l)) = Self::split(a) {"
    "round-robin-one-arena@@policies/src/round_robin.rs@@    let arena = next.fetch_add(1, Ordering::Relaxed) % n;@@    let arena = next.load(Ordering::Relaxed) % n;"
    "round-robin-modulo@@policies/src/round_robin.rs@@    let n = ctx.narenas_or(4 * ctx.ncpus());@@    let n = ctx.narenas_or(4 * ctx.ncpus()) - 1;"
    "round-robin-default@@policies/src/round_robin.rs@@    let n = ctx.narenas_or(4 * ctx.ncpus());@@    let n = ctx.narenas_or(ctx.ncpus());"
    "round-robin-no-binding@@policies/src/round_robin.rs@@    ctx.bind_thread(arena);
    arena@@    arena"
    "hashed-unhashed@@policies/src/hashed.rs@@        let h = (ctx.thread_key() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;@@        let h = (ctx.thread_key() as u64) >> 32;"
    "hashed-count@@policies/src/hashed.rs@@        h as usize % ctx.narenas_or(4 * ctx.ncpus())@@        h as usize % ctx.narenas_or(4)"
    "per-cpu-first-cpu@@policies/src/per_cpu.rs@@        ctx.current_cpu() % ctx.narenas_or(ctx.ncpus())@@        ctx.current_cpu().min(0) % ctx.narenas_or(ctx.ncpus())"
    "per-cpu-count@@policies/src/per_cpu.rs@@        ctx.current_cpu() % ctx.narenas_or(ctx.ncpus())@@        ctx.current_cpu() % ctx.ncpus()"
    "thread-local-shared@@policies/src/thread_local.rs@@    let arena = ctx.lease();
    if ctx.bind_thread(arena) {@@    let arena = ctx.lease();
    ctx.release(arena);
    let arena = 0;
    if ctx.bind_thread(arena) {"
    "thread-local-small-boundary@@policies/src/thread_local.rs@@        if size > SHARED_ABOVE {@@        if size >= SHARED_ABOVE {"
    "current-run-freed-dropped@@policies/src/current_run.rs@@        if bin.current != Some(run) {
            P::freed(&mut bin.inner, run);
        }@@        let _ = (bin, run);"
    "thread-local-name@@policies/src/thread_local.rs@@    const NAME: &'static str = if SHARED_ABOVE == usize::MAX {@@    const NAME: &'static str = if SHARED_ABOVE != usize::MAX {"
    "current-run-check-emptied@@policies/src/current_run.rs@@        P::check(&bin.inner)?;
        if let Some(cur) = bin.current {@@        P::check(&bin.inner)?;
        if let Some(cur) = None::<RunRef<P::Links>> {"
    "current-run-check-and@@policies/src/current_run.rs@@preferred |= P::prefer(r, cur)@@preferred &= P::prefer(r, cur)"
    "current-run-unnamed@@policies/src/current_run.rs@@        w.write_str(\"+current-run\")@@        w.write_str(\"\")"
    "current-run-prefer-never@@policies/src/current_run.rs@@        P::prefer(candidate, current)@@        let _ = (candidate, current);
        false"
    "current-run-prefer-always@@policies/src/current_run.rs@@        P::prefer(candidate, current)@@        let _ = (candidate, current);
        true"
    "treap-replace-child-guard@@policies/src/addr_ordered.rs@@            Some(p) if left(p) == Some(old) => p.links().left.set(new),@@            Some(p) if true => p.links().left.set(new),"
)

selected=("$@")
missed=0
for entry in "${mutants[@]}"; do
    id=${entry%%@@*}
    rest=${entry#*@@}
    file=${rest%%@@*}
    rest=${rest#*@@}
    from=${rest%%@@*}
    to=${rest#*@@}
    if [ ${#selected[@]} -gt 0 ] && ! printf '%s\n' "${selected[@]}" | grep -qx "$id"; then
        continue
    fi
    cp "$file" "$file.hand-mutant-orig"
    if ! FROM="$from" TO="$to" python3 - "$file" <<'EOF'; then
import os, sys
p = sys.argv[1]
s = open(p).read()
n = s.count(os.environ["FROM"])
if n != 1:
    sys.exit(f"text to replace found {n} times")
open(p, "w").write(s.replace(os.environ["FROM"], os.environ["TO"]))
EOF
        echo "$id: NOT APPLIED ($file changed?)"
        mv "$file.hand-mutant-orig" "$file"
        missed=$((missed + 1))
        continue
    fi
    start=$(date +%s)
    # shellcheck disable=SC2086
    if cargo test -q -p alloclab-verify -p alloclab-policies $tests >"$work/logs/$id.log" 2>&1; then
        echo "$id: MISSED ($(($(date +%s) - start)) s; log $work/logs/$id.log)"
        missed=$((missed + 1))
    elif grep -q "^error\[E[0-9]*\]\|could not compile" "$work/logs/$id.log"; then
        echo "$id: UNVIABLE (does not build; log $work/logs/$id.log)"
    else
        failed=$(grep -E "^test .* FAILED$|^    [a-z_0-9]+$" "$work/logs/$id.log" | head -3 | tr -s ' \n' ' ')
        echo "$id: caught ($(($(date +%s) - start)) s) by:$failed"
    fi
    mv "$file.hand-mutant-orig" "$file"
    # A new mtime, so that cargo rebuilds the restored file's crate (the copy kept the old one).
    touch "$file"
done
exit "$missed"
