"""monitoring_prometheus_mode targets_only: the files tasks/targets.yml writes for a site's own Prometheus, rendered
from the module's plan with the task's own content, then checked by the real promtool as that Prometheus would load
them (file_sd_configs reading the target files, rule_files the prometheus.prometheus glob ``rules/*.rules``)."""

import os
import subprocess

import jinja2
import yaml
from ansible.plugins.filter.core import to_nice_yaml
from promtool import require
from task_files import task
from test_monitoring_rules import render_rules

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import monitoring_plan as mp

TARGETS = "roles/monitoring/tasks/targets.yml"
PORTS = {"node_exporter": 9100, "vllm": 8000, "gateway": 8405}


def _render(text, **variables):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["to_nice_yaml"] = to_nice_yaml
    # Only what a copy task has: no ansible_managed (templates only), so StrictUndefined catches its use.
    return env.from_string(text).render(**variables)


def _plan(directory):
    nodes = [mp.node_plan(groups, address, "cpu", ["vllm"], ["gateway"], PORTS, {}, "auto", ["monitoring"])
             for groups, address in ((["vllm"], "10.0.0.2"), (["vllm", "gateway"], "10.0.0.3"), (["monitoring"], "10.0.0.9"))]
    return mp.server_plan(nodes, "15s", "15s", "15d", "", 9090, mode="targets_only", targets_dir=directory)


def test_targets_only_files_load_in_prometheus(tmp_path):
    plan = _plan(str(tmp_path))
    targets = plan["targets"]
    for directory in targets["dirs"]:
        os.makedirs(directory)
    file_sd = task(TARGETS, "Write the scrape target files (file_sd)")["ansible.builtin.copy"]["content"]
    for item in targets["file_sd"]:
        with open(item["path"], "w") as handle:
            handle.write(_render(file_sd, item=item))
    scrape = task(TARGETS, "Write the scrape configuration that reads them")["ansible.builtin.copy"]["content"]
    text = _render(scrape, __monitoring_server_plan=plan)
    with open(targets["scrape_configs_file"], "w") as handle:
        handle.write(text)
    with open(targets["rules_file"], "w") as handle:
        handle.write(render_rules())

    # What the site's Prometheus loads: its own prometheus.yml with these jobs and the rules glob.
    config = {"scrape_configs": yaml.safe_load(text)["scrape_configs"], "rule_files": [f"{tmp_path}/rules/*.rules"]}
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    proc = subprocess.run([require(), "check", "config", str(config_file)], capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "SUCCESS: 1 rule files found" in out
    # promtool read each target file (a broken one fails: the test below); each holds the nodes' targets.
    assert sorted(item["job"] for item in targets["file_sd"]) == ["gateway", "node", "vllm"]
    for item in targets["file_sd"]:
        loaded = yaml.safe_load(open(item["path"]))
        assert loaded == item["targets"]
    vllm = next(item for item in targets["file_sd"] if item["job"] == "vllm")
    assert [group["targets"] for group in vllm["targets"]] == [["10.0.0.2:8000"], ["10.0.0.3:8000"]]


def test_a_broken_target_file_fails_the_same_check(tmp_path):
    # The check above can fail: promtool reads the file_sd files the jobs name.
    plan = _plan(str(tmp_path))
    targets = plan["targets"]
    for directory in targets["dirs"]:
        os.makedirs(directory)
    for item in targets["file_sd"]:
        with open(item["path"], "w") as handle:
            handle.write("- targets: not-a-list\n  labels: [broken]\n")
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(yaml.safe_dump({"scrape_configs": targets["scrape_configs"]}))
    proc = subprocess.run([require(), "check", "config", str(config_file)], capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "kunpeng-vllm-" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
