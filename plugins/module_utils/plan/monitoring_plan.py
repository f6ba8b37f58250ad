# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Decisions of the ``kunpeng.vllm.monitoring`` role.

Per node (:func:`node_plan`): which scrape targets the node offers (node
exporter; vLLM when it is in a vLLM group; the gateway's metrics when it is
in a gateway group; a vendor exporter) and how its accelerators are measured:
NVIDIA's DCGM exporter or Huawei's npu-exporter when the operator supplies
their package (neither is in a distribution's repository), otherwise the
collection's own textfile collector.

Per Prometheus server (:func:`server_plan`): the scrape configuration from
every node's plan, the command-line flags (retention) and how Grafana is
provided.  Bad values raise :class:`MonitoringPlanError` naming the variable.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import ipaddress
import re
from typing import Any, Dict, List, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends

# The scrape jobs: the engine, the node, the gateway, and each backend's vendor exporter (its registry record).
_EXPORTERS = [backends.field(name, "exporter") for name in backends.NAMES if backends.field(name, "exporter")]
JOBS = ("vllm", "node", "gateway") + tuple(exporter["job"] for exporter in _EXPORTERS)
# The ports a node's targets listen on by default, by target kind (the exporters' by their job).
DEFAULT_PORTS: Dict[str, Any] = dict({"node_exporter": 9100, "vllm": 8000, "gateway": ""},
                                     **{exporter["job"]: exporter["port"] for exporter in _EXPORTERS})

_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_SIZE = re.compile(r"^\d+(B|KB|MB|GB|TB|PB|EB)$")
_HOST = re.compile(r"^[A-Za-z0-9_.:\-\[\]]+$")


class MonitoringPlanError(ValueError):
    """A variable has a value the plan cannot use; the message names it and the fix."""


def _port(name: str, value: Any) -> int:
    if isinstance(value, bool) or not str(value).isdigit() or not 0 < int(value) < 65536:
        raise MonitoringPlanError(f"{name} must be a TCP port (1-65535), got {value!r}")
    return int(value)


def _target(address: str, port: int) -> str:
    host = "[" + address + "]" if ":" in address and not address.startswith("[") else address
    return f"{host}:{port}"


COLLECTOR_MODES = ("auto", "always", "never")


def _ip(value: str) -> Optional[str]:
    try:
        return str(ipaddress.ip_address(str(value).strip("[]")))
    except ValueError:
        return None


def listen_address(wanted: str, address: str, resolved: List[str], local: List[str]) -> str:
    """The address the node exporter (and Prometheus on a server) binds: never every interface.

    ``wanted`` is ``monitoring_listen_address`` (empty: decide); ``address`` is ``monitoring_address``, the
    address Prometheus scrapes; ``resolved`` what the node resolves it to (empty when it is an address);
    ``local`` the node's own addresses (facts ``all_ipv4_addresses`` + ``all_ipv6_addresses``).  The first of
    ``address``'s addresses the node holds is bound, so the exporter listens on the monitoring network only.
    """
    if wanted:
        chosen = _ip(wanted)
        if not chosen:
            raise MonitoringPlanError(f"monitoring_listen_address must be an IP address, got {wanted!r}")
        return chosen
    own = {_ip(item) for item in local or []} - {None}
    candidates = [_ip(address)] if _ip(address) else [_ip(item) for item in resolved or []]
    for candidate in candidates:
        if candidate and (candidate in own or ipaddress.ip_address(candidate).is_loopback):
            return candidate
    raise MonitoringPlanError(
        f"monitoring_address {address!r} ({', '.join(c for c in candidates if c) or 'unresolved'}) is none of this "
        f"node's addresses ({', '.join(sorted(own)) or 'none known'}): set monitoring_address to the node's address "
        "on the monitoring network, or monitoring_listen_address to the address the exporters bind")


def firewall_rule(name: str, ports: List[int], sources: List[str]) -> List[Dict[str, Any]]:
    """A base_firewall_rules entry opening ``ports`` to ``sources`` only (none without a source)."""
    bad = [item for item in sources or [] if not _network(item)]
    if bad:
        raise MonitoringPlanError(f"{name} must hold IP addresses or CIDR networks, got {bad!r}")
    if not sources or not ports:
        return []
    return [{"ports": sorted(set(ports)), "sources": [str(_network(item)) for item in sources], "protocol": "tcp"}]


def _network(value: Any):
    try:
        return ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        return None


def measured_backend(planned: Optional[str], accelerators: Optional[Dict[str, Any]]) -> str:
    """The backend whose accelerators this node's exporter measures.

    The vLLM plan's backend when the node was planned in this play (a forced ``vllm_backend`` wins);
    otherwise what the probe found on the node, since monitoring also covers hosts it does not deploy.
    """
    if planned:
        return planned
    return str(((accelerators or {}).get("summary") or {}).get("backend") or "")


def accelerator_exporter(backend: Optional[str], packages: Dict[str, str], collector: str = "auto") -> Dict[str, Any]:
    """How this node's accelerators are measured.

    ``packages`` maps the package variables of the backend registry's ``exporter`` records to
    the package the operator named (empty: none).  ``collector`` is
    ``monitoring_collector``: ``auto`` runs the textfile collector on Ascend
    and NVIDIA nodes without a vendor exporter, ``always`` also where the
    probe found none (it then reports whichever vendor tool is on PATH),
    ``never`` nowhere.  Returns ``kind`` (``collector``, ``dcgm-exporter``,
    ``npu-exporter`` or ``none``), ``package`` and ``job`` (the scrape job of
    a vendor exporter, else '').
    """
    if collector not in COLLECTOR_MODES:
        raise MonitoringPlanError(f"monitoring_collector must be one of {', '.join(COLLECTOR_MODES)}, got {collector!r}")
    vendor = backends.field(backend, "exporter") if backend else None
    package = (packages.get(vendor["variable"]) or "").strip() if vendor else ""
    if vendor and package:
        return {"kind": vendor["name"], "package": package, "job": vendor["job"]}
    if collector == "always" or (vendor and collector == "auto"):
        return {"kind": "collector", "package": "", "job": ""}
    return {"kind": "none", "package": "", "job": ""}


def node_plan(host_groups: List[str], address: str, backend: Optional[str], vllm_groups: List[str],
              gateway_groups: List[str], ports: Dict[str, Any], packages: Dict[str, str], collector: str = "auto",
              server_groups: Optional[List[str]] = None, listen: str = "127.0.0.1",
              sources: Optional[List[str]] = None) -> Dict[str, Any]:
    """What one node offers to Prometheus (the ``kunpeng_monitoring`` fact).

    ``ports`` holds ``node_exporter``, ``vllm``, ``gateway`` and the exporters' jobs (``dcgm``, ``npu``: their
    ``monitoring_*_port`` variables; a job without one scrapes its backend record's ``exporter.port``);
    an empty ``gateway`` port means the gateway exports no metrics
    (kunpeng.vllm.gateway with ``gateway_metrics_port`` 0), so no gateway target.  ``listen`` is the node's :func:`listen_address`,
    ``sources`` (``monitoring_sources``) the addresses of the Prometheus servers.  Returns ``address``,
    ``listen`` (the address the node exporter binds), ``node_exporter_listen`` (its ``--web.listen-address``),
    ``firewall`` (base_firewall_rules entries: the node's scrape ports from ``sources`` only),
    ``targets`` (``job``, ``target``), ``exporter`` (see
    :func:`accelerator_exporter`), ``collector`` (install the textfile
    collector) and ``server`` (the node is in one of ``server_groups`` and
    runs Prometheus).
    """
    if not address or not _HOST.match(address):
        raise MonitoringPlanError(f"monitoring_address must be a host name or IP address, got {address!r}")
    exporter = accelerator_exporter(backend, packages, collector)
    node_port = _port("monitoring_node_exporter_port", ports["node_exporter"])
    targets = [{"job": "node", "target": _target(address, node_port)}]
    scraped = [node_port]
    if set(host_groups) & set(vllm_groups):
        scraped.append(_port("monitoring_vllm_port", ports["vllm"]))
        targets.append({"job": "vllm", "target": _target(address, scraped[-1])})
    if set(host_groups) & set(gateway_groups) and ports.get("gateway") not in (None, "", 0):
        scraped.append(_port("monitoring_gateway_metrics_port", ports["gateway"]))
        targets.append({"job": "gateway", "target": _target(address, scraped[-1])})
    if exporter["job"]:
        # The operator's monitoring_<job>_exporter_port, else the record's port: a new backend's exporter
        # needs no variable of the monitoring role.
        default = backends.field(backend, "exporter")["port"]
        scraped.append(_port(f"monitoring_{exporter['job']}_exporter_port", ports.get(exporter["job"], default)))
        targets.append({"job": exporter["job"], "target": _target(address, scraped[-1])})
    return {
        "address": address,
        "listen": listen,
        "node_exporter_listen": _target(listen, node_port),
        "firewall": firewall_rule("monitoring_sources", scraped, sources or []),
        "targets": targets,
        "exporter": exporter,
        "collector": exporter["kind"] == "collector",
        "server": bool(set(host_groups) & set(server_groups or [])),
    }


def scrape_configs(nodes: List[Dict[str, Any]], scrape_interval: str, vllm_metrics_path: str = "/metrics",
                   gateway_metrics_path: str = "/metrics") -> List[Dict[str, Any]]:
    """One scrape job per kind of target, targets sorted, jobs without targets left out.

    The ``instance`` label keeps Prometheus's default (``host:port``); the
    ``node`` label holds the node's address so a vLLM instance and its host's
    accelerators can be joined in a query.
    """
    by_job: Dict[str, Dict[str, str]] = dict((job, {}) for job in JOBS)
    for node in nodes:
        for target in node.get("targets", []):
            if target["job"] not in by_job:
                raise MonitoringPlanError(f"unknown scrape job {target['job']!r} in a node's kunpeng_monitoring fact")
            by_job[target["job"]][target["target"]] = node["address"]
    paths = {"vllm": vllm_metrics_path, "gateway": gateway_metrics_path}
    configs = []
    for job in JOBS:
        if not by_job[job]:
            continue
        static = [{"targets": [target], "labels": {"node": by_job[job][target]}} for target in sorted(by_job[job])]
        configs.append({
            "job_name": job,
            "scrape_interval": scrape_interval,
            "metrics_path": paths.get(job, "/metrics"),
            "static_configs": static,
        })
    return configs


def grafana_mode(package: str, repository: str) -> str:
    """``package`` (a package name or file the operator names), ``repository``
    (install ``grafana`` from the repository line they give) or
    ``provisioning`` (only write the dashboards and provisioning files:
    Grafana is in no distribution's repository)."""
    if (package or "").strip():
        return "package"
    if (repository or "").strip():
        return "repository"
    return "provisioning"


# server: install, configure and run Prometheus (and Grafana's files) on the server hosts.  targets_only: a site
# that runs Prometheus already (for example with prometheus.prometheus) gets the file_sd target files, a
# scrape_configs file naming them, and the rules, written under monitoring_targets_dir; nothing is installed or run.
PROMETHEUS_MODES = ("server", "targets_only")
# Under monitoring_targets_dir: prometheus.prometheus's layout below its prometheus_config_dir (file_sd/, rules/
# with the *.rules its rule_files reads), so the default /etc/prometheus needs no copy step.
TARGETS_FILE = "file_sd/kunpeng-vllm-{job}.yml"
TARGETS_RULES_FILE = "rules/kunpeng-vllm.rules"
TARGETS_SCRAPE_CONFIGS_FILE = "scrape_configs/kunpeng-vllm.yml"


def targets_only(configs: List[Dict[str, Any]], directory: str) -> Dict[str, Any]:
    """The files of ``targets_only`` mode under ``directory``: ``file_sd`` (one file per job: its path and its
    target groups, Prometheus's file_sd format), ``rules_file``, and ``scrape_configs_file`` with
    ``scrape_configs``, the jobs reading those files (same names, intervals and metrics paths as server mode, so
    the rules' ``job`` matchers hold)."""
    path = str(directory or "").strip()
    if not path.startswith("/") or "\n" in path:
        raise MonitoringPlanError("monitoring_targets_dir must be an absolute directory path on the Prometheus host "
                                  f"(monitoring_prometheus_mode=targets_only), got {directory!r}")
    base = path.rstrip("/") or "/"
    prefix = "" if base == "/" else base

    def join(name: str) -> str:
        return f"{prefix}/{name}"

    file_sd = [{"job": c["job_name"], "path": join(TARGETS_FILE.format(job=c["job_name"])),
                "targets": c["static_configs"]} for c in configs]
    scrape = [{"job_name": c["job_name"], "scrape_interval": c["scrape_interval"], "metrics_path": c["metrics_path"],
               "file_sd_configs": [{"files": [f["path"]]}]} for c, f in zip(configs, file_sd)]
    dirs = {f["path"].rsplit("/", 1)[0] for f in file_sd}
    dirs.update(join(name).rsplit("/", 1)[0] for name in (TARGETS_RULES_FILE, TARGETS_SCRAPE_CONFIGS_FILE))
    return {"dir": base, "file_sd": file_sd, "rules_file": join(TARGETS_RULES_FILE),
            "scrape_configs_file": join(TARGETS_SCRAPE_CONFIGS_FILE), "scrape_configs": scrape,
            "dirs": sorted(dirs)}


#: Grafana's settings the role sets (environment overrides, GF_<SECTION>_<KEY>, in a systemd drop-in of
#: grafana-server): a packaged Grafana otherwise listens on every interface on 3000, with admin/admin until someone
#: logs in, and reports usage to grafana.com (Grafana's defaults.ini, [server], [security], [auth.anonymous],
#: [users], [analytics]).  The admin password goes in the same 0600 file (the role's, never in this plan).
GRAFANA_FIXED = {
    "GF_AUTH_ANONYMOUS_ENABLED": "false",
    "GF_USERS_ALLOW_SIGN_UP": "false",
    "GF_SECURITY_DISABLE_GRAVATAR": "true",
    "GF_ANALYTICS_REPORTING_ENABLED": "false",
    "GF_ANALYTICS_CHECK_FOR_UPDATES": "false",
}


def grafana_settings(listen: str, port: Any) -> Dict[str, str]:
    """Grafana's environment: it binds the monitoring address (``listen``, as Prometheus does) on ``port``, with no
    anonymous access, sign-up, gravatar or usage reporting (:data:`GRAFANA_FIXED`)."""
    return dict(GRAFANA_FIXED, GF_SERVER_HTTP_ADDR=str(listen), GF_SERVER_HTTP_PORT=str(_port("monitoring_grafana_port", port)))


def server_plan(nodes: List[Dict[str, Any]], scrape_interval: str, evaluation_interval: str, retention_time: str,
                retention_size: str, listen_port: Any, grafana_package: str = "", grafana_repository: str = "",
                vllm_metrics_path: str = "/metrics", gateway_metrics_path: str = "/metrics",
                grafana_repository_key_url: str = "", listen: str = "127.0.0.1",
                prometheus_sources: Optional[List[str]] = None, mode: str = "server",
                targets_dir: str = "", grafana_port: Any = 3000) -> Dict[str, Any]:
    """The Prometheus server's configuration: ``scrape_configs``, ``global``, ``args`` (command-line flags),
    ``grafana`` (see :func:`grafana_mode`), ``grafana_package`` (what to install: the named package, ``grafana``
    from the named repository, or ''), ``grafana_install`` (a Grafana package is installed and started),
    ``grafana_repository_key`` (the named repository's signing key is added) and ``jobs`` (the job names with
    targets).  ``listen`` is the server node's :func:`listen_address`: Prometheus binds it, not every interface;
    ``url`` is where Grafana and the role reach it; ``firewall`` opens its port to ``prometheus_sources`` (``monitoring_prometheus_sources``) only.

    ``mode`` (``monitoring_prometheus_mode``) ``targets_only`` installs and opens nothing: ``install`` is false,
    ``firewall`` empty, Grafana left alone, and ``targets`` holds the files of :func:`targets_only` under
    ``targets_dir``; in ``server`` mode ``targets`` is empty.  ``grafana_settings`` is the environment of a Grafana the
    role installs (:func:`grafana_settings`; empty otherwise)."""
    if mode not in PROMETHEUS_MODES:
        raise MonitoringPlanError(f"monitoring_prometheus_mode must be one of {', '.join(PROMETHEUS_MODES)}, got {mode!r}")
    for name, value in (("monitoring_scrape_interval", scrape_interval),
                        ("monitoring_evaluation_interval", evaluation_interval),
                        ("monitoring_retention_time", retention_time)):
        if not _DURATION.match(str(value)):
            raise MonitoringPlanError(f"{name} must be a Prometheus duration such as 15s, 5m or 15d, got {value!r}")
    if retention_size and not _SIZE.match(str(retention_size)):
        raise MonitoringPlanError(f"monitoring_retention_size must be empty or a size such as 50GB, got {retention_size!r}")
    if not nodes:
        raise MonitoringPlanError("no node has a kunpeng_monitoring fact: run the monitoring role on the nodes "
                                  "(playbooks/monitoring.yml does) before the Prometheus server")
    port = _port("monitoring_prometheus_port", listen_port)
    args = [f"--web.listen-address={_target(listen, port)}", f"--storage.tsdb.retention.time={retention_time}"]
    if retention_size:
        args.append(f"--storage.tsdb.retention.size={retention_size}")
    configs = scrape_configs(nodes, scrape_interval, vllm_metrics_path, gateway_metrics_path)
    install = mode == "server"
    targets = {} if install else targets_only(configs, targets_dir)
    grafana = grafana_mode(grafana_package, grafana_repository) if install else "none"
    return {
        "mode": mode,
        "install": install,
        "targets": targets,
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
        "scrape_configs": configs,
        "jobs": [config["job_name"] for config in configs],
        "args": args,
        "url": f"http://{_target(listen, port)}",
        "firewall": firewall_rule("monitoring_prometheus_sources", [port], prometheus_sources or []) if install else [],
        "grafana": grafana,
        "grafana_package": {"package": (grafana_package or "").strip(), "repository": "grafana"}.get(grafana, ""),
        "grafana_install": grafana in ("package", "repository"),
        "grafana_settings": grafana_settings(listen, grafana_port) if grafana in ("package", "repository") else {},
        "grafana_repository_key": grafana == "repository" and bool((grafana_repository_key_url or "").strip()),
    }
