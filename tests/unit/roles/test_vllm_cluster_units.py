"""The units and environment the vllm role renders for the members of a multi-node instance.

The cluster fact comes from the real vllm_cluster module on replayed members
(cluster_hosts: probe fixtures, real plans, captured network facts); the
templates are rendered with the role's defaults and vars, as Ansible does.
The GPU/NPU Ray path cannot run here, so its units are compared with the
committed files under fixtures/cluster/units (regenerate them with
KV_REGENERATE=1 and read the diff).
"""

import os
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "modules"))

import cluster_hosts as ch  # noqa: E402
from module_runner import run_main  # noqa: E402
from task_files import trusted  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_cluster  # noqa: E402

UNITS = os.path.join(ROOT, "tests", "unit", "fixtures", "cluster", "units")
A2_NET = ("172.18.0.", "10.20.0.", "eth0", "enp189s0f0")
# The plan as the vllm role asks for it (with a request: the service entry the templates render).
ROLE_REQUEST = {"install_dir": "/opt/vllm"}


def cluster_fact(members, host, **params):
    # the members deny inbound by default, as a dp or mp layout needs
    params = dict({"ray_token_path": "/etc/vllm/deepseek-r1.ray-token", "firewall_default_deny": True}, **params)
    failed, result = run_main(vllm_cluster.main, dict(members=members, host=host, group="ds_r1", instance="deepseek-r1", **params),
                              check_mode=True)
    assert not failed, result.get("msg")
    return result["ansible_facts"]["kunpeng_vllm_cluster"]


def render(template, plan, cluster, **extra):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from core_compat import trust_as_template

    loader = DataLoader()
    variables = {}
    for name in ("defaults", "vars"):
        variables.update(trusted(loader.load_from_file(os.path.join(ROOT, "roles", "vllm", name, "main.yml"))))
    # What vllm_endpoint sets on a loopback head or a headless member (no key) unless ``extra`` says; bare metal.
    variables.update(dict(kunpeng_vllm_plan=plan, kunpeng_vllm_cluster=cluster, ansible_managed="managed",
                          vllm_model_name="deepseek-r1", vllm_model_source="local", kunpeng_vllm_api_key="",
                          __vllm_endpoint={"private_users": private_users("auto", "", "")}), **extra)
    with open(os.path.join(ROOT, "roles", "vllm", "templates", template)) as handle:
        return Templar(loader=loader, variables=variables).template(trust_as_template(handle.read()))


# One replica over both nodes (tensor 8 x pipeline 2) runs through Ray; asked for explicitly, since the planner
# spreads DeepSeek over two A2 nodes as data parallel replicas (vllm-ascend's DeepSeek-R1 guide).
A2_RAY = {"tensor_parallel_size": 8, "pipeline_parallel_size": 2}
# The Ascend backend's Ray is vllm-ascend's pin (2.48.0), without token authentication: the planner plans it only
# with vllm_cluster_ray_allow_unauthenticated, behind the default-deny firewall every layout needs (as the base role
# records it), and its units then carry no RAY_AUTH_* variable.
A2_RAY_PLAN = {"moe": True, "firewall_default_deny": True, "ray_allow_unauthenticated": True}


def a2_members(requested=None):
    plan = ch.node_plan("atlas-800i-a2-64g-cann8.3", nodes=2, request=ROLE_REQUEST, model_config=ch.model_config("deepseek-v3"), weight_dtype="w8a8",
                        vllm_ascend_version="0.11.0", python_version="3.11",
                        requested_engine_args=A2_RAY if requested is None else requested)
    model = {"name": "deepseek-r1", "source": "local", "src": "/data/DeepSeek-R1-w8a8"}
    members = [ch.entry(f"a2-node-{i}", "atlas-800i-a2-64g-cann8.3", ch.network(net, A2_NET), plan, model, rdma=True)
               for i, net in ((1, "docker-net1-a"), (2, "docker-net1-net2-b"))]
    return members, plan


def compare(name, text):
    path = os.path.join(UNITS, name)
    if os.environ.get("KV_REGENERATE"):
        os.makedirs(UNITS, exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    with open(path) as handle:
        assert text == handle.read()


@pytest.mark.parametrize("host,template,kind,name", [
    ("a2-node-1", "vllm.service.j2", "engine", "a2-node-1.vllm-deepseek-r1.service"),
    ("a2-node-1", "vllm.service.j2", "ray", "a2-node-1.vllm-ray-deepseek-r1.service"),
    ("a2-node-2", "vllm.service.j2", "ray", "a2-node-2.vllm-ray-deepseek-r1.service"),
    ("a2-node-2", "vllm.env.j2", "engine", "a2-node-2.deepseek-r1.env"),
])
def test_ascend_ray_members_render_the_recorded_units(host, template, kind, name):
    members, plan = a2_members()
    fact = cluster_fact(members, host, engine_args=plan["engine_args"], **A2_RAY_PLAN)
    compare(name, render(template, plan, fact, __vllm_unit_kind=kind))


def _systemd_environment(unit, files):
    """The environment systemd gives the unit's process: EnvironmentFile=, then Environment=, then
    UnsetEnvironment= (systemd.exec(5)); ``files`` maps each EnvironmentFile path to its rendered text."""
    env = {}
    for line in unit.splitlines():
        key, _sep, value = line.partition("=")
        if key == "EnvironmentFile":
            text = files.get(value.lstrip("-"), "")
            for item in text.splitlines():
                if item and not item.startswith("#") and "=" in item:
                    name, _s, val = item.partition("=")
                    env[name] = val.strip("'")
        elif key == "Environment":
            name, _s, val = value.partition("=")
            env[name] = val
        elif key == "UnsetEnvironment":
            for name in value.split():
                env.pop(name, None)
    return env


def test_a_ray_task_does_not_get_the_engines_api_key():
    """Issue 37 finding 6: the Ray unit reads the engine's environment file, which holds VLLM_API_KEY; every Ray
    task (and the vLLM workers) inherit the Ray daemon's environment."""
    members, plan = a2_members()
    fact = cluster_fact(members, "a2-node-1", engine_args=plan["engine_args"], **A2_RAY_PLAN)
    env_file = render("vllm.env.j2", plan, fact, kunpeng_vllm_api_key="sk-engine-secret")
    assert "VLLM_API_KEY=sk-engine-secret" in env_file  # the engine's file does hold it
    files = {"/etc/vllm/deepseek-r1.env": env_file}
    ray = render("vllm.service.j2", plan, fact, __vllm_unit_kind="ray")
    engine = render("vllm.service.j2", plan, fact)
    assert "VLLM_API_KEY" not in _systemd_environment(ray, files)
    assert "HOME" in _systemd_environment(ray, files)  # the rest of the engine's environment is still there
    assert _systemd_environment(engine, files)["VLLM_API_KEY"] == "sk-engine-secret"
    # Stopping this member's Ray stops this unit's processes only ('ray stop' would stop every Ray of the host).
    assert "\nExecStop=" not in ray and "KillMode=mixed" in ray


def _template(text, plan, cluster):
    """A task field of the role rendered as Ansible renders it (role defaults and vars, the member's facts)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from core_compat import trust_as_template

    loader = DataLoader()
    variables = {}
    for name in ("defaults", "vars"):
        variables.update(trusted(loader.load_from_file(os.path.join(ROOT, "roles", "vllm", name, "main.yml"))))
    variables.update(kunpeng_vllm_plan=plan, kunpeng_vllm_cluster=cluster, vllm_model_name="deepseek-r1")
    return Templar(loader=loader, variables=variables).template(trust_as_template(text))


def _ray_non_carry_over(plan, fact):
    """What vLLM 0.32.0 reads (vllm/ray/ray_env.py): json.load of <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json,
    VLLM_CONFIG_ROOT from the engine's environment; the set of names its Ray executor does not copy to the workers."""
    import json
    from task_files import task

    write = task("roles/vllm/tasks/configure.yml", "Write the engine variables vLLM must not copy to the Ray workers")
    runs = _template("{{ " + write["when"] + " }}", plan, fact)
    env = _systemd_environment(render("vllm.service.j2", plan, fact),
                               {"/etc/vllm/deepseek-r1.env": render("vllm.env.j2", plan, fact)})
    if not runs:
        return env, None, set()
    step = write["ansible.builtin.copy"]
    dest = _template(step["dest"], plan, fact)
    assert step["owner"] == "root" and step["mode"] == "0640"  # the service account reads it, cannot change it
    return env, dest, set(json.loads(_template(step["content"], plan, fact)))


def test_the_engine_that_drives_ray_keeps_its_api_key_from_the_ray_workers():
    """Review finding M4: UnsetEnvironment=VLLM_API_KEY in the Ray unit did not keep the key out. vLLM 0.32.0's Ray
    executor copies every variable of vllm.envs.environment_variables (VLLM_API_KEY is one) from the engine into
    every Ray worker actor on every member (vllm/ray/ray_env.py get_env_vars_to_copy), less the names of
    <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json."""
    members, plan = a2_members()
    fact = cluster_fact(members, "a2-node-1", engine_args=plan["engine_args"], **A2_RAY_PLAN)
    env, dest, kept_out = _ray_non_carry_over(plan, fact)
    assert "VLLM_API_KEY" in kept_out
    assert dest == "/etc/vllm/deepseek-r1.vllm-config/ray_non_carry_over_env_vars.json"
    assert os.path.join(env["VLLM_CONFIG_ROOT"], "ray_non_carry_over_env_vars.json") == dest


def test_engines_beside_a_ray_cluster_they_do_not_drive_get_no_config_root():
    plan = ch.node_plan("cpu-x86", nodes=2, model_config=ch.model_config("smollm2-135m"), python_version="3.11", request=ROLE_REQUEST)
    members = [ch.entry(f"node-{i}", "cpu-x86", ch.network(net), plan) for i, net in ((0, "docker-net1-a"), (1, "docker-net1-net2-b"))]
    fact = cluster_fact(members, "node-0", engine_args=plan["engine_args"], ray_units=True)
    env, dest, kept_out = _ray_non_carry_over(plan, fact)
    assert dest is None and "VLLM_CONFIG_ROOT" not in env


def test_ray_units_carry_rdma_and_the_ray_command():
    members, plan = a2_members()
    fact = cluster_fact(members, "a2-node-2", engine_args=plan["engine_args"], **A2_RAY_PLAN)
    unit = render("vllm.service.j2", plan, fact, __vllm_unit_kind="ray")
    assert "LimitMEMLOCK=infinity" in unit and "DeviceAllow=char-infiniband_verbs rw" in unit
    assert "DeviceAllow=/dev/infiniband/rdma_cm rw" in unit and "DeviceAllow=/dev/infiniband rw" not in unit
    assert "ExecStart=/opt/vllm/current-deepseek-r1/bin/ray 'start' '--address=10.20.0.2:6379'" in unit
    assert "'--resources={\"NPU\":8}'" in unit and "Restart=always" in unit
    assert "Environment=RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1" in unit and "RAY_AUTH_" not in unit
    env = render("vllm.env.j2", plan, fact)
    assert f"RAY_TMPDIR={fact['ray']['temp_dir']}\n" in env and "RAY_AUTH_" not in env
    head = render("vllm.service.j2", plan, cluster_fact(members, "a2-node-1", engine_args=plan["engine_args"], **A2_RAY_PLAN))
    assert "Requires=vllm-ray-deepseek-r1.service" in head and "vllm serve" in head


def test_cpu_data_parallel_worker_environment_and_unit():
    plan = ch.node_plan("cpu-x86", nodes=2, model_config=ch.model_config("smollm2-135m"), python_version="3.11", request=ROLE_REQUEST)
    members = [ch.entry(f"node-{i}", "cpu-x86", ch.network(net), plan) for i, net in ((0, "docker-net1-a"), (1, "docker-net1-net2-b"))]
    fact = cluster_fact(members, "node-1", engine_args=plan["engine_args"])
    env = render("vllm.env.j2", plan, fact)
    assert "VLLM_HOST_IP=172.18.0.3\n" in env and "GLOO_SOCKET_IFNAME=eth0\n" in env
    unit = render("vllm.service.j2", plan, fact)
    assert "PrivateDevices=yes" in unit and "LimitMEMLOCK" not in unit and "ray" not in unit.lower()


def test_cpu_ray_units_beside_the_engines_leave_the_engine_unit_alone():
    """vllm_cluster_ray_units on cpu: Ray units on both members, engine units that neither require nor wait for them."""
    plan = ch.node_plan("cpu-x86", nodes=2, model_config=ch.model_config("smollm2-135m"), python_version="3.11", request=ROLE_REQUEST)
    members = [ch.entry(f"node-{i}", "cpu-x86", ch.network(net), plan) for i, net in ((0, "docker-net1-a"), (1, "docker-net1-net2-b"))]
    for host, start in (("node-0", "'start' '--head' '--port=6379' '--include-dashboard=false'"),
                        ("node-1", "'start' '--address=172.18.0.2:6379' '--node-ip-address=172.18.0.3'")):
        fact = cluster_fact(members, host, engine_args=plan["engine_args"], ray_units=True)
        ray = render("vllm.service.j2", plan, fact, __vllm_unit_kind="ray")
        assert f"ExecStart=/opt/vllm/current-deepseek-r1/bin/ray {start}" in ray and "Restart=always" in ray
        engine = render("vllm.service.j2", plan, fact)
        assert "vllm serve" in engine and "vllm-ray-" not in engine


def test_the_ray_head_starts_before_the_workers_join():
    """One start task for every member used to start the head and the workers at once (the workers lost the race)."""
    from task_files import load, tasks

    steps = [(t["name"], t.get("when")) for t in tasks(load("roles/vllm/tasks/service.yml"))]
    names = [name for name, dummy in steps]
    head, wait, worker = (names.index(n) for n in ("Start the Ray head", "Wait for the Ray head's GCS port before a worker joins",
                                                   "Start this worker's Ray node"))
    assert head < wait < worker < names.index("Enable and start the instance")
    assert "kunpeng_vllm_cluster.role == 'head'" in steps[head][1]
    assert "kunpeng_vllm_cluster.role == 'worker'" in steps[wait][1] and "kunpeng_vllm_cluster.role == 'worker'" in steps[worker][1]


def test_ascend_data_parallel_members_render_upstreams_environment_and_no_ray():
    """The planner's own A2 layout (vllm-ascend DeepSeek-R1.md, multi-node data parallel): each member's env file
    exports the guide's HCCL_BUFFSIZE, OMP_PROC_BIND and OMP_NUM_THREADS; no Ray unit, no RAY_TMPDIR."""
    members, plan = a2_members(requested={})
    for host in ("a2-node-1", "a2-node-2"):
        fact = cluster_fact(members, host, engine_args=plan["engine_args"], moe=True)
        env = render("vllm.env.j2", plan, fact)
        assert "HCCL_BUFFSIZE=200\n" in env and "OMP_PROC_BIND=false\n" in env and "OMP_NUM_THREADS=1\n" in env
        assert "RAY_TMPDIR" not in env and fact["ray"] is None
        unit = render("vllm.service.j2", plan, fact)
        assert "vllm-ray-" not in unit and "ReadWritePaths=/var/cache/vllm/deepseek-r1\n" in unit
