"""The backend contract: every backend answers every method of the interface on its own replayed host, and a
backend that lacks a method is refused by name wherever the plan needs it, never planned as another backend.

``CALLS`` holds one call per method of :class:`Backend`; a method added to the interface without a call here
fails :func:`test_every_method_has_a_call`.  The replayed hosts are the ones the role's template tests plan
for (tests/unit/vllm_plans.py HOSTS): each backend is asked on the probe of a host of its own kind.
"""

import copy
import os
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import Backend, BackendMissing
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.cuda import Cuda
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, cluster, container, deployment, k8s_export, wheelhouse
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "unit"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "modules"))

import plan_hosts  # noqa: E402
import vllm_plans  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.modules import accelerator_facts, vllm_plan  # noqa: E402


class Host:
    """One backend on its replayed host: the probe, the module's arguments and the plan the module returns."""

    def __init__(self, name):
        host, base = vllm_plans.HOSTS[name]
        self.name = name
        self.backend = backends.backend(name)
        self.facts = plan_hosts.facts(host)
        self.plan = vllm_plans.plan(name)
        params = {key: copy.deepcopy(spec.get("default")) for key, spec in vllm_plan.ARGUMENT_SPEC.items()}
        params.update(base, accelerators=self.facts, atlas_series=self.backend.series(self.facts))
        params.update(deployment._versions(name, params))
        self.params = params
        self.notes = []
        self.hw = deployment.hardware(name, params, self.facts, None, self.notes)
        self.model = capacity.model_from_declared(7, "bf16")
        self.request = dict(deployment.REQUEST_DEFAULTS, install_dir="/opt/vllm")


def _capacity(b, h):
    options = dict(h.params, smaller_formats=b.smaller_formats, multinode_moe=b.multinode_moe)
    return b.plan_capacity(h.model, h.hw, {}, options, h.notes)


def _wheelhouse(b, h):
    try:
        return b.wheelhouse_row(h.plan["release"], h.params["python_version"])
    except CompatError as exc:  # a decision: this backend has no wheelhouse recipe, and says so
        return str(exc)


class NoTools:
    """accelerator_facts' Runner on a host where no vendor tool is installed (nothing is run)."""

    def find_tool(self, name):
        return None

    def query(self, tool, args, parser, findings):
        raise AssertionError(f"{tool} was run although it was not found")

    def warn(self, message):
        pass


PROBE_PARAMS = {"sysfs_root": "/nonexistent/sys", "procfs_root": "/nonexistent/proc", "ascend_root": "/nonexistent/Ascend",
                "ascend_install_info": "/nonexistent/ascend_install.info", "tool_path": [], "tool_path_only": True,
                "command_timeout": 10, "architecture": "x86_64"}


def _probe(b, h):
    return b.probe(NoTools(), PROBE_PARAMS, h.plan["arch"], h.facts.get("pci") or {})


# method -> (call on the backend and its host, the type of a valid answer)
CALLS = {
    "probe": (_probe, (dict, type(None))),
    "series": (lambda b, h: b.series(h.facts), (str, type(None))),
    "select": (lambda b, h: b.select(h.params, h.facts, [], h.notes), tuple),
    "engine_version": (lambda b, h: b.engine_version(h.plan["row"]), str),
    "install_steps": (lambda b, h: b.install_steps(h.plan["row"], h.plan["arch"], h.plan["atlas_series"]), list),
    "packages": (lambda b, h: b.packages(h.plan["row"], h.plan["atlas_series"]), list),
    "wheelhouse_row": (_wheelhouse, (dict, str)),
    "fp8_mode": (lambda b, h: b.fp8_mode("bf16", []), str),
    "serve_dtype": (lambda b, h: b.serve_dtype(h.facts, h.model, {}), tuple),
    "plan_capacity": (_capacity, (dict, type(None))),
    "engine_args": (lambda b, h: b.engine_args(h.model, _capacity(b, h), {}, h.hw, h.notes), dict),
    "check_request": (lambda b, h: b.check_request(h.plan["arch"], h.request, True), type(None)),
    "runtime": (lambda b, h: b.runtime(h.facts, {}, h.request), (dict, type(None))),
    "container_problems": (lambda b, h: b.container_problems({}, {"architecture": h.plan["arch"]}), list),
    "layout_problem": (lambda b, h: b.layout_problem(1, 1, "auto"), type(None)),
    "devices_per_node": (lambda b, h: b.devices_per_node(h.hw["devices_per_node"]), int),
    "network_env": (lambda b, h: b.network_env("eth0", "10.0.0.1"), dict),
    "ray_resources": (lambda b, h: b.ray_resources(h.hw["devices_per_node"]), list),
    "ray_env": (lambda b, h: b.ray_env(), dict),
    "k8s_resource": (lambda b, h: b.k8s_resource(h.plan, {}), tuple),
    "k8s_multinode_problem": (lambda b, h: b.k8s_multinode_problem(), (str, type(None))),
}

HOSTS = {}


def host(name):
    if name not in HOSTS:
        HOSTS[name] = Host(name)
    return HOSTS[name]


def test_every_method_has_a_call():
    assert sorted(CALLS) == backends.METHODS


def test_every_backend_has_a_replayed_host():
    assert sorted(vllm_plans.HOSTS) == sorted(backends.NAMES)


@pytest.mark.parametrize("method", backends.METHODS)
@pytest.mark.parametrize("name", backends.NAMES)
def test_every_backend_answers_every_method_on_its_host(name, method):
    h = host(name)
    call, kind = CALLS[method]
    answer = call(h.backend, h)
    assert isinstance(answer, kind), f"backend {name}: {method} answered {answer!r}"


@pytest.mark.parametrize("name", backends.NAMES)
def test_the_methods_are_what_the_plan_decided(name):
    h = host(name)
    b = h.backend
    assert b.engine_version(h.plan["row"]) == h.plan["engine_version"]
    assert b.packages(h.plan["row"], h.plan["atlas_series"]) == h.plan["packages"]
    assert b.install_steps(h.plan["row"], (h.facts.get("cpu") or {}).get("architecture"), h.plan["atlas_series"]) == h.plan["install_steps"]
    assert b.series(h.facts) == h.plan["atlas_series"]
    assert b.select(h.params, h.facts, [], [])[0]["python_range"] == h.plan["row"]["python_range"]


# --- a fourth backend -------------------------------------------------------------------------------------

class Rocm(Backend):
    """A test-only accelerator: its data and part of the interface (the probe and the matrix), nothing more."""

    name = "rocm"
    record = dict(Cuda.record, label="AMD GPU",
                  hardware={"pci_count": "amd_count", "section": "amd", "devices": "gpus", "device": "AMD GPU",
                            "tool": "amd-smi"},
                  visible={"section": "amd", "devices": "gpus", "id_keys": ("index",), "variable": "HIP_VISIBLE_DEVICES"},
                  driver=None, exporter=None, target_device="rocm")

    def series(self, facts):
        return None

    def select(self, params, facts, caps, notes):
        return Cuda().select(params, facts, caps, notes)


ROCM_FACTS = {"pci": {"amd_count": 8}, "amd": {"gpus": []}, "cpu": {"architecture": "x86_64"},
              "summary": {"backend": "cpu", "device_count": 8, "min_device_memory_mib": 196608}}


@pytest.fixture
def fourth(monkeypatch):
    """Register a backend class for one test, as adding its class to the registry would."""
    def register(cls):
        monkeypatch.setitem(backends.INSTANCES, cls.name, cls())
        monkeypatch.setitem(backends.BACKENDS, cls.name, cls.record)
        return backends.INSTANCES[cls.name]
    return register


def _plan_args(**params):
    args = {key: copy.deepcopy(spec.get("default")) for key, spec in vllm_plan.ARGUMENT_SPEC.items()}
    args.update(backend="rocm", accelerators=ROCM_FACTS, python_version="3.12", params_b=7, weight_dtype="bf16")
    args.update(params)
    return args


def test_a_fourth_backend_with_part_of_the_interface_is_refused_by_name(fourth):
    fourth(Rocm)
    with pytest.raises(BackendMissing, match=r"^backend rocm: no engine_version"):
        deployment.plan_host(_plan_args())


def test_a_fourth_backend_is_its_own_device_not_cpu(fourth):
    fourth(Rocm)
    assert backends.problem("rocm", ROCM_FACTS) is None
    assert "no AMD GPU" in backends.problem("rocm", {"pci": {}, "summary": {"backend": "cpu"}})


# Where each method is asked for: the public entry point that needs it, called for the fourth backend.
REQUEST = {"install_dir": "/opt/vllm", "architecture": "x86_64"}
PLAN = {"backend": "rocm", "atlas_series": None, "engine_args": {"tensor_parallel_size": 2}, "nodes_needed": 2}
ENTRY_POINTS = {
    "probe": lambda: accelerator_facts.probe_sections(NoTools(), PROBE_PARAMS, "x86_64", {"nvswitch_count": 0}),
    "series": lambda: deployment.plan_host(_plan_args()),
    "select": lambda: deployment.plan_host(_plan_args()),
    "engine_version": lambda: deployment.plan_host(_plan_args()),
    "install_steps": lambda: deployment.plan_host(_plan_args()),
    "packages": lambda: deployment.plan_host(_plan_args()),
    "fp8_mode": lambda: deployment.plan_host(_plan_args()),
    "serve_dtype": lambda: deployment.plan_host(_plan_args()),
    "plan_capacity": lambda: deployment.plan_host(_plan_args()),
    "engine_args": lambda: deployment.plan_host(_plan_args()),
    "check_request": lambda: deployment.plan_host(_plan_args(request=REQUEST)),
    "runtime": lambda: deployment.plan_host(_plan_args(request=REQUEST)),
    "wheelhouse_row": lambda: wheelhouse.target_for("rocm", "0.33.0", "3.12", "x86_64"),
    "container_problems": lambda: container.image_problems({"architecture": "amd64"}, "rocm", {"architecture": "x86_64"}),
    "layout_problem": lambda: cluster.layout("rocm", {"tensor_parallel_size": 2}, 2, 1),
    "devices_per_node": lambda: cluster.layout("rocm", {"tensor_parallel_size": 2}, 2, 1),
    "network_env": lambda: cluster._env("rocm", {"address": "10.0.0.1", "interface": "eth0"},
                                        {"mode": "ray", "expert_parallel": False}, ""),
    "ray_resources": lambda: k8s_export.ray_commands(PLAN, "head", 6379),
    "ray_env": lambda: k8s_export.ray_environment(PLAN, {"ray_version": "2.60.0", "ray_token": "t", "ray_token_secret": "",
                                                         "ray_allow_unauthenticated": False}),
    "k8s_resource": lambda: k8s_export.accelerator(PLAN, {}),
    "k8s_multinode_problem": lambda: k8s_export.multinode_layout(PLAN),
}


def test_every_method_has_an_entry_point():
    assert sorted(ENTRY_POINTS) == backends.METHODS


@pytest.mark.parametrize("method", backends.METHODS)
def test_a_missing_method_is_refused_where_the_plan_needs_it(fourth, method):
    """A backend that has everything but ``method`` (the cuda class less that method) is refused by name at the
    entry point that needs it, instead of falling through to another backend's branch."""
    missing = type("Rocm", (Cuda,), {"name": "rocm", "record": Rocm.record, method: getattr(Backend, method)})
    fourth(missing)
    with pytest.raises(BackendMissing, match=rf"^backend rocm: no {method} "):
        ENTRY_POINTS[method]()
