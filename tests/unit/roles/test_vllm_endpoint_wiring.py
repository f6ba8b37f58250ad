"""The vllm role with its defaults: the key kunpeng.vllm.vllm_endpoint generates is the one the service requires
and the readiness gate sends.

Before, the defaults (vllm_host 0.0.0.0, vllm_api_key '') wrote no VLLM_API_KEY: an open endpoint on the network.
These tests render the real task arguments with the role's defaults and vars, run the real module on a
temporary config directory and render the environment file and the readiness check from its result.
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
from module_runner import run_main  # noqa: E402
from vllm_plans import single  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_endpoint  # noqa: E402

ENDPOINT = "roles/vllm/tasks/endpoint.yml"


class Role:
    """The role's variables for one host (cpu backend, in a container), as the play would have them."""

    def __init__(self, config_dir, **overrides):
        self.variables = {}
        self.variables.update(_trusted(load("roles/vllm/defaults/main.yml")))
        self.variables.update(_trusted(load("roles/vllm/vars/main.yml")))
        self.variables.update(vllm_model_name="smollm2", kunpeng_vllm_cluster=single(),
                              ansible_managed="managed", vllm_config_dir=str(config_dir),
                              ansible_facts={"virtualization_type": "docker", "virtualization_role": "guest"})
        self.variables.update(_trusted(overrides))
        # The final engine config the key is decided on: the real plan's, with this host's vllm_host.
        plan = plan_hosts.role_plan("cpu-x86", engine_args=self.render("{{ vllm_engine_args }}"),
                                    host=self.render("{{ vllm_host }}"))
        self.variables["kunpeng_vllm_plan"] = plan
        self.variables["__vllm_engine_config"] = plan["engine_config"]

    def render(self, value):
        return Templar(loader=DataLoader(), variables=self.variables).template(_trusted(value))

    def converge_endpoint(self, check_mode=False, expect_failure=False):
        """Run tasks/endpoint.yml's module and set_fact as Ansible would."""
        decide = task(ENDPOINT, "Decide the instance's API key and user namespace")
        assert decide.get("no_log") is True
        args = self.render(decide["kunpeng.vllm.vllm_endpoint"])
        failed, result = run_main(vllm_endpoint.main, args, check_mode=check_mode)
        if expect_failure:
            assert failed, result
            return result
        assert not failed, result
        self.variables[decide["register"]] = result
        keep = task(ENDPOINT, "Keep the effective API key for the readiness check and later plays")
        assert keep.get("no_log") is True
        self.variables.update(self.render(keep["ansible.builtin.set_fact"]))
        return result

    def env_file(self):
        with open(os.path.join(ROOT, "roles", "vllm", "templates", "vllm.env.j2"), encoding="utf-8") as handle:
            return self.render(handle.read())

    def ready_key(self):
        args = task("roles/vllm/tasks/verify.yml", "Wait until the instance is healthy, lists the model and answers")
        return self.render(args["kunpeng.vllm.vllm_ready"]["api_key"].replace("| default(omit, true)", ""))


def test_defaults_generate_a_key_the_service_requires_and_the_gate_sends(tmp_path):
    role = Role(tmp_path)
    result = role.converge_endpoint()
    key = result["api_key"]
    assert result["api_key_source"] == "generate" and len(key) >= 40
    assert (tmp_path / "smollm2.api-key").read_text() == key + "\n"
    assert f"\nVLLM_API_KEY={key}\n" in role.env_file()
    assert role.ready_key() == key
    assert key not in result["message"] and str(tmp_path / "smollm2.api-key") in result["message"]

    again = Role(tmp_path)
    assert again.converge_endpoint()["api_key_source"] == "stored"
    assert f"\nVLLM_API_KEY={key}\n" in again.env_file() and again.ready_key() == key


@pytest.mark.parametrize("overrides, env_key", [
    ({"vllm_api_key": "given-key-0123456789"}, "given-key-0123456789"),
    ({"vllm_host": "127.0.0.1"}, None),
    ({"vllm_allow_unauthenticated": True}, None),
])
def test_given_loopback_and_opt_out(tmp_path, overrides, env_key):
    role = Role(tmp_path, **overrides)
    role.converge_endpoint()
    env = role.env_file()
    if env_key:
        assert f"\nVLLM_API_KEY={env_key}\n" in env and role.ready_key() == env_key
    else:
        assert "VLLM_API_KEY" not in env and role.ready_key() == ""
    assert not (tmp_path / "smollm2.api-key").exists()


def test_private_users_follows_the_module(tmp_path):
    role = Role(tmp_path)
    role.converge_endpoint()
    with open(os.path.join(ROOT, "roles", "vllm", "templates", "vllm.service.j2"), encoding="utf-8") as handle:
        unit = handle.read()
    assert "PrivateUsers=yes" not in role.render(unit)
    role.variables["ansible_facts"] = {"virtualization_type": "kvm", "virtualization_role": "host"}
    role.converge_endpoint()
    assert "PrivateUsers=yes" in role.render(unit)


def test_the_endpoint_runs_for_every_tag_that_needs_the_key():
    (found,) = [t for t in load("roles/vllm/tasks/deploy.yml") if t.get("ansible.builtin.import_tasks") == "endpoint.yml"]
    assert {"vllm_configure", "vllm_run", "vllm_verify"} <= set(found["tags"])


def test_engine_args_host_opens_the_instance_and_gets_a_key(tmp_path):
    # vllm_host says loopback, but vllm_engine_args binds every interface: the key follows the final bind.
    role = Role(tmp_path, vllm_host="127.0.0.1", vllm_engine_args={"host": "0.0.0.0"})
    result = role.converge_endpoint()
    assert result["api_key_source"] == "generate"
    assert f"\nVLLM_API_KEY={result['api_key']}\n" in role.env_file()


@pytest.mark.parametrize("environment", [{"VLLM_API_KEY": ""}, {"VLLM_API_KEY": "other"}])
def test_an_environment_key_is_refused(tmp_path, environment):
    role = Role(tmp_path, vllm_environment=environment)
    result = role.converge_endpoint(expect_failure=True)
    assert "vllm_environment sets VLLM_API_KEY" in result["msg"] and "vllm_api_key" in result["msg"]
    assert not (tmp_path / "smollm2.api-key").exists()
