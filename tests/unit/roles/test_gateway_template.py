"""roles/gateway/templates/haproxy.cfg.j2 writes the plan down: routes, weights, keys, TLS, default pool.

The template is rendered with the role's defaults and the real
kunpeng.vllm.gateway_plan result for the Molecule scenario's pools.
"""

import os

import jinja2
import pytest
import yaml
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.gateway import gateway_plan, listener_settings

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "gateway")
SCENARIO = os.path.join(ROLE, "..", "..", "molecule", "gateway", "group_vars", "gateway.yml")
GROUPS = {"vllm": ["kv-gateway-vllm-a", "kv-gateway-vllm-b"], "pool_a": ["kv-gateway-vllm-a"],
          "pool_b": ["kv-gateway-vllm-b"]}


def _render(**overrides):
    with open(os.path.join(ROLE, "defaults", "main.yml")) as f:
        variables = yaml.safe_load(f)
    with open(os.path.join(ROLE, "vars", "main.yml")) as f:
        variables.update({k: v for k, v in yaml.safe_load(f).items() if not k.startswith("__gateway_settings")})
    with open(SCENARIO) as f:
        variables["gateway_pools"] = yaml.safe_load(f)["gateway_pools"]
    variables.update(overrides)
    plan = gateway_plan(variables["gateway_pools"], GROUPS, {}, variables["gateway_default_pool"])
    plan.update(listener_settings(variables))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True)
    return env.get_template("haproxy.cfg.j2").render(ansible_managed="managed", __gateway_plan=plan, **variables)


def test_routes_weights_and_checks():
    cfg = _render()
    assert "    use_backend pool_a if { var(txn.kv_model) -m str smollm2-a }" in cfg
    assert "    acl kv_known_model var(txn.kv_model) -m str smollm2 smollm2-a smollm2-b" in cfg
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
