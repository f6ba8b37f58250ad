"""vllm_cluster reads the firewall as it is now (the preflight's probes), for this member's NIC and the cluster's ports.

A dp layout used to be decided from what an earlier base run recorded, which never saw the cluster NIC's firewalld
zone when that run had no cluster plan.  The probes are real outputs (fixtures/firewall).
"""

from pathlib import Path

import pytest
from test_vllm_cluster import cpu_pair, fails, ok

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "firewall"
UFW = (FIXTURES / "ufw-status-verbose.txt").read_text()
ZONES = (FIXTURES / "firewalld-list-all-zones.txt").read_text()
UFW_RULE = "60000:61000/udp            ALLOW IN    Anywhere                   # mosh\n"
NOT_RUN = {"name": "ufw", "rc": 2, "stdout": ""}


def _firewalld(zones, rc=0):
    return [NOT_RUN, {"name": "firewalld", "rc": rc, "stdout": "", "zones_stdout": zones}]


def _nic_in_trusted(zones, nic):
    """The member's NIC in trusted, the default zone public keeping the others (firewall-cmd --change-interface)."""
    zones = zones.replace("  interfaces: eth0 eth1\n", "  interfaces: eth9\n")
    return zones.replace("trusted\n  target: ACCEPT\n  ingress-priority: 0\n  egress-priority: 0\n"
                         "  icmp-block-inversion: no\n  interfaces: \n",
                         f"trusted (active)\n  target: ACCEPT\n  ingress-priority: 0\n  egress-priority: 0\n"
                         f"  icmp-block-inversion: no\n  interfaces: {nic}\n")


def _run(probes, host="node-0"):
    members, plan = cpu_pair()
    return members, dict(engine_args=plan["engine_args"], firewall_probes=probes, firewall_default_deny=None), host


@pytest.mark.parametrize("probes", [
    [{"name": "ufw", "rc": 0, "stdout": UFW}, {"name": "firewalld", "rc": 2, "stdout": ""}],
    _firewalld(ZONES),
])
def test_a_closed_firewall_read_now_plans_the_dp_layout(probes):
    members, params, host = _run(probes)
    assert ok(members, host, **params)["layout"]["mode"] == "dp"


def _nic():
    members, plan = cpu_pair()
    return ok(members, "node-0", engine_args=plan["engine_args"])["interface"]


def test_dockers_own_bridge_does_not_decide():
    """docker0 in Docker's zone docker (target ACCEPT): what enters it comes from this host's containers."""
    zones = ZONES.replace("  interfaces: docker0\n", "  interfaces: br-0123456789ab docker0\n")
    members, params, host = _run(_firewalld(zones))
    assert ok(members, host, **params)["layout"]["mode"] == "dp"


@pytest.mark.parametrize("what, probes", [
    ("no firewall answers", [NOT_RUN, {"name": "firewalld", "rc": 252, "stdout": "FirewallD is not running\n"}]),
    ("ufw allow from any", [{"name": "ufw", "rc": 0, "stdout": UFW.replace(
        UFW_RULE, UFW_RULE + "Anywhere                   ALLOW IN    Anywhere\n")}, NOT_RUN]),
    # a single port from anywhere is fine, unless it is one of the cluster's (the data parallel RPC port)
    ("ufw allow 13345/tcp", [{"name": "ufw", "rc": 0, "stdout": UFW.replace(
        UFW_RULE, UFW_RULE + "13345/tcp                  ALLOW IN    Anywhere\n")}, NOT_RUN]),
    # the cluster NIC in trusted while the default zone denies: the NIC's zone decides
    ("the cluster NIC in trusted", "nic-in-trusted"),
    # review round 2: another NIC in trusted (the cluster's sockets listen on every address), a service whose ports
    # are not a few known single ports, every TCP port in ufw's spelling of a protocol-only rule
    ("another NIC in trusted", _firewalld(ZONES.replace("trusted\n  target: ACCEPT\n  ingress-priority: 0\n"
                                                        "  egress-priority: 0\n  icmp-block-inversion: no\n  interfaces: \n",
                                                        "trusted (active)\n  target: ACCEPT\n  ingress-priority: 0\n"
                                                        "  egress-priority: 0\n  icmp-block-inversion: no\n"
                                                        "  interfaces: eth9\n"))),
    ("firewalld service redis", _firewalld(ZONES.replace("  services: dhcpv6-client ssh\n  ports: 8000/tcp\n",
                                                         "  services: dhcpv6-client redis ssh\n  ports: 8000/tcp\n"))),
    ("ufw allow proto tcp from any", [{"name": "ufw", "rc": 0, "stdout": UFW.replace(
        UFW_RULE, UFW_RULE + "Anywhere/tcp               ALLOW IN    Anywhere/tcp\n")}, NOT_RUN]),
])
def test_an_open_firewall_read_now_refuses_the_dp_layout(what, probes):
    if probes == "nic-in-trusted":
        probes = _firewalld(_nic_in_trusted(ZONES, _nic()))
    members, params, host = _run(probes)
    assert "the dp layout runs vLLM's data parallel" in fails(members, host, **params), what


def test_the_probes_win_over_a_recorded_verdict():
    members, params, host = _run(_firewalld(ZONES.replace("  ports: 8000/tcp\n", "  ports: 1-65535/tcp\n")))
    params["firewall_default_deny"] = True  # a recorded verdict that the firewall denies by default
    assert "the dp layout" in fails(members, host, **params)  # pylint: disable=repeated-keyword
