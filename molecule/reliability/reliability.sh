#!/usr/bin/env bash
# The reliability cases of issue 19 against the scenario's container, each a
# real ansible-playbook run of playbooks/site.yml; usage: reliability.sh OUT_DIR
#   bad:          one run, one host alias per bad value (inventory/hosts.yml);
#                 every host must fail before any change.
#   kill-install: a converge killed while pip installs the engine.
#   kill-model:   the re-run, killed while the model is copied.
# An interrupted SSH connection takes the remote module with it; over
# `docker exec` the remote processes outlive the client, so the module
# processes this run started in the container are killed too (by pid).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
project=$(cd "$here/../.." && pwd)
out=${1:?usage: reliability.sh OUT_DIR}
ctr=kv-reliability-amd64
inv=$here/inventory/hosts.yml
site=$project/playbooks/site.yml
export KV_PROJECT_DIR=$project ANSIBLE_FORCE_COLOR=false
mkdir -p "$out"
rm -f "$out"/*

dx() { docker exec "$ctr" "$@"; }
# Everything under the directories the roles write (config, install, model, cache).
snapshot() {
  dx sh -c 'find /etc/vllm /opt/vllm /var/lib/vllm /var/cache/vllm /srv/small -mindepth 1 2>/dev/null | sort'
}
# Engine link target and every virtualenv with its completion marker.
engine_state() {
  dx sh -c 'echo "link $(readlink /opt/vllm/current-smollm2 || echo none)"
            for d in /opt/vllm/*-cpu; do [ -d "$d" ] || continue
              if [ -e "$d/.kunpeng-vllm-complete" ]; then echo "venv $d marked"; else echo "venv $d unmarked"; fi
            done
            for d in /var/lib/vllm/models/smollm2 /var/lib/vllm/models/smollm2.partial; do
              if [ -e "$d/.kunpeng-model-complete" ]; then echo "model $d marked"
              elif [ -d "$d" ]; then echo "model $d unmarked"; else echo "model $d absent"; fi
            done'
}
wait_for() {  # wait_for SECONDS CMD... : poll CMD every 0.2 s
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}
# Kill the run (its process group) and every process it left in the container.
# What `docker exec` starts sits in the container's own cgroup, outside every
# systemd unit and scope, so each such process goes, as when an SSH session
# drops (matching them by command line missed some: a pip left writing into
# the virtualenv made the next run's removal fail with "Directory not empty").
interrupt() {
  kill -KILL -- "-$1" 2>/dev/null
  wait "$1" 2>/dev/null
  local pids
  # The unified hierarchy's line (0::) names the cgroup, also on hybrid hosts.
  pids=$(dx sh -c 'for p in /proc/[0-9]*; do
      n=${p#/proc/}; [ "$n" = 1 ] || [ "$n" = "$$" ] && continue
      cg=; while read -r line; do case "$line" in 0::*) cg=$line ;; esac; done <"$p/cgroup" 2>/dev/null
      case "$cg" in ""|*.scope|*.service|*.slice|*.mount|*.socket) ;; *) kill -KILL "$n" 2>/dev/null && echo "$n" ;; esac
    done' | tr '\n' ' ')
  echo "killed run $1 and container pids: ${pids:-none}"
  # What is left: every process with its cgroup, and whether the engine tree still changes.
  dx sh -c 'for p in /proc/[0-9]*; do echo "left ${p#/proc/} $(tr "\0" " " <$p/cmdline | cut -c1-80) $(tail -n1 $p/cgroup)"; done' 2>/dev/null
  dx sh -c 'a=$(find /opt/vllm 2>/dev/null | wc -l); sleep 3; b=$(find /opt/vllm 2>/dev/null | wc -l); echo "engine tree: $a then $b entries"'
}
# True once the run has ended or printed its recap (it need not be interrupted any more).
run_ended() { ! kill -0 "$1" 2>/dev/null || grep -q '^PLAY RECAP' "$2"; }
# True once CMD succeeds in the container or the run (PID, LOG) has ended.
seen_or_ended() { local pid=$1 log=$2; shift 2; dx "$@" || run_ended "$pid" "$log"; }
converge_bg() {  # converge_bg LOG: start site.yml on the good host in its own process group
  setsid ansible-playbook -i "$inv" -l good "$site" >"$1" 2>&1 &
  echo $!
}

start=$SECONDS
# --- bad input: every class, before any change --------------------------------
snapshot >"$out/bad.before"
ansible-playbook -i "$inv" -l bad -f 8 "$site" >"$out/bad.out" 2>&1
echo $? >"$out/bad.rc"
snapshot >"$out/bad.after"
echo "bad input: rc $(cat "$out/bad.rc") after $((SECONDS - start)) s"

# --- interrupted engine install -------------------------------------------------
pid=$(converge_bg "$out/kill-install.out")
if wait_for 1200 seen_or_ended "$pid" "$out/kill-install.out" pgrep -f 'bin/pip[0-9.]* install' \
   && ! run_ended "$pid" "$out/kill-install.out"; then
  sleep 5  # in the middle of the install, not at its first byte
  echo "pip running: $(dx pgrep -af 'bin/pip[0-9.]* install' | head -1 | cut -c1-200)" >"$out/kill-install.when"
else
  echo "pip never ran" >"$out/kill-install.when"
fi
interrupt "$pid" >>"$out/kill-install.when"
engine_state >"$out/kill-install.state"
echo "kill-install: after $((SECONDS - start)) s"

# --- the re-run, interrupted in the model copy -------------------------------------
pid=$(converge_bg "$out/kill-model.out")
if wait_for 2400 seen_or_ended "$pid" "$out/kill-model.out" test -d /var/lib/vllm/models/smollm2.partial \
   && ! run_ended "$pid" "$out/kill-model.out"; then
  sleep 1
  echo "staging present: $(dx du -sb /var/lib/vllm/models/smollm2.partial)" >"$out/kill-model.when"
else
  echo "the model copy never started" >"$out/kill-model.when"
fi
interrupt "$pid" >>"$out/kill-model.when"
engine_state >"$out/kill-model.state"
echo "kill-model: after $((SECONDS - start)) s"
echo $((SECONDS - start)) >"$out/seconds"
