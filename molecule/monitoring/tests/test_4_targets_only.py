"""monitoring_prometheus_mode targets_only (converge.yml's last play): the Prometheus host got the target files, the
scrape configuration naming them and the rules under monitoring_targets_dir, and its promtool loads them."""

import yaml
from conftest import GATEWAY_METRICS_PORT, PROM, VLLM, sh

DIR = "/srv/kv-site-prometheus"


def test_target_files_name_the_fleet():
    vllm = yaml.safe_load(sh(PROM, "cat", f"{DIR}/file_sd/kunpeng-vllm-vllm.yml").stdout)
    node = yaml.safe_load(sh(PROM, "cat", f"{DIR}/file_sd/kunpeng-vllm-node.yml").stdout)
    assert [group["targets"] for group in vllm] == [[f"{VLLM}:8000"]]
    assert sorted(group["targets"][0] for group in node) == [f"{PROM}:9100", f"{VLLM}:9100"]
    gateway = yaml.safe_load(sh(PROM, "cat", f"{DIR}/file_sd/kunpeng-vllm-gateway.yml").stdout)
    assert [group["targets"] for group in gateway] == [[f"{PROM}:{GATEWAY_METRICS_PORT}"]]


def test_promtool_loads_them_as_the_site_prometheus_would():
    scrape = yaml.safe_load(sh(PROM, "cat", f"{DIR}/scrape_configs/kunpeng-vllm.yml").stdout)["scrape_configs"]
    assert [job["job_name"] for job in scrape] == ["vllm", "node", "gateway"]
    config = yaml.safe_dump({"scrape_configs": scrape, "rule_files": [f"{DIR}/rules/*.rules"]})
    sh(PROM, "sh", "-c", f"cat > /tmp/kv-site-prometheus.yml <<'EOF'\n{config}EOF")
    checked = sh(PROM, "promtool", "check", "config", "/tmp/kv-site-prometheus.yml", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout
