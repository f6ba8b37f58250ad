"""Members of a multi-node cluster for the vllm_cluster tests, from the real probe and the real planner.

A member is what the vllm role hands to kunpeng.vllm.vllm_cluster: the host's
kunpeng_accelerators fact (plan_hosts replays the probe on committed
fixtures), its kunpeng_vllm_plan (vllm_plan.build_plan on that fact) and its
network facts (fixtures/cluster: captured with Ansible's setup module).
"""

import copy
import json
import os

import plan_hosts
from conftest import FIXTURES

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

NETWORKS = os.path.join(FIXTURES, "cluster")


def network(name, rewrite=()):
    """``ansible_facts`` of a captured host (the ``ansible_`` prefix stripped, as a play sees them).

    ``rewrite`` swaps text (``old, new, ...``) in the capture: the same layout on another subnet or NIC name.
    """
    with open(os.path.join(NETWORKS, name + ".json")) as handle:
        text = handle.read()
    for old, new in zip(rewrite[::2], rewrite[1::2]):
        text = text.replace(old, new)
    return {key[len("ansible_"):]: value for key, value in json.loads(text).items()}


def model_config(name):
    with open(os.path.join(FIXTURES, "models", name + ".json")) as handle:
        return json.load(handle)


def node_plan(host, **params):
    """kunpeng_vllm_plan of a replayed host (build_plan with the module's defaults)."""
    args = {name: copy.deepcopy(spec.get("default")) for name, spec in vllm_plan.ARGUMENT_SPEC.items()}
    args.update(accelerators=plan_hosts.facts(host), **params)
    return deployment.plan_host(args)


def entry(name, host, net, plan, model=None, rdma=False):
    """One element of the module's ``members`` option."""
    return {"name": name, "accelerators": plan_hosts.facts(host), "plan": plan, "facts": net,
            "model": model or {"name": "smollm2", "source": "controller", "src": "/models/SmolLM2-135M-Instruct"}, "rdma": rdma}


# --- the example clusters of docs/multi-node.md ------------------------------------------------------------------

A2_NET = ("172.18.0.", "10.20.0.", "eth0", "enp189s0f0")
GPU_NET = ("172.18.0.", "10.30.0.", "eth0", "ens10f0np0")

#: name -> (replayed host, network rewrite, member names, vllm_plan arguments, model)
EXAMPLES = {
    "ascend-a2": ("atlas-800i-a2-64g-cann8.3", A2_NET, ("a2-node-1", "a2-node-2"),
                  {"vllm_ascend_version": "0.11.0", "python_version": "3.11", "weight_dtype": "w8a8"},
                  {"name": "deepseek-r1", "source": "local", "src": "/data/DeepSeek-R1-w8a8"}),
    "nvidia-h100": ("hgx-h100", GPU_NET, ("h100-node-1", "h100-node-2"),
                    {"vllm_version": "0.33.0", "python_version": "3.12"},
                    {"name": "deepseek-r1", "source": "local", "src": "/data/DeepSeek-R1"}),
}


def example_plan(name):
    """What the planner decides for the example cluster ``name``: the node plan, each member's part."""
    from ansible_collections.kunpeng.vllm.plugins.modules import vllm_cluster

    host, rewrite, names, params, model = EXAMPLES[name]
    plan = node_plan(host, nodes=len(names), model_config=model_config("deepseek-v3"), **params)
    members = [entry(member, host, network(net, rewrite), plan, model, rdma=True)
               for member, net in zip(names, ("docker-net1-a", "docker-net1-net2-b"))]
    parts = {}
    for member in names:
        args = {"members": members, "host": member, "group": f"ds_r1_{name.split('-')[0]}", "engine_args": plan["engine_args"],
                "moe": plan["model"]["moe"], "executor": "auto", "network": "", "interface": "", "ports": {},
                # the vllm role's defaults: vllm_cache_dir, and vllm_instance_name (the model's name)
                "cache_dir": "/var/cache/vllm", "instance": model["name"],
                "ray_token_path": "/etc/vllm/deepseek-r1.ray-token",
                # the members' firewalls deny inbound by default (base role's record), as dp and mp layouts need
                "firewall_default_deny": True}
        parts[member] = vllm_cluster.build(args)
    return plan, parts


NUMBERS = ("weights_gib", "per_device_weights_gib", "per_device_need_gib", "available_gib", "devices_used", "max_model_len_limit")


def example_text(name):
    """The plan as docs/multi-node.md shows it (YAML)."""
    import yaml

    plan, parts = example_plan(name)
    head = parts[next(iter(parts))]
    shown = {
        "fits": plan["fits"],
        "packages": plan["packages"],
        "engine_args": plan["engine_args"],
        "numbers": {key: plan["numbers"][key] for key in NUMBERS},
        "cluster": {
            "layout": head["layout"],
            "network": head["network"],
            "members": {member: {"role": part["role"], "engine_args": part["engine_args"], "env": part["env"],
                                 "ray": " ".join(part["ray"]["args"]) if part["ray"] else None}
                        for member, part in parts.items()},
            "rdma": head["rdma"],
            "firewall": [f"{', '.join(rule['ports'])}/{rule['protocol']} from {', '.join(rule['sources'])} ({rule['why']})"
                         for rule in head["firewall"]],
            "notes": head["notes"],
        },
    }
    return yaml.safe_dump(shown, sort_keys=False, width=120)
