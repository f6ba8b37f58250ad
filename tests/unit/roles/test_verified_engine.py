"""Issue 29: the venv an interrupted upgrade rolls back to is the one that passed the readiness gate.

The vllm role records it (``<install_dir>/verified-<instance>``, read by
kunpeng.vllm.vllm_instance_state) only after a gate answered: this host's, or
on a multi-node member the head's.
"""

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from task_files import task

VERIFY = "roles/vllm/tasks/verify.yml"
NAME = "Record the engine that passed the readiness gate"
PASSED = {"latency_s": 0.4, "changed": False}
SKIPPED = {"skipped": True, "changed": False}


def _records(**variables):
    variables.setdefault("vllm_install_method", "wheel")
    step = task(VERIFY, NAME)
    templar = Templar(loader=DataLoader(), variables=dict(variables, __vllm_gate=trust_as_template(step["vars"]["__vllm_gate"])))
    return all(str(templar.template(trust_as_template("{{ " + when + " }}"))) == "True" for when in step["when"])


def test_the_link_names_the_planned_venv_in_the_install_dir():
    link = task(VERIFY, NAME)["ansible.builtin.file"]
    assert link == {"src": "{{ kunpeng_vllm_plan.venv }}", "dest": "{{ vllm_install_dir }}/verified-{{ vllm_instance_name }}",
                    "state": "link", "force": True}


def test_the_record_follows_the_gate_of_this_host_or_of_the_head():
    alone = {"enabled": False}
    assert _records(kunpeng_vllm_cluster=alone, __vllm_ready_result=PASSED)
    assert not _records(kunpeng_vllm_cluster=alone, __vllm_ready_result=SKIPPED)  # vllm_ready_check false: no gate
    assert not _records(kunpeng_vllm_cluster=alone)
    member = {"enabled": True, "head": "head"}
    assert _records(kunpeng_vllm_cluster=member, __vllm_ready_result=SKIPPED, hostvars={"head": {"__vllm_ready_result": PASSED}})
    assert not _records(kunpeng_vllm_cluster=member, __vllm_ready_result=SKIPPED, hostvars={"head": {}})
    # container mode has no venv: the image that passed is recorded by tasks/converge.yml instead
    assert not _records(kunpeng_vllm_cluster=alone, __vllm_ready_result=PASSED, vllm_install_method="container")
