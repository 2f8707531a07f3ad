#!/bin/bash
# sim_cluster.sh -- simulate a small MPI cluster on ONE Linux machine.
#
# Every "host" is a set of namespaces of its own: a network namespace (own eth0
# with a private IPv4 address on a virtual switch), a UTS namespace (own
# hostname), an IPC namespace (own SysV shm), and, per launch, a mount
# namespace with a private /dev/shm and its own /proc/sys/kernel/random/boot_id.
# Ranks on different "hosts" therefore can only talk over TCP, as on a real
# cluster.  The MPI launchers reach the other hosts through an ssh replacement
# ($STATE/rsh) that enters the target host's namespaces instead of using ssh.
#
# Needs: root, bash, iproute2 (ip), util-linux (unshare, mount, taskset),
# coreutils (timeout).  Open MPI (mpirun.openmpi) and/or MPICH (mpiexec.mpich)
# for the run-* subcommands.  Nothing outside Debian packages.
#
# Usage:
#   sim_cluster.sh up [NHOSTS]           create hosts (default 2); idempotent
#   sim_cluster.sh run-ompi  NP CMD...   run CMD on NP ranks with Open MPI
#   sim_cluster.sh run-mpich NP CMD...   run CMD on NP ranks with MPICH (hydra)
#   sim_cluster.sh exec HOST CMD...      run CMD "on" HOST (like ssh HOST CMD)
#   sim_cluster.sh selftest              build+run a where-am-I/RMA check, both MPIs
#   sim_cluster.sh status                show hosts, addresses, processes
#   sim_cluster.sh kill                  kill stray processes left in the hosts
#   sim_cluster.sh down                  kill leftovers, delete everything; idempotent
#
# Placement: ranks are placed in blocks of PPN per host (rank 0..PPN-1 on host 1,
# ...), PPN = ceil(NP/NHOSTS) unless SIM_PPN is set.
#
# Environment knobs (all optional):
#   SIM_PREFIX   name prefix (default gasim): hosts gasim1..gasimN, switch netns gasim-sw
#   SIM_SUBNET   first three octets of the /24 used inside the namespaces (default 10.77.13)
#   SIM_STATE    state directory (default /run/sim_cluster/$SIM_PREFIX)
#   SIM_CPUS     at `up`: "auto" (default: split the allowed CPUs evenly between the
#                hosts if there are at least NHOSTS of them), "none" (no pinning), or
#                explicit per-host lists separated by ';' e.g. "0-3;4-7"
#   SIM_RATE     at `up`: optional link rate limit per host (tc tbf), e.g. 10gbit
#   SIM_PPN      ranks per host for run-* (default ceil(NP/NHOSTS))
#   SIM_OMPI_ARGS / SIM_MPICH_ARGS   extra launcher options (word-split), e.g.
#                SIM_OMPI_ARGS="--mca osc pt2pt --display-map"
#   SIM_SSH_ENV  names of extra variables the fake ssh passes to remote daemons
#                (default: none; a real ssh does not forward your environment)
#   SIM_PRIVATE_TMP=1  also give each host a private /tmp (default 0: /tmp shared)
#   SIM_TIMEOUT  seconds before a run-* is killed (default 300); stray processes are
#                then killed too
#   SIM_QUIET=1  do not echo the launcher command line on stderr
#
# Exit status of run-*/exec: the launcher's (mpirun/mpiexec); 124 = SIM_TIMEOUT expired.
# Caveat: Debian's Open MPI cannot create RMA windows spanning hosts over TCP with its
# default settings (MPI_ERR_WIN); use SIM_OMPI_ARGS="--mca osc ^ucx" (or osc pt2pt).
# MPICH/UCX over TCP may hang in MPI_Finalize with >=3 ranks (openucx/ucx#8738).
# See README.md next to this script (tests/cluster/README.md in libgarray).
# Touches: /run/netns/<ns> (ip netns), /etc/netns/<host>/hosts, $SIM_STATE, and Open MPI
# leaves /tmp/ompi.<host>.<uid> (shared /tmp); `down` removes them and kills, by PID, any
# process left inside the namespaces.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PREFIX=${SIM_PREFIX:-gasim}
STATE=${SIM_STATE:-/run/sim_cluster/$PREFIX}
CONF=$STATE/config

die() { echo "sim_cluster: error: $*" >&2; exit 1; }
warn() { echo "sim_cluster: warning: $*" >&2; }
info() { [ "${SIM_QUIET:-0}" = 1 ] || echo "sim_cluster: $*" >&2; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (creates network namespaces)"; }
check_tools() {
  command -v ip >/dev/null      || die "'ip' not found: apt-get install iproute2"
  command -v unshare >/dev/null || die "'unshare' not found: apt-get install util-linux"
  command -v taskset >/dev/null || die "'taskset' not found: apt-get install util-linux"
  command -v timeout >/dev/null || die "'timeout' not found: apt-get install coreutils"
}

# ---------------------------------------------------------------- config
load_conf() {
  [ -r "$CONF" ] || die "cluster '$PREFIX' is not up (no $CONF); run: $0 up"
  # shellcheck disable=SC1090
  . "$CONF"
}
host_name() { echo "$PREFIX$1"; }            # index -> host (= netns) name
host_ip() { echo "$SUBNET.$1"; }
host_cpus() { local a; IFS=';' read -r -a a <<<"$CPUS"; echo "${a[$(($1 - 1))]:-}"; }
# HOST (name, ip, name.domain) -> index, or empty
host_index() {
  local h=$1 i
  for ((i = 1; i <= NHOSTS; i++)); do
    if [ "$h" = "$(host_name $i)" ] || [ "$h" = "$(host_ip $i)" ] || [ "${h%%.*}" = "$(host_name $i)" ]; then
      echo $i; return 0
    fi
  done
  return 1
}
ns_exists() { [ -e "/run/netns/$1" ]; }
all_ns() { local i; echo "$PREFIX-sw"; for ((i = 1; i <= NHOSTS; i++)); do host_name $i; done; }
cluster_pids() { local n; for n in $(all_ns); do ns_exists "$n" && ip netns pids "$n" 2>/dev/null; done; true; }
check_up() {
  load_conf
  local n
  for n in $(all_ns); do ns_exists "$n" || die "namespace $n is missing; run: $0 down; $0 up $NHOSTS"; done
}

# expand "0-2,5" -> "0 1 2 5"
expand_cpus() {
  local part a b out=() parts
  IFS=, read -r -a parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then a=${part%-*}; b=${part#*-}; while [ "$a" -le "$b" ]; do out+=("$a"); a=$((a + 1)); done
    else out+=("$part"); fi
  done
  echo "${out[*]}"
}
auto_cpus() { # $1 = nhosts -> "c0,c1;c2,c3" or "" if fewer CPUs than hosts
  local n=$1 list cl k per i j s
  list=$(taskset -pc $$ | sed 's/.*: *//')
  read -r -a cl <<<"$(expand_cpus "$list")"
  k=${#cl[@]}
  [ "$k" -ge "$n" ] || { echo ""; return; }
  per=$((k / n)); s=""
  for ((i = 0; i < n; i++)); do
    local grp=()
    for ((j = i * per; j < (i + 1) * per; j++)); do grp+=("${cl[$j]}"); done
    s+="$(IFS=,; echo "${grp[*]}")"; [ $i -lt $((n - 1)) ] && s+=";"
  done
  echo "$s"
}

# ---------------------------------------------------------------- up / down
cmd_up() {
  need_root; check_tools
  local n=${1:-${SIM_HOSTS:-2}} i j h
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "NHOSTS must be 1..250, got '$n'"
  if [ -r "$CONF" ]; then
    ( load_conf; [ "$NHOSTS" = "$n" ] ) || die "cluster '$PREFIX' is up with a different size; run: $0 down"
    local ok=1; ( load_conf; for h in $(all_ns); do ns_exists "$h" || exit 1; done ) || ok=0
    if [ $ok = 1 ]; then info "cluster '$PREFIX' already up ($n hosts)"; return 0; fi
    warn "cluster '$PREFIX' is half up; recreating"; cmd_down
  fi
  for ((i = 1; i <= n; i++)); do
    ns_exists "$(host_name $i)" && die "netns $(host_name $i) exists but was not created by this script (no $CONF); remove it or set SIM_PREFIX"
  done
  ns_exists "$PREFIX-sw" && die "netns $PREFIX-sw exists but was not created by this script; remove it or set SIM_PREFIX"

  local subnet=${SIM_SUBNET:-10.77.13}
  [[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "SIM_SUBNET must look like 10.77.0"
  local cpus=${SIM_CPUS:-auto}
  if [ "$cpus" = auto ]; then
    cpus=$(auto_cpus "$n")
    [ -n "$cpus" ] || warn "fewer CPUs than hosts: hosts share all CPUs (no pinning)"
  elif [ "$cpus" = none ]; then cpus=""
  else
    local lists; IFS=';' read -r -a lists <<<"$cpus"
    [ ${#lists[@]} = "$n" ] || die "SIM_CPUS needs $n ';'-separated lists, got '$cpus'"
  fi

  mkdir -p "$STATE"
  # from here on, a failure leaves something half made: clean it up
  trap 'echo "sim_cluster: up failed; cleaning up" >&2; cmd_down >/dev/null 2>&1 || true' ERR

  # the switch: a bridge in a namespace of its own, so the root namespace is untouched
  local sw=$PREFIX-sw bridge=1
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  if ! ip -n "$sw" link add br0 type bridge 2>/dev/null; then
    [ "$n" -le 2 ] || { trap - ERR; cmd_down >/dev/null 2>&1; die "cannot create a bridge (kernel without bridge support?); only 2 hosts possible"; }
    bridge=0; warn "no bridge support: connecting the 2 hosts with one veth pair"
  else
    ip -n "$sw" link set br0 up
  fi
  for ((i = 1; i <= n; i++)); do
    h=$(host_name $i)
    ip netns add "$h"
    ip -n "$h" link set lo up
    if [ $bridge = 1 ]; then
      ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$h"
      ip -n "$sw" link set "p$i" master br0 up
      if [ -n "${SIM_RATE:-}" ]; then
        ip netns exec "$sw" tc qdisc add dev "p$i" root tbf rate "$SIM_RATE" burst 512kb latency 10ms \
          || { trap - ERR; cmd_down >/dev/null 2>&1; die "tc tbf failed (SIM_RATE=$SIM_RATE)"; }
      fi
    elif [ $i = 2 ]; then
      ip -n "$(host_name 1)" link add eth0 type veth peer name eth0 netns "$h"
    fi
    mkdir -p "$STATE/h/$h"
    # a boot_id of its own: UCX decides "same machine, shared memory works" from it
    printf '%08x-5349-4d43-4c55-%012x\n' "$i" "$i" >"$STATE/h/$h/boot_id"
  done
  for ((i = 1; i <= n; i++)); do
    h=$(host_name $i)
    [ $bridge = 0 ] && [ $i = 1 ] && [ "$n" = 1 ] && ip -n "$h" link add eth0 type dummy
    ip -n "$h" addr add "$subnet.$i/24" dev eth0
    ip -n "$h" link set eth0 up
    if [ -n "${SIM_RATE:-}" ] && [ $bridge = 0 ]; then
      ip netns exec "$h" tc qdisc add dev eth0 root tbf rate "$SIM_RATE" burst 512kb latency 10ms \
        || { trap - ERR; cmd_down >/dev/null 2>&1; die "tc tbf failed (SIM_RATE=$SIM_RATE)"; }
    fi
    # name resolution inside the hosts: `ip netns exec` bind-mounts /etc/netns/NS/hosts on /etc/hosts
    mkdir -p "/etc/netns/$h"
    {
      echo "# written by sim_cluster.sh ($STATE); removed by '$SELF down'"
      echo "127.0.0.1 localhost"
      echo "::1 localhost ip6-localhost ip6-loopback"
      for ((j = 1; j <= n; j++)); do echo "$subnet.$j $(host_name $j)"; done
    } >"/etc/netns/$h/hosts"
  done

  # the ssh replacement handed to mpirun / mpiexec
  cat >"$STATE/rsh" <<EOF
#!/bin/sh
# ssh replacement for the simulated cluster '$PREFIX' (generated by $SELF up)
SIM_PREFIX='$PREFIX' SIM_STATE='$STATE' exec '$SELF' _rsh "\$@"
EOF
  chmod 755 "$STATE/rsh"

  cat >"$CONF" <<EOF
NHOSTS=$n
SUBNET=$subnet
CPUS='$cpus'
BRIDGE=$bridge
EOF
  trap - ERR
  CPUS=$cpus NHOSTS=$n SUBNET=$subnet

  # check: every host can open a TCP connection to every other (port 1: "refused" = reachable)
  local a b out
  for ((a = 1; a <= n; a++)); do for ((b = 1; b <= n; b++)); do
    [ $a = $b ] && continue
    out=$(ip netns exec "$(host_name $a)" timeout 5 bash -c "exec 3<>/dev/tcp/$subnet.$b/1" 2>&1 || true)
    case "$out" in *refused*) ;; *) cmd_down >/dev/null 2>&1; die "no TCP path $(host_name $a) -> $subnet.$b ($out)";; esac
  done; done
  info "cluster '$PREFIX' up: $(for ((i = 1; i <= n; i++)); do printf '%s=%s%s ' "$(host_name $i)" "$subnet.$i" "${cpus:+[cpus $(host_cpus $i)]}"; done)"
}

kill_pids() { # kill processes in our namespaces (we started them), TERM then KILL
  local pids p t
  pids=$(cluster_pids | sort -un | grep -vx "$$" || true)
  [ -n "$pids" ] || return 0
  info "killing stray processes in the simulated hosts: $(echo $pids)"
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  for t in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(for p in $pids; do if [ -d "/proc/$p" ]; then echo "$p"; fi; done)
    [ -n "$pids" ] || return 0
    sleep 0.5
  done
  for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
}

cmd_down() {
  need_root
  local n h
  if [ -r "$CONF" ]; then load_conf; else
    # no state: look for our naming pattern
    NHOSTS=0
    for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do
      [[ $n =~ ^$PREFIX([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -gt "$NHOSTS" ] && NHOSTS=${BASH_REMATCH[1]}
    done
  fi
  kill_pids
  for n in $(all_ns); do
    if ns_exists "$n"; then ip netns del "$n" || warn "could not delete netns $n"; fi
  done
  for ((i = 1; i <= NHOSTS; i++)); do
    h=$(host_name $i)
    if [ -f "/etc/netns/$h/hosts" ] && grep -q "written by sim_cluster.sh" "/etc/netns/$h/hosts"; then
      rm -f "/etc/netns/$h/hosts"; rmdir "/etc/netns/$h" 2>/dev/null || true
    fi
  done
  rmdir /etc/netns 2>/dev/null || true
  # Open MPI session directories of killed jobs (shared /tmp; named after our hostnames)
  for ((i = 1; i <= NHOSTS; i++)); do rm -rf "/tmp/ompi.$(host_name $i)."[0-9]*; done
  rm -rf "$STATE"; rmdir "$(dirname "$STATE")" 2>/dev/null || true
  info "cluster '$PREFIX' down"
}

cmd_status() {
  if [ ! -r "$CONF" ]; then echo "cluster '$PREFIX': down"; return 0; fi
  load_conf
  echo "cluster '$PREFIX': $NHOSTS hosts, state $STATE"
  local i h
  for ((i = 1; i <= NHOSTS; i++)); do
    h=$(host_name $i)
    if ns_exists "$h"; then
      echo "  $h $(ip -n "$h" -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}') cpus=[$(host_cpus $i)] pids: $(ip netns pids "$h" | tr '\n' ' ')"
    else echo "  $h MISSING"; fi
  done
}

# ---------------------------------------------------------------- entering a host
# _enter HOST CMD... : runs inside `ip netns exec HOST unshare --uts --ipc`:
# set hostname, private /dev/shm (+/tmp), own boot_id, CPU set; then exec CMD.
cmd__enter() {
  load_conf
  local h=$1; shift
  local i; i=$(host_index "$h") || die "_enter: unknown host $h"
  echo "$h" >/proc/sys/kernel/hostname
  mount -t tmpfs -o mode=1777 "shm-$h" /dev/shm
  [ "${SIM_PRIVATE_TMP:-0}" = 1 ] && mount -t tmpfs -o mode=1777 "tmp-$h" /tmp
  mount --bind "$STATE/h/$h/boot_id" /proc/sys/kernel/random/boot_id
  local c; c=$(host_cpus "$i")
  unset SIM_ENTER_HOST
  if [ -n "$c" ]; then exec taskset -c "$c" "$@"; else exec "$@"; fi
}
# _rsh [ssh options] HOST COMMAND... : what mpirun/mpiexec call instead of ssh.
# Like ssh: remote command = all words joined by spaces, run by /bin/sh -c in $HOME,
# with a fresh login-like environment (only SIM_SSH_ENV variables are passed on).
cmd__rsh() {
  load_conf
  while [ $# -gt 0 ]; do
    case "$1" in
      -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
      --) shift; break ;;
      -*) shift ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] || die "_rsh: no host given"
  local h=$1 i; shift
  i=$(host_index "$h") || { echo "ssh: Could not resolve hostname $h: Name or service not known (sim_cluster '$PREFIX')" >&2; exit 255; }
  h=$(host_name "$i")
  local home; home=$(getent passwd "$(id -un)" | cut -d: -f6); home=${home:-/}
  local envv=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$home"
              USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh LANG=C.UTF-8
              SIM_PREFIX="$PREFIX" SIM_STATE="$STATE" SIM_PRIVATE_TMP="${SIM_PRIVATE_TMP:-0}")
  local v
  # running MPI as root is a container artefact; let it through so orted starts
  for v in OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM ${SIM_SSH_ENV:-}; do
    [ -n "${!v+x}" ] && envv+=("$v=${!v}")
  done
  cd "$home" 2>/dev/null || cd /
  exec env -i "${envv[@]}" ip netns exec "$h" unshare --uts --ipc -- "$SELF" _enter "$h" /bin/sh -c "$*"
}

# ---------------------------------------------------------------- runs
ppn_for() { # NP -> PPN
  local np=$1
  if [ -n "${SIM_PPN:-}" ]; then
    [[ $SIM_PPN =~ ^[0-9]+$ ]] && [ "$SIM_PPN" -ge 1 ] || die "SIM_PPN must be a positive integer"
    [ $((SIM_PPN * NHOSTS)) -ge "$np" ] || die "NP=$np > SIM_PPN*NHOSTS=$((SIM_PPN * NHOSTS))"
    echo "$SIM_PPN"
  else echo $(((np + NHOSTS - 1) / NHOSTS)); fi
}
check_np() { [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] || die "NP must be a positive integer, got '${1:-}'"; }

run_bounded() { # run "$@" inside host 1 with a timeout; clean up strays on timeout
  local t=${SIM_TIMEOUT:-300} rc=0
  # --foreground: mpirun stays in the terminal's process group (Ctrl-C reaches it);
  # on timeout mpirun gets SIGTERM and takes its job down, then strays are killed below
  timeout --foreground -k 10 "$t" ip netns exec "$(host_name 1)" unshare --uts --ipc -- "$SELF" _enter "$(host_name 1)" "$@" || rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    warn "run exceeded SIM_TIMEOUT=${t}s (rc=$rc)"; kill_pids
  else
    local left; left=$(cluster_pids | sort -un | tr '\n' ' ')
    if [ -n "${left// /}" ]; then sleep 1; left=$(cluster_pids | sort -un | tr '\n' ' '); fi
    [ -z "${left// /}" ] || warn "processes still running in the simulated hosts: $left('$0 kill' ends them)"
  fi
  return $rc
}

cmd_run_ompi() {
  need_root; check_up
  check_np "${1:-}"; local np=$1; shift
  [ $# -ge 1 ] || die "usage: $0 run-ompi NP CMD [ARGS...]"
  command -v mpirun.openmpi >/dev/null || die "mpirun.openmpi not found: apt-get install openmpi-bin"
  local ppn i hf extra=()
  ppn=$(ppn_for "$np")
  hf=$STATE/hostfile.ompi.ppn$ppn
  for ((i = 1; i <= NHOSTS; i++)); do echo "$(host_name $i) slots=$ppn"; done >"$hf"
  read -r -a extra <<<"${SIM_OMPI_ARGS:-}"
  local bind=(--bind-to none)
  [[ " ${SIM_OMPI_ARGS:-} " == *bind-to* ]] && bind=()
  # more ranks than CPUs on a host: let idle ranks yield, as mpirun does by itself
  # when it knows a node is oversubscribed (here each host's slots = PPN, so it does not)
  local ncpu c; c=$(host_cpus 1)
  if [ -n "$c" ]; then read -r -a c <<<"$(expand_cpus "$c")"; ncpu=${#c[@]}; else ncpu=$(nproc); fi
  if [ "$ppn" -gt "$ncpu" ] && [[ " ${SIM_OMPI_ARGS:-} " != *yield_when_idle* ]]; then
    bind+=(--mca mpi_yield_when_idle 1)
  fi
  [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  local cmd=(mpirun.openmpi --hostfile "$hf" -np "$np" --oversubscribe "${bind[@]}"
             --mca plm_rsh_agent "$STATE/rsh" "${extra[@]}" "$@")
  info "[$(host_name 1)] ${cmd[*]}"
  run_bounded "${cmd[@]}"
}

cmd_run_mpich() {
  need_root; check_up
  check_np "${1:-}"; local np=$1; shift
  [ $# -ge 1 ] || die "usage: $0 run-mpich NP CMD [ARGS...]"
  command -v mpiexec.mpich >/dev/null || die "mpiexec.mpich not found: apt-get install mpich"
  local ppn i hf extra=()
  ppn=$(ppn_for "$np")
  hf=$STATE/hostfile.mpich.ppn$ppn
  for ((i = 1; i <= NHOSTS; i++)); do echo "$(host_name $i):$ppn"; done >"$hf"
  read -r -a extra <<<"${SIM_MPICH_ARGS:-}"
  # SIM_MPICH_ARGS go before -n: hydra wants global options (-genv, -rr, -ppn, -bind-to) first
  local cmd=(mpiexec.mpich -launcher ssh -launcher-exec "$STATE/rsh" -f "$hf" "${extra[@]}" -n "$np" "$@")
  info "[$(host_name 1)] ${cmd[*]}"
  run_bounded "${cmd[@]}"
}

cmd_exec() { # HOST CMD... with the caller's environment
  need_root; check_up
  [ $# -ge 2 ] || die "usage: $0 exec HOST CMD [ARGS...]"
  local i; i=$(host_index "$1") || die "unknown host '$1' (hosts: $(all_ns | tail -n +2 | tr '\n' ' '))"
  local h; h=$(host_name "$i"); shift
  timeout --foreground -k 10 "${SIM_TIMEOUT:-300}" ip netns exec "$h" unshare --uts --ipc -- "$SELF" _enter "$h" "$@"
}

# ---------------------------------------------------------------- selftest
SELFTEST_C='#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
/* where am I + one-sided check: put/get/accumulate/fetch_and_op across all ranks */
typedef struct { char proc[64], host[64], netns[32], boot[40]; int nodesz, ok; } info_t;
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, np, len; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &np);
  info_t in; memset(&in, 0, sizeof in);
  char pn[MPI_MAX_PROCESSOR_NAME]; MPI_Get_processor_name(pn, &len); snprintf(in.proc, 64, "%s", pn);
  gethostname(in.host, 63);
  ssize_t r = readlink("/proc/self/ns/net", in.netns, 31); if (r < 0) strcpy(in.netns, "?");
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) { if (!fgets(in.boot, 40, f)) strcpy(in.boot, "?"); fclose(f); in.boot[strcspn(in.boot, "\n")] = 0; }
  MPI_Comm node; MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &in.nodesz);
  long *base; MPI_Win win;
  MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  base[0] = -1; base[1] = 0; base[2] = 0; base[3] = 1000 + me;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  int right = (me + 1) % np, left = (me + np - 1) % np;
  long v = me, one = 1, old = -1, got = -1;
  MPI_Put(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, win);
  MPI_Accumulate(&one, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, win);
  MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 2, MPI_SUM, win);
  MPI_Get(&got, 1, MPI_LONG, left, 3, 1, MPI_LONG, win);
  MPI_Win_flush_all(win);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win); MPI_Win_unlock(me, win);
  in.ok = base[0] == left && got == 1000 + left && old >= 0 && old < np;
  if (me == 0) in.ok = in.ok && base[1] == np && base[2] == np;
  info_t all[1024]; if (np > 1024) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Gather(&in, sizeof in, MPI_BYTE, all, sizeof in, MPI_BYTE, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (me == 0) {
    int hosts = 0, bad = 0;
    for (int i = 0; i < np; i++) {
      int same = 0, first = 1;
      for (int j = 0; j < np; j++) if (!strcmp(all[i].host, all[j].host)) { same++; if (j < i) first = 0; }
      hosts += first;
      if (same != all[i].nodesz) bad++;
      if (!all[i].ok) bad++;
      printf("rank %d: processor_name=%s hostname=%s %s boot_id=%.8s.. shared_comm_size=%d rma=%s\n", i,
             all[i].proc, all[i].host, all[i].netns, all[i].boot, all[i].nodesz, all[i].ok ? "ok" : "FAIL");
    }
    printf("SELFTEST %s: %d ranks on %d hosts\n", bad ? "FAIL" : "PASS", np, hosts);
    rc = bad != 0;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Win_free(&win); MPI_Comm_free(&node);
  MPI_Finalize();
  return rc;
}'
selftest_one() { # LABEL RUNFN NP BINARY  (SIM_*_ARGS already set by caller)
  local label=$1 fn=$2 np=$3 bin=$4 log rc=0
  log=$(SIM_TIMEOUT=${SIM_TIMEOUT:-45} $fn "$np" "$bin" 2>&1) || rc=$?
  grep -E "^rank|^SELFTEST" <<<"$log" || true
  # Open MPI: which BTL each process uses towards each peer
  grep -E "bml: Using [a-z]+ btl for send to" <<<"$log" \
    | sed -E 's/^\[([^:]+):[0-9]+\] mca: bml: Using ([a-z]+) btl for send to \[\[[0-9]+,[0-9]+\],([0-9]+)\] on node (.*)$/\1 -> rank \3 on \4: btl \2/' \
    | sort | uniq -c | sed 's/^/  /' || true
  # MPICH/UCX: transports per endpoint configuration
  grep -E "UCX +INFO +ep_cfg" <<<"$log" \
    | sed -E 's/^.*\[([^:]+):[0-9]+:[0-9]+\].*(ep_cfg\[[0-9]+\]: )/\1: \2/' | sort | uniq -c | sed 's/^/  ucx /' || true
  if grep -q "SELFTEST PASS" <<<"$log"; then
    if [ $rc = 0 ]; then echo "$label: PASS"; return 0; fi
    if [ $rc = 124 ] || [ $rc = 137 ]; then
      echo "$label: PASS, but the job did not exit (MPI_Finalize hang; with MPICH/UCX over TCP this is openucx/ucx#8738)"; return 0
    fi
  fi
  echo "$label: FAIL (rc=$rc)"; tail -20 <<<"$log"; return 1
}
cmd_selftest() {
  need_root; check_up
  local d=$STATE/selftest rc=0 np=$((NHOSTS * 2))
  mkdir -p "$d"; printf '%s\n' "$SELFTEST_C" >"$d/where.c"
  if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpicc.openmpi -O1 -o "$d/where.openmpi" "$d/where.c"
    echo "== Open MPI, $np ranks ($NHOSTS hosts x 2), --mca osc pt2pt (Debian's default osc list has no inter-node RMA over TCP)"
    SIM_OMPI_ARGS="--mca osc pt2pt --mca btl_base_verbose 100 ${SIM_OMPI_ARGS:-}" \
      selftest_one "Open MPI" cmd_run_ompi "$np" "$d/where.openmpi" || rc=1
  else echo "== Open MPI not installed: skipped"; fi
  if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    mpicc.mpich -O1 -o "$d/where.mpich" "$d/where.c"
    echo "== MPICH, $np ranks ($NHOSTS hosts x 2)"
    SIM_MPICH_ARGS="-genv UCX_LOG_LEVEL info ${SIM_MPICH_ARGS:-}" \
      selftest_one "MPICH" cmd_run_mpich "$np" "$d/where.mpich" || rc=1
  else echo "== MPICH not installed: skipped"; fi
  [ $rc = 0 ] && echo "selftest: PASS" || echo "selftest: FAIL"
  return $rc
}

# ---------------------------------------------------------------- main
usage() { sed -n '/^# Usage:/,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SELF"; }
sub=${1:-}; [ $# -gt 0 ] && shift
case "$sub" in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kill) need_root; load_conf; kill_pids ;;
  run-ompi) cmd_run_ompi "$@" ;;
  run-mpich) cmd_run_mpich "$@" ;;
  exec) cmd_exec "$@" ;;
  selftest) cmd_selftest ;;
  _rsh) cmd__rsh "$@" ;;
  _enter) cmd__enter "$@" ;;
  -h|--help|help) usage ;;
  "") usage >&2; exit 2 ;;
  *) echo "sim_cluster: unknown subcommand '$sub'" >&2; usage >&2; exit 2 ;;
esac
