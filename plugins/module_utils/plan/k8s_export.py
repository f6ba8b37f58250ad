# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The planned vLLM instance as a Kubernetes workload (Huawei CCE or any cluster with the device plugins).

The plan (``kunpeng.vllm.vllm_plan`` with a ``request``) has already decided the
backend, the architecture, the engine release, the engine config that ``vllm
serve --config`` reads and the parallel sizes.  This module re-decides none of
that: it turns the plan into a ConfigMap (the engine config, mounted read-only
and passed with ``--config``), a Secret (the API key, reaching the engine as
``VLLM_API_KEY`` from the Secret, never in the ConfigMap or the arguments), a
Deployment and a Service.

One pod serves one instance on one node.  A plan that spans several nodes
(``nodes_needed`` above 1) with one replica over them (tensor x pipeline
parallel on Ray, the layout the vllm role's Ray units run) becomes a
StatefulSet instead: one pod per node, a headless Service for their stable
names, the Ray head and the API server at ordinal 0, the workers joining it,
and Ray behind the cluster's token from a Secret (:func:`render_multinode`).

Everything is a plain function over dicts; the module and the playbook only
write what comes back.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import hashlib
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

import shlex

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import endpoint_security
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import gateway as gateway_plan
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import engine_args as engine_options

# The extended resource and node labels per accelerator are the backends' (k8s_resource in backends/<backend>.py).

# kubernetes.io/arch values (Go's GOARCH) of the plan's wheel architecture; Kunpeng nodes are arm64.
K8S_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}

# The variable that lets an image without a digest through (the role's and the playbook's name).
UNPINNED_VARIABLE = "vllm_k8s_allow_unpinned_image"

# Where the pieces live inside the container.
CONFIG_DIR = "/etc/vllm"
CONFIG_KEY = "config.yaml"
API_KEY_KEY = "api-key"
#: The route guard the vllm role installs beside the engine (roles/vllm/files/kunpeng_vllm_route_guard.py): the pod
#: gets the same file in its ConfigMap, mounted with the config, and finds it through PYTHONPATH as the host's
#: unit does (roles/vllm/templates/vllm.env.j2).
GUARD_MODULE = "kunpeng_vllm_route_guard"
GUARD_KEY = f"{GUARD_MODULE}.py"
GUARD_CLASS = f"{GUARD_MODULE}.RouteGuard"
#: The guard's settings in the pod: no address reads /metrics without the key, loopback included.  A proxy in the
#: pod (a service mesh's sidecar: Istio's inbound passthrough connects to the app from 127.0.0.6) hands the engine
#: every client's connection from loopback, and nothing in the pod reads /metrics; Prometheus in the cluster sends
#: the key (docs/kubernetes.md).
GUARD_ENVIRONMENT = {"KUNPENG_VLLM_METRICS_SOURCES": "", "KUNPENG_VLLM_METRICS_LOOPBACK": "off"}
GUARD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "vllm", "files", GUARD_KEY)
#: Service types that publish the API outside the cluster network (a port on every node, a cloud load balancer).
EXTERNAL_SERVICE_TYPES = ("NodePort", "LoadBalancer")
CACHE_DIR = "/var/cache/vllm"
TMP_DIR = "/tmp"
SHM_DIR = "/dev/shm"

# vLLM's OpenAI server answers GET /health with 200 once the engine is up, and without the API key: its
# AuthenticationMiddleware (vllm/entrypoints/openai/api_server.py, in later releases server_utils.py) takes the
# key from --api-key or VLLM_API_KEY and checks only paths that start with /v1.  The collection's readiness gate
# polls the same path (plugins/module_utils/verify/vllm_http.py).
HEALTH_PATH = "/health"

# A digest pin: name@sha256:<64 hex> (OCI image spec, descriptor digests).
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# RFC 1123 label (Service and Deployment names, at most 63 characters).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# Kubernetes quantities (resource.Quantity): a decimal number with an optional binary or decimal suffix.
_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")

GIB = 2 ** 30

DEFAULTS: Dict[str, Any] = {
    "name": "",
    "namespace": "default",
    "image": "",
    "allow_unpinned_image": False,
    "image_pull_policy": "IfNotPresent",
    "replicas": 1,
    "port": 8000,
    "service_type": "ClusterIP",
    "expose_api_outside_cluster": False,
    "model_volume": {"type": "hostPath", "path": "", "claim": "", "sub_path": ""},
    "model_mount": "/model",
    "api_key": "",
    "api_key_secret": "",
    "allow_unauthenticated": False,
    "resource_names": {},
    "node_selector": {},
    "accelerator_node_labels": True,
    "tolerations": [],
    "cpu_request": "",
    "cpu_limit": "",
    "memory_request": "",
    "memory_limit": "",
    "shm_gib": 0,
    "run_as_user": 1000,
    "run_as_group": 1000,
    "supplemental_groups": [],
    "read_only_root_filesystem": True,
    "startup_timeout_s": 1800,
    "labels": {},
    # Multi-node plans (a StatefulSet): the headless Service's name (empty: <name>-nodes), Ray's token (a Secret
    # is rendered) or an existing Secret holding it under 'token', the Ray release in the image (empty: the
    # backend's ray_version), its GCS port, and the opt-out for a Ray without token authentication.
    "headless_service_name": "",
    "ray_token": "",
    "ray_token_secret": "",
    "ray_version": "",
    "ray_port": 6379,
    "ray_allow_unauthenticated": False,
}


class ExportError(ValueError):
    """A request the export cannot render; the message names the variable and the fix."""


def quantity(value: Any) -> float:
    """The value of a Kubernetes quantity (``"16"``, ``"500m"``, ``"128Gi"``, ``4``); raises on anything else."""
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ExportError(f"{value!r} is not a Kubernetes quantity (for example 8, 500m, 64Gi)")
    return float(match.group(1)) * _SUFFIX[match.group(2) or ""]


def check_image(image: str, allow_unpinned: bool) -> None:
    """Refuse an image reference without a ``@sha256:`` digest unless the opt-out is set."""
    if not image:
        raise ExportError("vllm_k8s_image is empty: name the engine image by digest, for example "
                          "quay.io/ascend/vllm-ascend@sha256:<64 hex digits>")
    if not DIGEST.search(image) and not allow_unpinned:
        raise ExportError(f"vllm_k8s_image {image} has no digest: a tag can move under a running Deployment. Pin it "
                          f"(docker buildx imagetools inspect {image} or skopeo inspect print the digest; write "
                          f"<name>@sha256:<digest>), or set {UNPINNED_VARIABLE}: true to accept the tag")


def instance_name(plan: Mapping[str, Any], name: str) -> str:
    """The objects' base name: ``name`` as given, else ``vllm-<served model name>`` made an RFC 1123 label."""
    if name:
        if len(name) > 47 or not DNS_LABEL.match(name):
            raise ExportError(f"vllm_k8s_name {name!r} is not a Kubernetes name: lower-case letters, digits and dashes, "
                              "at most 47 characters, starting and ending with a letter or digit")
        return name
    served = (plan.get("engine_config") or {}).get("served-model-name") or (plan.get("model") or {}).get("name") or ""
    if isinstance(served, list):
        served = served[0] if served else ""
    label = re.sub(r"[^a-z0-9]+", "-", str(served).lower()).strip("-")[:42].strip("-")
    if not label:
        raise ExportError("the plan names no served model: set vllm_k8s_name")
    return f"vllm-{label}"


def device_count(plan: Mapping[str, Any]) -> int:
    """Accelerators one pod needs: tensor x pipeline x data parallel sizes of the plan's engine args."""
    args = plan.get("engine_args") or {}
    count = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        count *= int(args.get(key) or 1)
    return count


def accelerator(plan: Mapping[str, Any], overrides: Mapping[str, str]) -> Tuple[Optional[str], Dict[str, str]]:
    """The extended resource name and the accelerator's node labels for the plan (None, {} on cpu)."""
    try:
        return backends.backend(plan["backend"]).k8s_resource(dict(plan), dict(overrides or {}))
    except ValueError as exc:
        raise ExportError(str(exc)) from None


def shm_gib(plan: Mapping[str, Any], requested: float) -> float:
    """Size of the memory-backed /dev/shm: ``requested``, else 1 GiB per accelerator worker (at least 1 GiB).

    vLLM uses PyTorch, which shares data between the worker processes through shared memory, above all for tensor
    parallel inference (vLLM docs, deployment/docker.md: run the image with ``--ipc=host`` or ``--shm-size``;
    deployment/k8s.md mounts an emptyDir of medium Memory at /dev/shm, 2 GiB in its example).  Container runtimes
    give 64 MiB by default.  A memory-backed emptyDir counts against the pod's memory limit.
    """
    if float(requested or 0) > 0:
        return float(requested)
    devices = device_count(plan) if backends.field(plan["backend"], "hardware") else 1
    return float(max(1, devices))


def engine_config(plan: Mapping[str, Any], port: int, guard: bool = False) -> Dict[str, Any]:
    """The plan's engine config for the pod: listening on every address of the pod at ``port``, no key in it.

    The key is refused here for the same reason as on a host (plan/endpoint_security.py): an ``api-key`` in the
    config would sit in a ConfigMap and beat ``VLLM_API_KEY``.  With a key (``guard``) the engine loads the role's
    route guard, as on a host: vLLM's own check covers /v1 only and ``POST /invocations`` would serve anyone on
    the cluster network.  Without a key (the explicit opt-out) there is nothing for the guard to check.
    """
    config = dict(plan.get("engine_config") or {})
    if not config:
        raise ExportError("the plan has no engine_config: run kunpeng.vllm.vllm_plan with a request (the export "
                          "playbook does), or pass the kunpeng_vllm_plan fact of a vllm role run")
    _refuse_api_key(config)
    config.pop("middleware", None)
    if guard:
        unguarded = endpoint_security.unguarded_server_problem(config, "the plan's engine config (vllm_engine_args)")
        if unguarded:
            raise ExportError(unguarded)
        config["middleware"] = GUARD_CLASS
    # The model is the positional argument, as in the role's unit (vllm serve <model> --config <file>).
    config.update(host="0.0.0.0", port=int(port))  # nosec B104 - the pod's own network namespace
    normalized, problems = engine_options.normalize_engine_args(config, plan.get("release"))
    if problems:
        raise ExportError("the engine config does not fit vLLM {}:\n- {}".format(plan.get("release"), "\n- ".join(problems)))
    _refuse_api_key(normalized)
    if guard:
        unguarded = endpoint_security.unguarded_server_problem(normalized, "the plan's engine config (vllm_engine_args)")
        if unguarded:
            raise ExportError(unguarded)
    return normalized


def option_name(name: Any) -> str:
    """An engine option's name as vLLM's argument parser reads it: ``api_key``, ``--API-KEY`` and ``api-key`` alike."""
    return str(name).strip().lower().lstrip("-").replace("_", "-")


def _refuse_api_key(config: Mapping[str, Any]) -> None:
    """Refuse an API key in the engine config, in any spelling (a hand-written ``vllm_k8s_plan`` is not normalized)."""
    if any(option_name(name) == "api-key" for name in config):
        raise ExportError("the plan's engine config sets api-key, which would land in the ConfigMap: remove it "
                          "from vllm_engine_args (or the engine_config of vllm_k8s_plan) and set vllm_k8s_api_key "
                          "(a Secret)")
    # the same for a Hugging Face token (review round 6); the pod reads a local model volume and needs none
    if any(engine_options.canonical_name(name) == "hf-token" for name in config):
        raise ExportError("the plan's engine config sets hf-token, which would land in the ConfigMap: remove it "
                          "from vllm_engine_args (or the engine_config of vllm_k8s_plan); the pod serves the model "
                          "volume and downloads nothing")


def route_guard_source(path: str = GUARD_FILE) -> str:
    """The route guard's source, for the pod's ConfigMap; the image does not carry it."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ExportError(f"the route guard {path} cannot be read ({exc}): the collection is incomplete; reinstall "
                          "kunpeng.vllm") from exc


def check_service_type(service_type: str, expose: bool) -> None:
    """Refuse a Service that publishes the API outside the cluster unless the operator says so."""
    if service_type not in ("ClusterIP",) + EXTERNAL_SERVICE_TYPES:
        raise ExportError(f"vllm_k8s_service_type {service_type!r} is not ClusterIP, NodePort or LoadBalancer")
    if service_type in EXTERNAL_SERVICE_TYPES and not expose:
        raise ExportError(f"vllm_k8s_service_type {service_type} publishes the API outside the cluster network (a port "
                          "on every node or a load balancer): keep ClusterIP behind an Ingress or gateway, or set "
                          "vllm_k8s_expose_api_outside_cluster: true to publish it")


def config_yaml(config: Mapping[str, Any]) -> str:
    """The engine config as the YAML file ``vllm serve --config`` reads: one ``name: value`` line per option.

    Each value is written as JSON, which YAML reads as the same scalar, list or mapping (flow style), so the file
    needs no YAML library here.
    """
    return "".join(f"{name}: {json.dumps(config[name], sort_keys=True)}\n" for name in sorted(config))


def environment(plan: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The container's environment: the plan's service environment less what the device plugin decides.

    The visible-devices variable names host device ids; in a pod the device plugin mounts the allocated devices
    and the runtime numbers them from 0, so it is left out.  The CPU engine's OpenMP binding names host CPU ids
    the pod's cpuset may not hold, so vLLM's own ``auto`` is kept.  The caches go to the cache volume, since the
    root file system is read-only.
    """
    service = plan.get("service") or {}
    env = dict(service.get("environment") or {})
    for variable in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "VLLM_CPU_OMP_THREADS_BIND"):
        env.pop(variable, None)
    env.update(HOME=f"{CACHE_DIR}/home", XDG_CACHE_HOME=CACHE_DIR, VLLM_CACHE_ROOT=f"{CACHE_DIR}/vllm",
               HF_HOME=f"{CACHE_DIR}/huggingface", HF_HUB_OFFLINE="1", TRITON_CACHE_DIR=f"{CACHE_DIR}/triton",
               TMPDIR=TMP_DIR)
    env.update({name: f"{CACHE_DIR}/{folder}" for name, folder in backends.field(plan["backend"], "cache_env").items()})
    return [{"name": key, "value": str(value)} for key, value in sorted(env.items())]


def resources(options: Mapping[str, Any], resource: Optional[str], devices: int) -> Dict[str, Dict[str, Any]]:
    """requests/limits: cpu and memory as the options give them, the accelerator from the plan.

    The accelerator's request always equals its limit.  Extended resources cannot be overcommitted: the API server
    rejects a container whose request and limit of one differ (Kubernetes docs, "Resource Management for Pods and
    Containers", section "Consuming extended resources", kubernetes/website
    content/en/docs/concepts/configuration/manage-resources-containers.md: "Extended resources cannot be
    overcommitted, so request and limit must be equal if both are present in a container spec").  The schemas do
    not encode this rule, so :func:`check_resources` does.
    """
    requests: Dict[str, Any] = {}
    limits: Dict[str, Any] = {}
    for kind in ("cpu", "memory"):
        request, limit = str(options[f"{kind}_request"] or ""), str(options[f"{kind}_limit"] or "")
        if request:
            requests[kind] = request
        if limit:
            limits[kind] = limit
        if request and limit and quantity(request) > quantity(limit):
            raise ExportError(f"vllm_k8s_{kind}_request {request} is above vllm_k8s_{kind}_limit {limit}; the API server "
                              "refuses a request above its limit")
        for value in (request, limit):
            if value:
                quantity(value)
    if resource:
        requests[resource] = devices
        limits[resource] = devices
    return {key: value for key, value in (("limits", limits), ("requests", requests)) if value}


def check_resources(manifests: List[Mapping[str, Any]]) -> List[str]:
    """What the API server would refuse in the containers' resources (the schemas do not say it).

    A request above its limit, and an extended resource (a name with a domain other than kubernetes.io) whose
    request differs from its limit.
    """
    problems = []
    for manifest in manifests:
        pod = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or []:
            res = container.get("resources") or {}
            requests, limits = res.get("requests") or {}, res.get("limits") or {}
            for name in sorted(set(requests) | set(limits)):
                where = f"{manifest.get('kind')} {container.get('name')}: {name}"
                extended = "/" in name and not name.split("/")[0].endswith("kubernetes.io")
                if name in requests and name in limits and quantity(requests[name]) > quantity(limits[name]):
                    problems.append(f"{where} request {requests[name]} is above its limit {limits[name]}")
                elif extended and name in requests and name in limits and quantity(requests[name]) != quantity(limits[name]):
                    problems.append(f"{where} request {requests[name]} differs from its limit {limits[name]}; an extended "
                                    "resource cannot be overcommitted")
                elif extended and name in requests and name not in limits:
                    problems.append(f"{where} has a request without a limit; an extended resource needs its limit")
    return problems


def model_volume(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """The volume holding the model: a hostPath directory on the node or a PersistentVolumeClaim, read-only."""
    kind = spec.get("type") or "hostPath"
    if kind == "hostPath":
        if not spec.get("path"):
            raise ExportError("vllm_k8s_model_volume.path is empty: name the model's directory on the nodes (the "
                              "vllm role's vllm_model_dir), or use type: pvc with a claim")
        return {"name": "model", "hostPath": {"path": spec["path"], "type": "Directory"}}
    if kind == "pvc":
        if not spec.get("claim"):
            raise ExportError("vllm_k8s_model_volume.claim is empty: name the PersistentVolumeClaim holding the model")
        return {"name": "model", "persistentVolumeClaim": {"claimName": spec["claim"], "readOnly": True}}
    raise ExportError(f"vllm_k8s_model_volume.type {kind!r} is not hostPath or pvc")


def probes(port_name: str, startup_timeout_s: int) -> Dict[str, Dict[str, Any]]:
    """startup, readiness and liveness on /health; the startup probe allows ``startup_timeout_s`` for the load."""
    def http(period: int, failures: int, timeout: int) -> Dict[str, Any]:
        return {"httpGet": {"path": HEALTH_PATH, "port": port_name}, "periodSeconds": period,
                "failureThreshold": failures, "timeoutSeconds": timeout}
    return {
        "startupProbe": http(10, max(1, -(-int(startup_timeout_s) // 10)), 5),
        "readinessProbe": http(10, 3, 5),
        "livenessProbe": http(30, 3, 10),
    }


def _meta(name: str, namespace: str, labels: Mapping[str, str]) -> Dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}


BOOLEANS = ("allow_unpinned_image", "allow_unauthenticated", "accelerator_node_labels", "read_only_root_filesystem",
            "ray_allow_unauthenticated", "expose_api_outside_cluster")


def _options(options: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """``options`` over the defaults; unknown names are refused, booleans given as text (a playbook's) read."""
    given = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ExportError(f"unknown export settings {', '.join(unknown)}; known: {', '.join(sorted(DEFAULTS))}")
    opts = dict(DEFAULTS, **given)
    for key in BOOLEANS:
        if isinstance(opts[key], str):
            opts[key] = opts[key].strip().lower() in ("1", "true", "yes", "on")
    opts["model_volume"] = dict(DEFAULTS["model_volume"], **(opts["model_volume"] or {}))
    return opts


def _base(plan: Mapping[str, Any], opts: Dict[str, Any], config: Dict[str, Any]) -> Dict[str, Any]:
    """What the Deployment and the StatefulSet share: names, labels, the Secret and ConfigMap, the pod spec."""
    check_image(opts["image"], opts["allow_unpinned_image"])
    name = instance_name(plan, opts["name"])
    namespace = opts["namespace"]
    if not DNS_LABEL.match(str(namespace)):
        raise ExportError(f"vllm_k8s_namespace {namespace!r} is not a Kubernetes name")
    api_key, key_secret = str(opts["api_key"] or ""), str(opts["api_key_secret"] or "")
    if api_key and key_secret:
        raise ExportError("set vllm_k8s_api_key (a Secret is rendered) or vllm_k8s_api_key_secret (an existing Secret), not both")
    if api_key and (len(api_key) < gateway_plan.API_KEY_MIN_LENGTH or not re.match(r"^[\x21-\x7e]+$", api_key)):
        raise ExportError(f"vllm_k8s_api_key is not a usable key: a key is at least {gateway_plan.API_KEY_MIN_LENGTH} "
                          "printable characters without white space, as the vllm role's vllm_api_key (openssl rand "
                          "-hex 32 makes one)")
    if not api_key and not key_secret and not opts["allow_unauthenticated"]:
        raise ExportError("the Service serves the API on the cluster network without a key: set vllm_k8s_api_key, or "
                          "vllm_k8s_api_key_secret (an existing Secret with the key under 'api-key'); "
                          "vllm_k8s_allow_unauthenticated: true is the explicit opt-out")
    labels = dict(opts["labels"], **{"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": name,
                                     "app.kubernetes.io/managed-by": "kunpeng.vllm"})
    selector = {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": name}
    model_path = opts["model_mount"]
    config_text = config_yaml(config)
    resource, accel_labels = accelerator(plan, opts["resource_names"])
    node_selector = {"kubernetes.io/arch": K8S_ARCH[plan["arch"]]}
    if opts["accelerator_node_labels"]:
        node_selector.update(accel_labels)
    node_selector.update(opts["node_selector"])

    manifests: List[Dict[str, Any]] = []
    secret_name = key_secret or f"{name}-api-key"
    if api_key:
        manifests.append({"apiVersion": "v1", "kind": "Secret", "metadata": _meta(secret_name, namespace, labels),
                          "type": "Opaque", "stringData": {API_KEY_KEY: api_key}})
    data = {CONFIG_KEY: config_text}
    env = environment(plan)
    if api_key or key_secret:
        env.append({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": API_KEY_KEY}}})
    if config.get("middleware") == GUARD_CLASS:
        data[GUARD_KEY] = route_guard_source()
        env.extend([{"name": "PYTHONPATH", "value": CONFIG_DIR}] + [
            {"name": name, "value": value} for name, value in sorted(GUARD_ENVIRONMENT.items())])
    manifests.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(f"{name}-config", namespace, labels),
                      "data": data})
    security = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": bool(opts["read_only_root_filesystem"]),
                "capabilities": {"drop": ["ALL"]}}
    # runAsNonRoot in every case: with run_as_user 0 the image's own user is kept, and the kubelet refuses to start
    # the pod when that user is root.
    pod_security: Dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True}
    if int(opts["run_as_user"] or 0):
        # No fsGroup here (a multi-node pod sets one for its Ray token, ray_token_mode): the model volume is
        # read-only (a recursive chown of a large claim takes minutes) and
        # emptyDir volumes are writable by any user.
        pod_security.update(runAsUser=int(opts["run_as_user"]), runAsGroup=int(opts["run_as_group"]))
    if opts["supplemental_groups"]:
        pod_security["supplementalGroups"] = [int(gid) for gid in opts["supplemental_groups"]]
    mount = {"name": "model", "mountPath": model_path, "readOnly": True}
    if opts["model_volume"].get("sub_path"):
        mount = {"name": "model", "mountPath": model_path, "subPath": opts["model_volume"]["sub_path"], "readOnly": True}
    container = {
        "name": "vllm",
        "image": opts["image"],
        "imagePullPolicy": opts["image_pull_policy"],
        "command": ["vllm"],
        "args": ["serve", model_path, "--config", f"{CONFIG_DIR}/{CONFIG_KEY}"],
        "ports": [{"name": "http", "containerPort": int(opts["port"]), "protocol": "TCP"}],
        "env": env,
        "securityContext": security,
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            mount,
            {"name": "shm", "mountPath": SHM_DIR},
            {"name": "cache", "mountPath": CACHE_DIR},
            {"name": "tmp", "mountPath": TMP_DIR},
        ],
    }
    container.update(probes("http", opts["startup_timeout_s"]))
    shm = shm_gib(plan, opts["shm_gib"])
    pod_spec: Dict[str, Any] = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": pod_security,
        "nodeSelector": node_selector,
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{name}-config", "defaultMode": 0o444}},
            model_volume(opts["model_volume"]),
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{int(shm * 1024)}Mi"}},
            {"name": "cache", "emptyDir": {}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    if opts["tolerations"]:
        pod_spec["tolerations"] = list(opts["tolerations"])
    template_meta = {"labels": labels, "annotations": {
        "kunpeng.vllm/config-sha256": hashlib.sha256((config_text + data.get(GUARD_KEY, "")).encode()).hexdigest(),
        "kunpeng.vllm/engine": f"{plan['backend']} {plan.get('engine_version')}"}}
    return {"name": name, "namespace": namespace, "labels": labels, "selector": selector, "resource": resource,
            "manifests": manifests, "container": container, "pod_spec": pod_spec, "template_meta": template_meta}


def keyed(opts: Mapping[str, Any]) -> bool:
    """Whether the pod has an API key, and so runs the route guard."""
    return bool(opts["api_key"] or opts["api_key_secret"])


def api_network_policy(base: Mapping[str, Any], opts: Mapping[str, Any]) -> Dict[str, Any]:
    """Ingress to the pods on the API port only: every other port the engine or a library opens stays closed."""
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": _meta(base["name"], base["namespace"], base["labels"]),
        "spec": {"podSelector": {"matchLabels": dict(base["selector"])}, "policyTypes": ["Ingress"],
                 "ingress": [{"ports": [{"port": int(opts["port"]), "protocol": "TCP"}]}]},
    }


def _service(base: Dict[str, Any], opts: Dict[str, Any], selector: Mapping[str, str]) -> Dict[str, Any]:
    check_service_type(opts["service_type"], opts["expose_api_outside_cluster"])
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": _meta(base["name"], base["namespace"], base["labels"]),
        "spec": {"type": opts["service_type"], "selector": dict(selector),
                 "ports": [{"name": "http", "port": int(opts["port"]), "targetPort": "http", "protocol": "TCP"}]},
    }


def _checked(manifests: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    problems = check_resources(manifests)
    if problems:
        raise ExportError("; ".join(problems))
    return manifests


def render(plan: Mapping[str, Any], options: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
    """The manifests of the planned instance in apply order: [Secret], ConfigMap, Deployment, NetworkPolicy, Service; a plan over
    several nodes: :func:`render_multinode`."""
    opts = _options(options)
    if (plan.get("nodes_needed") or 1) > 1:
        return render_multinode(plan, opts)
    base = _base(plan, opts, engine_config(plan, opts["port"], keyed(opts)))
    res = resources(opts, base["resource"], device_count(plan))
    if res:
        base["container"]["resources"] = res
    manifests = base["manifests"] + [{
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(base["name"], base["namespace"], base["labels"]),
        "spec": {
            "replicas": int(opts["replicas"]),
            "selector": {"matchLabels": base["selector"]},
            # With accelerators the old pod frees its devices before the new one starts: a rolling update's new pod
            # would wait for devices a node of the exact size does not have spare.
            "strategy": {"type": "Recreate"} if base["resource"] else {"type": "RollingUpdate"},
            "template": {"metadata": base["template_meta"], "spec": base["pod_spec"]},
        },
    }, api_network_policy(base, opts), _service(base, opts, base["selector"])]
    return _checked(manifests)


# --- a plan over several nodes: a StatefulSet ------------------------------------------------------

#: Where the Ray token Secret is mounted, and its key (the vllm role keeps it in <config_dir>/<name>.ray-token,
#: 0600, and names it with RAY_AUTH_TOKEN_PATH, never on a command line: plan/cluster.py ray_auth).
RAY_TOKEN_DIR = "/etc/ray-auth"
RAY_TOKEN_KEY = "token"
#: The label the StatefulSet controller puts on each of its pods (Kubernetes docs, StatefulSet "Pod Name Label").
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
#: The pod's ordinal from its host name (<statefulset>-<ordinal>), in the POSIX shell the image has.
_ORDINAL = "${HOSTNAME##*-}"
#: A probe both kinds of pod run: the head (ordinal 0) answers /health; a worker is alive while its
#: `ray start --block` runs (the container ends with it) and serves no HTTP.
_PROBE = ("import http.client, os, sys\n"
          "if os.environ['HOSTNAME'].rsplit('-', 1)[-1] != '0': sys.exit(0)\n"
          "c = http.client.HTTPConnection('127.0.0.1', {port}, timeout={timeout})\n"
          "c.request('GET', '{path}')\n"
          "sys.exit(0 if c.getresponse().status == 200 else 1)\n")


def multinode_layout(plan: Mapping[str, Any]) -> Dict[str, Any]:
    """The plan's layout over its nodes (plan/cluster.py layout), refused unless it is one replica on Ray.

    vLLM's data parallel spread (replicas per node, --headless workers, the multiprocessing executor) is the
    other multi-node layout of the vllm role; the export does not render it yet.
    """
    nodes = int(plan["nodes_needed"])
    problem = backends.backend(plan["backend"]).k8s_multinode_problem()
    if problem:
        raise ExportError(problem)
    args = plan.get("engine_args") or {}
    devices = device_count(plan)
    if devices < nodes or devices % nodes:
        raise ExportError(f"the plan over {nodes} nodes is not a layout the export renders: its {devices} "
                          "accelerator(s) (tensor x pipeline x data parallel) do not divide over the nodes")
    per_node = devices // nodes
    try:
        shape = cluster.layout(plan["backend"], dict(args), nodes, per_node, executor="auto")
    except cluster.ClusterError as exc:
        raise ExportError(f"the plan over {nodes} nodes is not a layout the export renders: {exc}") from None
    if shape["mode"] != "ray":
        raise ExportError(f"the plan spreads data parallel replicas over {nodes} nodes (vLLM's multiprocessing executor, "
                          "--headless workers): the export renders one replica over the nodes on Ray (tensor x pipeline "
                          "parallel) as a StatefulSet; plan for one node, or one replica over the nodes")
    return shape


def ray_environment(plan: Mapping[str, Any], opts: Mapping[str, Any]) -> Tuple[str, Dict[str, str]]:
    """The Ray release the pods run and the environment of every Ray node and client (the engine's ray.init).

    As on hosts (plan/cluster.py ray_auth): a Ray with token authentication (2.52.0 and later) runs behind the
    cluster's token, read from the file RAY_AUTH_TOKEN_PATH names (the Secret, mounted read-only); a Ray without
    it (vllm-ascend pins ray<=2.48.0) lets anyone who reaches its ports run code in the pods, so it needs the
    explicit opt-out; the NetworkPolicy then admits only the set's own pods to them.
    """
    version = str(opts["ray_version"] or backends.field(plan["backend"], "ray_version"))
    env = dict(backends.backend(plan["backend"]).ray_env())
    if cluster.ray_token_auth(version):
        if not (opts["ray_token"] or opts["ray_token_secret"]):
            raise ExportError(f"Ray {version} runs behind the cluster's token: set vllm_k8s_ray_token (a Secret is "
                              "rendered) or vllm_k8s_ray_token_secret (an existing Secret with the token under 'token')")
        if opts["ray_token"] and opts["ray_token_secret"]:
            raise ExportError("set vllm_k8s_ray_token (a Secret is rendered) or vllm_k8s_ray_token_secret, not both")
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=f"{RAY_TOKEN_DIR}/{RAY_TOKEN_KEY}")
    elif not opts["ray_allow_unauthenticated"]:
        raise ExportError(f"Ray {version} has no token authentication (Ray >= 2.52.0 has it): any pod that reaches the "
                          "Ray ports could run code in the instance's pods. Use an image with Ray 2.52.0 or later "
                          "(vllm_k8s_ray_version), or accept it with vllm_k8s_ray_allow_unauthenticated: true (the "
                          "NetworkPolicy admits only the set's pods to Ray, where the cluster's network plugin enforces it)")
    return version, env


#: Ray's fixed ports beside the GCS port (Ray docs, "Configuring Ray", ports): the client server, the dashboard
#: and the dashboard agent's HTTP port.
RAY_FIXED_PORTS = {10001: "Ray's client server", 8265: "Ray's dashboard", 52365: "Ray's dashboard agent"}


def check_api_port(port: int, ray_port: int) -> None:
    """Refuse an API port that is one of Ray's in the pods: the NetworkPolicy opens the API port to everyone, and
    Ray, which the pod starts first, would then listen there for anyone (without its token on an older Ray)."""
    low, high = (int(part) for part in cluster.RAY_WORKER_PORTS.split("-"))
    first, last = (int(part) for part in cluster.EPHEMERAL_PORTS.split("-"))
    taken = {**RAY_FIXED_PORTS, int(ray_port): "Ray's GCS (vllm_k8s_ray_port)"}
    if port in taken:
        what = taken[port]
    elif low <= port <= high:
        what = f"in Ray's worker port range {cluster.RAY_WORKER_PORTS}"
    elif first <= port <= last:
        # Ray's object manager, raylet and workers' other ports, and torch.distributed's, are picked there at random
        what = f"in the ephemeral range {cluster.EPHEMERAL_PORTS}, where Ray and torch.distributed pick their other ports"
    else:
        return
    raise ExportError(f"vllm_k8s_port {port} is {what}: the NetworkPolicy admits everyone to the API port, so Ray "
                      "would be open to the cluster there; choose another port (for example 8000)")


def ray_token_mode(pod_security: Dict[str, Any], opts: Mapping[str, Any]) -> int:
    """The token file's mode, setting the pod's fsGroup so that the pod's user reads it.

    A Secret volume's files belong to root; a 0400 file is unreadable to the non-root user the pod runs as, and
    Ray then starts without its token.  With ``fsGroup`` the kubelet gives the files that group and its read
    bit, so 0440 reads for the pod's group only.  The model volume is read-only in its volume source, which the
    kubelet does not chown.  When the image's own user is kept (``run_as_user`` 0) that user is not known here,
    so the file is readable to every user of the pod (it has one container).
    """
    group = int(opts["run_as_group"] or 0)
    if int(opts["run_as_user"] or 0) and group:
        pod_security["fsGroup"] = group
        pod_security["fsGroupChangePolicy"] = "OnRootMismatch"
        return 0o440
    return 0o444


def ray_commands(plan: Mapping[str, Any], head: str, port: int) -> Dict[str, List[str]]:
    """``ray start`` of the head and of a worker, as the vllm role's Ray units run it (plan/cluster.py): the node's
    address (the pod's IP), the worker port range, the accelerators as Ray resources, no usage stats."""
    devices = device_count(plan) // int(plan["nodes_needed"])
    resources = backends.backend(plan["backend"]).ray_resources(devices)
    low, high = cluster.RAY_WORKER_PORTS.split("-")
    common = ["--node-ip-address=$(POD_IP)", f"--min-worker-port={low}", f"--max-worker-port={high}",
              "--disable-usage-stats"] + resources
    return {"head": ["ray", "start", "--head", f"--port={port}", "--dashboard-host=127.0.0.1"] + common,
            "worker": ["ray", "start", f"--address={head}:{port}", "--block"] + common}


def _script(commands: Dict[str, List[str]], serve: List[str]) -> str:
    """The pod's shell: ordinal 0 starts the Ray head and then the API server (vLLM waits for the workers' Ray
    resources), the others join the head and block."""
    def line(argv: List[str]) -> str:
        # $(POD_IP) is expanded by the kubelet from the container's env before the shell runs.
        return " ".join(arg if arg.startswith("--node-ip-address=") else shlex.quote(arg) for arg in argv)
    return (f'if [ "{_ORDINAL}" = 0 ]; then\n  {line(commands["head"])}\n  exec {line(serve)}\n'
            f'else\n  exec {line(commands["worker"])}\nfi\n')


def render_multinode(plan: Mapping[str, Any], options: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
    """A plan over several nodes: [Secrets], ConfigMap, headless Service, NetworkPolicy, StatefulSet, Service.

    One pod per node of the plan (``nodes_needed``), each with the node's share of the accelerators; the
    StatefulSet starts them together (podManagementPolicy Parallel: the head is Ready only once the workers
    joined); the headless Service gives them stable names (<name>-<ordinal>.<headless>.<namespace>.svc), the
    head at ordinal 0 runs the Ray head and the API server, the client Service selects it alone.
    """
    opts = _options(options)
    nodes = int(plan["nodes_needed"])
    shape = multinode_layout(plan)
    config = engine_config(plan, opts["port"], keyed(opts))
    # The engine drives the Ray cluster, as the vllm role's head does (plan/cluster.py, layout ray).
    config["distributed-executor-backend"] = "ray"
    base = _base(plan, opts, config)
    name, namespace = base["name"], base["namespace"]
    headless = opts["headless_service_name"] or f"{name}-nodes"
    if len(headless) > 63 or not DNS_LABEL.match(headless):
        raise ExportError(f"vllm_k8s_headless_service_name {headless!r} is not a Kubernetes name")
    port = int(opts["ray_port"])
    check_api_port(int(opts["port"]), port)
    version, ray_env = ray_environment(plan, opts)
    head = f"{name}-0.{headless}.{namespace}.svc.cluster.local"
    container = base["container"]
    serve = list(container["command"]) + list(container["args"])
    commands = ray_commands(plan, head, port)
    container.update(command=["/bin/sh", "-c", _script(commands, serve)])
    container.pop("args")
    container["ports"].append({"name": "ray", "containerPort": port, "protocol": "TCP"})
    container["env"] += [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                         # vLLM's meaning: the address its distributed runtime announces (the role sets the member's).
                         {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    container["env"] += [{"name": key, "value": value} for key, value in sorted(ray_env.items())]
    # vLLM's Ray executor copies VLLM_API_KEY (from the Secret) into every Ray worker actor, on every pod, unless
    # <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json lists it (vllm/ray/ray_env.py): the same list as the
    # vllm role's head writes (cluster.ray_non_carry_over), in the ConfigMap.  No usage stats, as on a host: vLLM
    # would write them below VLLM_CONFIG_ROOT, which is read-only here.
    for configmap in base["manifests"]:
        if configmap["kind"] == "ConfigMap":
            configmap["data"][cluster.RAY_NON_CARRY_OVER_FILE] = json.dumps(cluster.ray_non_carry_over(True)) + "\n"
    container["env"] += [{"name": "VLLM_CONFIG_ROOT", "value": CONFIG_DIR}, {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
                         {"name": "DO_NOT_TRACK", "value": "1"}]
    probe = _PROBE.format(port=int(opts["port"]), path=HEALTH_PATH, timeout=4)
    for key, spec in probes("http", opts["startup_timeout_s"]).items():
        spec = dict(spec)
        spec.pop("httpGet")
        container[key] = dict(spec, exec={"command": ["python3", "-c", probe]})
    res = resources(opts, base["resource"], shape["devices_per_node"])
    if res:
        container["resources"] = res
    # /dev/shm for the node's workers: 1 GiB per accelerator of the pod (shm_gib's rule, per node).
    shm = float(opts["shm_gib"]) if float(opts["shm_gib"] or 0) > 0 else float(max(1, shape["devices_per_node"]))
    for volume in base["pod_spec"]["volumes"]:
        if volume["name"] == "shm":
            volume["emptyDir"]["sizeLimit"] = f"{int(shm * 1024)}Mi"
    manifests = base["manifests"]
    labels = base["labels"]
    if "RAY_AUTH_TOKEN_PATH" in ray_env:
        token_secret = opts["ray_token_secret"] or f"{name}-ray-token"
        if opts["ray_token"]:
            manifests.insert(0, {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(token_secret, namespace, labels),
                                 "type": "Opaque", "stringData": {RAY_TOKEN_KEY: str(opts["ray_token"])}})
        container["volumeMounts"].append({"name": "ray-token", "mountPath": RAY_TOKEN_DIR, "readOnly": True})
        base["pod_spec"]["volumes"].append({"name": "ray-token", "secret": {
            "secretName": token_secret, "defaultMode": ray_token_mode(base["pod_spec"]["securityContext"], opts),
            "items": [{"key": RAY_TOKEN_KEY, "path": RAY_TOKEN_KEY}]}})
    base["template_meta"]["annotations"]["kunpeng.vllm/ray"] = f"{version} {'token' if 'RAY_AUTH_MODE' in ray_env else 'none'}"
    manifests.append({
        "apiVersion": "v1", "kind": "Service", "metadata": _meta(headless, namespace, labels),
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": base["selector"],
                 "ports": [{"name": "ray", "port": port, "targetPort": "ray", "protocol": "TCP"}]},
    })
    # Ray's ports (GCS, object manager, raylet, workers) only from the set's own pods; the API from anywhere.
    manifests.append({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(f"{name}-nodes", namespace, labels),
        "spec": {"podSelector": {"matchLabels": base["selector"]}, "policyTypes": ["Ingress"],
                 "ingress": [{"from": [{"podSelector": {"matchLabels": base["selector"]}}]},
                             {"ports": [{"port": int(opts["port"]), "protocol": "TCP"}]}]},
    })
    manifests.append({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta(name, namespace, labels),
        "spec": {
            "replicas": nodes,
            "serviceName": headless,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": base["selector"]},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {"metadata": base["template_meta"], "spec": base["pod_spec"]},
        },
    })
    manifests.append(_service(base, opts, dict(base["selector"], **{POD_NAME_LABEL: f"{name}-0"})))
    return _checked(manifests)


#: The workload kinds whose pods read the rendered Secrets.
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
#: The pod-template annotation ``kubectl rollout restart`` sets (kubectl's polymorphichelpers, objectrestarter.go);
#: playbooks/tasks/k8s_apply.yml sets it the same way when a rendered Secret changed.
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def secrets_read(manifest: Mapping[str, Any]) -> List[str]:
    """The Secrets a workload's pods read (environment ``secretKeyRef`` and ``secret`` volumes), sorted."""
    if manifest.get("kind") not in WORKLOAD_KINDS:
        return []
    pod = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
    names = {(volume.get("secret") or {}).get("secretName") for volume in pod.get("volumes") or []}
    for container in list(pod.get("initContainers") or []) + list(pod.get("containers") or []):
        for entry in container.get("env") or []:
            names.add(((entry.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name"))
        for source in container.get("envFrom") or []:
            names.add((source.get("secretRef") or {}).get("name"))
    return sorted(name for name in names if name)


def restart_on_secret(manifest: Mapping[str, Any], rendered_secrets: List[str]) -> bool:
    """Whether the workload's pods must restart when one of the ``rendered_secrets`` changed.

    The engine reads ``VLLM_API_KEY`` from its Secret only when the container starts, and Ray reads its token
    file when it starts: a new Secret alone leaves the running pods on the old key or token.  A Secret's value
    is not put in the pod template (a hash of it there would let whoever reads the Deployment test guesses of
    the key); the apply restarts the pods instead, as ``kubectl rollout restart`` does.
    """
    return bool(set(secrets_read(manifest)) & set(rendered_secrets))


def files(manifests: List[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Where each manifest goes on the controller: ``NN-<kind>-<name>.yaml`` in apply order, a Secret owner-only.

    Each entry has ``file``, ``mode``, ``secret``, ``restart_on_secret`` (a workload reading a rendered Secret:
    the apply restarts its pods when that Secret changed) and ``manifest``; ``label`` is ``Kind/name`` for messages.
    """
    rendered_secrets = [m["metadata"]["name"] for m in manifests if m["kind"] == "Secret"]
    out = []
    for index, manifest in enumerate(manifests):
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        secret = kind == "Secret"
        out.append({"file": f"{index:02d}-{kind.lower()}-{name}.yaml", "mode": "0600" if secret else "0644",
                    "secret": secret, "restart_on_secret": restart_on_secret(manifest, rendered_secrets),
                    "label": f"{kind}/{name}", "manifest": manifest})
    return out
