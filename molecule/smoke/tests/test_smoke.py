"""The test bed boots systemd and runs units on both architectures."""


def test_systemd_is_pid1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_smoke_unit_active_and_enabled(host):
    unit = host.service("kv-smoke.service")
    assert unit.is_running
    assert unit.is_enabled


def test_architecture_matches_platform(host):
    arch = host.file("/run/kv-smoke.arch").content_string.strip()
    expected = "aarch64" if host.backend.get_hostname().endswith("arm64") else "x86_64"
    assert arch == expected
