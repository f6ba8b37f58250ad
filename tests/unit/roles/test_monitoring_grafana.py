"""The monitoring role's Grafana settings (issue 37 review, low): a Grafana the role installs binds the monitoring
address with no anonymous access, and its admin password (given, or generated once on the node) reaches it through
a file only root reads, never a command line or a log.

Grafana is in no distribution's repository and cannot be installed here: these tests read the task file and render
the template; the settings themselves are monitoring_plan.grafana_settings (tests/unit/plugins/module_utils/plan).
"""

import os

import jinja2
from task_files import ROOT, load, task, tasks

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import monitoring_plan as mp

GRAFANA = "roles/monitoring/tasks/grafana.yml"


def test_the_settings_file_holds_the_plan_and_the_password_for_root_only():
    with open(os.path.join(ROOT, "roles", "monitoring", "templates", "grafana.env.j2")) as handle:
        template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(handle.read())
    settings = mp.grafana_settings("10.0.0.5", 3000)
    text = template.render(ansible_managed="test", __monitoring_server_plan={"grafana_settings": settings},
                           __monitoring_grafana_admin="s3cret-admin-password")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert dict(line.split("=", 1) for line in lines) == dict(settings, GF_SECURITY_ADMIN_PASSWORD="s3cret-admin-password")
    write = task(GRAFANA, "Write Grafana's settings and admin password, readable by root only")
    assert write["ansible.builtin.template"]["mode"] == "0600" and write["ansible.builtin.template"]["owner"] == "root"
    assert write["no_log"] is True and write["notify"] == "Restart Grafana"
    drop_in = task(GRAFANA, "Point grafana-server at its settings")["ansible.builtin.copy"]
    assert "EnvironmentFile={{ __monitoring_grafana_env_file }}" in drop_in["content"]


def test_the_password_is_generated_once_and_every_step_that_holds_it_is_no_log():
    steps = list(tasks(load(GRAFANA)))
    names = [step["name"] for step in steps]
    for name in ("Generate the Grafana admin password once", "Read the generated Grafana admin password",
                 "Write Grafana's settings and admin password, readable by root only"):
        assert next(step for step in steps if step["name"] == name)["no_log"] is True, name
    generate = task(GRAFANA, "Generate the Grafana admin password once")
    assert "not __monitoring_grafana_password_stat.stat.exists" in generate["when"]
    assert generate["ansible.builtin.copy"]["mode"] == "0600"
    for step in steps:
        assert not {"ansible.builtin.command", "ansible.builtin.shell"} & set(step), step["name"]
    # applied before Grafana first starts (it takes the admin password at its first start only)
    assert names.index("Apply Grafana's settings before it starts") < names.index("Start Grafana")
    assert names.index("Point grafana-server at its settings") < names.index("Apply Grafana's settings before it starts")
