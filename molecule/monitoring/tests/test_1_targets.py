"""Prometheus scrapes every target the inventory names, with hardened units."""

import re
import subprocess

import pytest
import yaml
from conftest import API_KEY, GATEWAY_METRICS_PORT, MODEL, PROM, VLLM, http, ip, prom, sh, wait_for


def _configured_targets():
    """(job, target) of every static target in the configuration Prometheus loaded."""
    config = yaml.safe_load(prom("status/config")["yaml"])
    return sorted((job["job_name"], target) for job in config["scrape_configs"]
                  for static in job.get("static_configs", []) for target in static["targets"])


def test_every_target_is_up():
    """Every target Prometheus is configured with exists and is up; the list is the scenario's real exporters.

    The gateway's is HAProxy's exporter on gateway_metrics_port (group_vars/gateway.yml).
    """
    configured = _configured_targets()
    assert configured == [("gateway", f"{PROM}:{GATEWAY_METRICS_PORT}"), ("node", f"{PROM}:9100"),
                          ("node", f"{VLLM}:9100"), ("vllm", f"{VLLM}:8000")]

    def targets():
        active = prom("targets", state="active")["activeTargets"]
        return active if len(active) == len(configured) and all(t["health"] == "up" for t in active) else None
    active, _waited = wait_for(targets, 30)
    assert active, prom("targets", state="active")
    found = sorted((t["labels"]["job"], t["labels"]["instance"]) for t in active)
    assert found == configured


def test_vllm_metrics_only_for_the_monitoring_sources():
    """/metrics needs no key from Prometheus (vllm_metrics_sources: the monitoring group), the key from anywhere else."""
    assert http(f"http://{ip(VLLM)}:8000/metrics")[0] == 401
    assert http(f"http://{ip(VLLM)}:8000/metrics", headers={"Authorization": f"Bearer {API_KEY}"})[0] == 200
    assert http(f"http://{ip(VLLM)}:8000/v1/models")[0] == 401
    assert http(f"http://{ip(VLLM)}:8000/invocations", {"model": MODEL, "prompt": "x", "max_tokens": 1})[0] == 401
    fetch = ("import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=20).status)")
    assert sh(PROM, "python3", "-c", fetch, f"http://{VLLM}:8000/metrics").stdout.strip() == "200"


_CONNECT = ("import socket,sys\n"
            "try:\n socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close(); print('open')\n"
            "except OSError: print('refused')")


@pytest.mark.parametrize("container, port", [(PROM, 9090), (PROM, 9100), (VLLM, 9100)])
def test_exporters_listen_on_the_monitoring_address_only(container, port):
    """Bound to the container's address on the scenario network, not every interface: loopback is refused."""
    assert sh(container, "python3", "-c", _CONNECT, ip(container), str(port)).stdout.strip() == "open"
    assert sh(container, "python3", "-c", _CONNECT, "127.0.0.1", str(port)).stdout.strip() == "refused"


def test_retention_and_listen_flags():
    flags = prom("status/flags")
    assert flags["storage.tsdb.retention.time"] == "1d"
    # The role's default cap, monitoring_retention_size 10GB: Prometheus's size units are powers of two and its
    # flags page prints them so (10GiB).
    assert flags["storage.tsdb.retention.size"] == "10GiB"
    assert flags["web.listen-address"] == f"{ip(PROM)}:9090"


def test_alert_rules_loaded():
    names = sorted(rule["name"] for group in prom("rules")["groups"] for rule in group["rules"])
    assert names == sorted(["AcceleratorMemoryHigh", "AcceleratorUnhealthy", "AcceleratorMetricsMissing", "VllmInstanceDown",
                            "VllmHighErrorRate", "VllmLatencyP99High", "VllmQueueGrowing", "VllmKvCacheNearlyFull",
                            "GatewayServerInMaintenance"])


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
