# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The decisions of kunpeng.vllm.base and the sentences that report them.

Three questions the role asks the host and answers here, each with the
sentence that says why: can the driver build prerequisites be installed
(headers for the running kernel), does the firewall need the ports opened
(installed and active), and which opt-in tunables can be applied (the kernel
exposes them, lets them be written, and offers the wanted CPU governor).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, Optional


def driver_build(wanted: bool, headers_package: str, headers_found: Optional[bool], kernel: str) -> Dict[str, Any]:
    """Install dkms and the kernel headers only when the distribution has headers for the running kernel."""
    if not wanted:
        status, reason = "off", "base_driver_build is false"
    elif headers_found:
        status, reason = "installed", f"dkms and {headers_package}"
    else:
        status = "skipped"
        reason = (f"no package {headers_package} for the running kernel {kernel} (container or custom kernel): "
                  "dkms and headers not installed, a driver cannot be built here")
    return {"wanted": wanted, "headers_package": headers_package, "status": status, "reason": reason}


def firewall_active(manage: bool, firewall: str, probe_rc: Optional[int], probe_stdout: str) -> bool:
    """firewalld answers ``firewall-cmd --state`` with rc 0 only when running; ufw says ``Status: active``."""
    if not manage or probe_rc != 0:
        return False
    return firewall == "firewalld" or "Status: active" in (probe_stdout or "")


def firewall(manage: bool, name: str, probe_rc: Optional[int], probe_stdout: str, ports: List[int]) -> Dict[str, Any]:
    """Whether to open ``ports`` in the platform firewall, and the sentence that says what was done."""
    active = firewall_active(manage, name, probe_rc, probe_stdout)
    if not manage:
        note = "base_firewall_manage is false"
    elif active:
        note = f"allowed {', '.join(f'{port}/tcp' for port in ports)} in {name}"
    else:
        note = f"{name} is not installed or not active: left alone"
    return {"firewall": name, "active": active, "ports": list(ports) if active else [], "note": note}


def _why_not(tunable: Dict[str, Any], exists: bool, writeable: bool, governors: List[str], service_mgr: str) -> Optional[str]:
    if not exists:
        return f"{tunable['probe']} does not exist: the kernel does not expose it"
    if not writeable:
        return f"{tunable['probe']} is read-only (container or locked-down kernel)"
    if tunable["kind"] == "sysfs" and service_mgr != "systemd":
        return f"systemd-tmpfiles persists it and the service manager is {service_mgr}"
    if tunable["name"] == "cpu_governor" and str(tunable["value"]) not in governors:
        return f"cpufreq offers {' '.join(governors)}, not {tunable['value']}"
    return None


def tuning(tunables: List[Dict[str, Any]], exists: List[bool], writeable: List[bool], governors: str, service_mgr: str,
           sysctl_file: str, tmpfiles_file: str) -> Dict[str, Any]:
    """Sort the enabled tunables (probed in order) into the sysctl and sysfs settings to write and the skipped ones.

    ``governors`` is the content of cpufreq's scaling_available_governors ('' when not read).
    """
    items: List[Dict[str, Any]] = []
    sysctl_apply: Dict[str, Any] = {}
    sysfs_apply: List[Dict[str, Any]] = []
    offered = governors.split()
    for tunable, found, can_write in zip(tunables, exists, writeable):
        why = _why_not(tunable, found, can_write, offered, service_mgr)
        if why is None and tunable["kind"] == "sysctl":
            sysctl_apply[tunable["name"]] = tunable["value"]
        elif why is None:
            sysfs_apply.append({"path": tunable["write"], "value": tunable["value"]})
        through = sysctl_file if tunable["kind"] == "sysctl" else tmpfiles_file
        items.append({"setting": tunable["name"], "wanted": str(tunable["value"]), "status": "skipped" if why else "applied",
                      "reason": why or f"set through {through}"})
    return {"items": items, "sysctl_apply": sysctl_apply, "sysfs_apply": sysfs_apply}
