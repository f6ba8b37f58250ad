#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_cluster
short_description: Plan one vLLM instance over the hosts of an inventory group (multi-node serving)
version_added: "0.2.0"
description:
  - A deployment that spans hosts is one inventory group; its first host is the head. Every member runs this module
    with the facts of all members (C(hostvars)) and gets its own part of one plan, the same on every member.
  - Refuses members that disagree on the backend, the accelerator model, count or memory, the NVIDIA driver, the Ascend
    driver or CANN, the engine release or the model, naming the hosts and their values.
  - "Picks the layout from the per-replica sizes of the plan (M(kunpeng.vllm.vllm_plan) with O(ignore:nodes) set to the
    group's size): tensor parallelism within a node; replicas that fit one node become vLLM's native data parallelism
    across the nodes (the head serves the API with C(--data-parallel-size), C(--data-parallel-size-local),
    C(--data-parallel-address), C(--data-parallel-rpc-port); the other nodes add C(--headless) and
    C(--data-parallel-start-rank)); a replica larger than one node runs tensor x pipeline parallel across the nodes through
    Ray (C(--distributed-executor-backend ray); Ray head and worker units) or vLLM's multiprocessing executor
    (C(--nnodes), C(--node-rank), C(--master-addr)). Expert parallelism for MoE models follows the plan's
    C(enable_expert_parallel)."
  - On Ascend, M(kunpeng.vllm.vllm_plan) plans a mixture-of-experts model over several nodes as vllm-ascend's
    DeepSeek guides run it (data parallel replicas within one node each, for example 4 x tensor parallel 4 over two
    Atlas 800 A2 nodes, with expert parallelism, on the multiprocessing executor, no Ray); every member then also gets
    the guides' C(HCCL_BUFFSIZE), C(OMP_PROC_BIND), C(OMP_NUM_THREADS) and C(PYTORCH_NPU_ALLOC_CONF=expandable_segments:True).
  - Where Ray runs, it is the backend's release (vllm-ascend pins C(ray>=2.47.1,<=2.48.0)), and every member gets a
    short C(RAY_TMPDIR) (C(<cache_dir>/ray-<hash of the instance>)) so that Ray's Unix sockets stay within the
    107-byte AF_UNIX limit whatever the instance's name; a O(cache_dir) too long for that fails.
  - The CPU backend only scales out with data parallelism; vLLM's CPU platform refuses Ray, and one replica over several
    CPU hosts is refused.
  - Picks the IPv4 network every member has an address on, and sets C(GLOO_SOCKET_IFNAME) (and C(NCCL_SOCKET_IFNAME) on
    cuda, C(HCCL_SOCKET_IFNAME), C(HCCL_IF_IP) and C(TP_SOCKET_IFNAME) on ascend) to the member's interface there, and
    C(VLLM_HOST_IP) to the member's own address on it, the address vLLM's distributed runtime announces for the node
    (not the API bind address, which stays C(vllm_host)). Members that share no network with the head fail, named.
  - Members that all have C(/dev/infiniband) get its device nodes in the unit's device list (the verbs devices by their
    device group C(char-infiniband_verbs) and C(/dev/infiniband/rdma_cm); systemd ignores a directory in C(DeviceAllow=))
    and C(LimitMEMLOCK=infinity) (RDMA for NCCL/HCCL).
  - A Ray node runs behind the cluster's token (Ray's token authentication, Ray 2.52.0 and later) - C(RAY_AUTH_MODE=token)
    and C(RAY_AUTH_TOKEN_PATH) (O(ray_token_path)) in the Ray unit's environment, and in the engine's when it drives the Ray
    cluster. A Ray without token authentication is refused unless O(ray_allow_unauthenticated) (a host firewall does not
    stop a local user of a member, who reaches Ray on the loopback address or the host's own addresses).
  - Every layout (C(dp), C(mp) and C(ray) alike) runs torch.distributed between the members, and C(dp) vLLM's data parallel
    RPC/ZMQ sockets too, without authentication; it is refused on a host whose firewall is not active with a default deny
    for incoming connections (O(firewall_default_deny)), unless O(expose_unauthenticated_ports).
  - When the engine drives the Ray cluster, C(non_carry_over_env_vars) of RV(ray) lists the engine variables vLLM must not copy
    to its Ray workers (C(VLLM_API_KEY)); the vllm role writes them to C(<VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json),
    which vLLM's Ray executor reads.
  - Sets the fact C(kunpeng_vllm_cluster) with the same keys as the module result. Never changes the node.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  members:
    description:
      - One entry per member, in inventory order (the first is the head). Empty for a host that serves alone (the
        result is then RV(enabled=false) with empty values).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The member's C(inventory_hostname).
        type: str
        required: true
      accelerators:
        description: The member's C(kunpeng_accelerators) fact.
        type: dict
      plan:
        description: The member's C(kunpeng_vllm_plan) fact (C(backend) and C(engine_version) are compared).
        type: dict
        required: true
      facts:
        description: The member's C(ansible_facts) (its C(interfaces), the per-interface entries and C(default_ipv4) are read).
        type: dict
        required: true
      model:
        description: What identifies the model the member serves (name, source, location, revision, checksum).
        type: dict
        default: {}
      rdma:
        description: Whether the member has C(/dev/infiniband).
        type: bool
        default: false
  host:
    description: The member this plan is for (C(inventory_hostname)).
    type: str
    required: true
  group:
    description: The inventory group (the role's C(vllm_cluster_group)); used in messages.
    type: str
    default: ""
  engine_args:
    description:
      - The plan's engine arguments (C(kunpeng_vllm_plan.engine_args)); C(tensor_parallel_size), C(pipeline_parallel_size),
        C(data_parallel_size) and C(enable_expert_parallel) are read.
    type: dict
    default: {}
  moe:
    description: Whether the model is a mixture of experts (C(kunpeng_vllm_plan.model.moe)).
    type: bool
    default: false
  executor:
    description:
      - C(auto) runs replicas that fit one node as data parallel and a replica larger than a node through Ray;
        C(dp), C(ray) or C(mp) (vLLM's multiprocessing executor over C(--nnodes)) force one.
    type: str
    choices: [auto, dp, mp, ray]
    default: auto
  network:
    description: The IPv4 network (CIDR) the cluster traffic takes; empty picks one (the head's default route first).
    type: str
    default: ""
  interface:
    description: The head's interface whose network the cluster traffic takes; empty picks one.
    type: str
    default: ""
  ports:
    description:
      - Ports of the cluster's own traffic, C(dp_rpc) (data-parallel RPC, default 13345), C(master) (torch.distributed
        master of the multiprocessing executor, default 29501), C(ray) (Ray GCS, default 6379).
    type: dict
    default: {}
  ray_units:
    description:
      - Form the Ray cluster (Ray head and worker units) even when the layout does not run Ray as executor. vLLM's CPU
        platform refuses Ray as executor, so on the CPU backend the Ray cluster stands beside the data parallel engines,
        without dashboard and with Ray's smallest object store; the engines do not use it. For checking Ray and the
        cluster network across the members (the multinode scenario does).
    type: bool
    default: false
  cache_dir:
    description: The vllm role's C(vllm_cache_dir); Ray's temporary directory lies directly below it.
    type: path
    default: /var/cache/vllm
  instance:
    description: The vllm role's C(vllm_instance_name); names Ray's temporary directory (empty takes O(group)).
    type: str
    default: ""
  ray_token_path:
    description:
      - The file on every member that holds the cluster's Ray token (the vllm role writes it, mode 0600, owned by the
        service user). Required when the plan runs Ray with token authentication.
    type: str
    default: ""
  firewall_default_deny:
    description:
      - Whether this host's firewall is active and refuses inbound connections no rule admits, as the base role last
        recorded it (C(ansible_local.kunpeng_vllm_base.firewall.default_deny)); unset when not known. An active firewall
        with a default allow (ufw's default C(allow (incoming)), firewalld's C(trusted) zone) does not count. Every
        layout needs it, unless O(expose_unauthenticated_ports).
    type: bool
  firewall_probes:
    description:
      - This host's firewalls as they are now, read by the vllm role's preflight (C(ufw status verbose),
        C(firewall-cmd --list-all) and C(firewall-cmd --list-all-zones)), one entry per firewall. When given, they
        decide instead of O(firewall_default_deny), for every firewalld zone that takes connections from other
        machines (the cluster's sockets listen on every address, so a second NIC in C(trusted) counts too) and the
        cluster's ports (a rule from anywhere to one of them opens the firewall), through
        the same reading as the base role's C(kunpeng.vllm.base_report). The active ones must each deny by default
        and admit anyone to no more than a few single ports; none active is not a closed firewall.
    type: list
    elements: dict
    version_added: 0.3.0
    suboptions:
      name:
        description: The firewall, C(ufw) or C(firewalld).
        type: str
        required: true
        choices: [ufw, firewalld]
      rc:
        description: Exit status of the probe (C(ufw status verbose), C(firewall-cmd --list-all)).
        type: int
      stdout:
        description: What the probe printed.
        type: str
        default: ""
      zones_stdout:
        description: What C(firewall-cmd --list-all-zones) printed (firewalld).
        type: str
        default: ""
  ray_allow_unauthenticated:
    description:
      - Run a Ray without token authentication (Ray before 2.52.0, such as vllm-ascend's pin). Anyone who reaches its
        ports, a local user of any member included (a host firewall does not filter the loopback address or the host's
        own addresses), can run code as the service user on every member.
    type: bool
    default: false
  expose_unauthenticated_ports:
    description:
      - Plan a multi-node layout (C(dp), C(mp) or C(ray)) on a host whose firewall does not deny incoming by default.
        torch.distributed (TCPStore, gloo, NCCL/HCCL; under the C(ray) layout too, which vLLM's Ray executor
        initialises over C(tcp://<head>:<port>)) and, for C(dp), vLLM's data parallel RPC/ZMQ sockets then accept
        anyone who reaches the members' network, without authentication. Without it every layout needs
        O(firewall_default_deny).
    type: bool
    default: false
  ray_token_rotate:
    description:
      - Have the head write a new Ray token this run (the vllm role's C(vllm_cluster_ray_token_rotate)); the token is
        otherwise made once and kept. Every member gets the new token in the same run, and the Ray nodes and the engine
        that drives them restart on it. Refused for an instance without Ray, or whose Ray has no token authentication.
    type: bool
    default: false
    version_added: 0.3.0
notes:
  - Supports check mode; nothing on the node changes. C(changed) is always C(false).
seealso:
  - module: kunpeng.vllm.vllm_plan
  - name: vLLM data parallel deployment
    description: Native multi-node data parallelism (C(--headless), C(--data-parallel-start-rank)).
    link: https://docs.vllm.ai/en/latest/serving/data_parallel_deployment.html
  - name: vLLM distributed serving
    description: Multi-node tensor and pipeline parallelism with Ray, C(VLLM_HOST_IP).
    link: https://docs.vllm.ai/en/latest/serving/parallelism_scaling.html
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.attributes.facts
"""

EXAMPLES = r"""
- name: Hand this member's probe, plan and network to the others
  ansible.builtin.set_fact:
    __member:
      name: "{{ inventory_hostname }}"
      accelerators: "{{ kunpeng_accelerators }}"
      plan: "{{ kunpeng_vllm_plan }}"
      facts: "{{ ansible_facts }}"
      model: {name: deepseek-r1, source: local, src: /models/DeepSeek-R1-w8a8}

- name: Plan this member's part of the cluster (every member of group ds_r1 runs it)
  kunpeng.vllm.vllm_cluster:
    members: "{{ groups['ds_r1'] | map('extract', hostvars, '__member') | list }}"
    host: "{{ inventory_hostname }}"
    group: ds_r1
    engine_args: "{{ kunpeng_vllm_plan.engine_args }}"
    moe: "{{ kunpeng_vllm_plan.model.moe | default(false) }}"

- name: Show this member's role and extra engine options
  ansible.builtin.debug:
    msg: "{{ kunpeng_vllm_cluster.role }} {{ kunpeng_vllm_cluster.engine_args }} {{ kunpeng_vllm_cluster.env }}"
"""

RETURN = r"""
enabled:
  description: Whether the host is a member of a cluster (false on a host that serves alone).
  returned: always
  type: bool
  sample: true
group:
  description: The inventory group.
  returned: always
  type: str
  sample: ds_r1
head:
  description: The head member (the first host of the group); it serves the API.
  returned: always
  type: str
  sample: a2-node-1
head_address:
  description: The head's address on the cluster network.
  returned: always
  type: str
  sample: 10.20.0.11
members:
  description: The members in start order (head first).
  returned: always
  type: list
  elements: str
  sample: [a2-node-1, a2-node-2]
rank:
  description: This member's node rank (0 for the head).
  returned: always
  type: int
  sample: 1
role:
  description: C(head), C(worker), or C(single) for a host outside a cluster.
  returned: always
  type: str
  sample: worker
backend:
  description: The backend every member runs.
  returned: always
  type: str
  sample: ascend
network:
  description: The IPv4 network the cluster traffic takes.
  returned: always
  type: str
  sample: 10.20.0.0/24
interface:
  description: This member's interface on that network.
  returned: always
  type: str
  sample: enp189s0f0
address:
  description: This member's address on that network (its C(VLLM_HOST_IP)).
  returned: always
  type: str
  sample: 10.20.0.12
addresses:
  description: Every member's address on the cluster network.
  returned: always
  type: dict
  sample: {"a2-node-1": "10.20.0.11", "a2-node-2": "10.20.0.12"}
layout:
  description:
    - C(mode) (C(dp), C(ray) or C(mp)), C(executor), C(tensor_parallel_size), C(pipeline_parallel_size),
      C(data_parallel_size), C(data_parallel_size_local), C(expert_parallel), C(nodes), C(devices_per_node).
  returned: always
  type: dict
  sample: {"mode": "dp", "executor": "mp", "tensor_parallel_size": 4, "pipeline_parallel_size": 1, "data_parallel_size": 4,
           "data_parallel_size_local": 2, "expert_parallel": true, "nodes": 2, "devices_per_node": 8}
engine_args:
  description: The C(vllm serve) options this member adds to the plan's (dash names).
  returned: always
  type: dict
  sample: {"data-parallel-size": 4, "data-parallel-size-local": 2, "data-parallel-address": "10.20.0.11",
           "data-parallel-rpc-port": 13345, "headless": true, "data-parallel-start-rank": 2}
env:
  description:
    - Environment of this member's service (C(VLLM_HOST_IP) and the socket interface names; the backend's variables for
      a mixture-of-experts model spread as data parallel replicas; C(RAY_TMPDIR) where Ray runs).
  returned: always
  type: dict
  sample: {"VLLM_HOST_IP": "10.20.0.12", "GLOO_SOCKET_IFNAME": "enp189s0f0", "HCCL_SOCKET_IFNAME": "enp189s0f0",
           "HCCL_BUFFSIZE": "200", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1",
           "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}
rdma:
  description: Whether every member has C(/dev/infiniband) (never on cpu).
  returned: always
  type: bool
  sample: false
device_nodes:
  description:
    - C(DeviceAllow) entries of the unit besides the accelerators' (on RDMA members C(char-infiniband_verbs rw) and
      C(/dev/infiniband/rdma_cm rw)).
  returned: always
  type: list
  elements: str
  sample: []
limit_memlock:
  description: C(LimitMEMLOCK) of the unit (C(infinity) on RDMA members), empty for the default.
  returned: always
  type: str
  sample: ""
ports:
  description: The cluster ports (C(dp_rpc), C(master), C(ray), C(ray_dashboard)).
  returned: always
  type: dict
  sample: {"dp_rpc": 13345, "master": 29501, "ray": 6379, "ray_dashboard": 8265}
firewall:
  description:
    - Ports only members reach, in the shape of the base role's C(base_firewall_rules) (the base role adds them to the
      platform firewall of every member), each with C(ports) (numbers or ranges), C(protocol), C(sources) (the members'
      addresses) and C(why).
  returned: always
  type: list
  elements: dict
  sample: [{"ports": ["13345"], "protocol": "tcp", "why": "data-parallel RPC (head)", "sources": ["10.20.0.11", "10.20.0.12"]}]
ray:
  description:
    - For the Ray layout (or with I(ray_units)), C(version), C(package), C(args) (of C(ray), head or worker), C(env)
      (with C(RAY_AUTH_MODE) and C(RAY_AUTH_TOKEN_PATH)), C(head_address), C(executor) (whether the engine runs on this Ray
      cluster and its unit requires the Ray unit), C(auth) (C(token), or C(none) for a Ray without token authentication),
      C(token_path), C(rotate_token) (whether the head writes a new token this run, O(ray_token_rotate)), C(temp_dir)
      (Ray's C(RAY_TMPDIR), also in RV(env)) and C(non_carry_over_env_vars) (the engine variables vLLM must not copy to
      the Ray workers, C([VLLM_API_KEY]) when the engine drives Ray, else empty); null otherwise.
  returned: always
  type: dict
  sample: null
engine_packages:
  description:
    - Requirements the engine's virtualenv holds for the cluster, beside the vllm role's C(vllm_extra_packages) (the
      Ray package of the Ray layout or of I(ray_units)). The vllm role plans the engine again with them, so they are
      installed with vLLM into a virtualenv of their own.
  returned: always
  type: list
  elements: str
  sample: ["ray[default]==2.60.0"]
  version_added: 0.3.0
serves_api:
  description: Whether this member serves the OpenAI API (the head).
  returned: always
  type: bool
  sample: false
runs_engine:
  description: Whether this member runs C(vllm serve) (false on Ray workers, whose devices the head's engine drives).
  returned: always
  type: bool
  sample: true
start_order:
  description: The order the members start in (head first; workers join it).
  returned: always
  type: list
  elements: str
  sample: [a2-node-1, a2-node-2]
notes:
  description: What was chosen and why, in sentences.
  returned: always
  type: list
  elements: str
  sample: ["2 nodes on 10.20.0.0/24 (the head's default route); head a2-node-1 at 10.20.0.11."]
"""

from typing import Any, Dict, Optional  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import BackendMissing  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import base_report  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster  # noqa: E402

ARGUMENT_SPEC: Dict[str, Dict[str, Any]] = dict(
    members=dict(type="list", elements="dict", required=True, options=dict(
        name=dict(type="str", required=True),
        accelerators=dict(type="dict"),
        plan=dict(type="dict", required=True),
        facts=dict(type="dict", required=True),
        model=dict(type="dict", default={}),
        rdma=dict(type="bool", default=False),
    )),
    host=dict(type="str", required=True),
    group=dict(type="str", default=""),
    engine_args=dict(type="dict", default={}),
    moe=dict(type="bool", default=False),
    executor=dict(type="str", default="auto", choices=list(cluster.EXECUTORS)),
    network=dict(type="str", default=""),
    interface=dict(type="str", default=""),
    ports=dict(type="dict", default={}),
    ray_units=dict(type="bool", default=False),
    cache_dir=dict(type="path", default="/var/cache/vllm"),
    instance=dict(type="str", default=""),
    ray_token_path=dict(type="str", default="", no_log=False),  # the file's path, not the token
    firewall_default_deny=dict(type="bool"),
    firewall_probes=dict(type="list", elements="dict", options=dict(
        name=dict(type="str", required=True, choices=["ufw", "firewalld"]),
        rc=dict(type="int"),
        stdout=dict(type="str", default=""),
        zones_stdout=dict(type="str", default=""),
    )),
    ray_allow_unauthenticated=dict(type="bool", default=False),
    expose_unauthenticated_ports=dict(type="bool", default=False),
    ray_token_rotate=dict(type="bool", default=False, no_log=False),  # whether to make a new token, not a token
)


def firewall_default_deny(members, params: Dict[str, Any], ports: Dict[str, int]) -> Optional[bool]:
    """The firewall verdict: read now from ``firewall_probes`` for this member's NIC and the cluster's ports, else given."""
    if params.get("firewall_probes") is None:
        return params.get("firewall_default_deny")
    try:
        where = cluster.shared_network(members, params["network"], params["interface"])["members"].get(params["host"], {})
    except (cluster.ClusterError, IndexError):
        where = {}  # the plan refuses these members itself, with its own message
    spans = list(dict(cluster.DEFAULT_PORTS, **ports).values())
    spans.extend([cluster.RAY_WORKER_PORTS, cluster.EPHEMERAL_PORTS])
    guarded = base_report.guarded_spans(spans)
    return base_report.firewall_probes_default_deny(params["firewall_probes"], where.get("interface", ""),
                                                    guarded)["default_deny"]


def build(params: Dict[str, Any]) -> Dict[str, Any]:
    """The cluster plan of ``params['host']``; raises :class:`cluster.ClusterError`."""
    if not params["members"]:
        return cluster.single_host(params["engine_args"] or {}, bool(params.get("expose_unauthenticated_ports")))
    members = [cluster.member(entry["name"], entry["accelerators"], entry["plan"], entry["facts"], entry["model"] or {},
                              entry["rdma"]) for entry in params["members"]]
    ports = {}
    for key, value in (params["ports"] or {}).items():
        if key not in cluster.DEFAULT_PORTS:
            raise cluster.ClusterError(f"vllm_cluster_ports has no port {key!r}; known: {', '.join(sorted(cluster.DEFAULT_PORTS))}")
        try:
            ports[key] = int(value)
        except (TypeError, ValueError):
            raise cluster.ClusterError(f"vllm_cluster_ports.{key} must be a TCP port, not {value!r}") from None
        if not 0 < ports[key] < 65536:
            raise cluster.ClusterError(f"vllm_cluster_ports.{key} must be a TCP port (1-65535), not {value!r}")
    return cluster.plan(members, params["host"], params["engine_args"] or {}, moe=params["moe"], executor=params["executor"],
                        network=params["network"], interface=params["interface"], ports=ports, group=params["group"],
                        ray_units=bool(params.get("ray_units")), cache_dir=params.get("cache_dir") or "/var/cache/vllm",
                        instance=params.get("instance") or "", ray_token_path=params.get("ray_token_path") or "",
                        firewall_default_deny=firewall_default_deny(members, params, ports),
                        ray_allow_unauthenticated=bool(params.get("ray_allow_unauthenticated")),
                        expose_unauthenticated_ports=bool(params.get("expose_unauthenticated_ports")),
                        ray_token_rotate=bool(params.get("ray_token_rotate")))


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = build(module.params)
    except (cluster.ClusterError, BackendMissing) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, ansible_facts={"kunpeng_vllm_cluster": result}, **result)


if __name__ == "__main__":
    main()
