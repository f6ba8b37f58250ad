"""Every readiness gate in the role and the playbooks checks the instance where it listens and what it answers.

The gate used to call kunpeng.vllm.vllm_ready with a fixed
``http://127.0.0.1:<port>`` and no expectation, so a server bound to one
address was never reached and a wrong answer passed.  Both the role's verify
step and the check of a restored instance (the role's entry point rollback,
which playbooks/upgrade.yml calls) must hand the module the host
(vllm_ready_host, or the restored config's host) and the expectation.
"""

import pytest
from task_files import load, tasks

FILES = ["roles/vllm/tasks/verify.yml", "roles/vllm/tasks/rollback.yml"]


def _ready_calls(path):
    return [task["kunpeng.vllm.vllm_ready"] for task in tasks(load(path)) if "kunpeng.vllm.vllm_ready" in task]


@pytest.mark.parametrize("path", FILES)
def test_gate_passes_host_and_expectation(path):
    calls = _ready_calls(path)
    assert calls, f"{path} has no kunpeng.vllm.vllm_ready task"
    for args in calls:
        assert "url" not in args, f"{path}: a fixed url bypasses vllm_ready_host: {args['url']}"
        assert "host" in args and "port" in args, args
        assert args["expect"] == "{{ vllm_ready_expect | default(omit, true) }}", args
        assert args["expect_regex"] == "{{ vllm_ready_expect_regex | default(omit, true) }}", args


def test_role_gate_follows_vllm_ready_host():
    (args,) = _ready_calls("roles/vllm/tasks/verify.yml")
    assert args["host"] == "{{ vllm_ready_host }}"
    defaults = load("roles/vllm/defaults/main.yml")
    # The module turns a wildcard bind address into loopback (test_vllm_ready.test_base_url).
    assert defaults["vllm_ready_host"] == "{{ vllm_host }}"


@pytest.mark.parametrize("path, decision", [
    # the role's gate: the plan's decision
    ("roles/vllm/tasks/verify.yml", "kunpeng_vllm_plan.rehearsal"),
    # a restored instance: the decision on the engine config it is restored with
    ("roles/vllm/tasks/rollback.yml", "kunpeng_vllm_snapshot.config | default({}) | kunpeng.vllm.vllm_rehearsal"),
])
def test_gate_checks_a_rehearsal_as_one(path, decision):
    """A rehearsal (load_format dummy) answers noise, perhaps without a tokenizer: the gate must know."""
    for args in _ready_calls(path):
        assert decision in args["rehearsal"] and args["rehearsal"].endswith(".enabled }}"), args
        assert decision in args["prompt_token_ids"] and "prompt_token_ids | default(omit, true) }}" in args["prompt_token_ids"], args
