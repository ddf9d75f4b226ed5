#!/usr/bin/env bash
# A one-node Slurm cluster (munge, slurmctld, slurmd; no systemd) living in a directory of
# its own, for tests and for trying the sbatch templates on a laptop. Run as root.
#   slurm/local-cluster.sh up DIR     start (idempotent); clients then need SLURM_CONF=DIR/slurm.conf
#   slurm/local-cluster.sh down DIR   stop the daemons it started
# FAKE_CPUS sets the CPUs slurmd announces (default: the real count).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cmd=${1:?usage: local-cluster.sh up|down DIR}
dir=$(mkdir -p "${2:?usage: local-cluster.sh up|down DIR}" && cd "$2" && pwd)
conf=$dir/slurm.conf

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

case $cmd in
up)
  command -v slurmctld >/dev/null || { echo "local-cluster: Slurm is not installed (WITH_SLURM=1 scripts/setup.sh)" >&2; exit 1; }
  cpus=${FAKE_CPUS:-$(nproc)}; host=$(hostname -s)
  mkdir -p "$dir"/{state,spool,log}
  cat > "$conf" <<CONF
ClusterName=dpslocal
SlurmctldHost=$host
$(slurm_conf_common)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=${SLURMCTLD_PORT:-16817}
SlurmdPort=${SLURMD_PORT:-16818}
NodeName=$host CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  start_munge "$dir"
  alive "$dir/slurmctld.pid" || slurmctld -f "$conf"
  alive "$dir/slurmd.pid" || slurmd -f "$conf"
  export SLURM_CONF=$conf
  for _ in $(seq 100); do sinfo -h -o %T 2>/dev/null | grep -qx idle && exit 0; sleep 0.2; done
  echo "local-cluster: the node did not become idle; see $dir/log" >&2
  exit 1
  ;;
down)
  for d in slurmd slurmctld; do
    if alive "$dir/$d.pid"; then
      pid=$(cat "$dir/$d.pid"); kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  if [[ -f $dir/munged.ours ]] && [[ -f /run/munge/munged.pid ]]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    rm -f "$dir/munged.ours"
  fi
  ;;
*) echo "usage: local-cluster.sh up|down DIR" >&2; exit 2 ;;
esac
