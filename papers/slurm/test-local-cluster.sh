#!/usr/bin/env bash
# Tests compare-array.sbatch on a real single-node slurm cluster made for the test: a generated
# slurm.conf naming this host, munged, slurmctld and slurmd started here (as root, without
# systemd) and stopped by PID at the end. Submits a 3-task array of `compare --shard i/3` on a
# tiny grid, waits for it, merges the shards and checks the merged grid against an unsharded
# run of the same grid. Needs Debian's slurm-wlm and munge, and a release build of alloclab
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
seed=2024
echo "submitting a 3-task array"
sbatch --wait --array=1-3 --chdir="$PWD" --output="$work/task-%a.out" \
    --export=ALL,ALLOCLAB="$alloclab" \
    papers/slurm/compare-array.sbatch --seed "$seed" --out "$work/runs" -- "${grid[@]}" ||
    { cat "$work"/task-*.out "$work/slurmctld.log" "$work/slurmd.log" 2>/dev/null | tail -50; exit 1; }

"$alloclab" merge "$work"/runs/shard-1 "$work"/runs/shard-2 "$work"/runs/shard-3 \
    --out "$work/merged" 2>/dev/null
"$alloclab" compare --no-progress --seed "$seed" --out "$work/whole" "${grid[@]}" 2>/dev/null

# The merged shards must hold exactly the unsharded run's schedule.
python3 - "$work/merged/results.json" "$work/whole/results.json" <<'PY'
import json, sys
def keys(path):
    r = json.load(open(path))
    return sorted((m["subject"], m["workload"], m["threads"], m["round"], m["order"], m["env_pad"])
                  for m in r["measurements"])
merged, whole = keys(sys.argv[1]), keys(sys.argv[2])
assert merged == whole, f"merged {len(merged)} measurements differ from the unsharded {len(whole)}"
print(f"slurm array of 3 shards merged: {len(merged)} measurements, the unsharded grid")
PY
