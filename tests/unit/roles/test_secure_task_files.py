"""Task files and playbooks as data: what issue 29 asks of every task, whatever its role.

- a recursive ownership change never follows a link out of the tree it is
  given (``follow: false``);
"""

import glob
import os

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


def _all_tasks():
    for path in FILES:
        for task in tasks(load(path) or []):
            yield path, task


def test_the_walk_sees_the_model_tasks():
    names = {task.get("name") for path, task in _all_tasks() if path.endswith("model_huggingface.yml")}
    assert "Give the model to the service account" in names


@pytest.mark.parametrize("path, name", [(path, task.get("name")) for path, task in _all_tasks()
                                        if (_module_args(task, "ansible.builtin.file") or {}).get("recurse")])
def test_recursive_ownership_does_not_follow_links(path, name):
    (task,) = [t for p, t in _all_tasks() if p == path and t.get("name") == name]
    args = _module_args(task, "ansible.builtin.file")
    assert args.get("follow") is False, f"{path}: {name!r} recurses with follow (a link to /etc would be chowned)"
