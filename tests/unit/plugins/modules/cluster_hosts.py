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
    return vllm_plan.build_plan(args)


def entry(name, host, net, plan, model=None, rdma=False):
    """One element of the module's ``members`` option."""
    return {"name": name, "accelerators": plan_hosts.facts(host), "plan": plan, "facts": net,
            "model": model or {"name": "smollm2", "source": "controller", "src": "/models/SmolLM2-135M-Instruct"}, "rdma": rdma}
