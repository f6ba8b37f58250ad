# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The systemd hardening of every unit kunpeng.vllm writes or drops in on, in one place.

Each unit states only how it differs from the strict baseline (what it must
write, the devices and capabilities it needs, the address families it
speaks, ...); ``directives`` turns that into the ``[Service]`` lines.  The
vllm, Ray, collector and nvidia-persistenced units render them in their own
unit file (kunpeng.vllm.systemd_hardening); packaged units (haproxy, the node
exporter, Prometheus) get them as a drop-in from kunpeng.vllm._common
(tasks_from hardening).  Every unit scores <= 1.5 in ``systemd-analyze
security`` (tests/unit/roles/test_unit_exposure.py, the Molecule scenarios).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List

# Syscall groups denied after the @system-service allow list; a unit lifts
# one with syscall_groups_allowed (the Ray/vLLM workers bind threads and
# memory to NUMA nodes: @resources).
DENIED_SYSCALL_GROUPS = ("@privileged", "@resources", "@mount", "@debug", "@obsolete", "@reboot", "@swap",
                         "@cpu-emulation", "@clock", "@module", "@raw-io")

#: option -> default.  Every option a unit may set; anything else is refused.
OPTIONS: Dict[str, Any] = {
    # ReadWritePaths under ProtectSystem=strict.
    "writable": [],
    # The capability bounding set and the ambient set (both empty: none).
    "capabilities": [],
    "ambient_capabilities": [],
    # DeviceAllow entries ("/dev/nvidiactl rw", "char-nvidia-caps r"; a
    # node without access mode gets rw) under DevicePolicy=closed.  Empty:
    # PrivateDevices=yes when private_devices, else the host's devices.
    "device_allow": [],
    "private_devices": True,
    "address_families": ["AF_UNIX", "AF_INET", "AF_INET6"],
    # No network at all (PrivateNetwork=yes, IPAddressDeny=any).
    "private_network": False,
    # Off for code that JIT-compiles (torch, the CPU kernels).
    "memory_deny_write_execute": True,
    # Off where user namespaces fail (containers): kunpeng.vllm.vllm_endpoint
    # and the monitoring role decide it.
    "private_users": False,
    # ProcSubset=pid: /proc shows processes only (not for readers of
    # /proc/meminfo, /proc/stat...).
    "proc_subset_pid": False,
    "syscall_groups_allowed": [],
    "umask": "0077",
    # Further [Service] lines of the drop-in (a packaged unit's user), written first.
    "extra": [],
}

_LISTS = {"writable", "capabilities", "ambient_capabilities", "device_allow", "address_families",
          "syscall_groups_allowed", "extra"}
_SHAPES = {
    "capabilities": re.compile(r"^CAP_[A-Z_]+$"),
    "ambient_capabilities": re.compile(r"^CAP_[A-Z_]+$"),
    "address_families": re.compile(r"^AF_[A-Z0-9]+$"),
    "syscall_groups_allowed": re.compile(r"^@[a-z-]+$"),
    "writable": re.compile(r"^-?/\S*$"),
    "device_allow": re.compile(r"^(/dev/\S+|(char|block)-\S+)( [rwm]{1,3})?$"),
    "extra": re.compile(r"^[A-Z][A-Za-z]+=.*$"),
    "umask": re.compile(r"^0[0-7]{3}$"),
}


#: Directories under /dev: DeviceAllow= takes a device node or a device group
#: (char-NAME of /proc/devices), and systemd ignores a directory, which then
#: allows nothing (name the nodes, e.g. char-infiniband_verbs).
DEVICE_DIRECTORIES = ("/dev/infiniband", "/dev/dri", "/dev/net", "/dev/snd", "/dev/bus/usb", "/dev/vfio")


class HardeningError(ValueError):
    """Options that cannot be turned into unit lines."""


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _checked(options: Dict[str, Any]) -> Dict[str, Any]:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise HardeningError(f"unknown hardening options {unknown}; known: {sorted(OPTIONS)}")
    merged = dict(OPTIONS, **options)
    problems = []
    for name, value in sorted(merged.items()):
        if name in _LISTS:
            if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
                problems.append(f"{name} must be a list of strings, not {value!r}")
                continue
            directories = DEVICE_DIRECTORIES if name == "device_allow" else ()
            bad = [item for item in value if "\n" in item or not _SHAPES[name].match(item) or item.split(" ")[0].rstrip("/") in directories]
        elif name == "umask":
            bad = [] if isinstance(value, str) and _SHAPES[name].match(value) else [value]
        elif not isinstance(value, bool):
            problems.append(f"{name} must be true or false, not {value!r}")
            continue
        else:
            bad = []
        if bad:
            problems.append(f"{name}: {bad} not accepted in a unit file")
    if merged["address_families"] in ([], ()):
        problems.append("address_families must name at least one family (empty would allow them all)")
    unknown_groups = sorted(set(merged["syscall_groups_allowed"]) - set(DENIED_SYSCALL_GROUPS))
    if unknown_groups and not problems:
        problems.append(f"syscall_groups_allowed: {unknown_groups} are not denied (denied: {list(DENIED_SYSCALL_GROUPS)})")
    if problems:
        raise HardeningError("; ".join(problems))
    return merged


def _devices(options: Dict[str, Any]) -> List[str]:
    if options["device_allow"]:
        return ["DevicePolicy=closed"] + [
            f"DeviceAllow={entry}" if " " in entry else f"DeviceAllow={entry} rw" for entry in options["device_allow"]]
    if options["private_devices"]:
        return ["PrivateDevices=yes", "DevicePolicy=closed"]
    return []


def directives(options: Dict[str, Any]) -> List[str]:
    """The ``[Service]`` hardening lines of a unit described by ``options`` (see OPTIONS)."""
    opts = _checked(options or {})
    lines = list(opts["extra"])
    if opts["writable"]:
        lines.append("ReadWritePaths=" + " ".join(opts["writable"]))
    lines += [
        "UMask=" + opts["umask"],
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=" + " ".join(opts["capabilities"]),
        "AmbientCapabilities=" + " ".join(opts["ambient_capabilities"]),
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateMounts=yes",
    ]
    lines += _devices(opts)
    if opts["private_network"]:
        lines += ["PrivateNetwork=yes", "IPAddressDeny=any"]
    lines += [
        "PrivateUsers=" + _yes(opts["private_users"]),
        "ProtectProc=invisible",
    ]
    if opts["proc_subset_pid"]:
        lines.append("ProcSubset=pid")
    lines += [
        "ProtectHostname=yes",
        "ProtectClock=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "RestrictNamespaces=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "LockPersonality=yes",
        "MemoryDenyWriteExecute=" + _yes(opts["memory_deny_write_execute"]),
        "RemoveIPC=yes",
        "KeyringMode=private",
        "RestrictAddressFamilies=" + " ".join(opts["address_families"]),
        "SystemCallArchitectures=native",
        "SystemCallFilter=@system-service",
        "SystemCallFilter=~" + " ".join(g for g in DENIED_SYSCALL_GROUPS if g not in opts["syscall_groups_allowed"]),
        "SystemCallErrorNumber=EPERM",
    ]
    return lines
