# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.systemd_hardening``: the hardening lines of a systemd unit."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: systemd_hardening
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.2.0"
short_description: The C([Service]) hardening lines of a kunpeng.vllm unit
description:
  - Takes how a unit differs from the collection's strict baseline and returns the C([Service]) lines, one per line
    (C(ProtectSystem=strict), C(NoNewPrivileges=yes), an empty capability set, C(PrivateDevices=yes) or a
    C(DevicePolicy=closed) allow list, the C(@system-service) system-call filter less the dangerous groups, ...).
  - The one source of the hardening of every unit the collection writes (vllm, Ray, accelerator collector,
    nvidia-persistenced) and of the drop-ins it adds to packaged units (haproxy, node exporter, Prometheus), each
    scoring <= 1.5 in C(systemd-analyze security).
  - Fails on an unknown option, a wrong type, or a value that would break out of its line.
options:
  _input:
    description: How the unit differs from the baseline; every key is optional.
    type: dict
    required: true
    suboptions:
      writable:
        description: C(ReadWritePaths) under C(ProtectSystem=strict).
        type: list
        elements: str
        default: []
      capabilities:
        description: The capability bounding set (C(CAP_*)).
        type: list
        elements: str
        default: []
      ambient_capabilities:
        description: The ambient capabilities (C(CAP_*)).
        type: list
        elements: str
        default: []
      device_allow:
        description:
          - C(DeviceAllow) entries under C(DevicePolicy=closed); a node given without access mode gets C(rw).
          - Empty gives C(PrivateDevices=yes) when O(_input.private_devices), else the host's devices.
        type: list
        elements: str
        default: []
      private_devices:
        description: C(PrivateDevices=yes) when O(_input.device_allow) is empty.
        type: bool
        default: true
      address_families:
        description: C(RestrictAddressFamilies); at least one.
        type: list
        elements: str
        default: [AF_UNIX, AF_INET, AF_INET6]
      private_network:
        description: No network (C(PrivateNetwork=yes), C(IPAddressDeny=any)).
        type: bool
        default: false
      memory_deny_write_execute:
        description: C(MemoryDenyWriteExecute); off for code that JIT-compiles.
        type: bool
        default: true
      private_users:
        description: C(PrivateUsers); off where user namespaces fail (containers).
        type: bool
        default: false
      proc_subset_pid:
        description: C(ProcSubset=pid) (not for services that read C(/proc/meminfo) and the like).
        type: bool
        default: false
      syscall_groups_allowed:
        description: Groups taken out of the denied system-call groups (C(@privileged), C(@resources), ...).
        type: list
        elements: str
        default: []
      umask:
        description: C(UMask) of the service.
        type: str
        default: "0077"
      extra:
        description: Further C(Key=value) lines, written first (the user of a packaged unit).
        type: list
        elements: str
        default: []
"""

EXAMPLES = r"""
- name: Write a unit whose only writable path is its cache
  ansible.builtin.copy:
    dest: /etc/systemd/system/example.service
    mode: "0644"
    content: |
      [Service]
      ExecStart=/usr/bin/example
      {{ {'writable': ['/var/cache/example'], 'memory_deny_write_execute': false} | kunpeng.vllm.systemd_hardening }}
"""

RETURN = r"""
_value:
  description: The hardening lines, joined by newlines (no trailing newline).
  type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.hardening import (  # noqa: E402
    HardeningError,
    directives,
)


def systemd_hardening(options):
    """The hardening lines of the unit ``options`` describes, or an error naming every problem."""
    if not isinstance(options, dict):
        raise AnsibleFilterError(f"systemd_hardening takes a dict of options, not {type(options).__name__}")
    try:
        return "\n".join(directives(dict(options)))
    except HardeningError as err:
        raise AnsibleFilterError(f"systemd_hardening: {err}") from err


class FilterModule:
    """systemd unit filters."""

    def filters(self):
        return {"systemd_hardening": systemd_hardening}
