"""The monitoring role's alert rules, rendered with its defaults, under the real promtool.

``promtool check rules`` on the rendered file, and ``promtool test rules``
with fixtures/monitoring/rules-test.yml: every alert has a case that fires
and one that must not.
"""

import os
import subprocess

import jinja2
import pytest
import yaml
from conftest import FIXTURES, ROOT
from promtool import require

ROLE = os.path.join(ROOT, "roles", "monitoring")
RULES_TEST = os.path.join(FIXTURES, "monitoring", "rules-test.yml")


def render_rules(**overrides):
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        variables = yaml.safe_load(handle)
    variables.update(overrides, ansible_managed="test")
    with open(os.path.join(ROLE, "templates", "kunpeng-vllm.rules.yml.j2")) as handle:
        template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(handle.read())
    return template.render(**variables)


@pytest.fixture()
def rules_file(tmp_path):
    path = tmp_path / "kunpeng-vllm.yml"
    path.write_text(render_rules())
    return path


def alert_names(text):
    return [rule["alert"] for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def test_promtool_check_rules(rules_file):
    proc = subprocess.run([require(), "check", "rules", str(rules_file)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 9 rules found" in proc.stdout


def test_promtool_test_rules(rules_file, tmp_path):
    with open(RULES_TEST) as handle:
        tests = yaml.safe_load(handle)
    tests["rule_files"] = [str(rules_file)]
    test_file = tmp_path / "rules-test.yml"
    test_file.write_text(yaml.safe_dump(tests))
    proc = subprocess.run([require(), "test", "rules", str(test_file)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_alert_has_a_promtool_case():
    with open(RULES_TEST) as handle:
        tested = {case["alertname"] for test in yaml.safe_load(handle)["tests"] for case in test["alert_rule_test"]}
    assert sorted(tested) == sorted(alert_names(render_rules()))


def test_thresholds_and_for_times_come_from_the_variables():
    text = render_rules(monitoring_alert_instance_down_for="10s", monitoring_alert_kv_cache_ratio=0.8)
    rules = {rule["alert"]: rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]}
    assert rules["VllmInstanceDown"]["for"] == "10s"
    assert rules["VllmKvCacheNearlyFull"]["expr"].endswith("> 0.8")
    assert "80 % full" in rules["VllmKvCacheNearlyFull"]["annotations"]["summary"]
