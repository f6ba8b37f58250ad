"""The base role's decisions and report sentences (module_utils/base_report.py)."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils import base_report

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
    (True, "ufw", 0, "Status: active\n\nTo Action From\n", True, "allowed 8000/tcp, 8001/tcp in ufw"),
    (True, "ufw", 0, "Status: inactive\n", False, "ufw is not installed or not active: left alone"),
    (True, "ufw", 127, "", False, "ufw is not installed or not active: left alone"),
    (True, "firewalld", 0, "running\n", True, "allowed 8000/tcp, 8001/tcp in firewalld"),
    (True, "firewalld", 252, "not running\n", False, "firewalld is not installed or not active: left alone"),
])
def test_firewall(manage, name, rc, stdout, active, note):
    assert base_report.firewall(manage, name, rc, stdout, [8000, 8001]) == {
        "firewall": name, "active": active, "ports": [8000, 8001] if active else [], "note": note}


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
