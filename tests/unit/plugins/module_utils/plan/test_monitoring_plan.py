"""Decisions of the monitoring role: targets, exporter, scrape configuration, flags, Grafana."""

import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import monitoring_plan as mp

PORTS = {"node_exporter": 9100, "vllm": 8000, "gateway": 8405, "dcgm": 9400, "npu": 8082}
DCGM = {"monitoring_dcgm_exporter_package": "datacenter-gpu-manager-exporter"}
NPU = {"monitoring_npu_exporter_package": "npu-exporter"}


@pytest.mark.parametrize("backend, packages, collector, expected", [
    ("cuda", {}, "auto", {"kind": "collector", "package": "", "job": ""}),
    ("ascend", {}, "auto", {"kind": "collector", "package": "", "job": ""}),
    ("cpu", {}, "auto", {"kind": "none", "package": "", "job": ""}),
    ("", {}, "auto", {"kind": "none", "package": "", "job": ""}),
    ("cpu", {}, "always", {"kind": "collector", "package": "", "job": ""}),
    ("cuda", {}, "never", {"kind": "none", "package": "", "job": ""}),
    ("cuda", DCGM, "auto", {"kind": "dcgm-exporter", "package": "datacenter-gpu-manager-exporter", "job": "dcgm"}),
    ("ascend", NPU, "auto", {"kind": "npu-exporter", "package": "npu-exporter", "job": "npu"}),
    # a vendor package only counts on that vendor's nodes
    ("ascend", DCGM, "auto", {"kind": "collector", "package": "", "job": ""}),
    ("cpu", DCGM, "always", {"kind": "collector", "package": "", "job": ""}),
    ("cuda", {"monitoring_dcgm_exporter_package": "  "}, "auto", {"kind": "collector", "package": "", "job": ""}),
])
def test_accelerator_exporter(backend, packages, collector, expected):
    assert mp.accelerator_exporter(backend, packages, collector) == expected


def node(groups, address="n1", backend="cpu", packages=None, collector="auto"):
    return mp.node_plan(groups, address, backend, ["vllm"], ["gateway"], PORTS, packages or {}, collector, ["monitoring"])


@pytest.mark.parametrize("groups, backend, packages, targets, server", [
    ([], "cpu", None, [("node", "n1:9100")], False),
    (["vllm"], "cpu", None, [("node", "n1:9100"), ("vllm", "n1:8000")], False),
    (["vllm", "gateway"], "cpu", None, [("node", "n1:9100"), ("vllm", "n1:8000"), ("gateway", "n1:8405")], False),
    (["vllm"], "cuda", DCGM, [("node", "n1:9100"), ("vllm", "n1:8000"), ("dcgm", "n1:9400")], False),
    (["vllm"], "ascend", NPU, [("node", "n1:9100"), ("vllm", "n1:8000"), ("npu", "n1:8082")], False),
    (["monitoring"], "cpu", None, [("node", "n1:9100")], True),
])
def test_node_targets(groups, backend, packages, targets, server):
    plan = node(groups, backend=backend, packages=packages)
    assert [(t["job"], t["target"]) for t in plan["targets"]] == targets
    assert plan["server"] is server


def test_ipv6_address_is_bracketed():
    assert node(["vllm"], address="2001:db8::1")["targets"][1]["target"] == "[2001:db8::1]:8000"


@pytest.mark.parametrize("kwargs, message", [
    ({"address": ""}, "monitoring_address must be a host name or IP address"),
    ({"address": "a b"}, "monitoring_address must be a host name or IP address"),
    ({"ports": dict(PORTS, vllm="80x")}, "monitoring_vllm_port must be a TCP port (1-65535), got '80x'"),
    ({"ports": dict(PORTS, node_exporter=70000)}, "monitoring_node_exporter_port must be a TCP port"),
    ({"collector": "sometimes"}, "monitoring_collector must be one of auto, always, never"),
])
def test_node_plan_refuses_bad_values(kwargs, message):
    args = dict(host_groups=["vllm"], address="n1", backend="cpu", vllm_groups=["vllm"], gateway_groups=[],
                ports=PORTS, packages={}, collector="auto")
    args.update(kwargs)
    with pytest.raises(mp.MonitoringPlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mp.node_plan(**args)


def test_server_plan_groups_targets_by_job_and_labels_the_node():
    nodes = [node(["vllm"], address="b"), node(["vllm"], address="a"), node(["monitoring"], address="p")]
    plan = mp.server_plan(nodes, "2s", "2s", "1d", "", 9090)
    assert plan["jobs"] == ["vllm", "node"]
    vllm, node_job = plan["scrape_configs"]
    assert vllm == {"job_name": "vllm", "scrape_interval": "2s", "metrics_path": "/metrics", "static_configs": [
        {"targets": ["a:8000"], "labels": {"node": "a"}}, {"targets": ["b:8000"], "labels": {"node": "b"}}]}
    assert [c["targets"] for c in node_job["static_configs"]] == [["a:9100"], ["b:9100"], ["p:9100"]]
    assert plan["global"] == {"scrape_interval": "2s", "evaluation_interval": "2s"}
    assert plan["args"] == ["--web.listen-address=127.0.0.1:9090", "--storage.tsdb.retention.time=1d"]
    assert plan["firewall"] == []
    assert plan["grafana"] == "provisioning"


def test_same_target_from_two_facts_is_scraped_once():
    nodes = [node(["vllm"]), node(["vllm"])]
    assert mp.server_plan(nodes, "15s", "15s", "15d", "", 9090)["scrape_configs"][0]["static_configs"] == [
        {"targets": ["n1:8000"], "labels": {"node": "n1"}}]


def test_retention_size_flag():
    plan = mp.server_plan([node([])], "15s", "15s", "30d", "50GB", 9091)
    assert plan["args"] == ["--web.listen-address=127.0.0.1:9091", "--storage.tsdb.retention.time=30d",
                            "--storage.tsdb.retention.size=50GB"]


@pytest.mark.parametrize("args, message", [
    (("15", "15s", "15d", ""), "monitoring_scrape_interval must be a Prometheus duration"),
    (("15s", "1 m", "15d", ""), "monitoring_evaluation_interval must be a Prometheus duration"),
    (("15s", "15s", "15 days", ""), "monitoring_retention_time must be a Prometheus duration"),
    (("15s", "15s", "15d", "50G"), "monitoring_retention_size must be empty or a size such as 50GB"),
])
def test_server_plan_refuses_bad_values(args, message):
    with pytest.raises(mp.MonitoringPlanError, match=message):
        mp.server_plan([node([])], *args, 9090)


def test_server_plan_without_nodes_says_what_to_run():
    with pytest.raises(mp.MonitoringPlanError, match="no node has a kunpeng_monitoring fact"):
        mp.server_plan([], "15s", "15s", "15d", "", 9090)


def test_unknown_job_in_a_fact_is_refused():
    bad = dict(node([]), targets=[{"job": "redis", "target": "n1:6379"}])
    with pytest.raises(mp.MonitoringPlanError, match="unknown scrape job 'redis'"):
        mp.server_plan([bad], "15s", "15s", "15d", "", 9090)


@pytest.mark.parametrize("package, repository, mode", [
    ("", "", "provisioning"), ("grafana", "", "package"), ("", "deb https://apt.example/ stable main", "repository"),
    ("grafana-enterprise", "deb https://apt.example/ stable main", "package"),
])
def test_grafana_mode(package, repository, mode):
    assert mp.grafana_mode(package, repository) == mode


@pytest.mark.parametrize("package, repository, install", [
    ("", "", ""), ("grafana-enterprise", "", "grafana-enterprise"),
    ("", "deb https://apt.example/ stable main", "grafana"),
])
def test_grafana_package_to_install(package, repository, install):
    assert mp.server_plan([node([])], "15s", "15s", "15d", "", 9090, package, repository)["grafana_package"] == install


@pytest.mark.parametrize("planned, probed, expected", [
    ("cpu", "cuda", "cpu"),        # vllm_backend forced to cpu on a GPU host: the plan wins
    ("", "cuda", "cuda"),          # a host this play did not plan: what the probe found
    ("", None, ""),                # neither
    ("ascend", "ascend", "ascend"),
])
def test_measured_backend_prefers_the_plan(planned, probed, expected):
    accelerators = {"summary": {"backend": probed}} if probed else {}
    assert mp.measured_backend(planned, accelerators) == expected


REPO = "deb https://apt.example/ stable main"
KEY = "https://apt.example/gpg.key"


@pytest.mark.parametrize("package, repository, key, install, add_key", [
    ("", "", "", False, False),
    ("", "", KEY, False, False),
    ("grafana-enterprise", "", KEY, True, False),
    ("", REPO, "", True, False),
    ("", REPO, KEY, True, True),
    ("", REPO, "  ", True, False),
    # A named package wins over the repository: no repository, no key.
    ("grafana-enterprise", REPO, KEY, True, False),
])
def test_grafana_steps(package, repository, key, install, add_key):
    plan = mp.server_plan([node([])], "15s", "15s", "15d", "", 9090, package, repository, grafana_repository_key_url=key)
    assert plan["grafana_install"] is install
    assert plan["grafana_repository_key"] is add_key


@pytest.mark.parametrize("backend", ["cpu", "cuda", "ascend", None])
@pytest.mark.parametrize("packages", [{}, {"monitoring_dcgm_exporter_package": "datacenter-gpu-manager-exporter"},
                                      {"monitoring_npu_exporter_package": "npu-exporter"}])
@pytest.mark.parametrize("collector", ["auto", "always", "never"])
def test_a_scrape_job_means_a_vendor_package_to_install(backend, packages, collector):
    """The role installs the vendor exporter when exporter.job is set: exactly when a package was named for it."""
    exporter = mp.accelerator_exporter(backend, packages, collector)
    assert (exporter["job"] != "") == (exporter["package"] != "")


@pytest.mark.parametrize("wanted, address, resolved, local, listen", [
    # An address the node holds: bound as it is.
    ("", "10.0.0.5", [], ["10.0.0.5", "172.17.0.2"], "10.0.0.5"),
    ("", "2001:db8::5", [], ["10.0.0.5", "2001:db8::5"], "2001:db8::5"),
    # A name: the first of its addresses the node holds (the monitoring network's).
    ("", "node1.example", ["192.0.2.9", "10.0.0.5"], ["10.0.0.5"], "10.0.0.5"),
    ("", "localhost", ["::1", "127.0.0.1"], [], "::1"),
    # monitoring_listen_address wins.
    ("127.0.0.1", "10.0.0.5", [], ["10.0.0.5"], "127.0.0.1"),
])
def test_listen_address(wanted, address, resolved, local, listen):
    assert mp.listen_address(wanted, address, resolved, local) == listen


@pytest.mark.parametrize("wanted, address, resolved, local, message", [
    # Never every interface: an address the node does not hold (NAT, a typo) is refused, not widened to 0.0.0.0.
    ("", "203.0.113.7", [], ["10.0.0.5"], "none of this node's addresses"),
    ("", "node1.example", [], ["10.0.0.5"], "unresolved"),
    ("0.0.0.0x", "10.0.0.5", [], ["10.0.0.5"], "monitoring_listen_address must be an IP address"),
])
def test_listen_address_refuses(wanted, address, resolved, local, message):
    with pytest.raises(mp.MonitoringPlanError, match=message):
        mp.listen_address(wanted, address, resolved, local)


def test_node_binds_the_listen_address_and_opens_scrape_ports_to_the_sources_only():
    plan = mp.node_plan(["vllm"], "n1", "cuda", ["vllm"], [], PORTS, DCGM, "auto", [], "10.0.0.5", ["10.0.0.9", "10.1.0.0/16"])
    assert plan["listen"] == "10.0.0.5" and plan["node_exporter_listen"] == "10.0.0.5:9100"
    assert plan["firewall"] == [{"ports": [8000, 9100, 9400], "sources": ["10.0.0.9/32", "10.1.0.0/16"], "protocol": "tcp"}]
    assert mp.node_plan(["vllm"], "n1", "cpu", ["vllm"], [], PORTS, {}, "auto", [], "::1")["node_exporter_listen"] == "[::1]:9100"
    # No source, no rule: an active firewall then keeps the ports to the node itself.
    assert node(["vllm"])["firewall"] == []
    with pytest.raises(mp.MonitoringPlanError, match="monitoring_sources must hold IP addresses"):
        mp.node_plan([], "n1", "cpu", [], [], PORTS, {}, "auto", [], "10.0.0.5", ["prom.example"])


def test_gateway_target_only_when_its_port_is_given():
    ports = dict(PORTS, gateway="")
    assert [t["job"] for t in mp.node_plan(["gateway"], "n1", "cpu", [], ["gateway"], ports, {})["targets"]] == ["node"]


def test_prometheus_binds_the_server_address_and_opens_to_its_sources_only():
    plan = mp.server_plan([node([])], "15s", "15s", "15d", "", 9090, listen="10.0.0.9", prometheus_sources=["10.0.0.0/24"])
    assert plan["args"][0] == "--web.listen-address=10.0.0.9:9090"
    assert plan["url"] == "http://10.0.0.9:9090"
    assert plan["firewall"] == [{"ports": [9090], "sources": ["10.0.0.0/24"], "protocol": "tcp"}]


@pytest.mark.parametrize("name", [n for n in mp.backends.NAMES if mp.backends.field(n, "exporter")])
def test_exporter_port_defaults_to_the_record(name):
    """Without a monitoring_<job>_exporter_port the node is scraped on its backend record's exporter port."""
    exporter = mp.backends.field(name, "exporter")
    ports = {key: value for key, value in PORTS.items() if key != exporter["job"]}
    plan = mp.node_plan(["vllm"], "n1", name, ["vllm"], [], ports, {exporter["variable"]: "pkg"}, "auto", [])
    assert {"job": exporter["job"], "target": f"n1:{exporter['port']}"} in plan["targets"]


# monitoring_prometheus_mode: server runs Prometheus here; targets_only writes files for the site's own Prometheus.
@pytest.mark.parametrize("mode, install, firewall, grafana", [
    ("server", True, [{"ports": [9090], "sources": ["10.0.0.0/24"], "protocol": "tcp"}], "provisioning"),
    ("targets_only", False, [], "none"),
])
def test_prometheus_mode(mode, install, firewall, grafana):
    plan = mp.server_plan([node(["vllm"], address="a")], "15s", "15s", "15d", "", 9090, listen="10.0.0.9",
                          prometheus_sources=["10.0.0.0/24"], mode=mode, targets_dir="/etc/prometheus")
    assert (plan["mode"], plan["install"], plan["grafana"], plan["grafana_install"]) == (mode, install, grafana, False)
    assert plan["firewall"] == firewall
    assert bool(plan["targets"]) is not install
    # The jobs are the same in both modes: the rules match on their names.
    assert plan["jobs"] == ["vllm", "node"]


@pytest.mark.parametrize("directory, prefix", [
    ("/etc/prometheus", "/etc/prometheus"),
    ("/srv/kv/prometheus/", "/srv/kv/prometheus"),
])
def test_targets_only_files(directory, prefix):
    nodes = [node(["vllm"], address="b"), node(["vllm"], address="a")]
    targets = mp.server_plan(nodes, "30s", "15s", "15d", "", 9090, mode="targets_only", targets_dir=directory)["targets"]
    vllm_file = f"{prefix}/file_sd/kunpeng-vllm-vllm.yml"
    node_file = f"{prefix}/file_sd/kunpeng-vllm-node.yml"
    assert targets["file_sd"] == [
        {"job": "vllm", "path": vllm_file, "targets": [
            {"targets": ["a:8000"], "labels": {"node": "a"}}, {"targets": ["b:8000"], "labels": {"node": "b"}}]},
        {"job": "node", "path": node_file, "targets": [
            {"targets": ["a:9100"], "labels": {"node": "a"}}, {"targets": ["b:9100"], "labels": {"node": "b"}}]},
    ]
    assert targets["scrape_configs"] == [
        {"job_name": "vllm", "scrape_interval": "30s", "metrics_path": "/metrics", "file_sd_configs": [{"files": [vllm_file]}]},
        {"job_name": "node", "scrape_interval": "30s", "metrics_path": "/metrics", "file_sd_configs": [{"files": [node_file]}]},
    ]
    assert targets["rules_file"] == f"{prefix}/rules/kunpeng-vllm.rules"
    assert targets["scrape_configs_file"] == f"{prefix}/scrape_configs/kunpeng-vllm.yml"
    assert targets["dirs"] == [f"{prefix}/file_sd", f"{prefix}/rules", f"{prefix}/scrape_configs"]


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "targets_only", "targets_dir": ""}, "monitoring_targets_dir must be an absolute directory path"),
    ({"mode": "targets_only", "targets_dir": "prometheus"}, "monitoring_targets_dir must be an absolute directory path"),
    ({"mode": "agent"}, "monitoring_prometheus_mode must be one of server, targets_only, got 'agent'"),
])
def test_prometheus_mode_refuses(kwargs, message):
    with pytest.raises(mp.MonitoringPlanError, match=message):
        mp.server_plan([node([])], "15s", "15s", "15d", "", 9090, **kwargs)


def test_the_role_defaults_cap_the_tsdb_size():
    """Issue 37: with the role's defaults Prometheus is bounded by size too, not only by time (a large cluster's
    15 days would otherwise fill the disk of /var/lib/prometheus)."""
    import os

    import yaml
    root = os.path.dirname(os.path.abspath(__file__)).split(os.sep + "tests" + os.sep)[0]
    with open(os.path.join(root, "roles", "monitoring", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    plan = mp.server_plan([node([])], defaults["monitoring_scrape_interval"], defaults["monitoring_evaluation_interval"],
                          defaults["monitoring_retention_time"], defaults["monitoring_retention_size"], 9090)
    assert "--storage.tsdb.retention.size=10GB" in plan["args"]


@pytest.mark.parametrize("package, repository, mode, listen, port, settings", [
    # a Grafana the role installs binds the monitoring address, never every interface, and admits nobody anonymously
    ("grafana", "", "server", "10.0.0.5", 3000,
     {"GF_SERVER_HTTP_ADDR": "10.0.0.5", "GF_SERVER_HTTP_PORT": "3000", "GF_AUTH_ANONYMOUS_ENABLED": "false",
      "GF_USERS_ALLOW_SIGN_UP": "false", "GF_SECURITY_DISABLE_GRAVATAR": "true", "GF_ANALYTICS_REPORTING_ENABLED": "false",
      "GF_ANALYTICS_CHECK_FOR_UPDATES": "false"}),
    ("", REPO, "server", "127.0.0.1", 3300, {"GF_SERVER_HTTP_PORT": "3300", "GF_SERVER_HTTP_ADDR": "127.0.0.1"}),
    # a Grafana installed some other way, or the site's own Prometheus: the role sets nothing of it
    ("", "", "server", "10.0.0.5", 3000, {}),
    ("grafana", "", "targets_only", "10.0.0.5", 3000, {}),
])
def test_grafana_binds_the_monitoring_address_without_anonymous_access(package, repository, mode, listen, port, settings):
    """Issue 37 review (low): a packaged Grafana listens on every interface with admin/admin until someone logs in."""
    plan = mp.server_plan([node([])], "15s", "15s", "15d", "", 9090, package, repository, listen=listen, mode=mode,
                          targets_dir="/etc/prometheus", grafana_port=port)
    got = plan["grafana_settings"]
    assert {key: got[key] for key in settings} == settings and bool(got) is bool(settings)
    assert not any("PASSWORD" in key for key in got)  # the password is the role's file, never in the plan
    with pytest.raises(mp.MonitoringPlanError, match="monitoring_grafana_port"):
        mp.grafana_settings(listen, 70000)
