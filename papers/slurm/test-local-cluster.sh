#!/usr/bin/env bash
# Tests compare-array.sbatch on a real single-node slurm cluster made for the test: a generated
# slurm.conf naming this host, munged, slurmctld and slurmd started here (as root, without
# systemd) and stopped by PID at the end. Submits a 3-task array of `compare --shard i/3` on a
# tiny grid, waits for it, merges the shards and checks the merged grid against an unsharded
# run of the same grid; then puts one shard in the state a kill leaves, submits the array
# again and checks that the requeued task continued it (--resume) into the same grid. Needs Debian's slurm-wlm and munge, and a release build of alloclab
# (`cargo build --release`; or ALLOCLAB=path/to/alloclab).
set -euo pipefail
cd "$(dirname "$0")/../.."

alloclab="$(realpath "${ALLOCLAB:-target/release/alloclab}")"
[ -x "$alloclab" ] || { echo "no alloclab binary at $alloclab (cargo build --release)" >&2; exit 1; }
for tool in munged slurmctld slurmd sbatch sinfo; do
    command -v "$tool" >/dev/null || { echo "$tool missing: apt-get install slurm-wlm munge" >&2; exit 1; }
done

work="$(mktemp -d /tmp/alloclab-slurm.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

host="$(hostname -s)"
cpus="$(nproc)"
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
# Free ports for this cluster's daemons.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
ctld_port="$(port)"
slurmd_port="$(port)"

# munge: a key of our own and a socket in the work directory.
mkdir -p "$work/munge"
chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --foreground --force --key-file="$work/munge/munge.key" \
    --socket="$work/munge/munge.sock" --pid-file="$work/munge/munged.pid" \
    --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed" \
    >"$work/munge/munged.out" 2>&1 &
pids+=($!)

mkdir -p "$work/state" "$work/spool"
: > "$work/plugstack.conf"
cat > "$work/slurm.conf" <<CONF
ClusterName=alloclabtest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
PlugStackConfig=$work/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

# Wait for munged's socket before the slurm daemons authenticate through it.
for _ in $(seq 100); do [ -S "$work/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)

echo "waiting for node $host to be idle"
for i in $(seq 120); do
    state="$(sinfo -h -n "$host" -o %t 2>/dev/null || true)"
    [ "$state" = "idle" ] && break
    [ "$i" = 120 ] && { echo "node never became idle (state: $state)"; cat "$work"/*.log; exit 1; }
    sleep 0.5
done

grid=(--subjects lifo,system --workloads churn,thread-arena --threads 1,2 --reps 2 --scale 0.02)
submit() {
    sbatch --wait --array=1-3 --chdir="$PWD" --output="$work/task-%a.out" --open-mode=append \
        --export=ALL,ALLOCLAB="$alloclab" \
        papers/slurm/compare-array.sbatch --out "$work/runs" -- "${grid[@]}" ||
        { cat "$work"/task-*.out "$work/slurmctld.log" "$work/slurmd.log" 2>/dev/null | tail -50; exit 1; }
}
# No --seed: the shards must derive one seed from the plan between them.
echo "submitting a 3-task array"
submit
"$alloclab" merge "$work"/runs/shard-1 "$work"/runs/shard-2 "$work"/runs/shard-3 \
    --out "$work/merged" 2>/dev/null
seed="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["plan"]["seed"])' \
    "$work/merged/results.json")"
"$alloclab" compare --no-progress --seed "$seed" --out "$work/whole" "${grid[@]}" 2>/dev/null

# The merged shards must hold exactly the unsharded run's schedule.
check_grid() {
    python3 - "$work/merged/results.json" "$work/whole/results.json" "$1" <<'PY'
import json, sys
def keys(path):
    r = json.load(open(path))
    return sorted((m["subject"], m["workload"], m["threads"], m["round"], m["order"], m["env_pad"])
                  for m in r["measurements"])
merged, whole = keys(sys.argv[1]), keys(sys.argv[2])
assert merged == whole, f"merged {len(merged)} measurements differ from the unsharded {len(whole)}"
print(f"slurm array of 3 shards {sys.argv[3]}: {len(merged)} measurements, the unsharded grid")
PY
}
check_grid merged

# A task killed mid-run and requeued: shard 2 is put back in the state a SIGKILL leaves
# (no results.json; a journal of its first measurements and a torn last record). The array,
# submitted again, must continue shard 2 and leave shards 1 and 3 as they were.
python3 - "$work/runs/shard-2" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(os.path.join(d, "results.json")))
header = {"alloclab_journal": 1, "schema_version": r["schema_version"],
          "environment": r["environment"], "plan": r["plan"]}
kept = r["measurements"][: len(r["measurements"]) // 2]
with open(os.path.join(d, "journal.jsonl"), "w") as f:
    f.write(json.dumps(header) + "\n")
    for m in kept:
        f.write(json.dumps(m) + "\n")
    f.write(json.dumps(r["measurements"][len(kept)])[:40])
os.remove(os.path.join(d, "results.json"))
PY
echo "resubmitting the array after shard 2 was killed"
submit
grep -q "resuming .*journal.jsonl" "$work/task-2.out" ||
    { echo "task 2 did not resume its journal"; cat "$work/task-2.out"; exit 1; }
grep -q "dropped a torn last record" "$work/task-2.out" ||
    { echo "task 2 did not drop the torn record"; cat "$work/task-2.out"; exit 1; }
grep -q "resuming .*results.json: .* kept" "$work/task-1.out" ||
    { echo "task 1 did not keep its finished results"; cat "$work/task-1.out"; exit 1; }
[ ! -e "$work/runs/shard-2/journal.jsonl" ] || { echo "shard 2's journal outlived its results.json"; exit 1; }
rm -rf "$work/merged"
"$alloclab" merge "$work"/runs/shard-1 "$work"/runs/shard-2 "$work"/runs/shard-3 \
    --out "$work/merged" 2>/dev/null
check_grid "merged after a requeue"
