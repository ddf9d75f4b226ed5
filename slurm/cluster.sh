#!/usr/bin/env bash
# A cluster in a box: N emulated nodes on this machine, each a network namespace with its own
# host name, a share of a CPU core and a shaped link into one bridge. Run as root.
#   slurm/cluster.sh up DIR [--nodes N] [--cpu Q] [--first-cpu Q1] [--link RATE] [--slurm]
#       N nodes n1..nN (default 2), each with Q of a core (default: the cores shared out, at
#       most 1.0; n1 with Q1 if given: a master's own node, as the thesis's client PC), each
#       link RATE each way (tc rate: 100mbit, 1gbit; default none = unshaped).
#       DIR gets: hostfile, agent (runs a command on a node: `DIR/agent n2 hostname`), env
#       (Open MPI's settings; scripts/mpirun --cluster DIR sources it), unthrottled (runs a
#       program as a node's, outside its CPU quota: `DIR/unthrottled n1 PROGRAM ARGS...`).
#       --slurm adds a slurmctld and one slurmd per node (clients: `. DIR/env` sets SLURM_CONF
#       and Open MPI's).
#   slurm/cluster.sh down [DIR]    remove everything up made (idempotent, also after a crash;
#       with DIR, only if the cluster that is up is DIR's)
#   slurm/cluster.sh kill NODE     a node failure: KILL every process on the node, which stays
#       down: the agent refuses to start anything there (as ssh to a dead host fails)
# Every object is found by its name (below), not from state files, so `down` also cleans up
# after a killed `up`. One cluster per machine.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The bridge's subnet, named here only: inside 198.18.0.0/15, the range reserved for
# benchmarking (RFC 2544), which no real network routes; `up` also checks that no route on
# this machine reaches into it. Nodes are .1 .. .N, the bridge (mpirun's side) is .254.
NET=198.18.29
BRIDGE=dps-br                           # the bridge; each node's link is dps-nK on the host side
NETNS=dps-                              # node nK's network namespace is dps-nK
RUN=/run/dps-cluster                    # uts/nK: node nK's UTS namespace; dir: the DIR of the cluster
CG=/sys/fs/cgroup/cpu/dps-cluster       # nK: node nK's CPU share; ctl: the Slurm controller
HOSTS_BEGIN="# BEGIN dps-cluster (slurm/cluster.sh; \`down\` removes this block)"
HOSTS_END="# END dps-cluster"
BIG_MTU=65520                           # unshaped links (--link none); shaped ones keep 1500
SLURMCTLD_PORT=17817 SLURMD_PORT=17818  # not the one-node test cluster's (local-cluster.sh)
# Seconds after which slurmctld declares a silent node DOWN and ends its jobs, and its RPCs
# time out (Slurm's defaults, 300 and 10, would leave a job with a dead node hanging for
# minutes; KillWait=2 likewise). With these, srun ends such a job in about 15 s.
SLURMD_TIMEOUT=5 MESSAGE_TIMEOUT=5

die() { echo "cluster: $*" >&2; exit 1; }
missing() { echo "cluster: $*" >&2; exit 2; }
usage() { sed -n '4,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

nodes_up() { ip netns list 2>/dev/null | sed -n "s/^${NETNS}\(n[0-9]\{1,\}\)\b.*/\1/p" | sort -V; }

# Rewrites /etc/hosts without our block, in place (it may be a bind mount: no rename).
hosts_without_block() {
  awk -v b="$HOSTS_BEGIN" -v e="$HOSTS_END" '$0==b{skip=1;next} $0==e{skip=0;next} !skip' /etc/hosts
}
remove_hosts_block() {
  grep -qxF "$HOSTS_BEGIN" /etc/hosts 2>/dev/null || return 0
  local kept; kept=$(hosts_without_block); printf '%s\n' "$kept" > /etc/hosts
}

# Every process of a node: in its cgroup or in its network namespace.
node_pids() {
  { cat "$CG/$1/cgroup.procs" 2>/dev/null || true; ip netns pids "$NETNS$1" 2>/dev/null || true; } | sort -un
}

kill_node() {
  local pids; pids=$(node_pids "$1")
  [[ -n $pids ]] && kill -9 $pids 2>/dev/null || true
}

# Removes everything: processes, namespaces, links, bridge, cgroups, hosts block.
teardown() {
  local dir=${1:-} n p
  [[ -z $dir && -f $RUN/dir ]] && dir=$(cat "$RUN/dir")
  local cgs=(); [[ -d $CG ]] && for p in "$CG"/*/; do [[ -d $p ]] && cgs+=("$(basename "$p")"); done
  local all=($(nodes_up) "${cgs[@]}")
  for n in "${all[@]}"; do kill_node "$n"; done
  # Killed processes leave their cgroup once the kernel has reaped them.
  for _ in $(seq 50); do
    local left=""; for n in "${all[@]}"; do [[ -n $(node_pids "$n") ]] && left=1; done
    [[ -z $left ]] && break; sleep 0.05
  done
  for n in $(nodes_up); do ip netns del "$NETNS$n" 2>/dev/null || true; done
  for p in $(ip -o link show 2>/dev/null | sed -n "s/^[0-9]*: \(${NETNS}n[0-9]*\)[@:].*/\1/p"); do
    ip link del "$p" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  if [[ -d $RUN/uts ]]; then
    for p in "$RUN"/uts/*; do [[ -e $p ]] && { umount "$p" 2>/dev/null || true; rm -f "$p"; }; done
  fi
  rm -rf "$RUN"
  if [[ -d $CG ]]; then
    for p in "$CG"/*/; do [[ -d $p ]] && rmdir "$p" 2>/dev/null || true; done
    rmdir "$CG" 2>/dev/null || true
  fi
  remove_hosts_block
  if [[ -n $dir && -d $dir ]]; then
    if [[ -f $dir/munged.ours && -f /run/munge/munged.pid ]]; then kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true; fi
    rm -f "$dir"/{hostfile,agent,unthrottled,env,munged.ours}
  fi
}

check_prerequisites() {
  [[ $(id -u) == 0 ]] || missing "needs root (network namespaces, cgroups and /etc/hosts)"
  local c; for c in ip nsenter unshare tc awk; do command -v $c >/dev/null || missing "$c is not installed (scripts/setup.sh)"; done
  [[ -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]] || missing "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
  ip netns add "${NETNS}probe" 2>/dev/null || missing "cannot create a network namespace"
  ip netns del "${NETNS}probe"
  ip link add "${NETNS}probe" type bridge 2>/dev/null || missing "cannot create a bridge"
  ip link del "${NETNS}probe"
}

# tbf on one side of a link: RATE, with a bucket of 10 ms at that rate (at least 64 KiB:
# segmentation offload hands tbf packets of up to 64 KiB).
shape() {
  local ns=$1 dev=$2 rate=$3 bits burst
  bits=$(tc_rate_bits "$rate") || die "bad link rate \"$rate\" (examples: 100mbit, 1gbit, none)"
  burst=$((bits / 8 / 100)); ((burst < 65536)) && burst=65536
  ip ${ns:+-n "$ns"} link set "$dev" gso_max_size 65536 2>/dev/null || true
  tc ${ns:+-n "$ns"} qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms
}
tc_rate_bits() {
  awk -v r="$1" 'BEGIN { if (!match(r, /^[0-9.]+/)) exit 1; n = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1)
    m["bit"]=1; m["kbit"]=1e3; m["mbit"]=1e6; m["gbit"]=1e9; if (!(u in m) || n <= 0) exit 1; printf "%d\n", n * m[u] }'
}

# Whether $1 is a share of a core (a decimal of at least 0.01).
is_share() { awk -v q="$1" 'BEGIN { exit !(q ~ /^[0-9]*\.?[0-9]+$/ && q >= 0.01) }'; }
# The whole cores a node of share $1 gets: its share rounded up, at least 1 (Open MPI's slots, Slurm's CPUs).
whole_cores() { awk -v q="$1" 'BEGIN { s = int(q); if (s < q) s++; if (s < 1) s = 1; print s }'; }

up() {
  local dir=$1; shift
  local nodes=2 cpu="" first_cpu="" link=none slurm=0
  while (($#)); do
    case $1 in
      --nodes) nodes=${2:?--nodes needs a count}; shift 2 ;;
      --cpu) cpu=${2:?--cpu needs a fraction of a core}; shift 2 ;;
      --first-cpu) first_cpu=${2:?--first-cpu needs a fraction of a core}; shift 2 ;;
      --link) link=${2:?--link needs a rate}; shift 2 ;;
      --slurm) slurm=1; shift ;;
      *) usage ;;
    esac
  done
  [[ $nodes =~ ^[1-9][0-9]*$ ]] && ((nodes <= 253)) || die "--nodes must be 1..253, not \"$nodes\""
  local cores; cores=$(nproc)
  [[ -n $cpu ]] || cpu=$(awk -v c="$cores" -v n="$nodes" 'BEGIN { q = c / n; if (q > 1) q = 1; printf "%.3g\n", q }')
  is_share "$cpu" || die "--cpu must be a fraction of a core >= 0.01, not \"$cpu\""
  [[ -n $first_cpu ]] || first_cpu=$cpu
  is_share "$first_cpu" || die "--first-cpu must be a fraction of a core >= 0.01, not \"$first_cpu\""
  local shares="$cpu of a core"; [[ $first_cpu == "$cpu" ]] || shares+=" (n1 at $first_cpu)"
  local total; total=$(awk -v q="$cpu" -v f="$first_cpu" -v n="$nodes" 'BEGIN { print f + q * (n - 1) }')
  awk -v t="$total" -v c="$cores" 'BEGIN { exit !(t <= c + 1e-9) }' ||
    die "$nodes nodes at $shares need $total cores; this machine has $cores"
  [[ $link == none ]] || tc_rate_bits "$link" >/dev/null || die "bad link rate \"$link\" (examples: 100mbit, 1gbit, none)"
  check_prerequisites
  ((slurm == 0)) || command -v slurmctld >/dev/null || missing "Slurm is not installed (WITH_SLURM=1 scripts/setup.sh)"

  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  if [[ -f $RUN/dir && $(cat "$RUN/dir") != "$dir" ]] || { [[ ! -f $RUN/dir ]] && [[ -n $(nodes_up) ]]; }; then
    die "a cluster is already up (for $(cat "$RUN/dir" 2>/dev/null || echo "an unknown directory")); take it down first: $0 down"
  fi
  teardown "$dir"   # what a killed `up` in this DIR left
  trap 'echo "cluster: up failed; taking down what it made" >&2; teardown "$dir"' EXIT
  local route; route=$(ip -4 route show | awk -v p="${NET%.*}." 'index($1, p) == 1')
  [[ -z $route ]] || die "this machine already routes into ${NET%.*}.0.0/16 ($route); change NET in $0"

  # The quota's period: 10 ms, or longer where the quota would be under the kernel's minimum
  # of 1 ms (below 0.1 of a core). A throttled node waits at most a period minus its quota;
  # a 5 ms period at 0.2 of a core did not bring the simulator nearer (docs/measurements/
  # 2026-11-28-cluster-quota-period.md). DPS_CLUSTER_PERIOD_US sets another (1000 to 1000000).
  local period quota first_quota least
  least=$(awk -v q="$cpu" -v f="$first_cpu" 'BEGIN { print (f < q ? f : q) }')
  period=${DPS_CLUSTER_PERIOD_US:-$(awk -v q="$least" 'BEGIN { p = int(1000 / q); if (p * q < 1000) p++; if (p < 10000) p = 10000; print p }')}
  quota=$(awk -v q="$cpu" -v p="$period" 'BEGIN { printf "%d\n", q * p }')
  first_quota=$(awk -v q="$first_cpu" -v p="$period" 'BEGIN { printf "%d\n", q * p }')
  (( period >= 1000 && period <= 1000000 && quota >= 1000 && first_quota >= 1000 )) \
    || die "a quota period of $period us with $least of a core: need 1000 to 1000000 us and a quota of at least 1000 us"
  mkdir -p "$RUN/uts" "$CG"; echo "$dir" > "$RUN/dir"
  # The nodes ahead of everything else on the machine: at the default weight (that of one
  # process) a fixed loop on each of 8 nodes at 0.2, beside two busy processes, took 0.30-0.42 s
  # instead of 0.20-0.24 s (docs/measurements/2026-11-28-cluster-repeatability.md). The quotas
  # still cap each node, and their sum fits the cores: the rest of the machine keeps the rest.
  echo 262144 > "$CG/cpu.shares"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i n
  local hosts="$HOSTS_BEGIN"$'\n'"$NET.254 dps-head"
  : > "$dir/hostfile"
  local share node_quota
  for i in $(seq "$nodes"); do
    n=n$i share=$cpu node_quota=$quota
    ((i > 1)) || share=$first_cpu node_quota=$first_quota
    ip netns add "$NETNS$n"
    ip link add "$NETNS$n" type veth peer name eth0 netns "$NETNS$n"
    ip link set "$NETNS$n" master "$BRIDGE"
    ip link set "$NETNS$n" up
    ip -n "$NETNS$n" addr add "$NET.$i/24" dev eth0
    ip -n "$NETNS$n" link set eth0 up
    ip -n "$NETNS$n" link set lo up
    touch "$RUN/uts/$n"
    unshare --uts="$RUN/uts/$n" hostname "$n"
    mkdir -p "$CG/$n"
    echo "$period" > "$CG/$n/cpu.cfs_period_us"
    echo "$node_quota" > "$CG/$n/cpu.cfs_quota_us"
    if [[ $link != none ]]; then
      shape "$NETNS$n" eth0 "$link"; shape "" "$NETNS$n" "$link"
    else
      # Unshaped links carry loopback-sized packets, so that the kernel's per-packet work is
      # not the bottleneck: one TCP stream between nodes, 5 alternating pairs on the loaded
      # 2-core machine, median 0.74 GB/s with Ethernet's 1500 bytes, 0.92 with these.
      ip link set "$NETNS$n" mtu $BIG_MTU; ip -n "$NETNS$n" link set eth0 mtu $BIG_MTU
    fi
    hosts+=$'\n'"$NET.$i $n"
    echo "$n slots=$(whole_cores "$share")" >> "$dir/hostfile"
  done
  [[ $link != none ]] || ip link set "$BRIDGE" mtu $BIG_MTU
  local kept; kept=$(hosts_without_block); printf '%s\n%s\n%s\n' "$kept" "$hosts" "$HOSTS_END" > /etc/hosts

  cat > "$dir/agent" <<AGENT
#!/bin/sh
# Runs a command on a node of the cluster: its network and UTS namespaces, its CPU share.
# Open MPI's launch agent (plm_rsh_agent): agent NODE COMMAND...
h=\$1; shift
[ -e /run/netns/$NETNS\$h ] || { echo "agent: \$h is not a node of the cluster in $dir" >&2; exit 255; }
[ -e $RUN/dead/\$h ] && { echo "agent: \$h is down (slurm/cluster.sh kill \$h)" >&2; exit 255; }
echo \$\$ > $CG/\$h/cgroup.procs
exec nsenter --net=/run/netns/$NETNS\$h --uts=$RUN/uts/\$h sh -c "\$*"
AGENT
  chmod +x "$dir/agent"
  cat > "$dir/unthrottled" <<UNTHROTTLED
#!/bin/sh
# Runs a program with a node's host name and network but outside its CPU quota, with the
# machine's cores: for a program that measures its own CPU time, which a quota's throttling
# inflates (the simulator's direct execution: a 3.1 ms gemm took 4.3-6.8 ms of CPU on a
# node at 0.25 of a core). unthrottled NODE PROGRAM ARGS...
h=\$1; shift
[ -e /run/netns/$NETNS\$h ] || { echo "unthrottled: \$h is not a node of the cluster in $dir" >&2; exit 255; }
[ -e $RUN/dead/\$h ] && { echo "unthrottled: \$h is down (slurm/cluster.sh kill \$h)" >&2; exit 255; }
exec nsenter --net=/run/netns/$NETNS\$h --uts=$RUN/uts/\$h "\$@"
UNTHROTTLED
  chmod +x "$dir/unthrottled"
  cat > "$dir/env" <<ENV
# Open MPI's settings for the cluster in $dir (scripts/mpirun --cluster $dir sources this).
export OMPI_MCA_orte_default_hostfile=$dir/hostfile
export OMPI_MCA_plm_rsh_agent=$dir/agent
export OMPI_MCA_plm_rsh_no_tree_spawn=1
export OMPI_MCA_btl=tcp,self,vader
export OMPI_MCA_btl_tcp_if_include=$NET.0/24
export OMPI_MCA_oob_tcp_if_include=$NET.0/24
# Messages up to 4 MiB go eagerly, in one piece: on a throttled node every step of the
# rendezvous handshake (above 64 KiB by default) waits for both nodes' next quota slice. A
# farm whose one worker is on another node at 0.2 of a core: 10.7-12.5 s -> 2.7-3.4 s.
export OMPI_MCA_btl_tcp_eager_limit=4194304
export OMPI_MCA_btl_tcp_rndv_eager_limit=4194304
export OMPI_MCA_btl_tcp_max_send_size=4194304
ENV
  ((slurm == 0)) || slurm_up "$dir" "$nodes" "$cpu"
  trap - EXIT
  echo "cluster: $nodes nodes (n1..n$nodes) at $shares, links $link; hostfile, agent, unthrottled and env in $dir" >&2
}

# A slurmctld (on the bridge's address, in the cgroup ctl) and one slurmd per node, entered
# with nsenter (ip netns exec would remount /sys and hide the cgroup mount from slurmd).
slurm_up() {
  local dir=$1 nodes=$2 cpu=$3 s=$1/slurm i n
  local cpus; cpus=$(whole_cores "$cpu")
  # A fresh controller and nodes: no jobs, spool files or PMIx sockets of an earlier cluster
  # in this DIR (a job killed with its node leaves them, and job ids start again at 1).
  rm -rf "$s"/state "$s"/spool-n* "$s"/tmp-n*
  mkdir -p "$s"/{state,log} "$CG/ctl"
  # TmpFS per node: PMIx's per-step directory (spmix_appdir_*) would collide in a shared /tmp.
  cat > "$s/slurm.conf" <<CONF
ClusterName=dpsbox
SlurmctldHost=$(hostname -s)($NET.254)
$(slurm_conf_common)
SlurmdTimeout=$SLURMD_TIMEOUT
KillWait=2
MessageTimeout=$MESSAGE_TIMEOUT
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool-%n
TmpFS=$s/tmp-%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd-%n.log
SlurmctldPort=$SLURMCTLD_PORT
SlurmdPort=$SLURMD_PORT
CONF
  for i in $(seq "$nodes"); do
    echo "NodeName=n$i NodeAddr=$NET.$i CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN" >> "$s/slurm.conf"
    mkdir -p "$s/tmp-n$i" "$s/spool-n$i"
  done
  echo "PartitionName=box Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >> "$s/slurm.conf"
  echo "export SLURM_CONF=$s/slurm.conf" >> "$dir/env"
  start_munge "$dir"
  sh -c "echo \$\$ > $CG/ctl/cgroup.procs && exec slurmctld -f $s/slurm.conf"
  for i in $(seq "$nodes"); do
    n=n$i
    sh -c "echo \$\$ > $CG/$n/cgroup.procs && exec nsenter --net=/run/netns/$NETNS$n --uts=$RUN/uts/$n slurmd -f $s/slurm.conf -N $n"
  done
  export SLURM_CONF=$s/slurm.conf
  for _ in $(seq 150); do
    [[ $(sinfo -h -N -o '%T' 2>/dev/null | grep -cx idle) == "$nodes" ]] && return 0
    sleep 0.1
  done
  die "the Slurm nodes did not become idle: $(sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' '); see $s/log"
}

case ${1:-} in
  up) [[ -n ${2:-} ]] || usage; up "${@:2}" ;;
  down)
    [[ $(id -u) == 0 ]] || missing "needs root"
    if [[ -n ${2:-} && -f $RUN/dir && $(cat "$RUN/dir") != "$(cd "$2" 2>/dev/null && pwd)" ]]; then
      die "the cluster that is up is $(cat "$RUN/dir")'s, not $2's (to take it down: $0 down)"
    fi
    teardown "${2:-}" ;;
  kill)
    [[ -n ${2:-} ]] || usage; [[ -e /run/netns/$NETNS$2 ]] || die "no node $2"
    mkdir -p "$RUN/dead"; touch "$RUN/dead/$2"   # before the kill: nothing starts there again
    kill_node "$2" ;;
  *) usage ;;
esac
