"""roles/gateway/templates/haproxy.cfg.j2 writes the plan down: routes, weights, keys, TLS, default pool.

The template is rendered with the role's defaults and the real
kunpeng.vllm.gateway_plan result for the Molecule scenario's pools.
"""

import os
import shutil
import subprocess

import jinja2
import pytest
import yaml
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.gateway import gateway_plan, listener_settings

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "gateway")
SCENARIO = os.path.join(ROLE, "..", "..", "molecule", "gateway", "group_vars", "gateway.yml")
GROUPS = {"vllm": ["kv-gateway-vllm-a", "kv-gateway-vllm-b"], "pool_a": ["kv-gateway-vllm-a"],
          "pool_b": ["kv-gateway-vllm-b"]}


# One model on a CPU pool (standby: an x86 pool) and an accelerator pool.
HYBRID_GROUPS = {"kunpeng": ["k1"], "gpu": ["g1"], "x86": ["x1"]}
HYBRID = [
    {"name": "kunpeng", "group": "kunpeng", "models": ["ds"], "kind": "cpu", "maxconn": 2, "standby": "x86"},
    {"name": "gpu", "group": "gpu", "models": ["ds"], "kind": "accelerator", "maxconn": 1},
    {"name": "x86", "group": "x86", "models": ["ds"], "maxconn": 2},
]


def _render(groups=None, dispatch=None, **overrides):
    with open(os.path.join(ROLE, "defaults", "main.yml")) as f:
        variables = yaml.safe_load(f)
    with open(os.path.join(ROLE, "vars", "main.yml")) as f:
        variables.update({k: v for k, v in yaml.safe_load(f).items() if not k.startswith("__gateway_settings")})
    with open(SCENARIO) as f:
        variables["gateway_pools"] = yaml.safe_load(f)["gateway_pools"]
    variables.update(overrides)
    plan = gateway_plan(variables["gateway_pools"], groups or GROUPS, {}, variables["gateway_default_pool"], dispatch)
    plan.update(listener_settings(variables))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True)
    return env.get_template("haproxy.cfg.j2").render(ansible_managed="managed", __gateway_plan=plan, **variables)


def test_routes_weights_and_checks():
    cfg = _render()
    assert "    use_backend pool_a if { var(txn.kv_model) -m str smollm2-a }" in cfg
    assert "    acl kv_known_model var(txn.kv_model) -m str smollm2 smollm2-a smollm2-b smollm2-hybrid" in cfg
    assert "    server kv-gateway-vllm-a kv-gateway-vllm-a:8000 weight 9" in cfg
    assert "    server kv-gateway-vllm-b kv-gateway-vllm-b:8000 weight 1" in cfg
    assert "    default-server check inter 2s fall 2 rise 2 init-addr last,libc,none" in cfg
    assert "    retry-on conn-failure" in cfg and "    tune.bufsize 81920" in cfg
    assert "    stats socket /run/haproxy/admin.sock mode 600 level admin" in cfg
    assert "default_backend pool_shared" in cfg


@pytest.mark.parametrize("keys, present", [([], False), (["0123456789abcdef"], True)])
def test_key_check_only_with_keys_and_never_the_key(keys, present):
    cfg = _render(gateway_api_keys=keys)
    assert ("http_auth_bearer -f /etc/haproxy/gateway-keys.lst" in cfg) is present
    assert "0123456789abcdef" not in cfg


def test_tls_listener_only_with_certificate_and_key():
    assert " ssl crt " not in _render()
    cfg = _render(gateway_tls_certificate="/c.pem", gateway_tls_key="/k.pem")
    assert "    bind 0.0.0.0:8443 ssl crt /etc/haproxy/gateway.pem alpn http/1.1" in cfg


def test_unknown_model_refused_or_sent_to_the_default_pool():
    cfg = _render()
    assert "model_not_found" in cfg and "if kv_has_model !kv_known_model" in cfg
    cfg = _render(gateway_default_pool="b")
    assert "model_not_found" not in cfg
    assert "    use_backend pool_b if kv_has_model" in cfg and "default_backend pool_b" in cfg


def test_hybrid_dispatch_is_written_as_planned():
    cfg = _render(groups=HYBRID_GROUPS, dispatch={"retry_after": 7}, gateway_pools=HYBRID)
    # The size estimate, from the buffered body; a request without max_tokens counts as long.
    assert "    http-request set-var(txn.kv_max_tokens) int(512)" in cfg
    assert "    http-request set-var(txn.kv_max_tokens) req.body,json_query('$.max_tokens','int')" in cfg
    assert "    http-request set-var(txn.kv_tokens) req.body_len,div(4),add(txn.kv_max_tokens)" in cfg
    assert ("    use_backend pool_kunpeng if { var(txn.kv_model) -m str ds } { var(txn.kv_tokens) -m int lt 512 } "
            "{ nbsrv(pool_kunpeng) eq 1 } { be_conn(pool_kunpeng) lt 2 }") in cfg
    assert cfg.index("use_backend pool_kunpeng") < cfg.index("    use_backend pool_gpu if { var(txn.kv_model) -m str ds }")
    assert "    acl kv_known_model var(txn.kv_model) -m str ds\n" in cfg
    assert "    server k1 k1:8000 weight 1 maxconn 2 observe layer4 error-limit 1 on-error mark-down" in cfg
    assert "    server x1 x1:8000 weight 1 maxconn 2 backup\n" in cfg
    assert "    server g1 g1:8000 weight 1 maxconn 1\n" in cfg
    assert "backend pool_x86" not in cfg and cfg.count("    option allbackups") == 1
    assert " hdr Retry-After 7 " in cfg


def test_single_pool_models_get_no_size_estimate():
    with open(SCENARIO) as f:
        single = [p for p in yaml.safe_load(f)["gateway_pools"] if "kind" not in p and "maxconn" not in p]
    cfg = _render(gateway_pools=single)
    assert "kv_tokens" not in cfg and "maxconn 2 " not in cfg and "backup" not in cfg
    assert "http-error status 503 content-type application/json hdr Retry-After 10 " in cfg


def test_metrics_exporter_only_with_a_port():
    assert "prometheus-exporter" not in _render()
    cfg = _render(gateway_metrics_port=8405)
    assert "    bind 0.0.0.0:8405\n    http-request use-service prometheus-exporter if { path /metrics }" in cfg


@pytest.mark.skipif(not shutil.which("haproxy"), reason="haproxy is not installed here; Molecule's gateway scenario "
                    "validates haproxy.cfg with haproxy -c (the template task's validate)")
@pytest.mark.parametrize("overrides", [{}, {"groups": HYBRID_GROUPS, "gateway_pools": HYBRID, "gateway_metrics_port": 8405}])
def test_haproxy_accepts_the_configuration(tmp_path, overrides):
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(_render(gateway_runtime_socket=str(tmp_path / "admin.sock"), **overrides))
    result = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
