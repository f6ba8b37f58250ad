"""Every readiness gate in the role and the playbooks checks the instance where it listens and what it answers.

The gate used to call kunpeng.vllm.vllm_ready with a fixed
``http://127.0.0.1:<port>`` and no expectation, so a server bound to one
address was never reached and a wrong answer passed.  Both the role's verify
step and upgrade.yml's check of a restored instance must hand the module the
host (vllm_ready_host, or the restored config's host) and the expectation.
"""

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FILES = ["roles/vllm/tasks/verify.yml", "playbooks/upgrade.yml"]


def _tasks(node):
    """Every task dict in a task list or play list, blocks and rescues included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            if key in node:
                yield from _tasks(node[key])


def _ready_calls(path):
    with open(os.path.join(ROOT, path)) as handle:
        return [task["kunpeng.vllm.vllm_ready"] for task in _tasks(yaml.safe_load(handle))
                if "kunpeng.vllm.vllm_ready" in task]


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
    with open(os.path.join(ROOT, "roles/vllm/defaults/main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    # The module turns a wildcard bind address into loopback (test_vllm_ready.test_base_url).
    assert defaults["vllm_ready_host"] == "{{ vllm_host }}"
