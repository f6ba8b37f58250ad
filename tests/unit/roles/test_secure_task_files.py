"""Task files and playbooks as data: what issue 29 asks of every task, whatever its role.

- a recursive ownership change never follows a link out of the tree it is
  given (``follow: false``);
- no secret reaches a command line: Ansible prefixes a task's
  ``environment:`` onto the remote ``sh -c`` (visible in ps, sudo's log and
  -vvv output), and an ``argv``/``cmd`` is in ps for the command's life.
  Secrets travel in root-only files instead (HF_TOKEN_PATH, an environment
  file the command sources).
"""

import glob
import os
import re

import pytest
from task_files import ROOT, load, tasks

FILES = sorted(os.path.relpath(path, ROOT) for pattern in ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml",
                                                             "playbooks/*.yml")
               for path in glob.glob(os.path.join(ROOT, pattern)))


def _module_args(task, module):
    for key in (module, module.split(".")[-1]):
        if key in task:
            return task[key] if isinstance(task[key], dict) else {}
    return None


_TASKS = [(path, task) for path in FILES for task in tasks(load(path) or [])]


def _all_tasks():
    return iter(_TASKS)


def test_the_walk_sees_the_model_tasks():
    names = {task.get("name") for path, task in _all_tasks() if path.endswith("model_fetch_huggingface.yml")}
    assert "Download the model into the staging directory" in names


@pytest.mark.parametrize("path, name", [(path, task.get("name")) for path, task in _all_tasks()
                                        if (_module_args(task, "ansible.builtin.file") or {}).get("recurse")])
def test_recursive_ownership_does_not_follow_links(path, name):
    (task,) = [t for p, t in _all_tasks() if p == path and t.get("name") == name]
    args = _module_args(task, "ansible.builtin.file")
    assert args.get("follow") is False, f"{path}: {name!r} recurses with follow (a link to /etc would be chowned)"


# The secret variables: those argument_specs hides (input_check.SECRETS) and
# the facts that hold them in the playbooks.
SECRETS = ("vllm_api_key", "vllm_hf_token", "vllm_modelscope_token", "gateway_api_keys", "__bench_api_key",
           "kunpeng_vllm_deployed_api_key", "api_key")


def test_the_secret_list_holds_every_hidden_variable():
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    assert set(input_check.SECRETS) <= set(SECRETS)


def _command_line(task):
    for module in ("ansible.builtin.command", "ansible.builtin.shell", "command", "shell"):
        if module in task:
            args = task[module]
            return str(args if not isinstance(args, dict) else {k: args.get(k) for k in ("argv", "cmd")})
    return ""


@pytest.mark.parametrize("path, name", sorted({(path, str(task.get("name"))) for path, task in _all_tasks()
                                               if "environment" in task or _command_line(task)}))
def test_no_secret_travels_on_a_command_line(path, name):
    for task in [t for p, t in _all_tasks() if p == path and str(t.get("name")) == name]:
        exposed = str(task.get("environment", "")) + _command_line(task)
        # A secret's value, not a test of its length (``if vllm_hf_token | length > 0``).
        found = [secret for secret in SECRETS
                 if re.search(rf"(?<![\w]){secret}(?![\w])(?!\s*\|\s*length)", exposed)]
        assert not found, f"{path}: {name!r} puts {found} in environment:/argv, which ps and sudo's log show"
