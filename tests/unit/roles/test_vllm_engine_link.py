"""Each instance on a host runs its own engine, so upgrading or rolling back one leaves the others alone.

All instances used to run ``<install_dir>/current/bin/vllm``: the link moved
by the last deploy, and upgrade.yml's rollback reset it, for every instance
of the host.  Now each unit runs the engine through its own link
``<install_dir>/current-<instance>``, which the entry points snapshot,
rollback and remove (and the modules they call) read and move.  These tests render the real unit
template and the real task arguments with the role's own defaults and vars
(Ansible's templar, no playbook run) for two instances of one host.
"""

import os
import re
import sys

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from task_files import ROOT, load, task
from task_files import trusted as _trusted

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.instance_lifecycle import engine_link, removal_plan
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))
import plan_hosts  # noqa: E402

PLAN = plan_hosts.role_plan("cpu-x86")

ROLE = os.path.join(ROOT, "roles", "vllm")
INSTANCES = ("smollm2", "qwen3")


def templar(instance, extra=None):
    """The role's defaults and vars for instance ``instance`` (cpu backend, no base facts)."""
    variables = {}
    variables.update(_trusted(load("roles/vllm/defaults/main.yml")))
    variables.update(_trusted(load("roles/vllm/vars/main.yml")))
    variables.update(_trusted(extra or {}))
    variables.update(vllm_model_name=instance, ansible_managed="managed", kunpeng_vllm_plan=PLAN,
                     kunpeng_vllm_cluster=cluster.disabled(),
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
    assert render(instance, args["src"]) == f"/opt/vllm/{PLAN['engine_version']}-cpu"
    assert render(instance, args["dest"]) + "/bin/vllm" == exec_start(instance)


@pytest.mark.parametrize("instance", INSTANCES)
def test_rollback_entry_points_move_only_this_instances_link(instance):
    """The link the modules read is the link the unit runs; snapshot records it and rollback moves it back."""
    link = engine_link("/opt/vllm", instance)
    assert link + "/bin/vllm" == exec_start(instance)
    assert render(instance, "{{ __vllm_current_link }}") == link
    rollback = task("roles/vllm/tasks/rollback.yml", "Point the instance's engine link back at the previous venv")
    assert render(instance, rollback["ansible.builtin.file"]["dest"]) == link
    record = task("roles/vllm/tasks/snapshot.yml", "Record the venv in service")["ansible.builtin.copy"]
    backup = {"kunpeng_vllm_snapshot": {"dir": "/var/backups/kunpeng-vllm/20261130T180000Z"}}
    assert render(instance, record["dest"], backup) == f"/var/backups/kunpeng-vllm/20261130T180000Z/current-{instance}"


@pytest.mark.parametrize("instance", INSTANCES)
def test_uninstall_removes_the_instances_link(instance):
    with open(os.path.join(ROLE, "templates", "vllm.service.j2")) as handle:
        unit = render(instance, handle.read())
    removal = removal_plan({f"vllm-{instance}.service": unit}, [instance], "/opt/vllm", "/etc/vllm",
                           "/var/cache/vllm", "/var/lib/vllm/models", True)
    assert exec_start(instance)[:-len("/bin/vllm")] in removal["paths"]
    assert removal["units"] == [f"vllm-{instance}.service"]
    # The model the rendered unit serves is found in its ExecStart.
    assert removal["model_dirs"] == [f"/var/lib/vllm/models/{instance}"]
