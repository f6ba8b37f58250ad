"""playbooks/upgrade.yml: the gateway steps wrap the upgrade, and a rollback's failed check is never read as a success.

With ``failed_when: false`` Ansible sets the result's ``failed`` to false, so
``is succeeded`` is true even when the module failed: the rollback once said
"the restored instance is healthy again" for an instance that did not answer.
The rollback entry point must read a key the module returns only on success
instead.
"""

import re

from task_files import ROOT, load, tasks

ROLLBACK = "roles/vllm/tasks/rollback.yml"


def _includes(task_list, role):
    """(task, tasks_from) of each include_role/import_role of ``role`` in ``task_list``."""
    found = []
    for task in task_list:
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            if key in task and task[key]["name"] == role:
                found.append((task, task[key].get("tasks_from", "main")))
    return found


def test_kept_from_failing_results_are_not_read_as_success():
    for path in ("playbooks/upgrade.yml", ROLLBACK):
        with open(f"{ROOT}/{path}") as handle:
            text = handle.read()
        unfailing = {t["register"] for t in tasks(load(path)) if t.get("register") and t.get("failed_when") is False}
        if path == ROLLBACK:
            assert "__vllm_rollback_ready" in unfailing
        for name in unfailing:
            assert not re.search(rf"{name}\s+is\s+(succeeded|success|not\s+failed)", text), name


def test_the_gateway_steps_wrap_the_upgrade():
    (play,) = load("playbooks/upgrade.yml")
    pre = [entry for _task, entry in _includes(play["pre_tasks"], "kunpeng.vllm.gateway")]
    assert pre == ["drain"]
    # The state is recorded before the host leaves the gateways.
    order = [entry for _task, entry in _includes(play["pre_tasks"], "kunpeng.vllm.vllm")
             + _includes(play["pre_tasks"], "kunpeng.vllm.gateway")]
    assert order == ["preflight", "snapshot", "drain"]
    drain = load("roles/gateway/tasks/drain.yml")
    assert [t["community.general.haproxy"]["state"] for t in drain] == ["drain", "disabled"]
    # The drain waits until no request is in flight on this host in any pool.
    assert "scur" in drain[0]["until"] and all(t["delegate_to"] == "{{ item }}" for t in drain)
    assert [entry for _task, entry in _includes(play["post_tasks"], "kunpeng.vllm.gateway")] == ["ready"]
    ready = load("roles/gateway/tasks/ready.yml")
    assert [t["community.general.haproxy"]["state"] for t in ready] == ["enabled"]
    assert ready[0]["community.general.haproxy"]["wait"] is True
    rescue = play["tasks"][0]["rescue"]
    names = [t["name"] for t in rescue]
    assert [e for _t, e in _includes(rescue, "kunpeng.vllm.vllm")] == ["rollback"]
    (back, _entry), = _includes(rescue, "kunpeng.vllm.gateway")
    # Only an instance that answers again goes back into the gateways.
    assert back["when"] == "kunpeng_vllm_rollback.healthy"
    assert names.index("Roll back to the recorded state") < names.index(back["name"]) \
        < names.index("Stop the rollout for this host")
    # The gateways themselves are never upgraded.
    assert "all:!" in play["hosts"]
