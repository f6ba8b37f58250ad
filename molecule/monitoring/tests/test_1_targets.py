"""Prometheus scrapes every target the inventory names, with hardened units."""

import re
import subprocess

import pytest
from conftest import PROM, VLLM, http, ip, prom, sh, wait_for


def test_every_target_is_up():
    def targets():
        active = prom("targets", state="active")["activeTargets"]
        return active if active and all(t["health"] == "up" for t in active) else None
    active, _waited = wait_for(targets, 30)
    assert active, prom("targets", state="active")
    found = sorted((t["labels"]["job"], t["labels"]["instance"]) for t in active)
    assert found == [("node", f"{PROM}:9100"), ("node", f"{VLLM}:9100"), ("vllm", f"{VLLM}:8000")]


def test_vllm_metrics_need_no_api_key():
    """vLLM's --api-key guards /v1 only: Prometheus scrapes /metrics without it."""
    assert http(f"http://{ip(VLLM)}:8000/metrics")[0] == 200
    assert http(f"http://{ip(VLLM)}:8000/v1/models")[0] == 401


def test_retention_and_listen_flags():
    flags = prom("status/flags")
    assert flags["storage.tsdb.retention.time"] == "1d"
    assert flags["web.listen-address"] == ":9090"


def test_alert_rules_loaded():
    names = sorted(rule["name"] for group in prom("rules")["groups"] for rule in group["rules"])
    assert names == sorted(["AcceleratorMemoryHigh", "AcceleratorUnhealthy", "AcceleratorMetricsMissing", "VllmInstanceDown",
                            "VllmHighErrorRate", "VllmLatencyP99High", "VllmQueueGrowing", "VllmKvCacheNearlyFull"])


@pytest.mark.parametrize("container, unit", [
    (PROM, "prometheus.service"), (PROM, "prometheus-node-exporter.service"),
    (VLLM, "prometheus-node-exporter.service"), (VLLM, "kunpeng-accelerator-metrics.service"),
])
def test_units_are_hardened(container, unit):
    shown = sh(container, "systemctl", "show", unit, "-p", "ProtectSystem,NoNewPrivileges,PrivateTmp,ProtectHome").stdout
    props = dict(line.split("=", 1) for line in shown.split())
    assert props["ProtectSystem"] == "strict" and props["NoNewPrivileges"] == "yes" and props["PrivateTmp"] == "yes"
    output = sh(container, "systemd-analyze", "security", "--no-pager", unit, check=False).stdout
    exposure = float(re.search(r"exposure level for \S+: ([0-9.]+)", output).group(1))
    print(f"systemd-analyze security {unit}: {exposure}")
    assert exposure <= 1.5, output[-300:]


@pytest.mark.parametrize("container", [PROM, VLLM])
def test_collector_textfile_passes_promtool(container):
    text = sh(container, "cat", "/var/lib/prometheus/node-exporter/kunpeng_accelerator.prom").stdout
    assert "kunpeng_accelerator_collector_success" in text
    check = subprocess.run(["docker", "exec", "-i", PROM, "promtool", "check", "metrics"], input=text,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
