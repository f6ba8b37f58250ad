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

#: The narrowest networks that still count as "anyone": wider than one LAN (an IPv4 /24, an IPv6 /64).  A rule from
#: a host or a LAN is the operator's choice of whom to admit; one from a wider network, or from anywhere, is not.
_WIDE_PREFIX = {4: 24, 6: 64}

#: A port spelling of ufw (``22``, ``22/tcp``, ``80,443/tcp``, ``1:65535/tcp``) or firewalld (``8000-8010/tcp``).
_PORT_SPEC = re.compile(r"^\d+(?:[:-]\d+)?(?:,\d+(?:[:-]\d+)?)*(?:/\w+)?$")

Span = Tuple[int, int, str]

#: firewalld services whose ports are a few single ports (firewalld's ``/usr/lib/firewalld/services``), so that a
#: zone's ``services:`` can be read: ``firewall-cmd --list-all`` prints a service's name, not its ports, and any other
#: service counts as every port (``redis`` holds Ray's 6379, ``samba-dc`` the range 49152-65535/tcp).  A listed
#: service still counts when its port is one of the cluster's.
_FIREWALLD_SERVICES = {
    "ssh": "22/tcp", "http": "80/tcp", "https": "443/tcp", "http3": "443/udp", "cockpit": "9090/tcp",
    "prometheus": "9090/tcp", "dhcp": "67/udp", "dhcpv6": "547/udp", "dhcpv6-client": "546/udp", "mdns": "5353/udp",
    "ntp": "123/udp", "dns": "53/tcp 53/udp", "tftp": "69/udp", "samba-client": "137/udp 138/udp",
    "ipp-client": "631/udp",
}

#: The bridges Docker creates and puts in the ``docker`` zone (``docker0``, ``br-`` and a network's 12-digit id):
#: what enters them comes from this host's containers.
_DOCKER_BRIDGE = re.compile(r"^(?:docker0|br-[0-9a-f]{12})$")


def _wide(source: str) -> bool:
    """Whether ``source`` (ufw's ``Anywhere``, an address or CIDR, a firewalld ``ipset:``) admits anyone.

    Anything not read as an address or network (an ipset, whose members the output does not show) counts as wide.
    """
    text = (source or "").strip()
    if not text or text.lower().startswith("anywhere"):
        return True
    if text.startswith("mac:") or re.fullmatch(r"(?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}", text):
        return False
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return True
    return network.prefixlen < _WIDE_PREFIX[network.version]


def _spans(spec: str, proto: str = "") -> List[Span]:
    """``80,443/tcp`` or ``1:65535`` (ufw), ``8000-8010/tcp`` (firewalld) as (first, last, protocol) spans."""
    ports, _sep, given = spec.partition("/")
    proto = given or proto
    spans = []
    for part in ports.split(","):
        first, _dash, last = part.replace(":", "-").partition("-")
        spans.append((int(first), int(last or first), proto))
    return spans


def _admits_anyone(spans: Optional[List[Span]], guarded: List[Span]) -> bool:
    """Whether a rule open to anyone, on ``spans`` (None: every port), reaches past a few single ports.

    A short list of single ports (ssh on 22, the API on 8000) keeps a firewall closed; every port, a TCP range
    (``1:65535/tcp``, ``10000-20000``) or one of the ``guarded`` ports (the cluster's own) does not.  UDP is left
    out: the cluster's traffic is TCP.
    """
    if spans is None:
        return True
    for low, high, proto in spans:
        if proto not in ("", "tcp"):
            continue
        if high > low or any(g_low <= high and low <= g_high for g_low, g_high, _p in guarded):
            return True
    return False


def _ufw_rule(line: str) -> Optional[Tuple[str, str, str]]:
    """A rule line of ``ufw status verbose`` as (to, action, from), its ``(v6)`` marks and ``# comment`` dropped.

    The columns are ``To``, ``Action`` (``ALLOW IN``, ``LIMIT IN``, ``DENY IN``, ``ALLOW OUT``, ``ALLOW FWD``) and
    ``From``; a comment follows ``From`` after `` # ``.
    """
    match = re.match(r"^(?P<to>.+?)\s+(?P<action>(?:ALLOW|LIMIT|DENY|REJECT)(?: (?:IN|OUT|FWD))?)\s+(?P<src>.+?)\s*$",
                     line.split(" # ", 1)[0])
    if not match:
        return None
    to, src = (match.group(key).replace("(v6)", " ").strip() for key in ("to", "src"))
    # ufw status verbose spells an application rule as its ports and the profile's name ("22/tcp (OpenSSH)"), and
    # marks a logged rule "(log)" or "(log-all)": the ports count, the marks do not (review round 3).
    to = re.sub(r"^(\S+)\s+\([^()]+\)$", r"\1", to)
    src = re.sub(r"\s*\((?:log|log-all)\)", "", src).strip()
    return to, match.group("action"), src


#: ufw application profiles whose ports are a few single ports (Ubuntu's ``/etc/ufw/applications.d``: openssh-server,
#: nginx, apache2, avahi).  ``ufw status`` prints only the profile's name, not its ports, and a profile file can say
#: anything (``ports=1:65535/tcp``), so any other name counts as every port.
_UFW_PROFILES = {
    "OpenSSH": "22/tcp", "Nginx HTTP": "80/tcp", "Nginx HTTPS": "443/tcp", "Nginx Full": "80,443/tcp",
    "Apache": "80/tcp", "Apache Secure": "443/tcp", "Apache Full": "80,443/tcp", "mDNS": "5353/udp",
}

#: The protocol ufw writes after an address with no port (``Anywhere/tcp``, ``172.18.0.2/tcp``, ``10.0.0.0/8/udp``).
_UFW_PROTO = re.compile(r"^(?P<address>.+?)/(?P<proto>tcp|udp|ah|esp|gre|ipv6|igmp)$", re.IGNORECASE)


def _ufw_address(word: str) -> Optional[Tuple[str, str]]:
    """``Anywhere``, an address or a network, with or without ufw's ``/proto``: (address, protocol); else None."""
    match = _UFW_PROTO.match(word)
    address, proto = (match.group("address"), match.group("proto").lower()) if match else (word, "")
    if address.lower() == "anywhere" or _is_address(address):
        return address, proto
    return None


def _ufw_to_spans(to: str) -> Optional[List[Span]]:
    """The ports a ufw ``To`` column admits: None for every port (of its protocol: UDP alone is not the cluster's).

    ``22/tcp`` and ``80,443/tcp`` are ports; ``Anywhere``, ``10.0.0.4`` every port, ``Anywhere/tcp``,
    ``172.18.0.2/tcp`` every TCP port (``ufw allow proto tcp [to ADDRESS]``: ufw writes the protocol after an
    address); ``10.0.0.4 22/tcp`` the port of that address; an application profile of :data:`_UFW_PROFILES` its
    ports.  Any other word (another profile, a spelling this reading does not know) counts as every port.
    """
    to = re.sub(r"\s+on\s+\S+", "", to).strip()
    spans: List[Span] = []
    for name, ports in _UFW_PROFILES.items():
        if to == name or to.endswith(" " + name):
            to, spans = to[:-len(name)].strip(), _spans(ports)
            break
    address_proto = ""
    for word in to.split():
        address = _ufw_address(word)
        if _PORT_SPEC.match(word):
            spans += _spans(word)
        elif address is None:
            return None
        else:
            address_proto = address[1]
    if spans:
        return spans
    return None if address_proto in ("", "tcp") else [(1, 65535, address_proto)]


def ufw_open_rules(text: str, guarded: Optional[List[Span]] = None) -> List[str]:
    """The rules of ``ufw status verbose`` that admit anyone past a few single ports (see :func:`_admits_anyone`).

    ``To`` is read by :func:`_ufw_to_spans` (``on eth0``, one interface, changes nothing: the cluster's NIC may be
    that one); ``From`` is ``Anywhere`` or an address, with ufw's ``/proto`` after it, a port or an application
    profile after it being a source port, which the client picks (every port).
    """
    found: List[str] = []
    guarded = list(guarded or [])
    in_rules = False
    for line in (text or "").splitlines():
        if line.startswith("--"):
            in_rules = True
            continue
        rule = _ufw_rule(line) if in_rules else None
        if rule is None or rule[1] not in ("ALLOW", "ALLOW IN", "LIMIT", "LIMIT IN"):
            continue
        to, src = rule[0], rule[2]
        spans = _ufw_to_spans(to)
        from_words = src.split()
        source = _ufw_address(from_words[0]) if from_words else None
        if len(from_words) > 1:
            spans = None  # a source port or profile: any destination port from a port the client chooses
        if (source is None or _wide(source[0])) and _admits_anyone(spans, guarded):
            found.append(line.strip())
    return found


def _is_address(word: str) -> bool:
    try:
        ipaddress.ip_network(word, strict=False)
    except ValueError:
        return False
    return True


def firewalld_zones(zones_stdout: str) -> List[Dict[str, Any]]:
    """The blocks of ``firewall-cmd --list-all-zones`` (or ``--list-all``): name, flags, fields and rich rules.

    Each zone's block starts with its name on an unindented line (``trusted``, ``public (default, active)``), then
    indented ``key: value`` lines (``interfaces: eth0 eth1``, ``sources: 10.0.0.0/8``, ``ports: 8000/tcp``); the
    rich rules follow ``rich rules:``, one a line, indented by a tab.
    """
    zones: List[Dict[str, Any]] = []
    for line in (zones_stdout or "").splitlines():
        if line.strip() and not line[:1].isspace():
            name, _sep, flags = line.strip().partition(" ")
            zones.append({"name": name, "flags": flags.strip("()").replace(" ", "").split(","), "fields": {},
                          "rich": [], "text": [line]})
        elif zones and line.strip():
            zone = zones[-1]
            zone["text"].append(line)
            key, sep, value = line.strip().partition(":")
            if sep and key in ("target", "interfaces", "sources", "services", "ports", "protocols", "source-ports",
                               "rich rules", "icmp-block-inversion", "forward", "masquerade", "forward-ports",
                               "icmp-blocks", "ingress-priority", "egress-priority"):
                zone["fields"][key] = value.strip()
            elif line.strip().startswith("rule "):
                zone["rich"].append(line.strip())
    return zones


def _rich_admits_anyone(rule: str, guarded: List[Span]) -> bool:
    """A firewalld rich rule that accepts anyone past a few single ports.

    ``rule family="ipv4" source address="10.0.0.0/8" port port="8000" protocol="tcp" accept``: the source (absent,
    ``NOT``, an ipset or a wide network: anyone), then the element (none: every port; ``port``; ``service``: a few
    named ports; ``protocol`` or ``source-port``: every port).
    """
    if not re.search(r"\saccept(\s|$)", rule):
        return False
    source = re.search(r'\ssource\s+(NOT\s+)?(address|ipset|mac)="([^"]*)"', rule)
    if source and not source.group(1):
        kind, value = source.group(2), source.group(3)
        if kind == "mac" or (kind == "address" and not _wide(value)):
            return False
    port = re.search(r'\sport\s+port="([^"]+)"\s+protocol="(\w+)"', rule)
    if port:
        return _admits_anyone(_spans(port.group(1), port.group(2)), guarded)
    service = re.search(r'\sservice\s+name="([^"]*)"', rule)
    if service:
        return _service_admits_anyone(service.group(1), guarded)
    return True


def _service_admits_anyone(name: str, guarded: List[Span]) -> bool:
    """A firewalld service open to anyone: one of :data:`_FIREWALLD_SERVICES` on the cluster's ports, or any other."""
    ports = _FIREWALLD_SERVICES.get(name)
    if ports is None:
        return True
    return any(_admits_anyone(_spans(spec), guarded) for spec in ports.split())


def _catch_all_deny(rule: str) -> bool:
    """A rich rule that rejects or drops whatever reaches it (``rule priority="32767" reject``, libvirt's zone)."""
    return re.fullmatch(r'rule(?:\s+priority="-?\d+")?\s+(?:reject(?:\s+type="[^"]*")?|drop)', rule) is not None


def _zone_open(zone: Dict[str, Any], guarded: List[Span]) -> List[str]:
    """What in a firewalld zone admits anyone it applies to past a few single ports (empty: nothing).

    A target other than ``default``, ``DROP`` or ``REJECT`` (``trusted``: ACCEPT) admits everyone unless a rich rule
    rejects whatever reaches it (libvirt's zone: target ACCEPT, ``rule priority="32767" reject``); a service counts
    as :func:`_service_admits_anyone` reads it.
    """
    fields = zone["fields"]
    found = []
    denies = fields.get("target", "default") in _FIREWALLD_DENY_TARGETS or any(map(_catch_all_deny, zone["rich"]))
    if zone["name"] == "trusted" or not denies:
        found.append(f"target {fields.get('target', 'ACCEPT')}")
    for name in fields.get("services", "").split():
        if _service_admits_anyone(name, guarded):
            known = "its ports include the cluster's" if name in _FIREWALLD_SERVICES else "its ports are not read"
            found.append(f"service {name} ({known})")
    for spec in fields.get("ports", "").split():
        if _PORT_SPEC.match(spec) and _admits_anyone(_spans(spec), guarded):
            found.append(f"port {spec}")
    for spec in fields.get("source-ports", "").split():
        if _PORT_SPEC.match(spec) and _admits_anyone(None, guarded):
            found.append(f"source port {spec}")
    for proto in fields.get("protocols", "").split():
        if proto in ("tcp", "sctp", "dccp"):
            found.append(f"protocol {proto}")
    found += [f"rich rule {rule}" for rule in zone["rich"] if _rich_admits_anyone(rule, guarded)]
    return found


def _zone_interfaces(zone: Dict[str, Any]) -> List[str]:
    """The interfaces of a zone that may take a connection from another machine: all but Docker's own bridges.

    Docker puts the bridges it creates (``docker0``, ``br-<network id>``) in its zone ``docker`` (target ACCEPT);
    what enters them comes from this host's containers.  Only that pair counts as Docker's: another interface in the
    ``docker`` zone, or a Docker bridge moved to another zone, is read like any NIC.
    """
    names = zone["fields"].get("interfaces", "").split()
    if zone["name"] == "docker":
        return [name for name in names if not _DOCKER_BRIDGE.match(name)]
    return names


def firewalld_open_rules(probe_stdout: str, interface: str = "", zones_stdout: str = "",
                         guarded: Optional[List[Span]] = None) -> List[str]:
    """What in firewalld admits anyone to this host past a few single ports (empty: the firewall is closed).

    Every zone that takes connections from other machines counts, not only the zone of ``interface`` (the NIC that
    carries the cluster's traffic, whose zone is named first): the cluster's sockets (torch's TCPStore, Ray) listen
    on every address, so a second NIC in ``trusted`` admits its whole network to them.  These are the default zone
    (``--list-all``, ``probe_stdout``, or the zone marked ``default`` in ``--list-all-zones``: it takes every NIC
    that no zone lists), every zone that holds an interface (Docker's own bridges in its ``docker`` zone aside, see
    :func:`_zone_interfaces`), and every zone bound to a wide source (source bindings come first: ``0.0.0.0/0`` in
    ``trusted``); a zone bound to a host or a LAN admits only those, the operator's choice.
    """
    guarded = list(guarded or [])
    zones = firewalld_zones(zones_stdout)
    default = next((z for z in zones if "default" in z["flags"]), None)
    if default is None:
        listed = firewalld_zones(probe_stdout)
        default = next((z for z in zones if listed and z["name"] == listed[0]["name"]), None)
        default = default or (listed[0] if listed else None)
    if default is None and not zones:
        return ["no zone in firewall-cmd's output"]
    found: List[str] = []
    zones = ([default] if default is not None and all(z is not default for z in zones) else []) + zones
    zones.sort(key=lambda zone: interface not in zone["fields"].get("interfaces", "").split())
    for zone in zones:
        sources = [source for source in zone["fields"].get("sources", "").split() if _wide(source)]
        nics = _zone_interfaces(zone)
        if sources:
            label = f"zone {zone['name']} (sources {' '.join(sources)})"
        elif nics:
            label = f"zone {zone['name']} (interfaces {' '.join(nics)})"
        elif zone is default:
            label = f"zone {zone['name']} (the default zone)"
        else:
            continue
        found += [f"{label}: {what}" for what in _zone_open(zone, guarded)]
    return found


def firewalld_zone_of(zones_stdout: str, interface: str) -> str:
    """The block of ``firewall-cmd --list-all-zones`` for the zone that lists ``interface``; empty when none does.

    A NIC that no zone lists falls in the default zone.
    """
    for zone in firewalld_zones(zones_stdout):
        if interface and interface in zone["fields"].get("interfaces", "").split():
            return "\n".join(zone["text"])
    return ""


def firewall_open_rules(firewall: str, probe_rc: Optional[int], probe_stdout: str, interface: str = "",
                        zones_stdout: str = "", guarded: Optional[List[Span]] = None) -> List[str]:
    """Why the firewall does not refuse what a short list of rules does not admit (empty: it does).

    An active firewall is not a closed one: ufw with ``Default: allow (incoming)`` or firewalld's default zone
    ``trusted`` (target ACCEPT) admits everyone, and so does a default deny next to a rule that admits anyone to
    every port (``ufw allow from any``, ``1:65535/tcp``, firewalld's ``trusted`` zone bound to ``0.0.0.0/0``, a rich
    rule ``accept`` with no source).  A rule from anywhere to a few single ports (ssh on 22) keeps it closed, unless
    the port is one of ``guarded`` (spans ``(first, last, protocol)``: the cluster's ports).
    ``ufw status verbose`` prints ``Default: deny (incoming), ...`` (or ``reject``) and the rules;
    ``firewall-cmd --list-all`` the default zone (``public (active)``, ``target: default``, its ports and rich rules);
    ``nft list ruleset`` holds ``type filter hook input priority ...; policy drop;`` for a closed input chain (its
    rules are not read: an nftables host is refused unless every input chain drops).
    With firewalld, every zone that takes connections from other machines counts (:func:`firewalld_open_rules`):
    the default zone, every zone that holds an interface (``interface``, the NIC that carries the cluster's traffic,
    among them; Docker's own bridges aside) and every zone bound to a wide source, as ``firewall-cmd --list-all-zones``
    (``zones_stdout``) lists them.  Services and application profiles are read by name (the outputs do not show their
    ports): a short list of well-known ones with a few single ports (:data:`_UFW_PROFILES`,
    :data:`_FIREWALLD_SERVICES`) keeps the firewall closed, any other counts as every port.
    """
    if probe_rc != 0:
        return [f"{firewall or 'the firewall'} did not answer (exit status {probe_rc})"]
    text = probe_stdout or ""
    if firewall == "ufw":
        match = re.search(r"^Default:\s*(\w+)\s*\(incoming\)", text, re.MULTILINE)
        if "Status: active" not in text:
            return ["ufw is not active"]
        if not match or match.group(1) not in ("deny", "reject"):
            return [f"default {match.group(1) if match else 'unknown'} (incoming)"]
        return ufw_open_rules(text, guarded)
    if firewall == "firewalld":
        return firewalld_open_rules(text, interface, zones_stdout, guarded)
    if firewall == "nftables":
        chains = re.findall(r"type filter hook input priority [^;]+;\s*policy (\w+);", text)
        return [] if chains and all(policy == "drop" for policy in chains) else ["an input chain does not drop"]
    return [f"{firewall or 'no firewall'} is not read"]


def firewall_default_deny(firewall: str, probe_rc: Optional[int], probe_stdout: str, interface: str = "",
                          zones_stdout: str = "", guarded: Optional[List[Span]] = None) -> bool:
    """Whether the firewall refuses inbound connections that no narrow rule admits (:func:`firewall_open_rules`)."""
    return not firewall_open_rules(firewall, probe_rc, probe_stdout, interface, zones_stdout, guarded)


def guarded_spans(ports: List[Any]) -> List[Span]:
    """Ports and ranges (``6379``, ``"32768-60999"``) as TCP spans for :func:`firewall_open_rules`."""
    return [(low, high, "tcp") for low, high in (_port(port, "guarded ports") for port in ports)]


def firewall_probes_default_deny(probes: List[Dict[str, Any]], interface: str = "",
                                 guarded: Optional[List[Span]] = None) -> Dict[str, Any]:
    """The verdict of a host's firewalls read as they are now: ``{"default_deny", "firewall", "why"}``.

    ``probes`` holds one entry per firewall the host may run (``name`` ufw or firewalld, the probe's ``rc`` and
    ``stdout``, firewalld's ``zones_stdout``); the active ones decide, and each must be closed.  No active
    firewall: not closed.
    """
    active = [probe for probe in probes if firewall_active(True, probe.get("name", ""), probe.get("rc"),
                                                           probe.get("stdout") or "")]
    if not active:
        return {"default_deny": False, "firewall": "", "why": ["no active ufw or firewalld"]}
    why: List[str] = []
    for probe in active:
        why += [f"{probe['name']}: {what}" for what in
                firewall_open_rules(probe["name"], probe.get("rc"), probe.get("stdout") or "", interface,
                                    probe.get("zones_stdout") or "", guarded)]
    return {"default_deny": not why, "firewall": ", ".join(probe["name"] for probe in active), "why": why}


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
