"""Run a test playbook from tests/unit/roles/playbooks with ansible-playbook.

The role tests resolve variables and run preflights on the controller
(``-i localhost, -c local``) with made-up facts; this is the one place that
knows how to call ansible-playbook for them.
"""

import json
import os
import subprocess
import sys

PLAYBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "playbooks")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_playbook(collections_path, playbook, extra_vars, *args, timeout=300, hosts=("localhost",)):
    """ansible-playbook PLAYBOOK against ``hosts`` (all local); returns the CompletedProcess."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=collections_path,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
    )
    extra_vars = dict(extra_vars, ansible_python_interpreter=sys.executable)
    cmd = [ANSIBLE_PLAYBOOK, "-i", ",".join(hosts) + ",", "-c", "local", "-e", json.dumps(extra_vars), *args,
           os.path.join(PLAYBOOKS, playbook)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
