"""execute/hardening.py: a unit's differences from the baseline -> its exact [Service] hardening lines."""

import glob
import os
import re

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.hardening import HardeningError, directives

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
DENY = "@privileged @resources @mount @debug @obsolete @reboot @swap @cpu-emulation @clock @module @raw-io"

BASELINE = [
    "UMask=0077", "NoNewPrivileges=yes", "CapabilityBoundingSet=", "AmbientCapabilities=", "ProtectSystem=strict",
    "ProtectHome=yes", "PrivateTmp=yes", "PrivateMounts=yes", "PrivateDevices=yes", "DevicePolicy=closed",
    "PrivateUsers=no", "ProtectProc=invisible", "ProtectHostname=yes", "ProtectClock=yes", "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes", "ProtectKernelLogs=yes", "ProtectControlGroups=yes", "RestrictNamespaces=yes",
    "RestrictRealtime=yes", "RestrictSUIDSGID=yes", "LockPersonality=yes", "MemoryDenyWriteExecute=yes", "RemoveIPC=yes",
    "KeyringMode=private", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "SystemCallArchitectures=native",
    "SystemCallFilter=@system-service", "SystemCallFilter=~" + DENY, "SystemCallErrorNumber=EPERM",
]


def edited(*edits):
    """BASELINE with ``(old, [new lines])`` edits applied in order (an empty list removes the line)."""
    lines = list(BASELINE)
    for old, new in edits:
        at = lines.index(old)
        lines[at:at + 1] = new
    return lines


CASES = {
    "nothing differs": ({}, BASELINE),
    "vllm engine with GPUs and an RDMA node": (
        {"writable": ["/var/cache/vllm/smollm2"], "device_allow": [
            "/dev/nvidiactl rw", "char-nvidia-caps", "char-infiniband_verbs rw", "/dev/infiniband/rdma_cm"],
         "private_users": True, "address_families": ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"],
         "memory_deny_write_execute": False, "syscall_groups_allowed": ["@resources"]},
        ["ReadWritePaths=/var/cache/vllm/smollm2"] + edited(
            ("PrivateDevices=yes", []),
            ("DevicePolicy=closed", ["DevicePolicy=closed", "DeviceAllow=/dev/nvidiactl rw", "DeviceAllow=char-nvidia-caps rw",
                                     "DeviceAllow=char-infiniband_verbs rw", "DeviceAllow=/dev/infiniband/rdma_cm rw"]),
            ("PrivateUsers=no", ["PrivateUsers=yes"]),
            ("MemoryDenyWriteExecute=yes", ["MemoryDenyWriteExecute=no"]),
            ("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", ["RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK"]),
            ("SystemCallFilter=~" + DENY, ["SystemCallFilter=~" + DENY.replace("@resources ", "")]))),
    "root daemon with one capability, its device nodes, no network": (
        {"capabilities": ["CAP_SYS_ADMIN"], "device_allow": ["/dev/nvidiactl rw", "char-nvidia-caps r"],
         "private_network": True, "address_families": ["AF_UNIX"], "syscall_groups_allowed": ["@privileged"],
         "umask": "0022"},
        edited(
            ("UMask=0077", ["UMask=0022"]),
            ("CapabilityBoundingSet=", ["CapabilityBoundingSet=CAP_SYS_ADMIN"]),
            ("PrivateDevices=yes", []),
            ("DevicePolicy=closed", ["DevicePolicy=closed", "DeviceAllow=/dev/nvidiactl rw", "DeviceAllow=char-nvidia-caps r",
                                     "PrivateNetwork=yes", "IPAddressDeny=any"]),
            ("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", ["RestrictAddressFamilies=AF_UNIX"]),
            ("SystemCallFilter=~" + DENY, ["SystemCallFilter=~" + DENY.replace("@privileged ", "")]))),
    "host devices (vendor tools)": (
        {"private_devices": False}, edited(("PrivateDevices=yes", []), ("DevicePolicy=closed", []))),
    "packaged unit with its user, a bound low port and only its processes in /proc": (
        {"extra": ["User=haproxy", 'Environment="A=1" "B=2"'], "capabilities": ["CAP_NET_BIND_SERVICE"],
         "ambient_capabilities": ["CAP_NET_BIND_SERVICE"], "proc_subset_pid": True},
        ["User=haproxy", 'Environment="A=1" "B=2"'] + edited(
            ("CapabilityBoundingSet=", ["CapabilityBoundingSet=CAP_NET_BIND_SERVICE"]),
            ("AmbientCapabilities=", ["AmbientCapabilities=CAP_NET_BIND_SERVICE"]),
            ("ProtectProc=invisible", ["ProtectProc=invisible", "ProcSubset=pid"]))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_directives(case):
    options, expected = CASES[case]
    assert directives(options) == expected


@pytest.mark.parametrize("options, problem", [
    ({"writeable": ["/x"]}, "unknown hardening options ['writeable']"),
    ({"writable": "/x"}, "writable must be a list of strings"),
    ({"private_users": "yes"}, "private_users must be true or false"),
    ({"writable": ["/x\nExecStartPre=/bin/sh"]}, "writable: ['/x\\nExecStartPre=/bin/sh'] not accepted"),
    ({"device_allow": ["/dev/sda rw; x"]}, "device_allow:"),
    # systemd ignores a directory in DeviceAllow= (issue 29: RDMA could not open uverbs/rdma_cm)
    ({"device_allow": ["/dev/infiniband rw"]}, "device_allow: ['/dev/infiniband rw'] not accepted"),
    ({"device_allow": ["/dev/infiniband/"]}, "device_allow: ['/dev/infiniband/'] not accepted"),
    ({"capabilities": ["SYS_ADMIN"]}, "capabilities: ['SYS_ADMIN']"),
    ({"address_families": []}, "address_families must name at least one family"),
    ({"syscall_groups_allowed": ["@system-service"]}, "are not denied"),
    ({"umask": "77"}, "umask: ['77']"),
    ({"extra": ["[Unit]"]}, "extra: ['[Unit]']"),
])
def test_options_that_cannot_be_written_are_refused(options, problem):
    with pytest.raises(HardeningError) as raised:
        directives(options)
    assert problem in str(raised.value)


def _hardening_keys():
    """Every directive name the function can write."""
    everything = {"writable": ["/x"], "device_allow": ["/dev/x"], "private_network": True, "proc_subset_pid": True}
    return {line.split("=", 1)[0] for line in directives(everything) + directives({})}


def test_no_role_writes_a_hardening_directive_itself():
    """The hardening lives once: no template or role file of the collection spells a directive of the function."""
    keys = _hardening_keys()
    offenders = []
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "templates", "*")) + glob.glob(os.path.join(ROOT, "roles", "*", "vars", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                found = re.match(r"^\s*(?:- )?([A-Z][A-Za-z]+)=", line)
                if found and found.group(1) in keys:
                    offenders.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert not offenders, "hardening written outside plugins/module_utils/execute/hardening.py:\n" + "\n".join(offenders)


@pytest.mark.parametrize("path, name", [
    ("roles/gateway/vars/main.yml", "__gateway_haproxy_hardening"),
    ("roles/monitoring/vars/main.yml", "__monitoring_node_exporter_hardening"),
    ("roles/monitoring/vars/main.yml", "__monitoring_prometheus_hardening"),
    ("roles/monitoring/vars/main.yml", "__monitoring_collector_hardening"),
    ("roles/nvidia/vars/main.yml", "__nvidia_persistenced_hardening"),
    ("roles/vllm/vars/main.yml", "__vllm_hardening"),
])
def test_every_role_table_names_known_options(path, name):
    """Each unit's table uses only the function's options (templated values are checked when rendered)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)[name]
    plain = {key: value for key, value in options.items() if "{{" not in str(value)}
    assert directives(plain)
