"""Multi-node layouts as each backend's upstream runs them, and Ray's temporary directory.

Every case runs the real probe (replayed fixtures), vllm_plan with ``nodes`` set to the group's size, and
vllm_cluster on captured network facts, as the vllm role does.
"""

import cluster_hosts as ch
import pytest
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import instance_lifecycle
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_cluster

A2 = ("atlas-800i-a2-64g-cann8.3", ("172.18.0.", "10.20.0.", "eth0", "enp189s0f0"),
      {"vllm_ascend_version": "0.11.0", "python_version": "3.11"})
H100 = ("hgx-h100", ("172.18.0.", "10.30.0.", "eth0", "ens10f0np0"), {"vllm_version": "0.33.0", "python_version": "3.12"})
CPU = ("cpu-x86", (), {"vllm_version": "0.32.0", "python_version": "3.11", "requested_engine_args": {"dtype": "float32"}})

# The environment both nodes export in vllm-ascend's DeepSeek-R1 guide (docs/source/tutorials/models/DeepSeek-R1.md,
# "Multi-Node Data Parallel Deployment", v0.13.0 and later).
ASCEND_DP_ENV = {"HCCL_BUFFSIZE": "200", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1",
                 "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}


def members_of(machine, model, weight_dtype="auto", requested=None, names=("n1", "n2")):
    host, rewrite, params = machine
    params = dict(params)
    if requested is not None:
        params["requested_engine_args"] = requested
    plan = ch.node_plan(host, nodes=len(names), model_config=ch.model_config(model), weight_dtype=weight_dtype, **params)
    nets = ("docker-net1-a", "docker-net1-net2-b")
    return [ch.entry(name, host, ch.network(net, rewrite), plan) for name, net in zip(names, nets)], plan


TOKEN = "/etc/vllm/ds.ray-token"


def ray_security(plan):
    """What the vllm role hands the planner: the token file (Ray >= 2.52 runs behind it), a host firewall that
    denies inbound by default, without which the planner refuses every layout, and, for a Ray without token
    authentication (Ascend: vllm-ascend's 2.48.0), the opt-out vllm_cluster_ray_allow_unauthenticated."""
    return {"ray_token_path": TOKEN, "firewall_default_deny": True, "ray_allow_unauthenticated": True}


def part(members, plan, host, **params):
    args = dict(members=members, host=host, group="ds", engine_args=plan["engine_args"], moe=bool((plan["model"] or {}).get("moe")),
                **dict(ray_security(plan), **params))
    failed, result = run_main(vllm_cluster.main, args, check_mode=True)
    assert not failed, result.get("msg")
    fact = result["ansible_facts"]["kunpeng_vllm_cluster"]
    assert fact_contract.check("kunpeng_vllm_cluster", fact) == []
    return fact


# id: (machine, model, weight dtype, requested engine args,
#      plan's (tensor, pipeline, data parallel, expert parallel), cluster mode, Ray release or None, backend env on each member)
LAYOUTS = {
    # vllm-ascend docs/source/tutorials/models/DeepSeek-R1.md "Multi-Node Data Parallel Deployment" (W8A8 on 2 x
    # Atlas 800 A2 64 GB): --data-parallel-size 4 --data-parallel-size-local 2 --tensor-parallel-size 4
    # --enable-expert-parallel, the second node --headless --data-parallel-start-rank 2; no Ray (issues #3529 and
    # #10910: Ray + pipeline + expert parallel fails).  The same layout in DeepSeek-V3.1.md and v0.11.0's multi_node.md.
    "ascend-r1-w8a8-2xa2": (A2, "deepseek-v3", "w8a8", None, (4, 1, 4, True), "dp", None, ASCEND_DP_ENV),
    # A smaller MoE model takes the same replica shape: two replicas per node is tried first.
    "ascend-v2-lite-2xa2": (A2, "deepseek-v2-lite", "auto", None, (4, 1, 4, True), "dp", None, ASCEND_DP_ENV),
    # Asked for explicitly, the guide's other layout (tensor 8 x pipeline 2) runs through Ray, on the Ray release
    # vllm-ascend pins: ray>=2.47.1,<=2.48.0 (requirements-dev.txt and the Dockerfiles, PR #3660), without expert
    # parallelism (issue #3529: EP + PP2 x TP8 over Ray fails to start and starts without EP).
    "ascend-r1-w8a8-2xa2-tp8pp2": (A2, "deepseek-v3", "w8a8", {"tensor_parallel_size": 8, "pipeline_parallel_size": 2},
                                   (8, 2, 1, False), "ray", "2.48.0", {}),
    # vLLM's own multi-node guide (serving/parallelism_scaling) runs a replica larger than a node over Ray; CUDA
    # keeps tensor 8 x pipeline 2 on the PyPI Ray release (vLLM pins none).
    "cuda-r1-2xh100": (H100, "deepseek-v3", "auto", None, (8, 2, 1, True), "ray", "2.60.0", {}),
    # A dense model on Ascend is not spread by the MoE rule.
    "ascend-dense-2xa2": (A2, "deepseek-r1-distill-qwen-7b", "auto", None, (1, 1, 1, False), "dp", None, {}),
    # The CPU backend scales out with one data parallel replica per node.
    "cpu-smollm2-2x": (CPU, "smollm2-135m", "auto", None, (1, 1, 1, False), "dp", None, {}),
}


@pytest.mark.parametrize("case", sorted(LAYOUTS))
def test_multinode_layout_is_the_backends_upstream_layout(case):
    machine, model, dtype, requested, (tp, pp, dp, ep), mode, ray, env = LAYOUTS[case]
    members, plan = members_of(machine, model, dtype, requested)
    args = plan["engine_args"]
    assert plan["fits"] is True, plan["misfit"]
    assert (args["tensor_parallel_size"], args["pipeline_parallel_size"], args.get("data_parallel_size", 1),
            bool(args.get("enable_expert_parallel"))) == (tp, pp, dp, ep)
    head, worker = (part(members, plan, name) for name in ("n1", "n2"))
    assert head["layout"]["mode"] == worker["layout"]["mode"] == mode
    assert head["layout"]["executor"] == ("ray" if mode == "ray" else "mp")
    assert (head["ray"] or {}).get("version") == ray and (worker["ray"] or {}).get("version") == ray
    if ray:
        assert head["ray"]["package"] == f"ray[default]=={ray}"
        # Ray 2.60.0 runs behind the cluster token; vllm-ascend's 2.48.0 has none (only with the opt-out)
        auth = {"2.48.0": {}, "2.60.0": {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN}}[ray]
        for member in (head, worker):
            assert {key: value for key, value in member["env"].items() if key.startswith("RAY_AUTH_")} == auth
    for member in (head, worker):
        assert {key: member["env"].get(key) for key in ASCEND_DP_ENV if key in member["env"]} == env


def test_ascend_r1_members_get_upstreams_node_commands():
    """Node 0 and Node 1 of DeepSeek-R1.md, option for option (the RPC port is the collection's, 13345)."""
    members, plan = members_of(A2, "deepseek-v3", "w8a8")
    head, worker = (part(members, plan, name) for name in ("n1", "n2"))
    common = {"data-parallel-size": 4, "data-parallel-size-local": 2, "data-parallel-address": "10.20.0.2",
              "data-parallel-rpc-port": 13345}
    assert head["engine_args"] == common
    assert worker["engine_args"] == dict(common, **{"headless": True, "data-parallel-start-rank": 2})
    assert head["serves_api"] and not worker["serves_api"] and head["runs_engine"] and worker["runs_engine"]
    assert [rule["why"] for rule in head["firewall"]][0] == "data-parallel RPC (head)"
    assert not any("Ray" in rule["why"] for rule in head["firewall"])


@pytest.mark.parametrize("replica_tp,expected", [
    # the Ascend record's order: replicas of tensor 4 first (two per 8-device Atlas 800 A2 node, DeepSeek-R1.md)
    (backends.field("ascend", "multinode_moe")["replica_tensor_parallel"], (4, 4)),
    ([8, 4], (8, 2)),
    # tensor 3 does not divide 8 devices; the next size is taken
    ([3, 2], (2, 8)),
])
def test_data_parallel_search_takes_the_first_replica_size_that_fits(replica_tp, expected):
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity

    model = capacity.model_from_config(dict(ch.model_config("deepseek-v3"), quantization_config=None))
    hw = {"devices_per_node": 8, "nodes": 2, "device_memory_mib": 65536}
    kw = dict(kv_bytes=2, need_len=4096, sequences=1, utilization=0.9, ep_for=lambda tp, dp: True)
    found = capacity._search_data_parallel(model, hw, "w8a8", replica_tp, **kw)
    assert (found["tp"], found["dp"]) == expected and found["ep"] is True and found["pp"] == 1


# --- Ray's temporary directory ------------------------------------------------------------------------

NAMES = ["deepseek-r1", "deepseek-r1-distill-qwen-32b", "x" * 64, "a"]


@pytest.mark.parametrize("name", NAMES)
def test_ray_sockets_fit_af_unix_whatever_the_instance_name(name):
    """Ray builds <RAY_TMPDIR>/ray/session_<stamp>_<pid>/sockets/plasma_store; sun_path holds 107 bytes."""
    temp_dir = cluster.ray_tmpdir("/var/cache/vllm", name)
    assert len(instance_lifecycle.ray_socket_path(temp_dir).encode()) <= 107
    assert temp_dir == cluster.ray_tmpdir("/var/cache/vllm", name) != cluster.ray_tmpdir("/var/cache/vllm", name + "-b")


def test_the_instance_tmpdir_was_over_the_limit_for_a_long_name():
    """TMPDIR <cache>/<instance>/tmp: 88 + len(name) bytes, 116 for deepseek-r1-distill-qwen-32b."""
    socket = instance_lifecycle.ray_socket_path("/var/cache/vllm/deepseek-r1-distill-qwen-32b/tmp")
    assert len(socket) == 116 > instance_lifecycle.AF_UNIX_PATH_MAX


def test_a_cache_dir_too_long_for_rays_sockets_is_refused():
    with pytest.raises(cluster.ClusterError, match="over the 107-byte AF_UNIX limit; use a vllm_cache_dir of at most 26"):
        cluster.ray_tmpdir("/srv/" + "c" * 40, "deepseek-r1")
    assert cluster.ray_tmpdir("/" + "c" * 25, "deepseek-r1")


@pytest.mark.parametrize("case", ["ascend-r1-w8a8-2xa2-tp8pp2", "cuda-r1-2xh100"])
def test_every_ray_member_gets_the_short_ray_tmpdir_in_its_environment(case):
    machine, model, dtype, requested = LAYOUTS[case][:4]
    members, plan = members_of(machine, model, dtype, requested)
    name = "deepseek-r1-distill-qwen-32b"
    for host in ("n1", "n2"):
        fact = part(members, plan, host, instance=name, cache_dir="/var/cache/vllm")
        assert fact["env"]["RAY_TMPDIR"] == fact["ray"]["temp_dir"] == cluster.ray_tmpdir("/var/cache/vllm", name)
        assert len(instance_lifecycle.ray_socket_path(fact["env"]["RAY_TMPDIR"])) <= 107


def test_members_without_ray_get_no_ray_tmpdir():
    members, plan = members_of(A2, "deepseek-v3", "w8a8")
    assert "RAY_TMPDIR" not in part(members, plan, "n2", instance="deepseek-r1")["env"]


@pytest.mark.parametrize("units,removed", [
    # a member whose plan ran Ray: its Ray temporary directory goes with its cache
    ({"vllm-ray-deepseek-r1-distill-qwen-32b.service": "ExecStart=/opt/vllm/current-deepseek-r1-distill-qwen-32b/bin/ray 'start'"},
     True),
    ({"vllm-deepseek-r1-distill-qwen-32b.service": "ExecStart=/opt/vllm/current-deepseek-r1-distill-qwen-32b/bin/vllm serve /m"},
     False),
])
def test_removal_takes_rays_temporary_directory_with_the_instance(units, removed):
    name = "deepseek-r1-distill-qwen-32b"
    plan = instance_lifecycle.removal_plan(units, [], "/opt/vllm", "/etc/vllm", "/var/cache/vllm", "/var/lib/vllm/models", False)
    assert "/var/cache/vllm/" + name in plan["paths"]
    assert (cluster.ray_tmpdir("/var/cache/vllm", name) in plan["paths"]) is removed
