"""Each instance on a host runs its own engine, so upgrading or rolling back one leaves the others alone.

All instances used to run ``<install_dir>/current/bin/vllm``: the link moved
by the last deploy, and upgrade.yml's rollback reset it, for every instance
of the host.  Now each unit runs the engine through its own link
``<install_dir>/current-<instance>``.  These tests render the real unit
template and the real task arguments with the role's own defaults and vars
(Ansible's templar, no playbook run) for two instances of one host.
"""

import os
import re

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from task_files import ROOT, load, task
from task_files import trusted as _trusted

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users

ROLE = os.path.join(ROOT, "roles", "vllm")
INSTANCES = ("smollm2", "qwen3")


def templar(instance, extra=None):
    """The role's defaults and vars for instance ``instance`` (cpu backend, no base facts)."""
    variables = {}
    variables.update(_trusted(load("roles/vllm/defaults/main.yml")))
    variables.update(_trusted(load("roles/vllm/vars/main.yml")))
    variables.update(_trusted(extra or {}))
    variables.update(vllm_model_name=instance, __vllm_backend="cpu", ansible_managed="managed",
                     __vllm_venv="/opt/vllm/0.32.0-cpu",
                     __vllm_endpoint={"private_users": private_users("auto", "docker", "guest")})
    return Templar(loader=DataLoader(), variables=variables)


def render(instance, text, extra=None):
    return templar(instance, extra).template(trust_as_template(text))


def exec_start(instance):
    with open(os.path.join(ROLE, "templates", "vllm.service.j2")) as handle:
        unit = render(instance, handle.read())
    (line,) = re.findall(r"(?m)^ExecStart=(\S+) serve ", unit)
    return line


def test_each_unit_runs_its_own_engine_link():
    engines = {name: exec_start(name) for name in INSTANCES}
    assert engines == {"smollm2": "/opt/vllm/current-smollm2/bin/vllm",
                       "qwen3": "/opt/vllm/current-qwen3/bin/vllm"}


@pytest.mark.parametrize("instance", INSTANCES)
def test_install_moves_only_the_link_the_unit_runs(instance):
    found = task("roles/vllm/tasks/install.yml", "Point this instance's engine link at this version")
    args = found["ansible.builtin.file"]
    assert render(instance, args["src"]) == "/opt/vllm/0.32.0-cpu"
    assert render(instance, args["dest"]) + "/bin/vllm" == exec_start(instance)


@pytest.mark.parametrize("instance", INSTANCES)
def test_upgrade_records_and_rolls_back_only_this_instances_link(instance):
    (play,) = load("playbooks/upgrade.yml")
    play_vars = dict(play["vars"], __upgrade_backup="/var/backups/kunpeng-vllm/20261130T180000Z")

    def upgrade_render(text):
        return render(instance, text, play_vars)

    link = upgrade_render("{{ __upgrade_link }}")
    assert link + "/bin/vllm" == exec_start(instance)
    read = task("playbooks/upgrade.yml", "Read the instance's engine link")["ansible.builtin.stat"]
    assert upgrade_render(read["path"]) == link
    rollback = task("playbooks/upgrade.yml", "Point the instance's engine link back at the previous venv")
    assert upgrade_render(rollback["ansible.builtin.file"]["dest"]) == link
    after = task("playbooks/upgrade.yml", "Read the venv now in service")["ansible.builtin.stat"]
    assert upgrade_render(after["path"]) == link
    record = task("playbooks/upgrade.yml", "Record the venv in service")["ansible.builtin.copy"]
    assert upgrade_render(record["dest"]) == f"/var/backups/kunpeng-vllm/20261130T180000Z/current-{instance}"


@pytest.mark.parametrize("instance", INSTANCES)
def test_uninstall_removes_the_instances_link(instance):
    (play,) = load("playbooks/uninstall.yml")
    found = task("playbooks/uninstall.yml", "Remove the instances' engine links")
    assert found["loop"] == "{{ __uninstall_names }}"
    path = render(instance, found["ansible.builtin.file"]["path"], dict(play["vars"], item=instance))
    assert path + "/bin/vllm" == exec_start(instance)
