#!/bin/sh
# TEST DOUBLE of a sysfs PCI tree - not a real bus.  Usage:
#   make-sysfs.sh ROOT [DEVICE_ID] [COUNT]
# writes ROOT/bus/pci/devices/<bus id>/{vendor,device,subsystem_vendor,
# subsystem_device,class,numa_node} for COUNT (default 8) Huawei 0x19e5
# functions with DEVICE_ID (default 0xd802, Ascend 910B / Atlas A2), at the
# bus ids of the Atlas 800I A2 npu-smi double, plus one unrelated function.
set -eu
root=$1
device=${2:-0xd802}
count=${3:-8}
base=$root/bus/pci/devices
mkdir -p "$base"
n=0
for bus in c1 c2 81 82 01 02 41 42 c3 c4 83 84 03 04 43 44; do
  [ "$n" -lt "$count" ] || break
  dir=$base/0000:$bus:00.0
  mkdir -p "$dir"
  echo 0x19e5 >"$dir/vendor"
  echo "$device" >"$dir/device"
  echo 0x19e5 >"$dir/subsystem_vendor"
  echo 0x3005 >"$dir/subsystem_device"
  echo 0x120000 >"$dir/class"
  echo $((n / 2)) >"$dir/numa_node"
  n=$((n + 1))
done
# A Kunpeng SoC NIC: vendor 0x19e5 too, but not an NPU.
dir=$base/0000:7d:00.0
mkdir -p "$dir"
echo 0x19e5 >"$dir/vendor"
echo 0xa222 >"$dir/device"
echo 0x19e5 >"$dir/subsystem_vendor"
echo 0x0454 >"$dir/subsystem_device"
echo 0x020000 >"$dir/class"
echo 0 >"$dir/numa_node"
