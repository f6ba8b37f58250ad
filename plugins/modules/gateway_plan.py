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
        (0-100, the share of the pool's requests they get between them).
      - A model name routes to one pool only.
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
        C(gateway_backend_port) and C(vllm_port) (null when not set). The address is the first one set of
        C(gateway_backend_address), C(ansible_host) and the inventory name; the port the first one set of
        C(gateway_backend_port), C(vllm_port) and 8000 (the vllm role's default).
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
        C(gateway_retries), C(gateway_maxconn), C(gateway_max_body_kib), C(gateway_tls_certificate),
        C(gateway_tls_key)). Checked; only what the listener needs is returned (RV(bufsize), RV(tls)).
    type: dict
    default: {}
  api_keys:
    description:
      - C(gateway_api_keys), the keys the gateway accepts (checked for form, never returned or logged). Empty
        or unset, the gateway passes the Authorization header to the backends.
    type: list
    elements: str
  haproxy_version:
    description:
      - Output of C(haproxy -v) on the gateway host. When given, the module fails unless it is HAProxy 2.5 or later
        (the version the configuration needs), naming the fix; Ubuntu 22.04 and EL 9 ship 2.4.
    type: str
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
      HAProxy server name, which the upgrade playbook drains), address, port, weight and whether it is a
      canary host; C(canary_percent) is the share HAProxy's weights give the canary hosts (null without a
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
        - {name: npu1, address: 10.0.0.11, port: 8000, weight: 9, canary: false}
        - {name: npu3, address: 10.0.0.13, port: 8000, weight: 2, canary: true}
routes:
  description: Model name -> HAProxy backend, in pool order.
  returned: always
  type: list
  elements: dict
  sample: [{model: qwen3-32b, backend: pool_npu}]
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
api_keys:
  description: Whether the gateway checks API keys itself (a non-empty C(gateway_api_keys)); the keys are not returned.
  returned: always
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.gateway import (  # noqa: E402
    GatewayError, gateway_plan, haproxy_problem, listener_settings, validate_pools, validate_settings)


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
            hosts = sorted({h for v in validate_pools(p["pools"], p["groups"]) for h in v[1]})
            plan = {"hosts": hosts, "backends": [], "routes": [], "default_backend": None, "no_model_backend": None}
            # The full plan checks gateway_default_pool; a wrong one fails here already.
            if p["default_pool"] and p["default_pool"] not in [pool.get("name") for pool in p["pools"]]:
                gateway_plan(p["pools"], p["groups"], {}, p["default_pool"])
        else:
            plan = gateway_plan(p["pools"], p["groups"], p["host_vars"], p["default_pool"])
    except GatewayError as exc:
        module.fail_json(msg="gateway: " + str(exc))
    plan.update(listener_settings(settings))
    module.exit_json(changed=False, **plan)


if __name__ == "__main__":
    main()
