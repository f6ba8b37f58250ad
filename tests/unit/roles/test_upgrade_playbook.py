"""playbooks/upgrade.yml: a result kept from failing (failed_when: false) is never read as a success.

With ``failed_when: false`` Ansible sets the result's ``failed`` to false, so
``is succeeded`` is true even when the module failed: the rollback once said
"the restored instance is healthy again" for an instance that did not answer.
The playbook must read a key the module returns only on success instead.
"""

import os
import re

import yaml

PLAYBOOK = os.path.join(os.path.dirname(__file__), "..", "..", "..", "playbooks", "upgrade.yml")


def _tasks(node):
    if isinstance(node, dict):
        if "name" in node and any(k not in ("name", "block", "rescue", "always") for k in node):
            yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _tasks(item)


def test_kept_from_failing_results_are_not_read_as_success():
    with open(PLAYBOOK) as f:
        text = f.read()
    tasks = list(_tasks(yaml.safe_load(text)))
    unfailing = {t["register"] for t in tasks if t.get("register") and t.get("failed_when") is False}
    assert "__upgrade_rollback_ready" in unfailing
    for name in unfailing:
        assert not re.search(rf"{name}\s+is\s+(succeeded|success|not\s+failed)", text), name


def test_the_gateway_steps_wrap_the_upgrade():
    with open(PLAYBOOK) as f:
        play = yaml.safe_load(f)[0]
    drain = [t for t in play["pre_tasks"] if "community.general.haproxy" in t]
    assert [t["community.general.haproxy"]["state"] for t in drain] == ["drain", "disabled"]
    # The drain waits until no request is in flight on this host in any pool.
    assert "scur" in drain[0]["until"] and drain[0]["delegate_to"] == "{{ item }}"
    ready = [t for t in play["post_tasks"] if "community.general.haproxy" in t]
    assert [t["community.general.haproxy"]["state"] for t in ready] == ["enabled"]
    assert ready[0]["community.general.haproxy"]["wait"] is True
    rescue = play["tasks"][0]["rescue"]
    names = [t["name"] for t in rescue]
    assert names.index("Set the restored host ready again at the gateways") < names.index("Stop the rollout for this host")
    # The gateways themselves are never upgraded.
    assert "all:!" in play["hosts"]
