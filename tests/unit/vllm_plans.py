"""Real kunpeng_vllm_plan and kunpeng_vllm_cluster facts for rendering the vllm role's templates.

One replayed fixture host per backend, planned by the real build_plan (cluster_hosts.node_plan), so the
templates read the plan's ``service`` entry exactly as kunpeng.vllm.vllm_plan returns it.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "modules"))

import cluster_hosts  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster  # noqa: E402

# backend -> (replayed host, vllm_plan arguments)
HOSTS = {
    "cpu": ("cpu-x86", {"python_version": "3.11"}),
    "cuda": ("hgx-h100", {"python_version": "3.12"}),
    "ascend": ("atlas-800i-a2-64g-cann8.3", {"python_version": "3.11"}),
}


def plan(backend, request=None, **params):
    """kunpeng_vllm_plan of the backend's replayed host as the vllm role asks for it (with a request, so the plan
    has its service entry), with ``params`` over its vllm_plan arguments."""
    host, base = HOSTS[backend]
    return cluster_hosts.node_plan(host, **dict(base, request=dict({"install_dir": "/opt/vllm"}, **(request or {})), **params))


def single():
    """kunpeng_vllm_cluster of a host that serves alone."""
    return cluster.disabled()
