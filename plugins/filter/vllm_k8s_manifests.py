# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_k8s_manifests``: the planned vLLM instance as Kubernetes manifests."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_k8s_manifests
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: Render a vLLM plan as Kubernetes manifests (Deployment, Service, ConfigMap, Secret)
description:
  - Takes the plan of M(kunpeng.vllm.vllm_plan) run with a C(request) (the C(kunpeng_vllm_plan) fact, with
    C(engine_config), C(arch) and C(service)) and returns the manifests of one pod serving that instance, in apply
    order - a Secret with the API key (when O(options.api_key) is set), a ConfigMap with the engine config (and,
    with a key, the role's route guard, which the engine loads as on a host), a Deployment, a NetworkPolicy
    admitting ingress on the API port only, and a Service.
  - Nothing is decided again. The engine config is the plan's, listening on every address of the pod at O(options.port);
    the accelerator count is the plan's tensor x pipeline x data parallel size; the node architecture is the plan's
    (C(kubernetes.io/arch) C(arm64) for Kunpeng, C(amd64) for x86_64).
  - "The accelerator is requested from its device plugin, request equal to limit (extended resources cannot be
    overcommitted): C(huawei.com/Ascend910) on Atlas A2 and A3, C(huawei.com/Ascend310P) on Atlas 300I Duo,
    C(nvidia.com/gpu) on NVIDIA, none on the CPU backend. Nodes are selected by the label the device plugin sets
    (C(accelerator: huawei-Ascend910) or C(huawei-Ascend310P), C(nvidia.com/gpu.present: 'true'))."
  - The engine reads the config from the ConfigMap mounted read-only at C(/etc/vllm) (C(vllm serve /model --config
    /etc/vllm/config.yaml)) and the API key from the Secret through C(VLLM_API_KEY); the key is never in the ConfigMap
    or the arguments. C(/health) answers the startup, readiness and liveness probes.
  - The pod runs as a non-root user with a read-only root file system, no privilege escalation and no capabilities;
    the caches (C(HOME), C(VLLM_CACHE_ROOT), C(HF_HOME), C(TRITON_CACHE_DIR)) and C(/tmp) are emptyDir volumes,
    C(/dev/shm) a memory-backed emptyDir sized from the plan (1 GiB per accelerator, at least 1 GiB).
  - "A plan that spans several nodes (C(nodes_needed) above 1) with one replica over them (tensor x pipeline parallel
    on Ray) is rendered as a StatefulSet - one pod per node with the node's share of the accelerators, a headless
    Service (O(options.headless_service_name)) for stable names, the Ray head and the API server at ordinal 0, the
    workers joining it, Ray behind the cluster's token from a Secret (O(options.ray_token) or
    O(options.ray_token_secret), read from the file C(RAY_AUTH_TOKEN_PATH) names), a NetworkPolicy admitting only the
    set's pods to Ray, and the client Service selecting the head. Data parallel replicas spread over nodes are refused."
  - Fails with a message naming the variable and the fix - an image without a C(@sha256:) digest (unless
    O(options.allow_unpinned_image)), no API key (unless O(options.allow_unauthenticated)), a request above its limit,
    a model volume without its path or claim.
options:
  _input:
    description: The plan, C(kunpeng_vllm_plan) (M(kunpeng.vllm.vllm_plan) with a C(request)).
    type: dict
    required: true
  options:
    description:
      - The export's settings, the C(vllm_k8s_*) variables of C(playbooks/k8s_export.yml) without the prefix.
    type: dict
    default: {}
    suboptions:
      image:
        description: The engine image, by digest (C(name@sha256:<64 hex>)).
        type: str
        required: true
      allow_unpinned_image:
        description: Accept an image reference without a digest (a tag that can move under the Deployment).
        type: bool
        default: false
      image_pull_policy:
        description: The container's C(imagePullPolicy).
        type: str
        default: IfNotPresent
      name:
        description: Base name of the objects; empty gives C(vllm-<served model name>).
        type: str
        default: ""
      namespace:
        description: Namespace of the objects.
        type: str
        default: default
      replicas:
        description: Pods of the Deployment, each a whole instance.
        type: int
        default: 1
      port:
        description: Port the engine listens on in the pod and the Service exposes.
        type: int
        default: 8000
      service_type:
        description:
          - The Service's C(type) (C(ClusterIP), C(NodePort), C(LoadBalancer)). C(NodePort) and C(LoadBalancer) publish
            the API outside the cluster network and are refused unless O(options.expose_api_outside_cluster).
        type: str
        default: ClusterIP
      expose_api_outside_cluster:
        description:
          - Accept a C(NodePort) or C(LoadBalancer) Service, which publishes the API on every node's port or a load
            balancer (the explicit opt-in; the API key and the route guard still apply).
        type: bool
        default: false
      model_volume:
        description:
          - Where the weights come from, C(type) C(hostPath) (C(path), the model's directory on every node that may
            run the pod) or C(pvc) (C(claim), a PersistentVolumeClaim), and C(sub_path) inside it. Mounted read-only.
        type: dict
        default: {type: hostPath, path: "", claim: "", sub_path: ""}
      model_mount:
        description: Where the model is mounted in the container (the model argument of C(vllm serve)).
        type: str
        default: /model
      api_key:
        description: The API key; a Secret C(<name>-api-key) holding it is rendered.
        type: str
        default: ""
      api_key_secret:
        description: An existing Secret holding the key under C(api-key), instead of O(options.api_key).
        type: str
        default: ""
      allow_unauthenticated:
        description: Serve without an API key on the cluster network (the explicit opt-out).
        type: bool
        default: false
      resource_names:
        description:
          - Extended resource names for a cluster's own device plugin, by C(cuda) or Atlas series (C(A2), C(A3),
            C(300I Duo)), merged over the defaults.
        type: dict
        default: {}
      node_selector:
        description: Node labels the pod also requires, merged over the architecture and accelerator labels.
        type: dict
        default: {}
      accelerator_node_labels:
        description: Require the device plugin's node label (off for a cluster that labels its nodes otherwise).
        type: bool
        default: true
      tolerations:
        description: The pod's C(tolerations), for accelerator nodes with taints.
        type: list
        elements: dict
        default: []
      cpu_request:
        description: The container's cpu request (a quantity, for example C(8)); empty leaves it out.
        type: str
        default: ""
      cpu_limit:
        description: The container's cpu limit (for example C(16)); empty leaves it out.
        type: str
        default: ""
      memory_request:
        description: The container's memory request (for example C(64Gi)); empty leaves it out.
        type: str
        default: ""
      memory_limit:
        description:
          - The container's memory limit (for example C(128Gi)); empty leaves it out. The memory-backed C(/dev/shm)
            counts against it.
        type: str
        default: ""
      shm_gib:
        description: Size of C(/dev/shm) in GiB; 0 sizes it from the plan.
        type: float
        default: 0
      run_as_user:
        description: UID the engine runs as (C(runAsNonRoot)); 0 leaves the image's user (root in upstream's images).
        type: int
        default: 1000
      run_as_group:
        description: GID the engine runs as.
        type: int
        default: 1000
      supplemental_groups:
        description: Extra groups of the pod, for example the group owning C(/dev/davinci*) on Ascend nodes (C(HwHiAiUser)).
        type: list
        elements: int
        default: []
      read_only_root_filesystem:
        description: Mount the image's root file system read-only.
        type: bool
        default: true
      startup_timeout_s:
        description: How long the startup probe waits for C(/health) (the model load) before the pod restarts.
        type: int
        default: 1800
      labels:
        description: Extra labels of every object.
        type: dict
        default: {}
      headless_service_name:
        description: A multi-node plan's headless Service; empty gives C(<name>-nodes).
        type: str
        default: ""
      ray_token:
        description: A multi-node plan's Ray token; a Secret C(<name>-ray-token) is rendered with it.
        type: str
        default: ""
      ray_token_secret:
        description: An existing Secret holding a multi-node plan's Ray token under C(token) (instead of O(options.ray_token)).
        type: str
        default: ""
      ray_version:
        description: The Ray release in the image; empty takes the backend's (what the vllm role's Ray units install).
        type: str
        default: ""
      ray_port:
        description: The Ray head's GCS port.
        type: int
        default: 6379
      ray_allow_unauthenticated:
        description: Accept a Ray without token authentication (before 2.52.0, as vllm-ascend pins) in a multi-node plan.
        type: bool
        default: false
  as_files:
    description:
      - Return where each manifest goes instead of the bare list - dicts with C(file) (C(NN-<kind>-<name>.yaml), in
        apply order), C(mode) (C(0600) for the Secret, else C(0644)), C(secret), C(restart_on_secret) (a Deployment
        or StatefulSet whose pods read a rendered Secret - the engine reads the key, Ray its token, only at start, so
        C(playbooks/tasks/k8s_apply.yml) restarts them when that Secret changed), C(label) (C(Kind/name)) and
        C(manifest).
    type: bool
    default: false
seealso:
  - name: Kubernetes extended resources
    description: Request and limit of an extended resource must be equal.
    link: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#extended-resources
  - name: Ascend Device Plugin (MindCluster)
    description: The huawei.com/Ascend910 and huawei.com/Ascend310P resources and the accelerator node label.
    link: https://www.hiascend.com/document/detail/en/mindcluster/730/clustersched/schedulingug/dlug_api_039.html
  - name: NVIDIA device plugin
    description: The nvidia.com/gpu resource.
    link: https://github.com/NVIDIA/k8s-device-plugin
"""

EXAMPLES = r"""
- name: Render the manifests of the planned instance
  ansible.builtin.set_fact:
    __manifests: >-
      {{ kunpeng_vllm_plan | kunpeng.vllm.vllm_k8s_manifests({
           'image': 'quay.io/ascend/vllm-ascend@sha256:' ~ image_digest,
           'api_key': vault_vllm_api_key,
           'model_volume': {'type': 'hostPath', 'path': '/var/lib/vllm/models/deepseek-r1-distill-qwen-7b'},
           'cpu_request': '8', 'cpu_limit': '16', 'memory_request': '64Gi', 'memory_limit': '128Gi'}) }}
  no_log: true

- name: Write one file per object
  ansible.builtin.copy:
    content: "{{ item.manifest | ansible.builtin.to_nice_yaml }}"
    dest: "manifests/{{ item.file }}"
    mode: "{{ item.mode }}"
  loop: "{{ kunpeng_vllm_plan | kunpeng.vllm.vllm_k8s_manifests(export_settings, as_files=true) }}"
  loop_control:
    label: "{{ item.label }}"
  no_log: true

- name: Write them as one multi-document file
  ansible.builtin.copy:
    content: "{{ __manifests | ansible.builtin.to_nice_yaml(explicit_start=true) }}"
    dest: manifests/vllm.yaml
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description:
    - The manifests in apply order (Secret, ConfigMap, Deployment, Service), each a dict with C(apiVersion), C(kind),
      C(metadata) and the object's body; with O(as_files) the file entries holding them.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.k8s_export import ExportError, files, render  # noqa: E402


def vllm_k8s_manifests(plan, options=None, as_files=False):
    """The manifests of ``plan`` (or their file entries), or the export's refusal as a filter error."""
    try:
        manifests = render(plan or {}, options or {})
    except ExportError as exc:
        raise AnsibleFilterError(f"vllm_k8s_manifests: {exc}") from None
    return files(manifests) if as_files else manifests


class FilterModule:
    """Kubernetes export filters."""

    def filters(self):
        return {"vllm_k8s_manifests": vllm_k8s_manifests}
