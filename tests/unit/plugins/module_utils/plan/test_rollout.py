"""Issue 29: `upgrade_serial: 100%` drained every server of a gateway pool at once; such a batch is refused."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.rollout import batch_problem

GROUPS = {"vllm_cpu": ["cpu1", "cpu2"], "vllm_npu": ["npu1", "npu2", "npu3", "npu4"], "solo": ["one"],
          "kv_cluster": ["head", "worker"], "mixed": ["head", "worker", "cpu9"]}
POOLS = [{"name": "cpu", "group": "vllm_cpu", "models": ["a"]}, {"name": "npu", "group": "vllm_npu", "models": ["b"]}]
CLUSTERS = {"head": "kv_cluster", "worker": "kv_cluster", "npu1": "", "npu3": "npu_r1", "npu4": "npu_r1"}


@pytest.mark.parametrize("batch, pools, serial, expect", [
    (["cpu1"], POOLS, 1, ""),
    (["cpu1", "npu1", "npu2"], POOLS, 3, ""),
    # 100%: every server of both pools at once
    (["cpu1", "cpu2", "npu1", "npu2", "npu3", "npu4"], POOLS, "100%", "gateway pool 'cpu' (group vllm_cpu: cpu1, cpu2)"),
    (["cpu1", "cpu2"], POOLS, 2, "upgrade_serial 2 puts cpu1, cpu2 in one batch"),
    # npu3 and npu4 are one multi-node instance: the npu pool has 3 servers, this batch takes all of them
    (["npu1", "npu2", "npu3", "npu4"], POOLS, 4, "its 3 servers must not all be in one batch"),
    (["npu1", "npu3", "npu4"], POOLS, 3, ""),
    # a pool of one server, or of one multi-node instance, cannot avoid the gap: not refused
    (["one"], [{"name": "solo", "group": "solo"}], 1, ""),
    (["head", "worker"], [{"name": "cluster", "group": "kv_cluster"}], "100%", ""),
    (["head", "worker", "cpu9"], [{"name": "mixed", "group": "mixed"}], "100%", "gateway pool 'mixed'"),
    (["cpu1", "cpu2"], [], "100%", ""),
])
def test_a_batch_that_would_empty_a_pool_is_refused(batch, pools, serial, expect):
    problem = batch_problem(batch, pools, GROUPS, CLUSTERS, serial)
    if not expect:
        assert problem == ""
        return
    assert expect in problem and "upgrade_serial" in problem


def _playbook_check(batch, serial, hostvars):
    """The upgrade playbook's check, templated as Ansible does, on an inventory of two pools behind one gateway."""
    import os

    import yaml
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from core_compat import trust_as_template

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
    with open(os.path.join(root, "playbooks", "upgrade.yml")) as handle:
        play = yaml.safe_load(handle)[0]
    task = next(t for t in play["pre_tasks"] if t["name"] == "Check that this batch leaves every gateway pool a server")
    groups = dict(GROUPS, all=sorted({h for hosts in GROUPS.values() for h in hosts} | {"gw"}), gateway=["gw"])
    variables = {"ansible_play_batch": batch, "groups": groups, "hostvars": hostvars, "__upgrade_gateways": ["gw"]}
    if serial is not None:
        variables["upgrade_serial"] = serial
    templar = Templar(loader=DataLoader(), variables=variables)
    return str(templar.template(trust_as_template(task["vars"]["__upgrade_batch_problem"]))).strip()


def test_the_upgrade_playbook_refuses_a_batch_that_empties_a_pool():
    hostvars = {host: {} for hosts in GROUPS.values() for host in hosts}
    hostvars.update(gw={"gateway_pools": POOLS}, head={"vllm_cluster_group": "kv_cluster"},
                    worker={"vllm_cluster_group": "kv_cluster"})
    assert _playbook_check(["cpu1"], None, hostvars) == ""
    problem = _playbook_check(["cpu1", "cpu2", "npu1"], "100%", hostvars)
    assert "upgrade_serial 100%" in problem and "gateway pool 'cpu'" in problem and "'npu'" not in problem
    # no gateway pools: nothing is drained, nothing refused
    hostvars["gw"] = {}
    assert _playbook_check(["cpu1", "cpu2"], "100%", hostvars) == ""
