# What slurm/local-cluster.sh and slurm/cluster.sh share; sourced by both.

# The settings every cluster of this project has: root daemons, munge, PMIx, no accounting,
# CPUs as the consumable resource, nodes back in service when they register again.
slurm_conf_common() {
  cat <<'CONF'
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
CONF
}

# Starts munged unless one already answers; DIR/munged.ours marks that we started it, so
# that `down` stops only a munged of its own.
start_munge() {
  install -d -o munge -g munge -m 0755 /run/munge
  if ! munge -n >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    echo started > "$1/munged.ours"
    for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
  fi
}
