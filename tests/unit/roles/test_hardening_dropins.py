"""The packaged units' drop-ins: each caller's include of kunpeng.vllm._common (tasks_from hardening), rendered
with its role's defaults and vars as Ansible would, gives the lines of kunpeng.vllm.systemd_hardening at the
unit's drop-in path, and names a handler of its role that restarts the service when the drop-in changes."""

import os

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from task_files import ROOT, load, task, tasks
from task_files import trusted as _trusted

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.hardening import directives

# role, task file, task name -> expected unit, drop-in file
CALLERS = {
    ("gateway", "main.yml", "Harden haproxy.service"): ("haproxy.service", "kunpeng-hardening.conf"),
    ("monitoring", "node_exporter.yml", "Harden the node exporter's unit"):
        ("prometheus-node-exporter.service", "10-kunpeng-hardening.conf"),
    ("monitoring", "prometheus.yml", "Harden Prometheus's unit"): ("prometheus.service", "10-kunpeng-hardening.conf"),
}


def templar(role, include_vars):
    variables = {}
    for layer in (f"roles/{role}/defaults/main.yml", f"roles/{role}/vars/main.yml", "roles/_common/defaults/main.yml"):
        variables.update(_trusted(load(layer) or {}))
    variables.update(_trusted(include_vars), ansible_managed="Ansible managed")
    return Templar(loader=DataLoader(), variables=variables)


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_the_drop_in_is_the_filters_lines_at_the_units_path(caller):
    role, path, name = caller
    found = task(f"roles/{role}/tasks/{path}", name)
    assert found["ansible.builtin.include_role"] == {"name": "kunpeng.vllm._common", "tasks_from": "hardening"}
    render = templar(role, found["vars"])
    write = task("roles/_common/tasks/hardening.yml", "Write the unit's hardening drop-in")["ansible.builtin.template"]
    unit, filename = CALLERS[caller]
    assert render.template(_trusted(write["dest"])) == f"/etc/systemd/system/{unit}.d/{filename}"
    with open(os.path.join(ROOT, "roles", "_common", "templates", write["src"]), encoding="utf-8") as handle:
        text = render.template(trust_as_template(handle.read()))
    body = text.split("[Service]\n", 1)[1].splitlines()
    assert body == directives(render.template(_trusted(found["vars"]["_common_hardening"])))


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_a_changed_drop_in_restarts_the_service(caller):
    role, path, name = caller
    notify = task(f"roles/{role}/tasks/{path}", name)["vars"]["_common_hardening_notify"]
    handlers = {handler["name"]: handler for handler in tasks(load(f"roles/{role}/handlers/main.yml"))}
    assert notify and all(handlers[item]["ansible.builtin.systemd_service"]["state"] == "restarted" for item in notify)
    write = task("roles/_common/tasks/hardening.yml", "Write the unit's hardening drop-in")
    assert write["notify"] == "{{ _common_hardening_notify }}"


def test_private_users_follows_the_monitoring_setting():
    found = task("roles/monitoring/tasks/prometheus.yml", "Harden Prometheus's unit")
    for setting in (True, False):
        options = templar("monitoring", dict(found["vars"], monitoring_private_users=setting)).template(
            _trusted(found["vars"]["_common_hardening"]))
        assert f"PrivateUsers={'yes' if setting else 'no'}" in directives(options)


# The packaged unit's own lines that matter to the score (Debian 12's units run the exporters as prometheus;
# haproxy's user comes from the drop-in), and a command.
PACKAGED = {"haproxy.service": "", "prometheus-node-exporter.service": "User=prometheus\n",
            "prometheus.service": "User=prometheus\n"}


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_the_drop_in_alone_keeps_a_bare_unit_under_the_limit(caller):
    """Offline, on a bare unit with the package's user: the drop-in alone brings it to <= 1.5 (the scenarios score
    the real units live)."""
    from test_unit_exposure import LIMIT, score

    role, path, name = caller
    found = task(f"roles/{role}/tasks/{path}", name)
    unit, _filename = CALLERS[caller]
    render = templar(role, found["vars"])
    lines = directives(render.template(_trusted(found["vars"]["_common_hardening"])))
    text = f"[Unit]\nDescription=packaged\n[Service]\nExecStart=/usr/bin/true\n{PACKAGED[unit]}" + "\n".join(lines) + "\n"
    assert score(text, unit) <= LIMIT
