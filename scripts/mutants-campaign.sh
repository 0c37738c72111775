#!/usr/bin/env bash
# The mutation campaign over core, policies and verify (VERIFY.md, "Mutation testing"): a
# seeded random sample of cargo-mutants' mutants, run in shards (one per machine, or one after
# the other), then a summary with the score and its 95% interval. Not a CI step: each mutant
# is a rebuild and a test run (one to three minutes on two busy cores).
#
#   scripts/mutants-campaign.sh list                 # the sample (no build): OUT/sample.txt
#   scripts/mutants-campaign.sh run 0/10             # shard 0 of 10 of the sample (k = 0..9)
#   scripts/mutants-campaign.sh run next/20          # the first shard of 20 not yet in OUT
#   scripts/mutants-campaign.sh summarize            # every shard under OUT so far
#   scripts/mutants-campaign.sh summarize DIR...     # these shards' output directories
#
# OUT is verify/mutants/ in the repository: each finished shard leaves there its outcomes
# (caught.txt, missed.txt, timeout.txt, unviable.txt: one mutant per line), the commit it was
# run at and its settings, so that a campaign is made in pieces, each committed as it
# finishes, and `run next/N` continues where the committed ones stopped. cargo-mutants' own
# output (logs, copies of the tree) stays in SCRATCH.
#
# Every shard must be run with the same MUTANTS_SEED, MUTANTS_SAMPLE and tree: each machine
# draws the sample itself, and the shards split it by cargo-mutants' round-robin sharding, so
# they agree on who runs what without talking to each other. Copy OUT/shard-*/ from the
# machines into one OUT and summarize there. The tree is pinned: OUT/campaign names the commit
# the campaign runs at (written by its first shard). While the engine moves on, a later shard
# still runs at that commit, in a worktree of it under SCRATCH (mutant names carry line and
# column, so another tree would draw another sample); the shard's `commit` file names the
# campaign's commit, not HEAD. Start a new campaign by removing OUT.
#
#   scripts/mutants-campaign.sh recheck              # the survivors again, at HEAD
#   scripts/mutants-campaign.sh recheck 0/4          # a quarter of them (k = 0..3), in pieces
#
# recheck runs every survivor of the committed shards against today's tests, matched by file,
# function and replacement (line and column may have moved), into OUT/recheck/: a survivor
# caught there has been killed by a test added since, which summarize reports beside the
# campaign's own score (which stays that of its commit). `recheck K/N` runs the K-th of N
# round-robin shards of them into OUT/recheck/shard-K-of-N/, each under the shard time limit
# and committed as it finishes; summarize joins the shards of one source tree and says how
# many of the N it has (survivors in the missing ones are not rechecked yet). A new test
# starts a new recheck: remove OUT/recheck.
#
# Settings (environment):
#   MUTANTS_SEED     seeds the shuffle that draws the sample (default 26)
#   MUTANTS_SAMPLE   mutants in the sample (default 300: about 10% are unviable, leaving the
#                    200 viable ones the score needs)
#   MUTANTS_OUT      where the sample and each shard's outcomes go (default verify/mutants)
#   MUTANTS_SCRATCH  cargo-mutants' working output (default /tmp/alloclab-mutants)
#   MUTANTS_SHARD_LIMIT  seconds a shard may take (default 2400, 40 minutes); a shard stopped
#                    there keeps the outcomes it has, marked `partial` (not `commit`), and
#                    `run next/N` runs it again
#   MUTANTS_TIMEOUT  seconds per test run of a mutant (default 300; a hang counts as caught)
#   PROPTEST_CASES   cases per state-machine search in the tests (default 8 here, a third of
#                    the suite's 24: what keeps a mutant's test run near a minute)
#
# The tests per mutant (MUTANTS_TESTS overrides; a campaign keeps those of its commit in
# OUT/campaign, and recheck takes today's): the unit tests of the three packages and the
# verification suite's fast integration tests, without the conformance kit's whole run over
# every built-in policy (90 s alone here) and without the loom and shuttle builds. They are
# passed with `--cargo-arg`, so cargo-mutants' build phase builds only these targets too.
# Equivalent mutants excluded by .cargo/mutants.toml are never listed, so never drawn.
set -euo pipefail
cd "$(dirname "$0")/.."

seed=${MUTANTS_SEED:-26}
sample=${MUTANTS_SAMPLE:-300}
out=${MUTANTS_OUT:-verify/mutants}
scratch=${MUTANTS_SCRATCH:-/tmp/alloclab-mutants}
shard_limit=${MUTANTS_SHARD_LIMIT:-2400}
timeout=${MUTANTS_TIMEOUT:-300}
export PROPTEST_CASES=${PROPTEST_CASES:-8}
tests=${MUTANTS_TESTS:-"--lib --test model_based --test regressions --test seeded_policies \
--test seeded_chunk_policies --test quickcheck_size_classes --test quickcheck_page_map \
--test quickcheck_bitmap --test large_and_huge --test reuse_order --test run_list \
--test tcache_check --test fork_handlers --test purge_policy --test purge_unlocked"}
packages=(--package alloclab-core --package alloclab-policies --package alloclab-verify)
# Modules built only under --cfg loom, --cfg shuttle or --cfg alloclab_seeded: the campaign's
# build has none of those, so their mutants would build and pass unseen, whatever the tests.
unbuilt=(--exclude verify/src/loom.rs --exclude verify/src/shuttle.rs --exclude core/src/seeded.rs --exclude core/src/platform/seeded.rs)

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 2
}

# OUT/all.txt: every mutant cargo-mutants generates for the three packages, by name
# ("file:line:col: replace ..."); OUT/sample.txt: the first MUTANTS_SAMPLE of them after a
# shuffle seeded with MUTANTS_SEED (the names sorted first, so the draw depends only on the
# set of mutants and the seed); OUT/sample.re: one anchored, escaped regex per sampled name.
draw() {
    mkdir -p "$out" "$scratch"
    cargo mutants --list -d "$tree" "${packages[@]}" "${unbuilt[@]}" >"$scratch/all.txt"
    python3 - "$out" "$seed" "$sample" "$scratch" <<'EOF'
import random, sys
out, seed, n, scratch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names = sorted({l.rstrip("\n") for l in open(f"{scratch}/all.txt") if l.strip()})
random.Random(seed).shuffle(names)
chosen = names[:n]
# Escape what is special to Rust's regex crate (only these: `\<` and `\>` would be word
# boundaries to it, so `<` and `>` stay as they are).
special = set("\\.+*?()|[]{}^$")
def escape(s):
    return "".join("\\" + c if c in special else c for c in s)
with open(f"{out}/sample.txt", "w") as f:
    f.writelines(c + "\n" for c in chosen)
with open(f"{scratch}/sample.re", "w") as f:
    f.writelines("^" + escape(c) + "$\n" for c in chosen)
print(f"{len(names)} mutants in core, policies and verify; sample of {len(chosen)} "
      f"(seed {seed}) in {out}/sample.txt")
EOF
}

# Whether commits $1 and $2 have the same mutated crates, their tests and manifests (the
# campaign's own outcomes under OUT aside).
same_source() {
    git diff --quiet "$1" "$2" -- core policies verify Cargo.toml Cargo.lock .cargo ":(exclude)verify/mutants"
}

# Sets `tree` (where cargo-mutants runs) and `campaign` (its commit): this checkout when it
# holds the campaign's source unchanged, otherwise a worktree of the campaign's commit.
pin_tree() {
    if [ -f "$out/campaign" ]; then
        campaign=$(awk '$1 == "commit" { print $2 }' "$out/campaign")
    else
        campaign=$(git rev-parse HEAD)
        mkdir -p "$out"
        printf 'commit %s\nseed %s\nsample %s\ntests %s\n' "$campaign" "$seed" "$sample" \
            "$tests" >"$out/campaign"
    fi
    # The campaign's tests are those of its commit (a test target added since is not there).
    if [ -z "${MUTANTS_TESTS:-}" ] && grep -q '^tests ' "$out/campaign"; then
        tests=$(sed -n 's/^tests //p' "$out/campaign")
    fi
    tree=.
    if ! same_source "$campaign" HEAD || ! git diff --quiet HEAD -- core policies verify \
        Cargo.toml Cargo.lock .cargo ":(exclude)verify/mutants"; then
        tree="$scratch/tree-${campaign:0:12}"
        if [ ! -d "$tree" ]; then
            mkdir -p "$scratch"
            git worktree add --detach "$tree" "$campaign" >/dev/null
        fi
        echo "the campaign runs at ${campaign:0:12}, not this checkout's source: in $tree"
    fi
}

run_shard() {
    local shard=$1
    if [[ $shard =~ ^next/([0-9]+)$ ]]; then
        local n=${BASH_REMATCH[1]} k
        for ((k = 0; k < n; k++)); do
            if [ ! -f "$out/shard-$k-of-$n/commit" ]; then break; fi
        done
        if [ "$k" -ge "$n" ]; then
            echo "every shard of $n is in $out"
            summarize
            return
        fi
        shard="$k/$n"
    fi
    [[ $shard =~ ^[0-9]+/[0-9]+$ ]] || usage
    pin_tree
    draw
    local name="shard-${shard%/*}-of-${shard#*/}"
    local dir="$scratch/$name"
    local args=()
    while IFS= read -r re; do args+=(--examine-re "$re"); done <"$scratch/sample.re"
    # cargo-mutants builds and tests the packages its shard's mutants are in; a shard with
    # none in `policies` would then name policies' test targets (reuse_order, run_list) to a
    # cargo command without that package, and its unmutated baseline would fail to build. So
    # the three packages are always named.
    local cargo_args=(--cargo-arg=--package=alloclab-core --cargo-arg=--package=alloclab-policies
        --cargo-arg=--package=alloclab-verify)
    for t in $tests; do cargo_args+=("--cargo-arg=$t"); done
    echo "shard $shard of the sample: $dir (PROPTEST_CASES=$PROPTEST_CASES)"
    # The baseline (the unmutated tree) runs first: a selection that fails there would make
    # every mutant look caught. --copy-target reuses this checkout's build.
    set -x
    local rc=0
    timeout -k 30 "$shard_limit" nice -n 10 cargo mutants -d "$tree" "${packages[@]}" "${unbuilt[@]}" --test-package alloclab-core \
        --test-package alloclab-policies --test-package alloclab-verify \
        "${args[@]}" --shard "$shard" --sharding round-robin --copy-target true \
        --timeout "$timeout" --build-timeout 900 --output "$dir" "${cargo_args[@]}" || rc=$?
    { set +x; } 2>/dev/null
    # The outcomes, the commit and the settings go into the repository's OUT (to commit).
    local kept="$out/$name"
    mkdir -p "$kept"
    for kind in caught missed timeout unviable; do
        if [ -f "$dir/mutants.out/$kind.txt" ]; then
            cp "$dir/mutants.out/$kind.txt" "$kept/$kind.txt"
        else
            : >"$kept/$kind.txt"
        fi
    done
    printf 'seed %s\nsample %s\ntimeout %s\nPROPTEST_CASES %s\ntests %s\n' "$seed" "$sample" \
        "$timeout" "$PROPTEST_CASES" "$tests" >"$kept/settings"
    rm -f "$kept/commit" "$kept/partial"
    # cargo-mutants: 0 every mutant caught, 2 some missed, 3 some timed out; anything else
    # (4: the unmutated tree failed) tested nothing worth keeping.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$rc" -ne 3 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
        rm -rf "$kept"
        echo "shard $shard failed (cargo-mutants exit $rc; its output is in $dir): nothing kept"
        return 1
    fi
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "shard $shard stopped after $shard_limit s: its outcomes so far are kept, marked partial"
        echo "$campaign" >"$kept/partial"
    else
        echo "$campaign" >"$kept/commit"
    fi
    summarize "$kept"
}

# The score over the shard directories given (default: every OUT/shard-*): caught and
# timeouts (a hang counts as caught) over viable mutants (unviable ones, which do not build,
# are left out), with the Wilson 95% interval, and every survivor.
summarize() {
    local dirs=("$@")
    if [ ${#dirs[@]} -eq 0 ]; then
        for d in "$out"/shard-*; do
            if [ -d "$d" ]; then dirs+=("$d"); fi
        done
    fi
    python3 - "$out/sample.txt" "${dirs[@]}" <<'EOF'
import math, os, sys
# cargo-mutants' --examine-re also selects some mutants beside a sampled one (a struct
# expression's other field deletions): those are counted apart, outside the score.
sample = None
if os.path.exists(sys.argv[1]):
    sample = {l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()}
counts = {}
survivors = []
outside = []
commits = set()
shards = [d for d in sys.argv[2:] if os.path.basename(d.rstrip("/")) != "recheck"]
recheck_dir = os.path.join(os.path.dirname(sys.argv[1]), "recheck")
for d in shards:
    # A committed shard holds the lists itself; cargo-mutants' output has them in mutants.out.
    m = d if os.path.exists(os.path.join(d, "caught.txt")) else os.path.join(d, "mutants.out")
    for marker in ("commit", "partial"):
        c = os.path.join(d, marker)
        if os.path.exists(c):
            commits.add(open(c).read().strip())
            if marker == "partial":
                print(f"note: {d} is a partial shard (stopped at its time limit)")
    for kind in ("caught", "missed", "timeout", "unviable"):
        p = os.path.join(m, f"{kind}.txt")
        lines = [l.rstrip("\n") for l in open(p)] if os.path.exists(p) else []
        lines = [l for l in lines if l]
        outside += [f"{l} ({kind})" for l in lines if sample is not None and l not in sample]
        lines = [l for l in lines if sample is None or l in sample]
        counts[kind] = counts.get(kind, 0) + len(lines)
        if kind == "missed":
            survivors += lines
caught, missed = counts.get("caught", 0), counts.get("missed", 0)
timeout, unviable = counts.get("timeout", 0), counts.get("unviable", 0)
killed = caught + timeout
viable = killed + missed
print(f"shards: {' '.join(shards)}")
# A score is of one tree: shards at several commits count together only when the mutated
# crates and their tests (core, policies, verify but its outcomes, the manifests) are the same.
def same_source(a, b):
    import subprocess
    r = subprocess.run(["git", "diff", "--quiet", a, b, "--", "core", "policies", "verify", "Cargo.toml", "Cargo.lock",
                        ".cargo", ":(exclude)verify/mutants"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0
if len(commits) > 1:
    ordered = sorted(commits)
    if all(same_source(ordered[0], c) for c in ordered[1:]):
        print(f"commits: {', '.join(ordered)} (the same core, policies, verify and manifests)")
    else:
        print(f"note: the shards were run at {len(commits)} commits ({', '.join(ordered)}) whose "
              "source differs: one score needs one tree")
elif commits:
    print(f"commit: {commits.pop()}")
print(f"tested: {viable + unviable} (caught {caught}, timeout {timeout}, missed {missed}, "
      f"unviable {unviable})")
if viable == 0:
    print("score: no viable mutant tested yet")
    sys.exit(0)
# Wilson score interval for a binomial proportion, 95% (z = 1.96).
z = 1.959964
p = killed / viable
centre = (p + z * z / (2 * viable)) / (1 + z * z / viable)
half = z * math.sqrt(p * (1 - p) / viable + z * z / (4 * viable * viable)) / (1 + z * z / viable)
print(f"score: {killed}/{viable} viable = {100 * p:.1f}% "
      f"(95% Wilson interval {100 * (centre - half):.1f}% to {100 * (centre + half):.1f}%)")
if viable < 200:
    print(f"note: {viable} viable mutants, fewer than the 200 the campaign aims for")
print(f"survivors ({len(survivors)}):")
for s in sorted(survivors):
    print(f"  {s}")
# Survivors run again at a later commit (`recheck`), matched without line and column: the
# whole recheck in OUT/recheck, or its shards in OUT/recheck/shard-K-of-N (`recheck K/N`).
recheck_parts, recheck_of = [], None
if os.path.exists(os.path.join(recheck_dir, "commit")):
    recheck_parts = [recheck_dir]
elif os.path.isdir(recheck_dir):
    import re
    for d in sorted(os.listdir(recheck_dir)):
        m = re.match(r"^shard-(\d+)-of-(\d+)$", d)
        if m and os.path.exists(os.path.join(recheck_dir, d, "commit")):
            if recheck_of not in (None, int(m.group(2))):
                print(f"note: {recheck_dir} holds shards of several splits; only those of "
                      f"{recheck_of} are read")
                continue
            recheck_of = int(m.group(2))
            recheck_parts.append(os.path.join(recheck_dir, d))
    at_commits = sorted({open(os.path.join(d, "commit")).read().strip() for d in recheck_parts})
    if any(not same_source(at_commits[0], c) for c in at_commits[1:]):
        print(f"note: the recheck's shards were run at commits whose source differs "
              f"({', '.join(c[:12] for c in at_commits)}): not read; start a new recheck")
        recheck_parts = []
if survivors and recheck_parts:
    import re
    def key(name):
        return re.sub(r"^([^:]+):\d+:\d+: ", r"\1: ", name)
    # A survivor's outcome: its own name's, else (its line moved) that of a mutant of the
    # same file, function and replacement, the worst of them if several.
    exact, again = {}, {}
    for kind in ("missed", "unviable", "timeout", "caught"):
        for d in recheck_parts:
            p = os.path.join(d, f"{kind}.txt")
            for l in (open(p) if os.path.exists(p) else []):
                if l.strip():
                    exact[l.rstrip("\n")] = kind
                    again.setdefault(key(l.rstrip("\n")), kind)
    # A survivor whose file moved (issue 44 put core's files in layer folders) by its
    # function and replacement alone.
    anywhere = {}
    for name, kind in exact.items():
        anywhere.setdefault(re.sub(r"^[^:]+:\d+:\d+: ", "", name), kind)
    again = {key(s): exact[s] if s in exact else again.get(key(s),
             anywhere.get(re.sub(r"^[^:]+:\d+:\d+: ", "", s))) for s in survivors}
    again = {k: v for k, v in again.items() if v is not None}
    at = open(os.path.join(recheck_parts[-1], "commit")).read().strip()
    killed_since = [s for s in survivors if again.get(key(s)) in ("caught", "timeout")]
    gone = [s for s in survivors if key(s) not in again]
    still = [s for s in survivors if again.get(key(s)) == "missed"]
    partial = recheck_of is not None and len(recheck_parts) < recheck_of
    if partial:
        print(f"recheck at {at[:12]}: {len(recheck_parts)} of its {recheck_of} shards so far: "
              f"{len(killed_since)} of the {len(survivors)} survivors caught by today's tests, "
              f"{len(still)} still missed, {len(gone)} not rechecked yet (or excluded, or gone)")
    else:
        print(f"recheck at {at[:12]}: {len(killed_since)} of the {len(survivors)} survivors "
              f"caught by today's tests, {len(still)} still missed, {len(gone)} not listed there "
              "(excluded in .cargo/mutants.toml as equivalent, or the code is gone)")
    k2, v2 = killed + len(killed_since), viable - len(gone)
    if v2 > 0 and not partial:
        p2 = k2 / v2
        c2 = (p2 + z * z / (2 * v2)) / (1 + z * z / v2)
        h2 = z * math.sqrt(p2 * (1 - p2) / v2 + z * z / (4 * v2 * v2)) / (1 + z * z / v2)
        print(f"with the survivors handled since: {k2}/{v2} = {100 * p2:.1f}% (95% Wilson "
              f"interval {100 * (c2 - h2):.1f}% to {100 * (c2 + h2):.1f}%)")
    for s in sorted(still):
        print(f"  still missed: {s}")
    for s in sorted(gone):
        print(f"  {'not rechecked yet' if partial else 'not listed at ' + at[:12]}: {s}")
if outside:
    print(f"tested outside the sample, not in the score ({len(outside)}):")
    for s in sorted(outside):
        print(f"  {s}")
EOF
}

# The survivors of the committed shards, run again at HEAD (see the top): OUT/recheck/.
recheck() {
    local shard=${1:-} shard_args=() kept="$out/recheck"
    if [ -n "$shard" ]; then
        if ! [[ $shard =~ ^([0-9]+)/([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -ge "${BASH_REMATCH[2]}" ]; then
            echo "recheck: the shard is K/N with 0 <= K < N: $shard" >&2
            return 2
        fi
        shard_args=(--shard "$shard" --sharding round-robin)
        kept="$out/recheck/shard-${BASH_REMATCH[1]}-of-${BASH_REMATCH[2]}"
    fi
    mkdir -p "$scratch" "$kept"
    cat "$out"/shard-*/missed.txt 2>/dev/null | sort -u >"$scratch/survivors.txt"
    if [ ! -s "$scratch/survivors.txt" ]; then
        echo "no survivors in $out"
        return
    fi
    # Each survivor by its exact name where today's tree still has it; else its line is
    # carried from the campaign's commit to HEAD through git's diff of its file, and the twin
    # (same file, function and replacement) nearest that line is taken; all twins only when
    # its line itself changed.
    cargo mutants --list "${packages[@]}" "${unbuilt[@]}" >"$scratch/today.txt"
    local campaign
    campaign=$(awk '$1 == "commit" { print $2 }' "$out/campaign" 2>/dev/null || true)
    python3 - "$scratch/survivors.txt" "$scratch/today.txt" "${campaign:-HEAD}" >"$scratch/survivors.re" <<'EOF'
import re, subprocess, sys
special = set("\\.+*?()|[]{}^$")
def escape(s):
    return "".join("\\" + c if c in special else c for c in s)
today = [l.rstrip("\n") for l in open(sys.argv[2]) if l.strip()]
campaign = sys.argv[3]
def moved(path, line):
    """The line at HEAD of `line` at the campaign's commit, or None if it changed."""
    diff = subprocess.run(["git", "diff", "-U0", campaign, "HEAD", "--", path],
                          capture_output=True, text=True).stdout
    shift = 0
    for h in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        o, ol = int(h.group(1)), int(h.group(2) or 1)
        n, nl = int(h.group(3)), int(h.group(4) or 1)
        start = o if ol > 0 else o + 1
        if line < start:
            break
        if ol > 0 and line < o + ol:
            return None
        # Where the hunk ends on each side (an empty side sits after its line).
        shift = (n + nl if nl > 0 else n + 1) - (o + ol if ol > 0 else o + 1)
    return line + shift
texts = {}
def text(rev, path, line):
    """The stripped text of `line` of `path` at `rev` (HEAD: the working tree), or None."""
    if (rev, path) not in texts:
        r = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
        texts[(rev, path)] = r.stdout.splitlines() if r.returncode == 0 else []
    lines = texts[(rev, path)]
    return lines[line - 1].strip() if 0 < line <= len(lines) else None
def same_text(twins, path, at):
    """The twins whose line reads as the survivor's did at the campaign's commit: the same
    code, moved; all of them if none does."""
    was = text(campaign, path, at)
    kept = [t for t in twins if was is not None
            and text("HEAD", t.split(":")[0], int(t.split(":")[1])) == was]
    return kept or twins
for line in open(sys.argv[1]):
    name = line.rstrip("\n")
    m = re.match(r"^([^:]+):(\d+):\d+: (.*)$", name)
    if name in today or not m:
        print("^" + escape(name) + "$")
        continue
    path, at, rest = m.group(1), int(m.group(2)), m.group(3)
    twins = [t for t in today if t.startswith(path + ":") and t.split(": ", 1)[1] == rest]
    if not twins and subprocess.run(["git", "cat-file", "-e", "HEAD:" + path],
                                    capture_output=True).returncode != 0:
        # Its file moved (issue 44 put core's files in layer folders): the mutants of the
        # same function and replacement, wherever they now are, on a line that reads as the
        # survivor's did (all of them if none does).
        for t in same_text([t for t in today if t.split(": ", 1)[1] == rest], path, at):
            print("^" + escape(t) + "$")
        continue
    target = moved(path, at)
    if twins and target is not None:
        best = min(twins, key=lambda t: abs(int(t.split(":")[1]) - target))
        print("^" + escape(best) + "$")
    elif twins:
        for t in same_text(twins, path, at):
            print("^" + escape(t) + "$")
    else:
        print("^" + escape(path) + r":\d+:\d+: " + escape(rest) + "$")
EOF
    local args=() cargo_args=(--cargo-arg=--package=alloclab-core
        --cargo-arg=--package=alloclab-policies --cargo-arg=--package=alloclab-verify)
    while IFS= read -r re; do args+=(--examine-re "$re"); done <"$scratch/survivors.re"
    # cargo-mutants also selects a struct expression's field deletions beside a selected
    # mutant in it; none of them is a survivor unless one is named so.
    if ! grep -q 'delete field' "$scratch/survivors.txt"; then
        args+=(--exclude-re 'delete field')
    fi
    for t in $tests; do cargo_args+=("--cargo-arg=$t"); done
    local dir="$scratch/recheck" rc=0
    timeout -k 30 "$shard_limit" nice -n 10 cargo mutants "${packages[@]}" "${unbuilt[@]}" \
        --test-package alloclab-core --test-package alloclab-policies \
        --test-package alloclab-verify "${args[@]}" "${shard_args[@]}" --copy-target true \
        --timeout "$timeout" --build-timeout 900 --output "$dir" "${cargo_args[@]}" || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$rc" -ne 3 ]; then
        echo "recheck failed (cargo-mutants exit $rc; its output is in $dir): nothing kept"
        return 1
    fi
    for kind in caught missed timeout unviable; do
        if [ -f "$dir/mutants.out/$kind.txt" ]; then
            cp "$dir/mutants.out/$kind.txt" "$kept/$kind.txt"
        else
            : >"$kept/$kind.txt"
        fi
    done
    git rev-parse HEAD >"$kept/commit"
    summarize
}

case "${1:-}" in
list)
    pin_tree
    draw
    ;;
recheck) recheck "${2:-}" ;;
run) run_shard "${2:-0/1}" ;;
summarize)
    shift
    summarize "$@"
    ;;
*) usage ;;
esac
