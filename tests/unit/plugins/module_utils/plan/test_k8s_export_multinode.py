"""The Kubernetes export of a plan over several nodes: a StatefulSet of real multi-node plans (the planner on
replayed hosts), validated offline against the schemas of Kubernetes 1.35-1.37, and its refusals."""

import copy
import os
import shlex
import sys

import kubernetes_validate
import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "modules"))

import cluster_hosts as ch  # noqa: E402
from test_k8s_export import BASE, IMAGE, K8S_VERSIONS, KEY, validate_all  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import k8s_export  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.k8s_export import ExportError  # noqa: E402

TOKEN = "ray-token-0123456789abcdef"


def multi_plan(host, python_version="3.12", **params):
    """The vllm role's plan of DeepSeek-V3 over two nodes of a replayed host (the real planner)."""
    return ch.node_plan(host, nodes=2, model_config=ch.model_config("deepseek-v3"), model_name="deepseek-v3",
                        python_version=python_version, request={"install_dir": "/opt/vllm", "host": "0.0.0.0"}, **params)


# case -> (plan arguments, options, expected: accelerator resource per pod, Ray auth)
CASES = {
    # NVIDIA: tensor 8 x pipeline 2 over two HGX H100 nodes; vLLM's Ray 2.60.0 runs behind the token.
    "nvidia-h100": (("hgx-h100",), {}, {"ray_token": TOKEN}, ("nvidia.com/gpu", 8, "token")),
    # An existing Secret for the token, and own names.
    "nvidia-own-names": (("a100-driver580",), {}, {"ray_token_secret": "team-ray", "name": "ds-v3",
                                                   "headless_service_name": "ds-v3-members"},
                         ("nvidia.com/gpu", 8, "token")),
    # Atlas 800I A2: tensor 8 x pipeline 2; vllm-ascend pins Ray 2.48.0 (no token): only with the opt-out.
    "ascend-a2": (("atlas-800i-a2-64g-cann8.3", "3.11"),
                  {"weight_dtype": "w8a8", "requested_engine_args": {"tensor_parallel_size": 8, "pipeline_parallel_size": 2}},
                  {"ray_allow_unauthenticated": True}, ("huawei.com/Ascend910", 8, "none")),
}


@pytest.fixture(scope="module")
def rendered():
    return {case: k8s_export.render(multi_plan(*host, **params), dict(BASE, **options))
            for case, (host, params, options, dummy) in CASES.items()}


def kinds(manifests):
    return [(m["kind"], m["metadata"]["name"]) for m in manifests]


def by_kind(manifests, kind):
    return [m for m in manifests if m["kind"] == kind]


@pytest.mark.parametrize("case", sorted(CASES))
def test_statefulset_shape(rendered, case):
    host, params, options, (resource, per_pod, auth) = CASES[case]
    plan = multi_plan(*host, **params)
    manifests = rendered[case]
    name = options.get("name", "vllm-deepseek-v3")
    headless = options.get("headless_service_name", f"{name}-nodes")
    assert ("StatefulSet", name) in kinds(manifests) and ("Deployment", name) not in kinds(manifests)
    sts = by_kind(manifests, "StatefulSet")[0]
    assert sts["spec"]["replicas"] == plan["nodes_needed"] == 2
    assert sts["spec"]["serviceName"] == headless and sts["spec"]["podManagementPolicy"] == "Parallel"
    services = {m["metadata"]["name"]: m for m in by_kind(manifests, "Service")}
    assert services[headless]["spec"]["clusterIP"] == "None"
    assert services[headless]["spec"]["publishNotReadyAddresses"] is True
    # the client Service reaches the head alone
    assert services[name]["spec"]["selector"]["statefulset.kubernetes.io/pod-name"] == f"{name}-0"
    main = sts["spec"]["template"]["spec"]["containers"][0]
    assert main["resources"]["limits"][resource] == main["resources"]["requests"][resource] == per_pod
    assert per_pod * 2 == plan["engine_args"]["tensor_parallel_size"] * plan["engine_args"]["pipeline_parallel_size"]
    env = {e["name"]: e for e in main["env"]}
    assert env["VLLM_HOST_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert (env.get("RAY_AUTH_MODE", {}).get("value") == "token") is (auth == "token")
    # the engine drives Ray, with the plan's sizes
    config = yaml.safe_load(by_kind(manifests, "ConfigMap")[0]["data"]["config.yaml"])
    assert config["distributed-executor-backend"] == "ray"
    assert config["tensor-parallel-size"] == plan["engine_args"]["tensor_parallel_size"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_head_starts_ray_and_serves_the_workers_join(rendered, case):
    options = CASES[case][2]
    name = options.get("name", "vllm-deepseek-v3")
    headless = options.get("headless_service_name", f"{name}-nodes")
    main = by_kind(rendered[case], "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]
    assert main["command"][:2] == ["/bin/sh", "-c"] and "args" not in main
    script = main["command"][2]
    head, worker = script.split("else")
    assert '"${HOSTNAME##*-}" = 0' in head
    assert "ray start --head --port=6379" in head
    assert "exec vllm serve /model --config /etc/vllm/config.yaml" in head
    assert f"exec ray start --address={name}-0.{headless}.default.svc.cluster.local:6379 --block" in worker
    assert "--node-ip-address=$(POD_IP)" in head and "--node-ip-address=$(POD_IP)" in worker
    # no secret on the command line: the token is a file, the key an env reference
    assert TOKEN not in script and KEY not in script
    for line in script.splitlines():
        shlex.split(line)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_ray_token_is_a_file_from_the_secret(rendered, case):
    options, auth = CASES[case][2], CASES[case][3][2]
    sts = by_kind(rendered[case], "StatefulSet")[0]
    pod = sts["spec"]["template"]["spec"]
    main = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in main["env"]}
    secrets = {m["metadata"]["name"]: m for m in by_kind(rendered[case], "Secret")}
    if auth == "none":
        assert "RAY_AUTH_TOKEN_PATH" not in env and not [v for v in pod["volumes"] if v["name"] == "ray-token"]
        return
    secret_name = options.get("ray_token_secret") or f"{options.get('name', 'vllm-deepseek-v3')}-ray-token"
    assert env["RAY_AUTH_TOKEN_PATH"] == "/etc/ray-auth/token"
    assert {"name": "ray-token", "mountPath": "/etc/ray-auth", "readOnly": True} in main["volumeMounts"]
    volume = [v for v in pod["volumes"] if v["name"] == "ray-token"][0]
    assert volume["secret"]["secretName"] == secret_name
    # Attack on availability (issue 37): a 0400 root file the pod's user 1000 cannot read.  The pod's group
    # owns the file (fsGroup) and may read it.
    assert pod["securityContext"]["runAsUser"] == 1000
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"] == 1000
    assert volume["secret"]["defaultMode"] == 0o440
    if options.get("ray_token"):
        assert secrets[secret_name]["stringData"] == {"token": TOKEN}
    else:
        assert secret_name not in secrets
    for manifest in rendered[case]:
        if manifest["kind"] != "Secret":
            assert TOKEN not in yaml.safe_dump(manifest)


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_validates_against_the_stated_kubernetes_versions(rendered, case, version):
    validate_all(rendered[case], version)


BROKEN = {
    "serviceName misspelt": lambda s: s["spec"].update(servicename=s["spec"].pop("serviceName")),
    "podManagementPolicy as a list": lambda s: s["spec"].update(podManagementPolicy=["Parallel"]),
    "exec probe command as text": lambda s: s["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["exec"].update(
        command="python3 -c pass"),
    "no selector": lambda s: s["spec"].pop("selector"),
}


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_statefulset_is_rejected(rendered, broken, version):
    sts = copy.deepcopy(by_kind(rendered["nvidia-h100"], "StatefulSet")[0])
    BROKEN[broken](sts)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sts, version, strict=True)


@pytest.mark.parametrize("host, params, options, fragment", [
    # Ray 2.60.0 with token authentication: a token is required
    (("hgx-h100",), {}, {}, "set vllm_k8s_ray_token"),
    (("hgx-h100",), {}, {"ray_token": TOKEN, "ray_token_secret": "x"}, "not both"),
    # vllm-ascend's Ray 2.48.0 has no token: refused without the opt-out
    (("atlas-800i-a2-64g-cann8.3", "3.11"),
     {"weight_dtype": "w8a8", "requested_engine_args": {"tensor_parallel_size": 8, "pipeline_parallel_size": 2}}, {},
     "vllm_k8s_ray_allow_unauthenticated: true"),
    # an image whose Ray is older than token authentication
    (("hgx-h100",), {}, {"ray_token": TOKEN, "ray_version": "2.48.0"}, "Ray 2.48.0 has no token authentication"),
    # data parallel replicas spread over the nodes (the MoE layout, multiprocessing executor): not rendered
    (("atlas-800i-a2-64g-cann8.3", "3.11"), {"weight_dtype": "w8a8"}, {"ray_allow_unauthenticated": True},
     "spreads data parallel replicas over 2 nodes"),
    (("hgx-h100",), {}, {"ray_token": TOKEN, "headless_service_name": "Bad_Name"}, "vllm_k8s_headless_service_name"),
])
def test_multinode_refusals(host, params, options, fragment):
    with pytest.raises(ExportError) as info:
        k8s_export.render(multi_plan(*host, **params), dict(BASE, **options))
    assert fragment in str(info.value)


def test_the_cpu_backend_over_nodes_is_refused():
    plan = dict(ch.node_plan("cpu-x86", nodes=2, model_name="smollm2", request={"install_dir": "/opt/vllm"}),
                nodes_needed=2)
    with pytest.raises(ExportError, match="CPU backend scales out with data parallel replicas"):
        k8s_export.render(plan, dict(BASE, image=IMAGE))


def test_files_keep_both_secrets_owner_only(rendered):
    entries = k8s_export.files(rendered["nvidia-h100"])
    assert [(e["label"], e["mode"]) for e in entries if e["secret"]] == [
        ("Secret/vllm-deepseek-v3-ray-token", "0600"), ("Secret/vllm-deepseek-v3-api-key", "0600")]
    assert [e["label"].split("/")[0] for e in entries] == [
        "Secret", "Secret", "ConfigMap", "Service", "NetworkPolicy", "StatefulSet", "Service"]
    # a new key or Ray token restarts the set (the engine and Ray read them at start only)
    assert [e["label"] for e in entries if e["restart_on_secret"]] == ["StatefulSet/vllm-deepseek-v3"]


@pytest.mark.parametrize("settings, mode, fs_group", [
    ({}, 0o440, 1000),
    ({"run_as_user": 1001, "run_as_group": 1001}, 0o440, 1001),
    # the image's own user kept: unknown here, so every user of the one-container pod reads it
    ({"run_as_user": 0}, 0o444, None),
])
def test_the_pods_user_reads_the_ray_token(settings, mode, fs_group):
    manifests = k8s_export.render(multi_plan("hgx-h100"), dict(BASE, ray_token=TOKEN, **settings))
    pod = by_kind(manifests, "StatefulSet")[0]["spec"]["template"]["spec"]
    volume = [v for v in pod["volumes"] if v["name"] == "ray-token"][0]
    assert volume["secret"]["defaultMode"] == mode
    assert pod["securityContext"].get("fsGroup") == fs_group


@pytest.mark.parametrize("port, ray_port, refused", [
    (8000, 6379, None),
    (6379, 6379, "Ray's GCS"),
    (7000, 7000, "Ray's GCS"),
    (6379, 7000, None),
    (10001, 6379, "client server"),
    (8265, 6379, "dashboard"),
    (52365, 6379, "dashboard agent"),
    (10002, 6379, "worker port range"),
    (10080, 6379, "worker port range"),
    (19999, 6379, "worker port range"),
    (20000, 6379, None),
    # review round 2: Ray's other ports and torch.distributed's land in the ephemeral range at random
    (32768, 6379, "ephemeral range"),
    (40000, 6379, "ephemeral range"),
    (60999, 6379, "ephemeral range"),
    (61000, 6379, None),
])
def test_check_api_port(port, ray_port, refused):
    if refused is None:
        k8s_export.check_api_port(port, ray_port)
    else:
        with pytest.raises(ExportError, match=f"vllm_k8s_port {port} is .*{refused}"):
            k8s_export.check_api_port(port, ray_port)


@pytest.mark.parametrize("port", [6379, 10001, 10080])
def test_the_api_port_is_never_one_of_rays(port):
    """Attack: the NetworkPolicy admits everyone to the API port; on a Ray port that is Ray, open to the cluster
    (on the unauthenticated-Ray opt-out, code execution in the pods)."""
    plan = multi_plan("atlas-800i-a2-64g-cann8.3", "3.11", weight_dtype="w8a8",
                      requested_engine_args={"tensor_parallel_size": 8, "pipeline_parallel_size": 2})
    with pytest.raises(ExportError, match=f"vllm_k8s_port {port}"):
        k8s_export.render(plan, dict(BASE, ray_allow_unauthenticated=True, port=port))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_head_keeps_the_api_key_from_its_ray_workers(rendered, case):
    """vLLM's Ray executor copies VLLM_API_KEY (from the Secret) into every Ray worker actor on every pod, unless
    <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json lists it (vLLM 0.32.0, vllm/ray/ray_env.py): the pod's
    VLLM_CONFIG_ROOT is the mounted ConfigMap, which holds the vllm role's list."""
    main = by_kind(rendered[case], "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert "VLLM_API_KEY" in env  # from the Secret: the variable the list keeps from the workers
    config_mount = [m for m in main["volumeMounts"] if m["name"] == "config"][0]
    assert env["VLLM_CONFIG_ROOT"] == config_mount["mountPath"] and config_mount["readOnly"]
    data = by_kind(rendered[case], "ConfigMap")[0]["data"]
    assert yaml.safe_load(data["ray_non_carry_over_env_vars.json"]) == ["VLLM_API_KEY"]
    # nothing of vLLM writes below the read-only config root: no usage stats
    assert env["VLLM_NO_USAGE_STATS"] == "1" and env["DO_NOT_TRACK"] == "1"
