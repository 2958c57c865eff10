#!/usr/bin/env bash
# The cluster path, tested on a real Slurm: starts a one-node cluster on this machine from Debian's packages
# (munged, slurmctld and slurmd on localhost with a minimal slurm.conf, in a temporary folder), submits the job
# scripts of tools/slurm exactly as the user guide says (a 4-shard array scan of a built-in model plus a dependent
# merge), compares the merged result with a single-process scan, then kills one array task halfway, checks that it
# left no result and that the merge refuses the incomplete set, submits the same two lines again and checks that
# only the missing shard runs and the merge equals the single scan; then heads over the corpus as an array and a
# merge, equal to one process's. Stops every daemon it started.
#
#   bash tests/cluster/run_cluster_test.sh BUILD_DIR        (make cluster-test; needs root or sudo)
set -euo pipefail

build=$(realpath "${1:-build}")
source_dir=$(realpath "$(dirname "$0")/../..")
model=${CLUSTER_TEST_MODEL:-builtin:llama-wikitext2}
shards=4
cli="$build/app/cli/attnscope-cli"
compare="$build/tests/cluster/compare_scans"
for f in "$cli" "$compare"; do
  [ -x "$f" ] || { echo "cluster-test: $f is missing: build first (make build)" >&2; exit 2; }
done
if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=CLUSTER_TEST_MODEL,CLUSTER_TEST_BYTES bash "$0" "$@"
fi
bash "$source_dir/tools/install-deps.sh" slurm-wlm munge

work=$(mktemp -d /tmp/attnscope-cluster.XXXXXX)
chmod 755 "$work"
pids=()
stop_daemons() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
}
failed() {
  echo "cluster-test: FAILED: $*" >&2
  for log in "$work"/*.log "$work"/jobs/*.log; do
    [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 15 "$log"; }
  done >&2
  exit 1
}
trap 'stop_daemons; rm -rf "$work"' EXIT

# --- the cluster: munge with its own key and socket, slurmctld and slurmd on ports of their own ----------------
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/jobs"
chmod 755 "$work/munge" # the socket must be reachable; the key itself is 0600
mungekey --create --keyfile="$work/munge/munge.key" >/dev/null 2>&1 ||
  dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge/munge.key"
munged --foreground --force --socket="$work/munge/socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed" \
  >"$work/munged.out" 2>&1 &
pids+=($!)

host=$(hostname -s)
cpus=$(nproc)
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=attnscope-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
for _ in $(seq 50); do [ -S "$work/munge/socket" ] && break; sleep 0.1; done
[ -S "$work/munge/socket" ] || failed "munged did not start"
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 60); do
  state=$(sinfo -h -N -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || failed "the node did not come up (state \"$state\")"
echo "cluster-test: one-node Slurm cluster up on $host with $cpus CPUs"

# --- the data: a corpus, and the scan on one machine to compare with ---------------------------------------------
corpus="$work/corpus.txt"
head -c "${CLUSTER_TEST_BYTES:-2000000}" "$source_dir/../shared/data/wikitext-2/valid.txt" > "$corpus"
scan_options=(--mem-len 0) # chunk mode: the merged shards equal a single scan
start=$(date +%s)
"$cli" scan --model "$model" --text-file "$corpus" "${scan_options[@]}" --out "$work/single.safetensors" 2>"$work/single.log" ||
  failed "the single-process scan"
echo "cluster-test: single-process scan took $(( $(date +%s) - start )) s"

wait_for() { # job ids...: until none is pending or running
  for _ in $(seq 600); do
    [ -z "$(squeue -h -j "$(IFS=,; echo "$*")" -o %i 2>/dev/null)" ] && return 0
    sleep 1
  done
  failed "jobs $* did not finish in 10 minutes"
}
job_state() { # job id -> its final state from the controller
  scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1
}

# The user guide's two lines, verbatim but for the paths.
submit() { # shard folder, result
  array=$(sbatch --parsable --chdir="$work/jobs" --array=1-$shards "$source_dir/tools/slurm/scan-shard.sbatch" \
            "$shards" "$1" "$model" "$corpus" "${scan_options[@]}")
  merge=$(sbatch --parsable --chdir="$work/jobs" --dependency=afterok:"$array" \
            "$source_dir/tools/slurm/merge-shards.sbatch" "$1" "$2")
}
export ATTNSCOPE_CLI="$cli"

# --- 1: the array and the merge reproduce the single-process scan ------------------------------------------------
start=$(date +%s)
submit "$work/shards" "$work/merged.safetensors"
wait_for "$array" "$merge"
[ "$(job_state "$merge")" = COMPLETED ] || failed "the merge job ended $(job_state "$merge")"
echo "cluster-test: array of $shards shards and merge took $(( $(date +%s) - start )) s"
"$compare" "$work/single.safetensors" "$work/merged.safetensors" || failed "merged shards differ from the single scan"

# --- 2: a task killed halfway leaves no result; the same lines again complete it ---------------------------------
submit "$work/shards2" "$work/merged2.safetensors"
victim="${array}_2"
for _ in $(seq 300); do
  # halfway: the task runs and its progress bar has passed 40 %
  if grep -qE '(4|5|6|7)[0-9]\.[0-9] ?%|(4|5|6|7)[0-9] ?%' "$work/jobs/attnscope-scan-${array}_2.log" 2>/dev/null; then break; fi
  sleep 0.2
done
[ "$(squeue -h -j "$victim" -o %T 2>/dev/null)" = RUNNING ] || failed "shard 2 was not running when it was to be killed"
progress=$(tail -n 1 "$work/jobs/attnscope-scan-${array}_2.log")
scancel --signal=KILL "$victim"
wait_for "$array"
echo "cluster-test: killed shard 2 at \"$progress\"; it ended $(job_state "$victim")"
[ ! -e "$work/shards2/shard-2-of-$shards.safetensors" ] || failed "the killed task left a result file"
echo "cluster-test: shard 2 left no result"
if "$cli" merge "$work"/shards2/shard-*-of-*.safetensors --out "$work/incomplete.safetensors" 2>"$work/refused.txt"; then
  failed "merge accepted an incomplete set of shards"
fi
grep -q "missing" "$work/refused.txt" || failed "merge's refusal does not name the missing shard: $(cat "$work/refused.txt")"
echo "cluster-test: merge refuses the incomplete set: $(tail -n 1 "$work/refused.txt")"
scancel "$merge" 2>/dev/null || true # its dependency can no longer be met
before=$(stat -c %Y "$work"/shards2/shard-1-of-$shards.safetensors)
submit "$work/shards2" "$work/merged2.safetensors"
wait_for "$array" "$merge"
[ "$(job_state "$merge")" = COMPLETED ] || failed "the merge after the re-run ended $(job_state "$merge")"
[ "$(stat -c %Y "$work"/shards2/shard-1-of-$shards.safetensors)" = "$before" ] ||
  failed "the re-run scanned a shard that was already complete"
"$compare" "$work/single.safetensors" "$work/merged2.safetensors" || failed "the re-run's merge differs from the single scan"

# --- 3: heads over a corpus, in shards on the cluster, equal one process ------------------------------------------
hc_options=(--window 64 --max-tokens "${CLUSTER_TEST_HC_TOKENS:-20000}")
start=$(date +%s)
"$cli" head-contexts --model "$model" --text-file "$corpus" "${hc_options[@]}" --out "$work/hc-single" 2>"$work/hc-single.log" ||
  failed "the single-process head contexts"
echo "cluster-test: single-process head contexts took $(( $(date +%s) - start )) s"
start=$(date +%s)
# The user guide's two lines, verbatim but for the paths.
array=$(sbatch --parsable --chdir="$work/jobs" --array=1-$shards "$source_dir/tools/slurm/head-contexts-shard.sbatch" \
          "$shards" "$work/hc-shards" "$model" "$corpus" "${hc_options[@]}")
merge=$(sbatch --parsable --chdir="$work/jobs" --dependency=afterok:"$array" \
          "$source_dir/tools/slurm/head-contexts-merge.sbatch" "$work/hc-shards" "$work/hc-merged" "$model" "$corpus" \
          "${hc_options[@]}")
wait_for "$array" "$merge"
[ "$(job_state "$merge")" = COMPLETED ] || failed "the head-contexts merge job ended $(job_state "$merge")"
echo "cluster-test: head contexts in $shards shards and their merge took $(( $(date +%s) - start )) s"
diff -r "$work/hc-single/heads" "$work/hc-merged/heads" >/dev/null || failed "the merged head contexts differ from one run's"
echo "cluster-test: passed"
