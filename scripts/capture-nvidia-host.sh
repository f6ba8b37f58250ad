#!/usr/bin/env bash
# Capture a host's accelerator tool outputs in the layout the unit tests
# replay (tests/unit/fixtures/nvidia/<host>/), so a real machine's output
# becomes a fixture:  scripts/capture-nvidia-host.sh DEST
# Read-only: it runs nvidia-smi queries and copies /proc and sysfs attributes.
set -euo pipefail
dest=${1:?usage: $0 DEST}
mkdir -p "$dest"
export LC_ALL=C
nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,driver_version,compute_cap,persistence_mode,mig.mode.current \
  --format=csv,noheader,nounits >"$dest/query-gpu.csv"
nvidia-smi -q -x >"$dest/nvidia-smi-q-x.xml"
cp /proc/driver/nvidia/version "$dest/proc-driver-nvidia-version"
cp /proc/cpuinfo "$dest/cpuinfo"
cp /proc/meminfo "$dest/meminfo"
for dev in /sys/bus/pci/devices/*; do
  # ':' is not allowed in collection file names: 0000:c1:00.0 -> 0000_c1_00.0
  # (tests/unit/conftest.py restores it).
  out=$dest/sysfs/bus/pci/devices/$(basename "$dev" | tr ':' '_')
  mkdir -p "$out"
  for attr in vendor device subsystem_vendor subsystem_device class numa_node; do
    [ -r "$dev/$attr" ] && cat "$dev/$attr" >"$out/$attr" 2>/dev/null || true
  done
done
for node in /sys/devices/system/node/node*; do
  [ -d "$node" ] || continue
  mkdir -p "$dest/sysfs/devices/system/node/$(basename "$node")"
  [ -r "$node/cpulist" ] && cat "$node/cpulist" >"$dest/sysfs/devices/system/node/$(basename "$node")/cpulist" || true
done
uname -m >"$dest/uname-m"
