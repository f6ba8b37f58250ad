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

import ipaddress
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends


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


def toolchain(request, plan, install_method, backend=None):
    """Which compiler packages the host needs: ``{"compiler", "build", "reason"}``.

    ``compiler`` (C/C++ compiler and Python headers): torch inductor compiles
    the CPU backend's kernels and Triton its CUDA launchers at run time unless
    the engine runs in eager mode, and a source build compiles vLLM.
    ``build`` (make, cmake, git, libnuma headers): only a source build, and
    the Ascend CANN toolkit installer, whose prerequisites list them (Huawei
    CANN installation guide, "Installing Dependencies").  ``request`` is
    ``base_build_toolchain`` (auto, always, never); ``plan`` the vLLM plan
    (``kunpeng_vllm_plan``; None when the base role runs alone and what comes
    next is unknown: the full toolchain).
    """
    if request == "always":
        return {"compiler": True, "build": True, "reason": "base_build_toolchain is always"}
    if request == "never":
        return {"compiler": False, "build": False, "reason": "base_build_toolchain is never"}
    if not plan:
        return {"compiler": True, "build": True,
                "reason": "no vLLM plan (the base role alone): the full build toolchain, since what runs next is unknown"}
    backend = backend or plan.get("backend")
    if install_method == "source":
        return {"compiler": True, "build": True, "reason": "the engine is built from source (vllm_install_method source)"}
    toolchain = backends.field(backend, "build_toolchain") if backend else None
    if toolchain:
        return {"compiler": True, "build": True, "reason": toolchain}
    eager = bool((plan.get("engine_args") or {}).get("enforce_eager"))
    if eager:
        return {"compiler": False, "build": False,
                "reason": "released wheels in eager mode: no compiler needed (vllm_install_method wheel, enforce_eager)"}
    return {"compiler": True, "build": False,
            "reason": "released wheels in compiled mode: a C/C++ compiler and Python headers for the kernels torch "
                      "compiles at run time, no build tools"}


def firewall_active(manage: bool, firewall: str, probe_rc: Optional[int], probe_stdout: str) -> bool:
    """firewalld answers ``firewall-cmd --list-all`` with rc 0 only when running; ufw says ``Status: active``."""
    if not manage or probe_rc != 0:
        return False
    return firewall == "firewalld" or "Status: active" in (probe_stdout or "")


#: firewalld zone targets that refuse what no rule admits ("default" rejects, as %%REJECT%% does).
_FIREWALLD_DENY_TARGETS = ("default", "DROP", "REJECT", "%%REJECT%%")


def firewalld_zone_of(zones_stdout: str, interface: str) -> str:
    """The block of ``firewall-cmd --list-all-zones`` for the zone that lists ``interface``; empty when none does.

    Each zone's block starts with its name on an unindented line (``trusted``, ``public (active)``), then indented
    ``key: value`` lines, ``interfaces: eth0 eth1`` among them.  A NIC that no zone lists falls in the default zone.
    """
    blocks: List[List[str]] = []
    for line in (zones_stdout or "").splitlines():
        if line.strip() and not line[:1].isspace():
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    for block in blocks:
        for line in block[1:]:
            key, _sep, value = line.strip().partition(":")
            if key == "interfaces" and interface and interface in value.split():
                return "\n".join(block)
    return ""


def firewall_default_deny(firewall: str, probe_rc: Optional[int], probe_stdout: str, interface: str = "",
                          zones_stdout: str = "") -> bool:
    """Whether the firewall refuses inbound connections that no rule admits, read from the probe's output.

    An active firewall is not a closed one: ufw with ``Default: allow (incoming)`` or firewalld's default zone
    ``trusted`` (target ACCEPT) admits everyone, so a service without authentication behind it is open.
    ``ufw status verbose`` prints ``Default: deny (incoming), ...`` (or ``reject``); ``firewall-cmd --list-all``
    prints the default zone's name first (``public (active)``) and ``target: default`` (or DROP, REJECT, ACCEPT);
    ``nft list ruleset`` holds ``type filter hook input priority ...; policy drop;`` for a closed input chain.
    With firewalld, the zone that counts is the one of ``interface`` (the NIC that carries the cluster's traffic)
    when ``firewall-cmd --list-all-zones`` (``zones_stdout``) lists it there: a NIC in ``trusted`` is open whatever
    the default zone.
    """
    if probe_rc != 0:
        return False
    text = probe_stdout or ""
    if firewall == "firewalld" and interface:
        text = firewalld_zone_of(zones_stdout, interface) or text
    if firewall == "ufw":
        match = re.search(r"^Default:\s*(\w+)\s*\(incoming\)", text, re.MULTILINE)
        return "Status: active" in text and bool(match) and match.group(1) in ("deny", "reject")
    if firewall == "firewalld":
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines or lines[0].split()[0] == "trusted":
            return False
        target = re.search(r"^\s*target:\s*(\S+)", text, re.MULTILINE)
        return bool(target) and target.group(1) in _FIREWALLD_DENY_TARGETS
    if firewall == "nftables":
        chains = re.findall(r"type filter hook input priority [^;]+;\s*policy (\w+);", text)
        return bool(chains) and all(policy == "drop" for policy in chains)
    return False


def _source(value: Any, variable: str) -> Tuple[str, str]:
    """``value`` as a network (``10.0.0.0/8``, ``192.0.2.7/32``, ``2001:db8::/32``) and its family."""
    try:
        network = ipaddress.ip_network(str(value).strip(), strict=False)
    except ValueError:
        raise ValueError(f"{variable}: {value!r} is not an IP address or network; "
                         "give addresses or CIDR networks, e.g. 10.0.0.0/8 or 192.0.2.7") from None
    return str(network), f"ipv{network.version}"


def _port(value: Any, variable: str) -> Tuple[int, int]:
    """``value`` (8000, "8000" or a range "8000-8010") as (first, last)."""
    text = str(value).strip()
    first, last = (text.split("-", 1) + [""])[:2]
    try:
        low, high = int(first), int(last or first)
    except ValueError:
        low = high = 0
    if not (1 <= low <= high <= 65535):
        raise ValueError(f"{variable}: {value!r} is not a port (1-65535) or a range of ports (e.g. 10000-10100)")
    return low, high


def firewall_rules(ports: List[Any], sources: List[str], rules: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One allow rule per port and source: ``ports`` from ``sources``, then each of ``rules`` from its own sources.

    Each rule has ``port`` and ``proto``, ``source`` and ``family``, the port as ufw (``8000:8010``) and
    firewalld (``8000-8010``) write it, and the firewalld rich rule.  No source, no rule: a port is never
    opened to everyone unless a source says so (``0.0.0.0/0``).
    """
    wanted = [{"ports": ports, "sources": sources, "protocol": "tcp", "what": "base_firewall_ports/base_firewall_sources"}]
    wanted += [dict(rule, what=f"base_firewall_rules[{index}]") for index, rule in enumerate(rules)]
    result: List[Dict[str, Any]] = []
    for rule in wanted:
        proto = rule.get("protocol") or "tcp"
        if proto not in ("tcp", "udp"):
            raise ValueError(f"{rule['what']}: protocol {proto!r} is not tcp or udp")
        nets = [_source(source, rule["what"]) for source in rule.get("sources") or []]
        for port in rule.get("ports") or []:
            low, high = _port(port, rule["what"])
            span = str(low) if low == high else f"{low}-{high}"
            for net, family in nets:
                item = {"port": span, "proto": proto, "source": net, "family": family,
                        "ufw_port": span.replace("-", ":"),
                        "rich_rule": (f'rule family="{family}" source address="{net}" '
                                      f'port port="{span}" protocol="{proto}" accept')}
                if item not in result:
                    result.append(item)
    return result


def firewall_ports(ports: List[Any], rules: List[Dict[str, Any]]) -> List[Dict[str, str]]:
    """Every port the role manages, each once, with its protocol: the ones an allow-from-anywhere rule is removed for."""
    result: List[Dict[str, str]] = []
    pairs = [("tcp", port) for port in ports]
    pairs += [(rule.get("protocol") or "tcp", port) for rule in rules for port in rule.get("ports") or []]
    for proto, port in pairs:
        low, high = _port(port, "base_firewall_rules")
        span = str(low) if low == high else f"{low}-{high}"
        item = {"port": span, "proto": proto, "ufw_port": span.replace("-", ":")}
        if item not in result:
            result.append(item)
    return result


def firewall(manage: bool, name: str, probe_rc: Optional[int], probe_stdout: str, ports: List[int],
             sources: Optional[List[str]] = None, rules: Optional[List[Dict[str, Any]]] = None, interface: str = "",
             zones_stdout: str = "") -> Dict[str, Any]:
    """What to allow in the platform firewall, what to close, and the sentence that says what was done.

    Raises ValueError (naming the variable) on a source or port that is not one.
    """
    sources, rules = list(sources or []), list(rules or [])
    allow = firewall_rules(ports, sources, rules)
    managed = firewall_ports(ports, rules)
    active = firewall_active(manage, name, probe_rc, probe_stdout)
    if not manage:
        note = "base_firewall_manage is false"
    elif not active:
        note = f"{name} is not installed or not active: left alone"
    elif allow:
        by_port: Dict[str, List[str]] = {}
        for item in allow:
            by_port.setdefault(f"{item['port']}/{item['proto']}", []).append(item["source"])
        note = f"in {name}, allowed " + "; ".join(f"{port} from {', '.join(nets)}" for port, nets in by_port.items())
    else:
        note = (f"in {name}, allowed nothing: base_firewall_sources is empty, so "
                f"{', '.join(p['port'] + '/' + p['proto'] for p in managed)} can be reached from this host only")
    opened = sorted({int(item["port"].split("-")[0]) for item in allow}) if active else []
    default_deny = active and firewall_default_deny(name, probe_rc, probe_stdout, interface, zones_stdout)
    return {"firewall": name, "active": active, "default_deny": default_deny,
            "ports": opened, "rules": allow if active else [], "close": managed if active else [], "note": note}


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


def time_sync(wanted: bool, in_container: bool, service_mgr: str, service: str) -> Dict[str, Any]:
    """Whether chrony is installed and started: ``{"apply", "item"}`` (item None when not wanted)."""
    if in_container:
        why: Optional[str] = "the clock belongs to the container host"
    elif service_mgr != "systemd":
        why = f"the service manager is {service_mgr}, not systemd"
    else:
        why = None
    item = {"setting": "time_sync", "wanted": "chrony", "status": "skipped" if why else "applied",
            "reason": why or f"{service} enabled and started"}
    return {"apply": wanted and why is None, "item": item if wanted else None}


def limits_item(nofile: Any, memlock: Any, limits_file: str) -> Dict[str, Any]:
    """The report line of the service account's resource limits (always applied: PAM reads the file)."""
    return {"setting": "limits", "wanted": f"nofile {nofile}, memlock {memlock}", "status": "applied",
            "reason": f"set through {limits_file} (PAM sessions)"}


def tuning(tunables: List[Dict[str, Any]], exists: List[bool], writeable: List[bool], governors: str, service_mgr: str,
           sysctl_file: str, tmpfiles_file: str, limits: Optional[Dict[str, Any]] = None,
           clock: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Sort the enabled tunables (probed in order) into the sysctl and sysfs settings to write and the skipped ones.

    ``governors`` is the content of cpufreq's scaling_available_governors ('' when not read).  ``limits``
    (``wanted``, ``nofile``, ``memlock``, ``file``) and ``clock`` (``wanted``, ``in_container``, ``service``)
    add the resource limits and time synchronisation to the report; ``time_sync`` says whether chrony runs.
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
    if limits and limits.get("wanted"):
        items.append(limits_item(limits.get("nofile"), limits.get("memlock"), limits.get("file", "")))
    clock = clock or {}
    chrony = time_sync(bool(clock.get("wanted")), bool(clock.get("in_container")), service_mgr, clock.get("service", ""))
    if chrony["item"]:
        items.append(chrony["item"])
    return {"items": items, "sysctl_apply": sysctl_apply, "sysfs_apply": sysfs_apply,
            "write_sysctl": bool(sysctl_apply), "write_sysfs": bool(sysfs_apply), "time_sync": chrony["apply"]}
