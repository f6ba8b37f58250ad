"""The base role's decisions and report sentences (module_utils/base_report.py)."""

from pathlib import Path

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import base_report

HEADERS = "linux-headers-6.1.0-28-amd64"


@pytest.mark.parametrize("wanted, found, status, reason", [
    (False, None, "off", "base_driver_build is false"),
    (False, True, "off", "base_driver_build is false"),
    (True, True, "installed", "dkms and " + HEADERS),
    (True, False, "skipped", "no package " + HEADERS + " for the running kernel 6.1.0-28-amd64 (container or custom kernel): "
     "dkms and headers not installed, a driver cannot be built here"),
    (True, None, "skipped", "no package " + HEADERS + " for the running kernel 6.1.0-28-amd64 (container or custom kernel): "
     "dkms and headers not installed, a driver cannot be built here"),
])
def test_driver_build(wanted, found, status, reason):
    assert base_report.driver_build(wanted, HEADERS, found, "6.1.0-28-amd64") == {
        "wanted": wanted, "headers_package": HEADERS, "status": status, "reason": reason}


@pytest.mark.parametrize("manage, name, rc, stdout, active, note", [
    (False, "ufw", None, "", False, "base_firewall_manage is false"),
    (True, "ufw", 0, "Status: active\n\nTo Action From\n", True, "in ufw, allowed 8000/tcp from 10.0.0.0/8; 8001/tcp from 10.0.0.0/8"),
    (True, "ufw", 0, "Status: inactive\n", False, "ufw is not installed or not active: left alone"),
    (True, "ufw", 127, "", False, "ufw is not installed or not active: left alone"),
    (True, "firewalld", 0, "running\n", True, "in firewalld, allowed 8000/tcp from 10.0.0.0/8; 8001/tcp from 10.0.0.0/8"),
    (True, "firewalld", 252, "not running\n", False, "firewalld is not installed or not active: left alone"),
])
def test_firewall(manage, name, rc, stdout, active, note):
    result = base_report.firewall(manage, name, rc, stdout, [8000, 8001], ["10.0.0.0/8"])
    assert (result["firewall"], result["active"], result["note"]) == (name, active, note)
    assert result["ports"] == ([8000, 8001] if active else [])
    assert [(r["port"], r["source"]) for r in result["rules"]] == ([("8000", "10.0.0.0/8"), ("8001", "10.0.0.0/8")] if active else [])
    assert [c["port"] for c in result["close"]] == (["8000", "8001"] if active else [])


@pytest.mark.parametrize("name", ["ufw", "firewalld"])
def test_no_source_opens_nothing(name):
    """The default (base_firewall_sources empty): the port is allowed from nobody, and an open-to-all rule goes."""
    result = base_report.firewall(True, name, 0, "Status: active" if name == "ufw" else "running", [8000])
    assert result["active"] and result["rules"] == [] and result["ports"] == []
    assert result["close"] == [{"port": "8000", "proto": "tcp", "ufw_port": "8000"}]
    assert result["note"] == f"in {name}, allowed nothing: base_firewall_sources is empty, so 8000/tcp can be reached from this host only"


def test_rules_per_source_family_and_range():
    rules = base_report.firewall_rules([8000], ["192.0.2.7", "2001:db8::/32"],
                                       [{"ports": ["10000-10100", 29500], "sources": ["10.1.0.0/16"], "protocol": "udp"}])
    assert [(r["port"], r["proto"], r["source"], r["family"], r["ufw_port"]) for r in rules] == [
        ("8000", "tcp", "192.0.2.7/32", "ipv4", "8000"),
        ("8000", "tcp", "2001:db8::/32", "ipv6", "8000"),
        ("10000-10100", "udp", "10.1.0.0/16", "ipv4", "10000:10100"),
        ("29500", "udp", "10.1.0.0/16", "ipv4", "29500"),
    ]
    assert rules[0]["rich_rule"] == 'rule family="ipv4" source address="192.0.2.7/32" port port="8000" protocol="tcp" accept'
    assert rules[1]["rich_rule"] == 'rule family="ipv6" source address="2001:db8::/32" port port="8000" protocol="tcp" accept'
    assert base_report.firewall_ports([8000, 8000], [{"ports": ["10000-10100"], "sources": []}]) == [
        {"port": "8000", "proto": "tcp", "ufw_port": "8000"}, {"port": "10000-10100", "proto": "tcp", "ufw_port": "10000:10100"}]


@pytest.mark.parametrize("ports, sources, rules, words", [
    ([8000], ["10.0.0.0/33"], [], ["base_firewall_ports/base_firewall_sources", "'10.0.0.0/33'", "CIDR"]),
    ([8000], ["any; rm -rf /"], [], ["base_firewall_sources", "not an IP address"]),
    ([70000], ["10.0.0.0/8"], [], ["base_firewall_ports", "70000", "1-65535"]),
    ([8000], [], [{"ports": ["10100-10000"], "sources": ["10.0.0.1"]}], ["base_firewall_rules[0]", "10100-10000"]),
    ([8000], [], [{"ports": [1], "sources": ["10.0.0.1"], "protocol": "icmp"}], ["base_firewall_rules[0]", "icmp"]),
])
def test_bad_firewall_values_name_the_variable(ports, sources, rules, words):
    with pytest.raises(ValueError) as error:
        base_report.firewall(True, "ufw", 0, "Status: active", ports, sources, rules)
    for word in words:
        assert word in str(error.value)


SWAPPINESS = {"name": "vm.swappiness", "kind": "sysctl", "value": 10, "probe": "/proc/sys/vm/swappiness"}
THP = {"name": "transparent_hugepage", "kind": "sysfs", "value": "madvise", "probe": "/sys/thp", "write": "/sys/thp"}
GOVERNOR = {"name": "cpu_governor", "kind": "sysfs", "value": "performance", "probe": "/sys/gov", "write": "/sys/cpu*/gov"}


def tune(tunables, exists, writeable, governors="", service_mgr="systemd"):
    return base_report.tuning(tunables, exists, writeable, governors, service_mgr, "/etc/sysctl.d/90.conf", "/etc/tmpfiles.d/t.conf")


def test_tuning_applies_what_the_kernel_allows():
    result = tune([SWAPPINESS, THP, GOVERNOR], [True] * 3, [True] * 3, "ondemand performance powersave\n")
    assert result["sysctl_apply"] == {"vm.swappiness": 10}
    assert result["sysfs_apply"] == [{"path": "/sys/thp", "value": "madvise"}, {"path": "/sys/cpu*/gov", "value": "performance"}]
    assert [(i["setting"], i["wanted"], i["status"], i["reason"]) for i in result["items"]] == [
        ("vm.swappiness", "10", "applied", "set through /etc/sysctl.d/90.conf"),
        ("transparent_hugepage", "madvise", "applied", "set through /etc/tmpfiles.d/t.conf"),
        ("cpu_governor", "performance", "applied", "set through /etc/tmpfiles.d/t.conf"),
    ]


@pytest.mark.parametrize("tunable, exists, writeable, governors, service_mgr, reason", [
    (SWAPPINESS, False, False, "", "systemd", "/proc/sys/vm/swappiness does not exist: the kernel does not expose it"),
    (SWAPPINESS, True, False, "", "systemd", "/proc/sys/vm/swappiness is read-only (container or locked-down kernel)"),
    (THP, True, True, "", "sysvinit", "systemd-tmpfiles persists it and the service manager is sysvinit"),
    (GOVERNOR, True, True, "ondemand powersave", "systemd", "cpufreq offers ondemand powersave, not performance"),
])
def test_tuning_skips_with_the_reason(tunable, exists, writeable, governors, service_mgr, reason):
    result = tune([tunable], [exists], [writeable], governors, service_mgr)
    assert result["sysctl_apply"] == {} and result["sysfs_apply"] == []
    assert result["items"] == [{"setting": tunable["name"], "wanted": str(tunable["value"]), "status": "skipped", "reason": reason}]


@pytest.mark.parametrize("wanted, in_container, service_mgr, apply, status, reason", [
    (True, False, "systemd", True, "applied", "chronyd enabled and started"),
    (True, True, "systemd", False, "skipped", "the clock belongs to the container host"),
    (True, False, "sysvinit", False, "skipped", "the service manager is sysvinit, not systemd"),
    # A container wins over the service manager: its clock is never its own.
    (True, True, "process_api", False, "skipped", "the clock belongs to the container host"),
    (False, False, "systemd", False, None, None),
])
def test_time_sync_runs_chrony_only_where_the_clock_is_the_hosts(wanted, in_container, service_mgr, apply, status, reason):
    result = base_report.tuning([], [], [], "", service_mgr, "/s", "/t",
                                clock={"wanted": wanted, "in_container": in_container, "service": "chronyd"})
    assert result["time_sync"] is apply
    items = [i for i in result["items"] if i["setting"] == "time_sync"]
    assert items == ([{"setting": "time_sync", "wanted": "chrony", "status": status, "reason": reason}] if wanted else [])


@pytest.mark.parametrize("limits, items", [
    (None, []),
    ({"wanted": False, "nofile": 65536, "memlock": "unlimited", "file": "/etc/security/limits.d/90.conf"}, []),
    ({"wanted": True, "nofile": 65536, "memlock": "unlimited", "file": "/etc/security/limits.d/90.conf"},
     [{"setting": "limits", "wanted": "nofile 65536, memlock unlimited", "status": "applied",
       "reason": "set through /etc/security/limits.d/90.conf (PAM sessions)"}]),
])
def test_limits_are_reported_when_written(limits, items):
    assert base_report.tuning([], [], [], "", "systemd", "/s", "/t", limits=limits)["items"] == items


@pytest.mark.parametrize("tunables, exists, write_sysctl, write_sysfs", [
    ([], [], False, False),
    ([SWAPPINESS], [True], True, False),
    ([THP], [True], False, True),
    ([SWAPPINESS, THP], [False, True], False, True),
    ([SWAPPINESS, THP], [False, False], False, False),
])
def test_write_flags_follow_what_applies(tunables, exists, write_sysctl, write_sysfs):
    result = tune(tunables, exists, [True] * len(tunables))
    assert (result["write_sysctl"], result["write_sysfs"]) == (write_sysctl, write_sysfs)


def test_limits_and_time_sync_come_after_the_tunables():
    result = base_report.tuning([SWAPPINESS], [True], [True], "", "systemd", "/s", "/t",
                                limits={"wanted": True, "nofile": 1, "memlock": 2, "file": "/l"},
                                clock={"wanted": True, "service": "chrony"})
    assert [i["setting"] for i in result["items"]] == ["vm.swappiness", "limits", "time_sync"]


# --- issue 37: an active firewall is not a closed one -----------------------------------------------------------

UFW_DENY = """Status: active
Logging: on (low)
Default: deny (incoming), allow (outgoing), disabled (routed)
New profiles: skip

To                         Action      From
--                         ------      ----
22/tcp                     ALLOW IN    Anywhere
"""
UFW_ALLOW = UFW_DENY.replace("Default: deny (incoming)", "Default: allow (incoming)")
UFW_REJECT = UFW_DENY.replace("Default: deny (incoming)", "Default: reject (incoming)")
FIREWALLD_PUBLIC = """public (active)
  target: default
  icmp-block-inversion: no
  interfaces: eth0
  sources:
  services: dhcpv6-client ssh
  ports:
  protocols:
  forward: yes
  masquerade: no
  forward-ports:
  source-ports:
  icmp-blocks:
  rich rules:
"""
FIREWALLD_TRUSTED = FIREWALLD_PUBLIC.replace("public (active)", "trusted (active)").replace("target: default", "target: ACCEPT")
FIREWALLD_ACCEPT = FIREWALLD_PUBLIC.replace("target: default", "target: ACCEPT")
FIREWALLD_DROP = FIREWALLD_PUBLIC.replace("public (active)", "drop (active)").replace("target: default", "target: DROP")
NFT_DROP = """table inet filter {
\tchain input {
\t\ttype filter hook input priority filter; policy drop;
\t\tct state established,related accept
\t\tiif "lo" accept
\t}
\tchain forward {
\t\ttype filter hook forward priority filter; policy drop;
\t}
}
"""
NFT_ACCEPT = NFT_DROP.replace("hook input priority filter; policy drop;", "hook input priority filter; policy accept;")


@pytest.mark.parametrize("firewall, rc, out, closed", [
    ("ufw", 0, UFW_DENY, True),
    ("ufw", 0, UFW_REJECT, True),
    # the attack: ufw "active" with the default allow admits everyone to the cluster ports
    ("ufw", 0, UFW_ALLOW, False),
    ("ufw", 0, "Status: inactive\n", False),
    ("ufw", 1, "", False),
    ("firewalld", 0, FIREWALLD_PUBLIC, True),
    ("firewalld", 0, FIREWALLD_DROP, True),
    # the attack: firewalld running with the NIC in the trusted zone, or a zone whose target accepts
    ("firewalld", 0, FIREWALLD_TRUSTED, False),
    ("firewalld", 0, FIREWALLD_ACCEPT, False),
    ("firewalld", 252, "FirewallD is not running\n", False),
    ("nftables", 0, NFT_DROP, True),
    ("nftables", 0, NFT_ACCEPT, False),
    ("nftables", 0, "", False),
])
def test_firewall_default_deny_is_read_from_the_probe(firewall, rc, out, closed):
    assert base_report.firewall_default_deny(firewall, rc, out) is closed


# firewall-cmd --list-all-zones: every zone's block, its name unindented (firewalld's firewall-cmd(1), "--list-all-zones").
# The default zone public holds eth0; eth1 (the cluster's NIC) sits in trusted, whose target ACCEPT admits everyone.
FIREWALLD_ZONES = (FIREWALLD_DROP.replace("interfaces: eth0", "interfaces:") + "\n" + FIREWALLD_PUBLIC + "\n"
                   + FIREWALLD_TRUSTED.replace("trusted (active)", "trusted").replace("interfaces: eth0", "interfaces: eth1 ib0"))


@pytest.mark.parametrize("interface, zones, closed", [
    # no zone listing: the default zone (the --list-all probe) decides
    ("eth1", "", True),
    # the attack: the default zone denies, but a NIC is in trusted; the cluster's sockets listen on every address,
    # so it does not matter whether that NIC carries the cluster's traffic (review round 2)
    ("", FIREWALLD_ZONES, False),
    ("eth1", FIREWALLD_ZONES, False),
    ("ib0", FIREWALLD_ZONES, False),
    ("eth0", FIREWALLD_ZONES, False),
    ("eth9", FIREWALLD_ZONES, False),
    # every NIC in the default zone or in drop
    ("eth0", FIREWALLD_ZONES.replace("interfaces: eth1 ib0", "interfaces:"), True),
    ("eth5", FIREWALLD_ZONES.replace("interfaces: eth1 ib0", "interfaces:")
     .replace("drop (active)\n  target: DROP\n  icmp-block-inversion: no\n  interfaces:",
              "drop (active)\n  target: DROP\n  icmp-block-inversion: no\n  interfaces: eth5"), True),
    # a NIC in drop while the default zone is trusted: the default zone takes every NIC that no zone lists
    ("eth5", FIREWALLD_ZONES.replace("interfaces: eth1 ib0", "interfaces:")
     .replace("drop (active)\n  target: DROP\n  icmp-block-inversion: no\n  interfaces:",
              "drop (active)\n  target: DROP\n  icmp-block-inversion: no\n  interfaces: eth5")
     .replace("trusted\n", "trusted (default)\n"), False),
])
def test_firewalld_reads_the_zone_of_the_cluster_nic(interface, zones, closed):
    default = FIREWALLD_PUBLIC
    assert base_report.firewall_default_deny("firewalld", 0, default, interface, zones) is closed
    assert base_report.firewall(True, "firewalld", 0, default, [8000], [], [], interface, zones)["default_deny"] is closed


def test_the_recorded_firewall_says_whether_it_is_closed():
    assert base_report.firewall(True, "ufw", 0, UFW_DENY, [8000], [])["default_deny"] is True
    assert base_report.firewall(True, "ufw", 0, UFW_ALLOW, [8000], [])["default_deny"] is False
    assert base_report.firewall(True, "ufw", 0, UFW_ALLOW, [8000], [])["active"] is True
    assert base_report.firewall(False, "ufw", 0, UFW_DENY, [8000], [])["default_deny"] is False


# --- a default deny next to a rule that admits anyone is not a closed firewall ----------------------------------
# Real outputs of ufw status verbose and firewall-cmd --list-all-zones (fixtures/firewall/README.md); the open
# variants replace one line the way the operator's command would have added it.

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "firewall"
UFW = (FIXTURES / "ufw-status-verbose.txt").read_text()
ZONES = (FIXTURES / "firewalld-list-all-zones.txt").read_text()
UFW_RULE = "60000:61000/udp            ALLOW IN    Anywhere                   # mosh\n"
PUBLIC_PORTS = "  ports: 8000/tcp\n"
PUBLIC_SERVICES = "  services: dhcpv6-client ssh\n"
# libvirt's zone (libvirt's src/network/libvirt.zone): target ACCEPT, a few services, and a last rich rule that
# rejects the rest
LIBVIRT_REJECT = '\trule priority="32767" reject\n'
LIBVIRT = ("libvirt (active)\n  target: ACCEPT\n  ingress-priority: 0\n  egress-priority: 0\n  icmp-block-inversion: no\n"
           "  interfaces: virbr0\n  sources: \n  services: dhcp dhcpv6 dns ssh tftp\n  ports: \n"
           "  protocols: icmp ipv6-icmp\n  forward: no\n  masquerade: no\n  forward-ports: \n  source-ports: \n"
           "  icmp-blocks: \n  rich rules: \n" + LIBVIRT_REJECT)
PUBLIC_RICH = '\trule family="ipv4" source address="203.0.113.9" reject\n'
TRUSTED_SOURCES = "trusted\n  target: ACCEPT\n  ingress-priority: 0\n  egress-priority: 0\n  icmp-block-inversion: no\n" \
                  "  interfaces: \n  sources: \n"


def _trusted(sources):
    return ZONES.replace(TRUSTED_SOURCES, TRUSTED_SOURCES.replace("trusted\n", "trusted (active)\n")
                         .replace("  sources: \n", f"  sources: {sources}\n"))


@pytest.mark.parametrize("what, out, closed", [
    ("ssh, an application profile, a LAN, the members, a UDP range", UFW, True),
    # the attacks: ufw allow from any; ufw allow 1:65535/tcp; a rule to every port from a wide network
    ("ufw allow from any", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    Anywhere\n"), False),
    ("ufw allow from any (v6 only)",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere (v6)              ALLOW IN    Anywhere (v6)\n"), False),
    ("ufw allow 1:65535/tcp", UFW.replace(UFW_RULE, UFW_RULE + "1:65535/tcp                ALLOW IN    Anywhere\n"), False),
    ("ufw allow 10000:20000 (both protocols)",
     UFW.replace(UFW_RULE, UFW_RULE + "10000:20000                ALLOW IN    Anywhere\n"), False),
    ("ufw allow from 10.0.0.0/8", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    10.0.0.0/8\n"),
     False),
    ("ufw allow in on eth1", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere on eth1           ALLOW IN    Anywhere\n"), False),
    ("ufw allow to the host's address", UFW.replace(UFW_RULE, UFW_RULE + "10.0.0.4                   ALLOW IN    Anywhere\n"),
     False),
    ("ufw allow from any port 53 (a source port the client picks)",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    Anywhere 53\n"), False),
    ("ufw limit from any", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   LIMIT IN    Anywhere\n"), False),
    # review round 2: ufw writes a rule's protocol after an address with no port (ufw's get_status, its tests'
    # "Anywhere/tcp (v6)"): every TCP port, not an application profile
    ("ufw allow proto tcp from any", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere/tcp               ALLOW IN    Anywhere/tcp\n"
                                                 "Anywhere/tcp (v6)          ALLOW IN    Anywhere/tcp (v6)\n"), False),
    ("ufw allow proto tcp from any to 172.18.0.2",
     UFW.replace(UFW_RULE, UFW_RULE + "172.18.0.2/tcp             ALLOW IN    Anywhere\n"), False),
    ("ufw allow in on eth0 proto tcp",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere/tcp on eth0       ALLOW IN    Anywhere/tcp\n"), False),
    ("ufw allow proto tcp from 10.0.0.0/8",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere/tcp               ALLOW IN    10.0.0.0/8/tcp\n"), False),
    # an application profile whose ports this reading does not know counts as every port
    ("ufw allow Samba", UFW.replace(UFW_RULE, UFW_RULE + "Samba                      ALLOW IN    Anywhere\n"), False),
    ("ufw allow from any app OpenSSH (a source profile)",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    Anywhere OpenSSH\n"), False),
    # narrow enough: one host or one LAN to every port, a single port from anywhere, a denied or outgoing rule
    ("ufw allow from 192.0.2.7", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    192.0.2.7\n"), True),
    ("ufw allow from 192.168.10.0/24",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    192.168.10.0/24\n"), True),
    ("ufw allow 443/tcp", UFW.replace(UFW_RULE, UFW_RULE + "443/tcp                    ALLOW IN    Anywhere\n"), True),
    ("ufw allow 80,443/tcp", UFW.replace(UFW_RULE, UFW_RULE + "80,443/tcp                 ALLOW IN    Anywhere\n"), True),
    ("ufw allow proto udp from any", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere/udp               ALLOW IN    Anywhere/udp\n"),
     True),
    ("ufw allow proto tcp from 192.0.2.7",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere/tcp               ALLOW IN    192.0.2.7/tcp\n"), True),
    ("ufw allow 'Apache Full'", UFW.replace(UFW_RULE, UFW_RULE + "Apache Full                ALLOW IN    Anywhere\n"), True),
    ("ufw allow 'Nginx HTTPS' (v6)",
     UFW.replace(UFW_RULE, UFW_RULE + "Nginx HTTPS (v6)           ALLOW IN    Anywhere (v6)\n"), True),
    ("ufw allow to 172.18.0.2 app OpenSSH",
     UFW.replace(UFW_RULE, UFW_RULE + "172.18.0.2 OpenSSH         ALLOW IN    Anywhere\n"), True),
    # review round 3: the verbose spelling of an application rule is its ports and the profile ("22/tcp (OpenSSH)"),
    # and a logged rule ends "(log)": read as those ports, not as an unknown profile of every port
    ("ufw allow OpenSSH (verbose)",
     UFW.replace(UFW_RULE, UFW_RULE + "22/tcp (OpenSSH)           ALLOW IN    Anywhere\n"
                 "22/tcp (OpenSSH (v6))      ALLOW IN    Anywhere (v6)\n"), True),
    ("ufw allow log 443/tcp", UFW.replace(UFW_RULE, UFW_RULE + "443/tcp                    ALLOW IN    Anywhere (log)\n"), True),
    ("ufw allow log-all from any",
     UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    Anywhere (log-all)\n"), False),
    ("ufw deny from any", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   DENY IN     Anywhere\n"), True),
    ("ufw route allow", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW FWD   Anywhere\n"), True),
    ("ufw allow out", UFW.replace(UFW_RULE, UFW_RULE + "Anywhere                   ALLOW OUT   Anywhere\n"), True),
    ("default allow", UFW.replace("Default: deny (incoming)", "Default: allow (incoming)"), False),
])
def test_ufw_rules_that_admit_anyone_open_the_firewall(what, out, closed):
    assert base_report.firewall_default_deny("ufw", 0, out) is closed, what
    assert base_report.firewall(True, "ufw", 0, out, [8000], [], [])["default_deny"] is closed, what


@pytest.mark.parametrize("what, zones, interface, closed", [
    ("public: ssh, the API port, the members' rich rules; docker0 in docker (ACCEPT)", ZONES, "eth1", True),
    ("the same, no cluster NIC (the default zone)", ZONES, "", True),
    # the attacks: trusted bound to anywhere (source bindings come first); every port; a rich accept from anyone
    ("trusted bound to 0.0.0.0/0", _trusted("0.0.0.0/0"), "eth1", False),
    ("trusted bound to 0.0.0.0/0, no cluster NIC", _trusted("0.0.0.0/0"), "", False),
    ("trusted bound to 10.0.0.0/8", _trusted("10.0.0.0/8"), "eth1", False),
    ("trusted bound to ::/0", _trusted("::/0"), "eth1", False),
    ("ports 1-65535/tcp", ZONES.replace(PUBLIC_PORTS, "  ports: 8000/tcp 1-65535/tcp\n"), "eth1", False),
    ("ports 10000-10100/tcp", ZONES.replace(PUBLIC_PORTS, "  ports: 10000-10100/tcp\n"), "eth1", False),
    ("protocols tcp", ZONES.replace("ssh\n  ports: 8000/tcp\n  protocols: \n", "ssh\n  ports: 8000/tcp\n  protocols: tcp\n"),
     "eth1", False),
    ("source-ports 53/tcp", ZONES.replace("  masquerade: no\n  forward-ports: \n  source-ports: \n  icmp-blocks: \n"
                                          "  rich rules: \n\t", "  masquerade: no\n  forward-ports: \n  source-ports: 53/tcp\n"
                                          "  icmp-blocks: \n  rich rules: \n\t"), "eth1", False),
    ("rich rule accept from anyone", ZONES.replace(PUBLIC_RICH, PUBLIC_RICH + '\trule family="ipv4" accept\n'), "eth1", False),
    ("rich rule accept from a wide network",
     ZONES.replace(PUBLIC_RICH, PUBLIC_RICH + '\trule family="ipv4" source address="10.0.0.0/8" accept\n'), "eth1", False),
    ("rich rule accept NOT from a host",
     ZONES.replace(PUBLIC_RICH, PUBLIC_RICH + '\trule family="ipv4" source NOT address="192.0.2.7" accept\n'), "eth1", False),
    ("rich rule accept a TCP range from anyone",
     ZONES.replace(PUBLIC_RICH, PUBLIC_RICH + '\trule family="ipv4" port port="5000-6000" protocol="tcp" accept\n'),
     "eth1", False),
    ("the cluster NIC in trusted", ZONES.replace("  interfaces: eth0 eth1\n", "  interfaces: eth0\n")
     .replace(TRUSTED_SOURCES, TRUSTED_SOURCES.replace("  interfaces: \n", "  interfaces: eth1\n")), "eth1", False),
    # review round 2: a service's ports are not in firewall-cmd's output; one not known to be a few single ports
    # counts as open (redis: Ray's 6379; samba-dc: 49152-65535/tcp)
    ("service redis", ZONES.replace(PUBLIC_SERVICES, "  services: dhcpv6-client redis ssh\n"), "eth1", False),
    ("service samba-dc", ZONES.replace(PUBLIC_SERVICES, "  services: dhcpv6-client samba-dc ssh\n"), "eth1", False),
    ("rich rule accept redis from anyone",
     ZONES.replace(PUBLIC_RICH, PUBLIC_RICH + '\trule family="ipv4" service name="redis" accept\n'), "eth1", False),
    # every zone that holds a NIC counts: the cluster's sockets listen on every address
    ("another NIC in trusted",
     ZONES.replace(TRUSTED_SOURCES, TRUSTED_SOURCES.replace("  interfaces: \n", "  interfaces: eth9\n")), "eth1", False),
    ("another NIC in the docker zone", ZONES.replace("  interfaces: docker0\n", "  interfaces: docker0 eth9\n"), "eth1",
     False),
    ("a libvirt-like zone without its final reject", ZONES + "\n" + LIBVIRT.replace(LIBVIRT_REJECT, ""), "eth1", False),
    # narrow enough: trusted bound to one host or one LAN, a single port or a service from anyone
    ("trusted bound to 192.0.2.7", _trusted("192.0.2.7"), "eth1", True),
    ("trusted bound to 192.168.10.0/24", _trusted("192.168.10.0/24"), "eth1", True),
    ("ports 443/tcp", ZONES.replace(PUBLIC_PORTS, "  ports: 8000/tcp 443/tcp\n"), "eth1", True),
    ("ports 60000-61000/udp (mosh)", ZONES.replace(PUBLIC_PORTS, "  ports: 8000/tcp 60000-61000/udp\n"), "eth1", True),
    ("rich rule accept a service from anyone",
     ZONES.replace(PUBLIC_RICH, PUBLIC_RICH + '\trule family="ipv4" service name="https" accept\n'), "eth1", True),
    ("the NIC of docker0 (ACCEPT) is not the cluster's", ZONES, "eth0", True),
    ("services https and cockpit", ZONES.replace(PUBLIC_SERVICES, "  services: cockpit dhcpv6-client https ssh\n"), "eth1",
     True),
    ("a Docker network's bridge in the docker zone",
     ZONES.replace("  interfaces: docker0\n", "  interfaces: br-0123456789ab docker0\n"), "eth1", True),
    ("libvirt's zone: target ACCEPT, a few services, then reject", ZONES + "\n" + LIBVIRT, "eth1", True),
])
def test_firewalld_rules_that_admit_anyone_open_the_firewall(what, zones, interface, closed):
    default = "public (active)\n" + zones.split("public (default, active)\n", 1)[1].split("\n\n", 1)[0] + "\n"
    assert base_report.firewall_default_deny("firewalld", 0, default, interface, zones) is closed, what
    assert base_report.firewall(True, "firewalld", 0, default, [8000], [], [], interface, zones)["default_deny"] is closed


@pytest.mark.parametrize("rule, closed", [
    ("6379/tcp                   ALLOW IN    Anywhere\n", False),
    ("40000/tcp                  ALLOW IN    Anywhere\n", False),
    ("6379/udp                   ALLOW IN    Anywhere\n", True),
    ("6379/tcp                   ALLOW IN    172.18.0.3\n", True),
    ("443/tcp                    ALLOW IN    Anywhere\n", True),
])
def test_a_single_port_from_anywhere_is_open_when_it_is_the_clusters(rule, closed):
    guarded = base_report.guarded_spans([6379, 13345, "32768-60999"])
    out = UFW.replace(UFW_RULE, UFW_RULE + rule)
    assert base_report.firewall_default_deny("ufw", 0, out, guarded=guarded) is closed
    assert base_report.firewall_default_deny("ufw", 0, out) is True


def test_a_known_service_is_open_when_its_port_is_the_clusters():
    zones = ZONES.replace(PUBLIC_SERVICES, "  services: cockpit dhcpv6-client ssh\n")
    assert base_report.firewall_open_rules("firewalld", 0, "", "eth1", zones, base_report.guarded_spans([9090])) == [
        "zone public (interfaces eth0 eth1): service cockpit (its ports include the cluster's)"]
    assert base_report.firewall_open_rules("firewalld", 0, "", "eth1", zones, base_report.guarded_spans([6379])) == []


def test_the_reasons_name_the_rule():
    out = UFW.replace(UFW_RULE, UFW_RULE + "1:65535/tcp                ALLOW IN    Anywhere\n")
    assert base_report.firewall_open_rules("ufw", 0, out) == ["1:65535/tcp                ALLOW IN    Anywhere"]
    assert base_report.firewall_open_rules("firewalld", 0, "", "eth1", _trusted("0.0.0.0/0")) == [
        "zone trusted (sources 0.0.0.0/0): target ACCEPT"]
    zones = ZONES.replace(PUBLIC_SERVICES, "  services: dhcpv6-client redis ssh\n")
    assert base_report.firewall_open_rules("firewalld", 0, "", "eth1", zones) == [
        "zone public (interfaces eth0 eth1): service redis (its ports are not read)"]


@pytest.mark.parametrize("probes, deny, name", [
    ([], False, ""),
    ([{"name": "ufw", "rc": 2, "stdout": ""}, {"name": "firewalld", "rc": 252, "stdout": "", "zones_stdout": ""}], False, ""),
    ([{"name": "ufw", "rc": 0, "stdout": UFW}, {"name": "firewalld", "rc": 2, "stdout": ""}], True, "ufw"),
    ([{"name": "ufw", "rc": 0, "stdout": "Status: inactive\n"}, {"name": "firewalld", "rc": 0, "stdout": "",
                                                                 "zones_stdout": ZONES}], True, "firewalld"),
    ([{"name": "ufw", "rc": 2, "stdout": ""},
      {"name": "firewalld", "rc": 0, "stdout": "", "zones_stdout": _trusted("0.0.0.0/0")}], False, "firewalld"),
    # both active: each must be closed
    ([{"name": "ufw", "rc": 0, "stdout": UFW}, {"name": "firewalld", "rc": 0, "stdout": "",
                                                "zones_stdout": _trusted("0.0.0.0/0")}], False, "ufw, firewalld"),
])
def test_the_probes_of_a_host_decide_together(probes, deny, name):
    verdict = base_report.firewall_probes_default_deny(probes, "eth1")
    assert (verdict["default_deny"], verdict["firewall"]) == (deny, name)
    assert bool(verdict["why"]) is not deny
