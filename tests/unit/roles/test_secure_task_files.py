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

PATTERNS = ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/*.yml")
FILES = sorted(os.path.relpath(path, ROOT) for pattern in PATTERNS for path in glob.glob(os.path.join(ROOT, pattern)))


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
    assert "Start the model download into the staging directory" in names


def _follow_matters(path, args):
    """A recursive change, a model's staging directory, base's directories, or a directory in the service account's
    cache (review round 2: <cache>/<instance>/tmp -> /etc was chowned to the account): a link planted in their place."""
    where = str(args.get("path", ""))
    in_cache = args.get("state") == "directory" and ("vllm_cache_dir" in where or "ray.temp_dir" in where
                                                     or "__vllm_model_download_dir" in where)
    return bool(args.get("recurse") or "__vllm_model_state.staging_dir" in where or in_cache
                or path.endswith("roles/base/tasks/directories.yml"))


_FOLLOW_TASKS = [(path, task.get("name")) for path, task in _all_tasks()
                 if _follow_matters(path, _module_args(task, "ansible.builtin.file") or {})]


def test_the_walk_sees_the_staging_and_base_directory_tasks():
    assert ("roles/vllm/tasks/model_controller.yml", "Create the staging directory beside the model directory") \
        in _FOLLOW_TASKS
    assert ("roles/vllm/tasks/model_download.yml", "Create the staging directory beside the model directory") \
        in _FOLLOW_TASKS
    assert ("roles/base/tasks/directories.yml", "Create the vLLM directories with their owners and modes") \
        in _FOLLOW_TASKS
    assert ("roles/vllm/tasks/configure.yml", "Create the instance's cache directory") in _FOLLOW_TASKS
    assert ("roles/vllm/tasks/configure.yml", "Create Ray's temporary directory of this member") in _FOLLOW_TASKS
    assert ("roles/vllm/tasks/model_fetch_url.yml", "Create the directory the archive downloads into") in _FOLLOW_TASKS


def test_root_makes_nothing_below_a_directory_the_service_account_owns():
    """Review round 3: follow: false guards the last component only, and a trailing slash none.  Root makes
    <cache>/<instance> (the account could swap it for a link between two tasks); the account makes what is below."""
    for path, task in _all_tasks():
        args = _module_args(task, "ansible.builtin.file") or {}
        where = str(args.get("path", ""))
        if "vllm_cache_dir" in where and args.get("state") == "directory":
            assert where.rstrip("/") == where, f"{path}: {task.get('name')!r} ends in a slash (resolves a link)"
            assert where.count("/") <= 1, f"{path}: {task.get('name')!r} goes below a directory of the cache"
    (make,) = [t for p, t in _all_tasks() if p == "roles/vllm/tasks/configure.yml"
               and t.get("name") == "Create the instance's temporary directory as the service account"]
    argv = make["ansible.builtin.command"]["argv"]
    assert argv.startswith("{{ __vllm_as_service_account + ['mkdir', ")


@pytest.mark.parametrize("path, name", _FOLLOW_TASKS)
def test_ownership_changes_do_not_follow_links(path, name):
    """Review finding M1: the staging task followed a planted <model>.partial -> /etc and gave /etc away."""
    (task,) = [t for p, t in _all_tasks() if p == path and t.get("name") == name]
    args = _module_args(task, "ansible.builtin.file")
    assert args.get("follow") is False, f"{path}: {name!r} follows a link (a link to /etc would be chowned)"


# The secret variables: those argument_specs hides (input_check.SECRETS) and
# the facts that hold them in the playbooks.
SECRETS = ("vllm_api_key", "vllm_hf_token", "vllm_modelscope_token", "gateway_api_keys", "__bench_api_key",
           "kunpeng_vllm_deployed_api_key", "api_key", "vllm_pip_index_url", "vllm_pip_extra_index_urls",
           "wheelhouse_index_url", "base_pip_index_url", "base_pip_extra_index_urls", "base_pip_find_links",
           "monitoring_grafana_admin_password")


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


def _writes(task):
    for module in ("ansible.builtin.copy", "ansible.builtin.template"):
        if module in task and isinstance(task[module], dict) and task[module].get("dest"):
            return task[module]
    return None


def _secret_writes():
    return [(path, task) for path, task in _TASKS if task.get("no_log") is True and _writes(task)]


def test_the_walk_sees_the_secret_files():
    names = {task.get("name") for _path, task in _secret_writes()}
    assert {"Install the TLS certificate and key", "Write the service environment (API key, caches, device selection)",
            "Write the Hugging Face token into it"} <= names


@pytest.mark.parametrize("path, name", [(path, task.get("name")) for path, task in _secret_writes()])
def test_a_secret_file_never_exists_with_a_looser_mode(path, name):
    """Ansible's atomic_move gives a NEW file the umask's 0644 before it sets the mode; an existing one keeps its own.

    So the file is created first with its final mode (file state=touch, or a
    0600 tempfile), and the write replaces it.
    """
    _assert_created_with_its_final_mode_first(path, name)


def test_pip_conf_never_exists_with_a_looser_mode():
    """/etc/pip.conf holds index credentials when a URL has them (issue 37, low): written like a secret file."""
    _assert_created_with_its_final_mode_first("roles/base/tasks/pip.yml", "Write the site-wide pip configuration")


def _assert_created_with_its_final_mode_first(path, name):
    file_tasks = [task for p, task in _TASKS if p == path]
    write = _writes(file_tasks[[t.get("name") for t in file_tasks].index(name)])
    earlier = file_tasks[:[t.get("name") for t in file_tasks].index(name)]
    dest = str(write["dest"])
    touched = [t for t in earlier if (_module_args(t, "ansible.builtin.file") or {}).get("path") == dest
               and t["ansible.builtin.file"].get("state") == "touch"
               and t["ansible.builtin.file"].get("mode") == write.get("mode")]
    temp = [t for t in earlier if "ansible.builtin.tempfile" in t and t["ansible.builtin.tempfile"].get("state") == "file"
            and dest == "{{ " + str(t.get("register")) + ".path }}"]
    assert touched or temp, f"{path}: {name!r} creates {dest} with the umask's mode before setting {write.get('mode')}"


def _render(expression, variables):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from task_files import trusted
    return Templar(loader=DataLoader(), variables=trusted(variables)).template(trusted(expression))


@pytest.mark.parametrize("urls, mode", [
    (("https://mirror.example/simple", [], []), "0644"),
    (("https://user:s3cret@mirror.example/simple", [], []), "0600"),
    (("", ["https://token@pypi.example/simple"], []), "0600"),
    (("", [], ["https://u:p@wheels.example/"]), "0600"),
    (("", [], ["/srv/wheels"]), "0644"),
])
def test_pip_conf_with_credentials_is_root_only(urls, mode):
    base_vars = load("roles/base/vars/main.yml")
    task = [t for t in tasks(load("roles/base/tasks/pip.yml")) if "ansible.builtin.template" in t][0]
    variables = {"base_pip_index_url": urls[0], "base_pip_extra_index_urls": urls[1], "base_pip_find_links": urls[2],
                 "__base_pip_credentials": base_vars["__base_pip_credentials"]}
    assert _render(task["ansible.builtin.template"]["mode"], variables) == mode


@pytest.mark.parametrize("path", ["roles/vllm/tasks/install_step.yml", "roles/vllm/tasks/model_modelscope.yml"])
@pytest.mark.parametrize("pip_args, hidden", [
    (["--index-url", "https://mirror.example/simple"], False),
    (["--index-url", "https://user:s3cret@mirror.example/simple"], True),
    (["--extra-index-url=https://token@pypi.example/simple"], True),
])
def test_pip_output_is_hidden_when_an_index_holds_credentials(path, pip_args, hidden):
    (task,) = [t for t in tasks(load(path)) if "ansible.builtin.pip" in t and "virtualenv" in t["ansible.builtin.pip"]]
    assert _render(task["no_log"], {"kunpeng_vllm_plan": {"pip_args": pip_args}}) is hidden


@pytest.mark.parametrize("pip_args, hidden", [
    (["--index-url", "https://mirror.example/simple"], False),
    (["--index-url", "https://user:s3cret@mirror.example/simple"], True),
])
def test_the_wait_for_pip_hides_its_result_as_pip_does(pip_args, hidden):
    """The wait returns pip's finished result, command line included: it is hidden whenever pip's own task is."""
    (task,) = [t for t in tasks(load("roles/vllm/tasks/install_step.yml")) if "kunpeng.vllm.vllm_progress" in t
               and "pip" in t["kunpeng.vllm.vllm_progress"]["jid"]]
    assert _render(task["no_log"], {"kunpeng_vllm_plan": {"pip_args": pip_args}}) is hidden


@pytest.mark.parametrize("pip_args, tool", [
    (["--index-url", "https://user:s3cret@mirror.example/simple", "--find-links=/opt/vllm/wheelhouse"], "pip"),
    (["--no-index", "--find-links=https://token@wheels.example/", "--find-links=/opt/vllm/wheelhouse"], "pip"),
    # --no-index: pip ignores the index too; uv is given only the local folder.
    (["--no-index", "--extra-index-url=https://token@pypi.example/simple", "--find-links=/opt/vllm/wheelhouse"], "uv"),
])
def test_no_credential_reaches_uv_command_line(pip_args, tool):
    """install_step.yml's uv task runs the argv kunpeng.vllm.vllm_install_steps built; an index or find-links URL
    (where a credential can be) never reaches it: such an install goes to pip, whose output no_log hides."""
    (task,) = [t for t in tasks(load("roles/vllm/tasks/install_step.yml")) if "ansible.builtin.command" in t
               and "installer.argv" in str(t["ansible.builtin.command"])]
    step = {"name": "wheelhouse", "packages": [], "pip_args": ["--no-deps"], "env": {}, "requirements": "/r.txt"}
    from ansible_collections.kunpeng.vllm.plugins.filter.vllm_install_steps import vllm_install_steps
    (chosen,) = vllm_install_steps([step], pip_args, "auto", False, "/usr/bin/uv", "/opt/vllm/venv")
    argv = _render(task["ansible.builtin.command"]["argv"], {"__vllm_step": chosen})
    assert not any("@" in arg or "://" in arg for arg in argv)
    assert chosen["installer"]["tool"] == tool


def test_the_wheelhouse_netrc_is_removed_whatever_happens():
    """The credentials file is created in the block and removed in its always: (issue 37, low), not after it."""
    (guarded,) = [t for t in load("roles/wheelhouse/tasks/main.yml") if "block" in t]
    assert [t["ansible.builtin.include_tasks"] for t in guarded["block"]] == ["download.yml"]
    created = [t for t in load("roles/wheelhouse/tasks/download.yml") if "ansible.builtin.tempfile" in t]
    assert [t["register"] for t in created] == ["__wheelhouse_netrc"]
    (removal,) = guarded["always"]
    assert removal["ansible.builtin.file"] == {"path": "{{ __wheelhouse_netrc.path }}", "state": "absent"}
    assert not [t for t in load("roles/wheelhouse/tasks/main.yml")
                if "__wheelhouse_netrc" in str(t.get("ansible.builtin.file", ""))]
