"""kunpeng.vllm.base left the host ready for the driver and vLLM roles."""

import glob
import json
import os

import pytest

REPORT = "/etc/ansible/facts.d/kunpeng_vllm_base.fact"


@pytest.fixture(scope="module")
def report(host):
    return json.loads(host.file(REPORT).content_string)


def test_service_account_is_a_system_account_without_login(host):
    user = host.user("vllm")
    assert user.exists
    assert user.group == "vllm"
    assert user.home == "/var/lib/vllm"
    assert user.shell == "/usr/sbin/nologin"
    # System accounts get ids below SYS_UID_MAX (999 on Debian).
    assert user.uid < 1000
    assert host.group("vllm").gid < 1000
    assert host.run("su -s /bin/sh -c true vllm").rc == 0  # the account works ...
    assert host.run("su vllm -c true").rc != 0  # ... but cannot log in with its shell


@pytest.mark.parametrize(
    "path, owner, group, mode",
    [
        ("/opt/vllm", "root", "root", 0o755),
        ("/etc/vllm", "root", "vllm", 0o750),
        # Root's, readable by the service group: root writes the models there (no .partial the account plants).
        ("/var/lib/vllm", "root", "vllm", 0o750),
        ("/var/lib/vllm/models", "root", "vllm", 0o750),
        ("/var/cache/vllm", "vllm", "vllm", 0o750),
    ],
)
def test_directory_owner_and_mode(host, path, owner, group, mode):
    directory = host.file(path)
    assert directory.is_directory
    assert (directory.user, directory.group, directory.mode) == (owner, group, mode)


def test_service_account_can_write_the_cache_but_not_the_models_or_the_venvs(host):
    assert host.run("su -s /bin/sh -c 'touch /var/cache/vllm/.w' vllm").rc == 0
    host.run("rm -f /var/cache/vllm/.w")
    assert host.run("su -s /bin/sh -c 'ls /var/lib/vllm/models' vllm").rc == 0
    for path in ("/var/lib/vllm/models/.w", "/var/lib/vllm/.w", "/opt/vllm/.w"):
        assert host.run(f"su -s /bin/sh -c 'touch {path}' vllm").rc != 0, path


@pytest.mark.parametrize("package", ["gcc", "g++", "make", "cmake", "git", "python3-dev", "python3-venv", "libnuma1", "numactl", "pciutils", "curl"])
def test_package_installed(host, package):
    assert host.package(package).is_installed


def test_libnuma_loads_and_venv_works(host):
    assert host.run("python3 -c \"import ctypes; ctypes.CDLL('libnuma.so.1')\"").rc == 0
    cmd = host.run("python3 -m venv /tmp/kv-venv && /tmp/kv-venv/bin/python -m pip --version && rm -rf /tmp/kv-venv")
    assert cmd.rc == 0, cmd.stderr


def test_driver_build_prerequisites_match_the_kernel(host, report):
    kernel = host.run("uname -r").stdout.strip()
    headers = "linux-headers-" + kernel
    driver = report["driver_build"]
    assert driver["headers_package"] == headers
    available = host.run("apt-cache show --no-all-versions %s", headers).rc == 0
    assert driver["status"] == ("installed" if available else "skipped")
    assert host.package("dkms").is_installed == available


def test_controller_cas_are_in_the_trust_store(host):
    """Every *.crt of the controller's KV_CONTROLLER_CA_DIR is trusted in the container."""
    ca_dir = os.environ.get("KV_CONTROLLER_CA_DIR") or "/usr/local/share/ca-certificates"
    controller_cas = sorted(glob.glob(os.path.join(ca_dir, "*.crt")))
    assert controller_cas, f"no *.crt in {ca_dir} on the controller: nothing to test"
    bundle = host.file("/etc/ssl/certs/ca-certificates.crt").content_string
    for path in controller_cas:
        with open(path, encoding="ascii") as handle:
            pem = handle.read().strip()
        installed = host.file("/usr/local/share/ca-certificates/" + os.path.basename(path))
        assert (installed.user, installed.mode) == ("root", 0o644)
        assert installed.content_string.strip() == pem
        assert pem in bundle, path


def test_https_to_pypi_works_with_the_system_store(host):
    cmd = host.run("python3 -c \"import urllib.request; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=30)\"")
    assert cmd.rc == 0, cmd.stderr


def test_pip_conf(host, report):
    conf = host.file("/etc/pip.conf")
    assert (conf.user, conf.group, conf.mode) == ("root", "root", 0o644)
    text = conf.content_string
    assert "index-url = https://pypi.org/simple" in text
    assert "extra-index-url =\n    https://download.pytorch.org/whl/cpu" in text
    assert "trusted-host =\n    pypi.internal.example" in text
    assert "find-links =\n    /opt/vllm/wheelhouse" in text
    assert "cert = /etc/ssl/certs/ca-certificates.crt" in text
    # pip itself reads it, as the service account too.
    listed = host.run("su -s /bin/sh -c 'python3 -m venv /tmp/kv-pip && /tmp/kv-pip/bin/python -m pip config list; rm -rf /tmp/kv-pip' vllm")
    assert "global.cert='/etc/ssl/certs/ca-certificates.crt'" in listed.stdout, listed.stdout + listed.stderr
    assert report["kunpeng_base"]["pip_conf"] == "/etc/pip.conf"


def test_exported_facts(report):
    assert report["kunpeng_base"] == {
        "user": "vllm",
        "group": "vllm",
        "home": "/var/lib/vllm",
        "install_dir": "/opt/vllm",
        "config_dir": "/etc/vllm",
        "model_dir": "/var/lib/vllm/models",
        "cache_dir": "/var/cache/vllm",
        "ca_bundle": "/etc/ssl/certs/ca-certificates.crt",
        "pip_conf": "/etc/pip.conf",
    }


def test_limits_file(host):
    limits = host.file("/etc/security/limits.d/90-kunpeng-vllm.conf")
    assert (limits.user, limits.mode) == ("root", 0o644)
    lines = [line.split() for line in limits.content_string.splitlines() if line and not line.startswith("#")]
    assert sorted(lines) == sorted(
        [
            ["vllm", "soft", "nofile", "65536"],
            ["vllm", "hard", "nofile", "65536"],
            ["vllm", "soft", "memlock", "unlimited"],
            ["vllm", "hard", "memlock", "unlimited"],
        ]
    )


def _items(report):
    return {item["setting"]: item for item in report["tuning"]["items"]}


def test_sysctl_report_matches_proc(host, report):
    """The report says applied only where /proc/sys took the value."""
    items = _items(report)
    wanted = {"vm.swappiness": "10", "kernel.numa_balancing": "0"}
    for key, value in wanted.items():
        path = "/proc/sys/" + key.replace(".", "/")
        if not host.file(path).exists:
            assert items[key]["status"] == "skipped" and "does not exist" in items[key]["reason"]
            continue
        # Write the current value back: only a writable /proc/sys takes it.
        writable = host.run("sh -c 'cat %s > %s'", path, path).rc == 0
        if writable:
            assert items[key]["status"] == "applied"
            assert host.file(path).content_string.strip() == value
            # written by ansible.posix.sysctl, which writes key=value
            assert f"{key}={value}" in host.file("/etc/sysctl.d/90-kunpeng-vllm.conf").content_string.splitlines()
        else:
            assert items[key]["status"] == "skipped" and "read-only" in items[key]["reason"]
    if all(item["status"] == "skipped" for key, item in items.items() if key in wanted):
        assert not host.file("/etc/sysctl.d/90-kunpeng-vllm.conf").exists


def test_sysfs_report_matches_sys(host, report):
    items = _items(report)
    thp = host.file("/sys/kernel/mm/transparent_hugepage/enabled")
    if items["transparent_hugepage"]["status"] == "applied":
        assert "[madvise]" in thp.content_string
    else:
        assert host.run("test -w /sys/kernel/mm/transparent_hugepage/enabled").rc != 0 or not thp.exists
    governor = host.file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    if items["cpu_governor"]["status"] == "applied":
        assert governor.content_string.strip() == "performance"
    else:
        assert not governor.exists or host.run("test -w %s", governor.path).rc != 0 or "cpufreq offers" in items["cpu_governor"]["reason"]


def test_time_sync_skipped_in_the_container(host, report):
    item = _items(report)["time_sync"]
    assert host.run("systemd-detect-virt --container").rc == 0
    assert item["status"] == "skipped" and "container" in item["reason"]
    assert not host.package("chrony").is_installed


def test_firewall_left_alone_when_absent(host, report):
    assert not host.exists("ufw")
    assert report["firewall"]["active"] is False
    assert report["firewall"]["ports"] == []
