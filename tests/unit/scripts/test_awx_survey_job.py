"""An AWX job launched from the shipped site survey keeps the inventory's
values for every question the operator did not answer, however AWX sends a
blank answer.

AWX hands a job the survey's answers, plus the default of every question
that has one, as extra variables, which beat group_vars; some AWX releases
sent an unanswered optional text question as ``""`` (awx#9525) or ``null``
(awx#16205).  The job here is an ansible-runner run (as AWX runs jobs) with
env/extravars made by ``awx_survey.answers`` from docs/awx-surveys/site.json,
inventories/example as the inventory, and a playbook that runs the entry
playbooks' first step (the ``survey_answers`` entry point of
kunpeng.vllm._common) and then prints what each survey's role variable
resolves to on the Ascend group (both run on the controller: no host is
contacted).
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import awx_survey  # noqa: E402

ansible_runner = pytest.importorskip("ansible_runner")

GROUP = "ascend_a2"
HOST = "atlas-a2-01"
S = awx_survey.survey_variable
# What the operator types: the one required question.
ANSWERS = {S("vllm_model_name"): "my-deepseek"}
UNSET = "(unset)"
# Inventory values read from the controller's environment (secrets): the job's environment sets them.
ENV_LOOKUP = re.compile(r"^\{\{ lookup\('ansible\.builtin\.env', '([A-Z_]+)'\) \}\}$")
JOB_ENV = {"HF_TOKEN": "hf-from-the-credential", "VLLM_API_KEY": "key-from-the-credential",
           "MODELSCOPE_TOKEN": "ms-from-the-credential"}


def _resolved(value):
    """An inventory value as the job renders it."""
    match = ENV_LOOKUP.match(value) if isinstance(value, str) else None
    return JOB_ENV[match.group(1)] if match else value


def _survey():
    with open(os.path.join(ROOT, "docs", "awx-surveys", "site.json")) as f:
        return json.load(f)


def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def _inventory_vars():
    """The example inventory's variables of HOST, as ansible-inventory resolves them (no extra vars)."""
    out = subprocess.run([_bin("ansible-inventory"), "-i", os.path.join(ROOT, "inventories", "example"),
                          "--host", HOST], check=True, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}).stdout
    return json.loads(out)


def _run_job(tmp_path, collections_path, extravars, variables):
    pdd = tmp_path / "job"
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), pdd / "inventory")
    (pdd / "project").mkdir(parents=True)
    play = [{
        "name": "Show what the job resolves",
        "hosts": GROUP,
        "gather_facts": False,
        "vars": {"__survey_variables": variables},
        "tasks": [{
            # The first step of playbooks/site.yml and playbooks/upgrade.yml.
            "name": "Take the AWX survey's answers",
            "ansible.builtin.include_role": {"name": "kunpeng.vllm._common", "tasks_from": "survey_answers"},
        }, {
            "name": "Report the survey variables",
            "ansible.builtin.debug": {
                "msg": f"{{{{ dict(__survey_variables | zip(query('ansible.builtin.vars', default='{UNSET}', "
                       "*__survey_variables))) }}",
            },
        }],
    }]
    (pdd / "project" / "show.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    (pdd / "env").mkdir()
    (pdd / "env" / "extravars").write_text(json.dumps(extravars))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MOLECULE_"))}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_COLLECTIONS_PATH"] = collections_path
    env.update(JOB_ENV)
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook="show.yml", quiet=True, envvars=env,
                                limit=HOST)
    assert runner.status == "successful", runner.stdout.read()
    (shown,) = [e["event_data"]["res"]["msg"] for e in runner.events
                if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Report the survey variables"]
    return shown


def _site_variables():
    """The role variables the site survey's questions set."""
    return [q["variable"][len(S("")):] for q in _survey()["spec"]]


@pytest.mark.parametrize("blank", [awx_survey.OMITTED, "", None], ids=["omitted", "empty", "null"])
def test_an_unanswered_survey_keeps_the_ascend_group_vars(tmp_path, collections_path, blank):
    survey = _survey()
    variables = _site_variables()
    extravars = awx_survey.answers(survey, ANSWERS, blank=blank)
    if blank is not awx_survey.OMITTED:
        # The AWX releases that send blanks: the group's "0,1" would become "" (every device) or null.
        assert extravars[S("vllm_visible_devices")] == blank
    inventory = _inventory_vars()
    # The group sets these; a blank answer or a survey default sent as the variable itself would replace them.
    assert {"vllm_backend": "ascend", "vllm_model_source": "modelscope", "vllm_model_params_b": 15.7,
            "vllm_visible_devices": "0,1"}.items() <= inventory.items()
    shown = _run_job(tmp_path, collections_path, extravars, variables)
    assert shown["vllm_model_name"] == "my-deepseek"
    expected = {v: _resolved(inventory[v]) for v in variables if v in inventory and S(v) not in ANSWERS}
    assert len(expected) >= 8
    assert {v: shown[v] for v in expected} == expected
    # What the inventory leaves unset stays unset (the role default applies).
    assert all(shown[v] == UNSET for v in variables if v not in inventory and S(v) not in ANSWERS)


def test_an_answer_replaces_the_group_vars_with_its_type(tmp_path, collections_path):
    answers = dict(ANSWERS, **{S("vllm_visible_devices"): "2,3", S("vllm_port"): "8001", S("vllm_host"): ""})
    shown = _run_job(tmp_path, collections_path, awx_survey.answers(_survey(), answers),
                     ["vllm_visible_devices", "vllm_port", "vllm_host", "vllm_backend"])
    assert shown["vllm_visible_devices"] == "2,3"
    assert shown["vllm_port"] == 8001
    # The blank answer and the unanswered question: the group's and the role's values.
    assert shown["vllm_host"] == _resolved(_inventory_vars().get("vllm_host", UNSET))
    assert shown["vllm_backend"] == "ascend"


def test_a_survey_default_would_replace_the_group_vars(tmp_path, collections_path):
    """The same job with AWX's handling of a question that carries a default: it is an answer, and wins over
    group_vars; the shipped questions have none."""
    survey = _survey()
    with_default = dict(survey, spec=[dict(q, default="cpu") if q["variable"] == S("vllm_backend") else q
                                      for q in survey["spec"]])
    shown = _run_job(tmp_path, collections_path, awx_survey.answers(with_default, ANSWERS), ["vllm_backend"])
    assert shown["vllm_backend"] == "cpu"
