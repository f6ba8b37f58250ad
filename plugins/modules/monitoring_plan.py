#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: monitoring_plan
short_description: Decide a node's scrape targets and accelerator exporter, or a Prometheus server's configuration
version_added: "0.2.0"
description:
  - With O(scope=node), decides what one node offers to Prometheus and sets the fact C(kunpeng_monitoring)
    (C(address), C(targets), C(exporter), C(collector), C(server)). The node exporter always; vLLM when the node is in one
    of O(vllm_groups); the gateway's metrics when it is in one of O(gateway_groups); NVIDIA's DCGM exporter or
    Huawei's npu-exporter when the node's backend matches and the operator named the package (neither is in a
    distribution's repository), otherwise the collection's textfile collector for Ascend and NVIDIA nodes.
  - With O(scope=server), turns the C(kunpeng_monitoring) facts of every node into the Prometheus scrape
    configuration (one job per kind of target), the command-line flags (listen port, retention) and how
    Grafana is provided (a named package, a named repository, or provisioning files only).
  - Bad values fail before anything changes, with a message naming the variable.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  scope:
    description: Plan one node (V(node)) or the Prometheus server (V(server)).
    type: str
    choices: [node, server]
    required: true
  address:
    description: Address Prometheus reaches the node at (O(scope=node)).
    type: str
  listen_address:
    description:
      - With O(scope=node), C(monitoring_listen_address) - the address the node exporter binds; empty - the first
        address of O(address) (resolved on the node) that the node holds (O(local_addresses)), never every interface.
      - With O(scope=server), the server node's decided address (its C(kunpeng_monitoring.listen)), which Prometheus binds.
    type: str
    default: ""
  local_addresses:
    description: The node's addresses (C(ansible_facts.all_ipv4_addresses) and C(all_ipv6_addresses)) (O(scope=node)).
    type: list
    elements: str
    default: []
  sources:
    description:
      - C(monitoring_sources) - IP addresses or networks of the Prometheus servers; the node's scrape ports are opened
        to them only (RV(ansible_facts.kunpeng_monitoring.firewall)); empty - no rule.
    type: list
    elements: str
    default: []
  prometheus_sources:
    description: C(monitoring_prometheus_sources) - who may reach Prometheus's port (RV(firewall)); empty - no rule.
    type: list
    elements: str
    default: []
  host_groups:
    description: The node's groups (C(group_names)).
    type: list
    elements: str
    default: []
  backend:
    description:
      - The backend of the node's vLLM plan (C(kunpeng_vllm_plan.backend)) when the node was planned in this play;
        empty otherwise.
    type: str
    default: ""
  accelerators:
    description:
      - The probe (C(kunpeng_accelerators)). Without a plan, the node's accelerators are measured by what the
        probe found (its C(summary.backend)); a plan's forced backend wins over it.
    type: dict
    default: {}
  collector:
    description:
      - V(auto) runs the collection's textfile collector on Ascend and NVIDIA nodes without a vendor exporter,
        V(always) also on nodes where the probe found no accelerator, V(never) nowhere.
    type: str
    choices: [auto, always, never]
    default: auto
  server_groups:
    description: Inventory groups whose members run Prometheus.
    type: list
    elements: str
    default: []
  vllm_groups:
    description: Inventory groups whose members serve vLLM.
    type: list
    elements: str
    default: []
  gateway_groups:
    description: Inventory groups whose members run the gateway.
    type: list
    elements: str
    default: []
  ports:
    description:
      - Ports by target kind (C(node_exporter), C(vllm), C(gateway) - empty when the gateway exports no metrics) and
        by the scrape job of each backend's vendor exporter (C(dcgm), C(npu); the backend registry's C(exporter)).
        Other keys are ignored.
    type: dict
    default: {}
  packages:
    description:
      - Vendor exporter packages the operator supplied, by variable
        (C(monitoring_dcgm_exporter_package), C(monitoring_npu_exporter_package)); empty values mean none.
        Other keys are ignored.
    type: dict
    default: {}
  nodes:
    description: The C(kunpeng_monitoring) facts of every node (O(scope=server)).
    type: list
    elements: dict
    default: []
  scrape_interval:
    description: Prometheus scrape interval.
    type: str
    default: 15s
  evaluation_interval:
    description: Prometheus rule evaluation interval.
    type: str
    default: 15s
  retention_time:
    description: How long Prometheus keeps samples (C(--storage.tsdb.retention.time)).
    type: str
    default: 15d
  retention_size:
    description: Size cap of the TSDB (C(--storage.tsdb.retention.size)); empty for none.
    type: str
    default: ""
  listen_port:
    description: Port Prometheus listens on.
    type: int
    default: 9090
  grafana_package:
    description: Grafana package to install from a repository the node already has; empty for none.
    type: str
    default: ""
  grafana_repository:
    description:
      - Repository that provides C(grafana); empty for none. An apt source line (C(deb URL suite component))
        on Debian and Ubuntu, a base URL elsewhere.
    type: str
    default: ""
  grafana_repository_key_url:
    description: Signing key of O(grafana_repository); empty for none. Decides RV(grafana_repository_key).
    type: str
    default: ""
  grafana_port:
    description: The port of a Grafana the role installs (RV(grafana_settings)).
    type: int
    default: 3000
    version_added: 0.3.0
  prometheus_mode:
    description:
      - C(monitoring_prometheus_mode) (O(scope=server)). V(server) installs, configures and runs Prometheus.
      - V(targets_only), for a site that runs Prometheus already (for example with prometheus.prometheus), plans
        only the files that Prometheus reads (RV(targets)); RV(install) is false, RV(firewall) empty, RV(grafana)
        V(none).
    type: str
    choices: [server, targets_only]
    default: server
    version_added: "0.3.0"
  targets_dir:
    description: C(monitoring_targets_dir) - the absolute directory RV(targets) are written under (O(prometheus_mode=targets_only)).
    type: str
    default: ""
    version_added: "0.3.0"
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.attributes.facts
"""

EXAMPLES = r"""
- name: Decide what this node offers to Prometheus
  kunpeng.vllm.monitoring_plan:
    scope: node
    address: "{{ ansible_host | default(inventory_hostname) }}"
    host_groups: "{{ group_names }}"
    backend: "{{ kunpeng_vllm_plan.backend | default('') }}"
    accelerators: "{{ kunpeng_accelerators | default({}) }}"
    vllm_groups: [vllm]
    ports: {node_exporter: 9100, vllm: 8000, dcgm: 9400, npu: 8082}

- name: Plan the Prometheus server from every node's fact
  kunpeng.vllm.monitoring_plan:
    scope: server
    nodes: "{{ groups['all'] | map('extract', hostvars) | selectattr('kunpeng_monitoring', 'defined')
               | map(attribute='kunpeng_monitoring') | list }}"
    retention_time: 30d
  register: monitoring_server
"""

RETURN = r"""
ansible_facts:
  description: Set with O(scope=node).
  returned: when scope is node
  type: dict
  contains:
    kunpeng_monitoring:
      description: What the node offers to Prometheus.
      type: dict
      contains:
        address:
          description: Address Prometheus reaches the node at.
          type: str
        listen:
          description: The address the node exporter (and Prometheus on a server) binds.
          type: str
        node_exporter_listen:
          description: The node exporter's C(--web.listen-address).
          type: str
        firewall:
          description: C(base_firewall_rules) entries opening the node's scrape ports to O(sources) only.
          type: list
          elements: dict
        targets:
          description: Scrape targets, each with C(job) and C(target) (C(host:port)).
          type: list
          elements: dict
        exporter:
          description:
            - How the accelerators are measured, with C(kind) (C(collector), C(dcgm-exporter), C(npu-exporter),
              C(none)), C(package) (the vendor exporter's package, or empty) and C(job) (its scrape job, or empty).
          type: dict
        collector:
          description: Whether the node runs the collection's textfile collector.
          type: bool
        server:
          description: Whether the node is in one of O(server_groups) and runs Prometheus.
          type: bool
global:
  description: Prometheus's C(global) section.
  returned: when scope is server
  type: dict
  sample: {scrape_interval: 15s, evaluation_interval: 15s}
scrape_configs:
  description: Prometheus's C(scrape_configs), one job per kind of target.
  returned: when scope is server
  type: list
  elements: dict
jobs:
  description: The job names that have targets.
  returned: when scope is server
  type: list
  elements: str
  sample: [vllm, node]
args:
  description: Prometheus command-line flags (listen address, retention).
  returned: when scope is server
  type: list
  elements: str
  sample: ["--web.listen-address=10.0.0.5:9090", "--storage.tsdb.retention.time=15d"]
url:
  description: Where Prometheus answers (its listen address and port), for Grafana's data source and the readiness wait.
  returned: when scope is server
  type: str
  sample: http://10.0.0.5:9090
firewall:
  description: C(base_firewall_rules) entries opening Prometheus's port to O(prometheus_sources) only.
  returned: when scope is server
  type: list
  elements: dict
mode:
  description: O(prometheus_mode).
  returned: when scope is server
  type: str
  version_added: "0.3.0"
install:
  description: Whether Prometheus is installed, configured and run (O(prometheus_mode=server)).
  returned: when scope is server
  type: bool
  version_added: "0.3.0"
targets:
  description:
    - With O(prometheus_mode=targets_only), the files for the site's Prometheus under O(targets_dir); empty otherwise.
    - C(file_sd) (per job C(job), C(path) of C(file_sd/kunpeng-vllm-<job>.yml), C(targets), its target groups),
      C(rules_file) (C(rules/kunpeng-vllm.rules)), C(scrape_configs_file) (C(scrape_configs/kunpeng-vllm.yml)) with
      C(scrape_configs), the jobs reading the C(file_sd) files, C(dir) and C(dirs), the directories to create.
  returned: when scope is server
  type: dict
  version_added: "0.3.0"
grafana:
  description: C(package), C(repository), C(provisioning) (write the provisioning files only), or C(none) (O(prometheus_mode=targets_only)).
  returned: when scope is server
  type: str
grafana_package:
  description: The package to install (O(grafana_package), or C(grafana) from O(grafana_repository)); empty for none.
  returned: when scope is server
  type: str
grafana_install:
  description: Whether a Grafana package is installed and started (RV(grafana) is C(package) or C(repository)).
  returned: when scope is server
  type: bool
grafana_settings:
  description:
    - The environment of a Grafana the role installs (empty otherwise), set in a drop-in of C(grafana-server) with the
      admin password. It binds the monitoring address on O(grafana_port), with anonymous access, sign-up, gravatar
      and usage reporting off.
  returned: when scope is server
  type: dict
  sample: {"GF_SERVER_HTTP_ADDR": "10.0.0.5", "GF_SERVER_HTTP_PORT": "3000", "GF_AUTH_ANONYMOUS_ENABLED": "false"}
  version_added: 0.3.0
grafana_repository_key:
  description: Whether the signing key O(grafana_repository_key_url) of the named repository is added.
  returned: when scope is server
  type: bool
"""

import socket  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.monitoring_plan import (  # noqa: E402
    DEFAULT_PORTS,
    MonitoringPlanError,
    listen_address,
    measured_backend,
    node_plan,
    server_plan,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            scope=dict(type="str", choices=["node", "server"], required=True),
            address=dict(type="str"),
            listen_address=dict(type="str", default=""),
            local_addresses=dict(type="list", elements="str", default=[]),
            sources=dict(type="list", elements="str", default=[]),
            prometheus_sources=dict(type="list", elements="str", default=[]),
            host_groups=dict(type="list", elements="str", default=[]),
            backend=dict(type="str", default=""),
            accelerators=dict(type="dict", default={}),
            collector=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            server_groups=dict(type="list", elements="str", default=[]),
            vllm_groups=dict(type="list", elements="str", default=[]),
            gateway_groups=dict(type="list", elements="str", default=[]),
            ports=dict(type="dict", default={}),
            packages=dict(type="dict", default={}),
            nodes=dict(type="list", elements="dict", default=[]),
            scrape_interval=dict(type="str", default="15s"),
            evaluation_interval=dict(type="str", default="15s"),
            retention_time=dict(type="str", default="15d"),
            retention_size=dict(type="str", default=""),
            listen_port=dict(type="int", default=9090),
            grafana_package=dict(type="str", default=""),
            grafana_repository=dict(type="str", default=""),
            grafana_repository_key_url=dict(type="str", default="", no_log=False),
            grafana_port=dict(type="int", default=3000),
            prometheus_mode=dict(type="str", choices=["server", "targets_only"], default="server"),
            targets_dir=dict(type="str", default=""),
        ),
        required_if=[("scope", "node", ["address"])],
        supports_check_mode=True,
    )
    p = module.params

    def resolve(name):
        try:
            return [info[4][0] for info in socket.getaddrinfo(name.strip("[]"), None, proto=socket.IPPROTO_TCP)]
        except (OSError, UnicodeError):
            return []

    ports = dict(DEFAULT_PORTS, **p["ports"])
    try:
        if p["scope"] == "node":
            backend = measured_backend(p["backend"], p["accelerators"])
            listen = listen_address(p["listen_address"], p["address"], resolve(p["address"]), p["local_addresses"])
            plan = node_plan(p["host_groups"], p["address"], backend, p["vllm_groups"], p["gateway_groups"],
                             ports, p["packages"], p["collector"], p["server_groups"], listen, p["sources"])
            module.exit_json(changed=False, ansible_facts={"kunpeng_monitoring": plan})
        result = server_plan(p["nodes"], p["scrape_interval"], p["evaluation_interval"], p["retention_time"],
                             p["retention_size"], p["listen_port"], p["grafana_package"], p["grafana_repository"],
                             grafana_repository_key_url=p["grafana_repository_key_url"],
                             listen=p["listen_address"] or "127.0.0.1", prometheus_sources=p["prometheus_sources"],
                             mode=p["prometheus_mode"], targets_dir=p["targets_dir"], grafana_port=p["grafana_port"])
    except MonitoringPlanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
