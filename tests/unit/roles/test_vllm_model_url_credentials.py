"""A model URL's credentials reach get_url's url_password only (issue 37, low).

Before, vllm_model_src with user:password@ was written into the download's 0640 marker file (readable by the
service group), the cluster members' fact, failure messages and get_url's url (its result, the node's journal, the
async job file).  These tests render the real task arguments with the role's defaults and vars.
"""

import json

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from task_files import load, task, tasks
from task_files import trusted as _trusted

SECRET = "Pa55-not-shown"
URL = f"https://ci:{SECRET}@models.internal/smol.tar.gz"
PLAIN = "https://models.internal/smol.tar.gz"


def render(value, **overrides):
    variables = {}
    variables.update(_trusted(load("roles/vllm/defaults/main.yml")))
    variables.update(_trusted(load("roles/vllm/vars/main.yml")))
    variables.update(vllm_model_name="smol", vllm_model_source="url", vllm_model_src=URL, vllm_model_sha256="a" * 64,
                     __vllm_model_state={"staging_dir": "/var/lib/vllm/models/smol.partial",
                                         "marker": "/var/lib/vllm/models/smol/.kunpeng-model-complete"})
    variables.update(overrides)
    return Templar(loader=DataLoader(), variables=variables).template(_trusted(value))


def runs(item):
    """Whether the task's when: holds for a url model (False when a condition cannot be rendered here)."""
    conditions = item.get("when") or []
    for condition in conditions if isinstance(conditions, list) else [conditions]:
        try:
            if render("{{ " + str(condition) + " }}") not in (True, "True"):
                return False
        except Exception:  # noqa: BLE001 - a condition on a variable this test does not give
            return False
    return True


def test_get_url_takes_the_credentials_apart():
    args = render(task("roles/vllm/tasks/model_fetch_url.yml",
                       "Start the download of the model archive, checked against its checksum")["ansible.builtin.get_url"])
    assert args["url"] == PLAIN
    assert (args["url_username"], args["url_password"]) == ("ci", SECRET)


def test_a_url_without_credentials_gives_get_url_none():
    args = render(task("roles/vllm/tasks/model_fetch_url.yml",
                       "Start the download of the model archive, checked against its checksum")["ansible.builtin.get_url"],
                  vllm_model_src=PLAIN)
    assert (args["url"], args["url_username"], args["url_password"]) == (PLAIN, "", "")


def test_the_marker_file_holds_the_url_without_credentials():
    content = render(task("roles/vllm/tasks/model_download.yml",
                          "Mark the download complete (its last file)")["ansible.builtin.copy"]["content"])
    assert json.loads(content)["src"] == PLAIN


@pytest.mark.parametrize("path", ["roles/vllm/tasks/model.yml", "roles/vllm/tasks/model_download.yml",
                                  "roles/vllm/tasks/model_fetch_url.yml", "roles/vllm/tasks/preflight.yml"])
def test_no_task_prints_or_stores_the_credentials(path):
    """Every argument of every task of the file, rendered where it can be, holds no password, but get_url's
    url_password (a no_log option of get_url)."""
    for item in [item for item in tasks(load(path)) if runs(item)]:
        for module, args in item.items():
            if not isinstance(args, (dict, str)) or module in ("name", "when", "loop", "block", "always", "rescue"):
                continue
            if isinstance(args, dict):
                args = {key: value for key, value in args.items() if key not in ("url_password", "url_username")}
            try:
                text = str(render(args))
            except Exception:  # noqa: BLE001 - a task whose other variables this test does not give
                continue
            assert SECRET not in text, f"{path}: {item.get('name')!r} {module}"
