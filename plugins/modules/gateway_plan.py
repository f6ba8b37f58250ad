#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: gateway_plan
short_description: Plan the HAProxy gateway in front of vLLM instances (pools, weights, model routes)
version_added: "0.2.0"
description:
  - Decides, from the kunpeng.vllm.gateway role's variables and the inventory, which vLLM instances form
    which pool, the per-server weights that give a pool's canary hosts their share of the requests, and
    which pool serves which OpenAI C(model) name. The role's haproxy.cfg template only writes the result.
  - Checks the gateway's settings (ports, timeouts, health-check counts, API keys, TLS files) and fails,
    before anything changes, with a message that names the variable and the fix.
  - Without O(host_vars) it validates the pools and returns RV(hosts), the backends whose inventory
    variables the role then reads for the full plan.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  pools:
    description:
      - C(gateway_pools). Each pool is a mapping with C(name) (short name, it names the HAProxy backend
        C(pool_<name>)), C(group) (the inventory group whose hosts serve it), C(models) (the OpenAI model
        names routed to it), and optionally C(canary_hosts) (hosts of the group) with C(canary_percent)
        (0-100, the share of the pool's requests they get between them), C(kind) (C(cpu) or C(accelerator)),
        C(maxconn) (requests one server of the pool takes at once; the rest wait in HAProxy's queue) and
        C(standby) (another pool with the same models whose servers take over, as HAProxy backup servers, when
        every server of this pool is down; one level, no cycles, no shared hosts).
      - A model name routes to one pool, or to one C(cpu) and one C(accelerator) pool (hybrid serving, both with
        C(maxconn)); a pool named as a standby is not routed to on its own.
    type: list
    elements: dict
    required: true
  groups:
    description:
      - The inventory's groups (the C(groups) magic variable).
    type: dict
    required: true
  host_vars:
    description:
      - Per backend host, its raw inventory variables C(gateway_backend_address), C(ansible_host),
        C(gateway_backend_port), C(vllm_port), C(vllm_model_name) and C(vllm_engine_args) (null when not set). The
        names a host serves are C(served_model_name) of its C(vllm_engine_args), else its C(vllm_model_name); the hosts
        of a model served by several pools, standbys included, must all serve it. The address is the first one set of
        C(gateway_backend_address), C(ansible_host) and the inventory name; the port the first one set of
        C(gateway_backend_port), C(vllm_port) and 8000 (the vllm role's default).
      - For the key check also C(vllm_host), C(vllm_allow_unauthenticated), C(host) of C(vllm_engine_args), and
        C(vllm_api_key_set), whether C(vllm_api_key) is set (a boolean; never the key). With an empty
        O(api_keys) and a C(gateway_bind_address) in O(settings) that is not loopback, the module fails when a
        backend has no key of its own by the vllm role's decision (C(vllm_host) on loopback without
        C(vllm_api_key), or C(vllm_allow_unauthenticated)); a backend off loopback without C(vllm_api_key)
        gets a generated key and passes.
    type: dict
  default_pool:
    description:
      - C(gateway_default_pool). Pool that gets requests whose model no pool serves; empty refuses them with
        a 404 C(model_not_found) error. Requests without a model (C(GET /v1/models)) go to this pool, or to
        the first pool when it is empty.
    type: str
    default: ""
  settings:
    description:
      - The gateway's scalar settings, variable name -> value (C(gateway_port), C(gateway_tls_port),
        C(gateway_timeout_*), C(gateway_health_interval), C(gateway_health_rise), C(gateway_health_fall),
        C(gateway_retries), C(gateway_maxconn), C(gateway_max_body_kib), C(gateway_metrics_port), C(gateway_tls_certificate),
        C(gateway_tls_key), C(gateway_bind_address)). Checked; only what the listener needs is returned (RV(bufsize), RV(tls)).
    type: dict
    default: {}
  api_keys:
    description:
      - C(gateway_api_keys), the keys the gateway accepts (checked for form, never returned or logged). Empty
        or unset, the gateway passes the Authorization header to the backends unchecked, which the full plan
        accepts only when every backend has a key of its own or the gateway binds on loopback only (see
        O(host_vars)).
    type: list
    elements: str
  haproxy_version:
    description:
      - Output of C(haproxy -v) on the gateway host. When given, the module fails unless it is HAProxy 2.5 or later
        (the version the configuration needs), naming the fix; Ubuntu 22.04 and EL 9 ship 2.4.
    type: str
  dispatch:
    description:
      - The dispatch policy of hybrid models, keys C(size_tokens) (a request of fewer estimated tokens is short;
        default 512), C(load) (share of the CPU pool's capacity below which it takes short requests; default 0.7),
        C(bytes_per_token) (request body bytes counted as one prompt token; default 4) and C(retry_after) (seconds
        in the C(Retry-After) header of the gateway's 503; default 10).
    type: dict
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Plan the gateway
  kunpeng.vllm.gateway_plan:
    pools:
      - name: cpu
        group: vllm_cpu
        models: [smollm2-light]
      - name: npu
        group: vllm_npu
        models: [qwen3-32b]
        canary_hosts: [npu3]
        canary_percent: 10
    groups: "{{ groups }}"
    host_vars: "{{ __gateway_host_vars }}"
  register: gateway_plan
"""

RETURN = r"""
hosts:
  description: Every backend host of every pool, sorted.
  returned: always
  type: list
  elements: str
  sample: [npu1, npu2, npu3]
backends:
  description:
    - One HAProxy backend per pool, in C(gateway_pools) order. C(servers) carry the inventory name (the
      HAProxy server name, which the upgrade playbook drains), address, port, weight, whether it is a
      canary host, its C(maxconn) (null for unlimited) and whether it is a C(backup) (a standby pool's server);
      C(kind) and C(standby) are the pool's; C(canary_percent) is the share HAProxy's weights give the canary hosts (null without a
      canary).
    - Empty when O(host_vars) is not given.
  returned: always
  type: list
  elements: dict
  sample:
    - name: pool_npu
      pool: npu
      models: [qwen3-32b]
      canary_percent: 10.0
      servers:
        - {name: npu1, address: 10.0.0.11, port: 8000, weight: 9, canary: false, maxconn: null, backup: false}
        - {name: npu3, address: 10.0.0.13, port: 8000, weight: 2, canary: true, maxconn: null, backup: false}
      kind: null
      standby: null
models:
  description: Every routed model name once, in pool order.
  returned: always
  type: list
  elements: str
  sample: [qwen3-32b]
routes:
  description:
    - The frontend's C(use_backend) rules in order, each with its model, backend and HAProxy conditions (C(when),
      all of which must hold). A hybrid model has one rule per number of usable CPU servers (short request and the
      CPU pool below its load limit) before its accelerator rule.
  returned: always
  type: list
  elements: dict
  sample: [{model: qwen3-32b, backend: pool_npu, when: ["{ var(txn.kv_model) -m str qwen3-32b }"]}]
hybrid:
  description: Whether a model is served by a cpu and an accelerator pool (the frontend then estimates request sizes).
  returned: always
  type: bool
  sample: false
dispatch:
  description: The dispatch policy with its defaults filled in.
  returned: always
  type: dict
  sample: {size_tokens: 512, load: 0.7, bytes_per_token: 4, retry_after: 10}
default_backend:
  description: Backend for a model no pool serves; null when such requests get a 404.
  returned: always
  type: str
  sample: null
no_model_backend:
  description: Backend for requests without a model field (C(GET /v1/models)); null without O(host_vars).
  returned: always
  type: str
  sample: pool_cpu
bufsize:
  description: HAProxy's C(tune.bufsize) in bytes, C(gateway_max_body_kib) (default 64) plus 16 KiB for headers.
  returned: always
  type: int
  sample: 81920
tls:
  description: Whether the gateway terminates TLS (both C(gateway_tls_certificate) and C(gateway_tls_key) set).
  returned: always
  type: bool
  sample: false
metrics_port:
  description: Port of HAProxy's Prometheus exporter (C(gateway_metrics_port)); null when there is none.
  returned: always
  type: int
  sample: null
api_keys:
  description: Whether the gateway checks API keys itself (a non-empty C(gateway_api_keys)); the keys are not returned.
  returned: always
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.gateway import (  # noqa: E402
    GatewayError, dispatch_policy, gateway_plan, haproxy_problem, keyless_backend_problem, listener_settings,
    serving_sets, validate_pools, validate_settings)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pools=dict(type="list", elements="dict", required=True),
            groups=dict(type="dict", required=True),
            host_vars=dict(type="dict"),
            default_pool=dict(type="str", default=""),
            settings=dict(type="dict", default={}),
            api_keys=dict(type="list", elements="str", no_log=True),
            haproxy_version=dict(type="str"),
            dispatch=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    settings = dict(p["settings"])
    if p["api_keys"] is not None:
        settings["gateway_api_keys"] = p["api_keys"]
    problems = validate_settings(settings)
    if p["haproxy_version"] is not None:
        problems += [problem for problem in [haproxy_problem(p["haproxy_version"])] if problem]
    if problems:
        module.fail_json(msg="gateway: " + " ".join(problems))
    try:
        if p["host_vars"] is None:
            validated = validate_pools(p["pools"], p["groups"])
            serving_sets(validated)
            hosts = sorted({h for v in validated for h in v["hosts"]})
            plan = {"hosts": hosts, "backends": [], "models": [], "routes": [], "hybrid": False,
                    "dispatch": dispatch_policy(p["dispatch"]), "default_backend": None, "no_model_backend": None}
            # The full plan checks gateway_default_pool; a wrong one fails here already.
            if p["default_pool"] and p["default_pool"] not in [pool.get("name") for pool in p["pools"]]:
                gateway_plan(p["pools"], p["groups"], {}, p["default_pool"])
        else:
            plan = gateway_plan(p["pools"], p["groups"], p["host_vars"], p["default_pool"], p["dispatch"])
            problem = keyless_backend_problem(plan["hosts"], p["host_vars"], settings)
            if problem:
                raise GatewayError(problem)
    except GatewayError as exc:
        module.fail_json(msg="gateway: " + str(exc))
    plan.update(listener_settings(settings))
    module.exit_json(changed=False, **plan)


if __name__ == "__main__":
    main()
