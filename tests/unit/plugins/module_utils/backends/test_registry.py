"""The backend registry is complete, and every consumer reads it instead of a table of its own.

Each record must carry every declared field; each consumer below is called for
every backend name, so a new record that a consumer cannot serve fails here,
naming the backend and the consumer.  The modules and the role's argument
spec list no backend choices: they refuse a name the registry lacks.
"""

import importlib
import os
import re
import sys

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, input_check, monitoring_plan, reboot_gate
from ansible_collections.kunpeng.vllm.plugins.modules import install_state as install_state_module
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_artifact, vllm_plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))

from module_runner import run_main  # noqa: E402


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_record_has_every_declared_field(name):
    assert backends.missing_fields(backends.BACKENDS[name]) == [], f"backend {name} in plugins/module_utils/backends/"


def test_missing_fields_names_what_is_missing_and_undeclared():
    record = dict(backends.BACKENDS["cuda"])
    del record["exporter"]
    record["colour"] = "green"
    assert backends.missing_fields(record) == ["exporter", "colour (undeclared)"]


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(backends.UnknownBackend, match="known: cpu, cuda, ascend"):
        backends.get("tpu")


@pytest.mark.parametrize("name", backends.NAMES)
def test_nested_records_have_their_keys(name):
    record = backends.BACKENDS[name]
    shapes = {"hardware": {"pci_count", "section", "devices", "device", "tool", "pci"},
              "visible": {"section", "devices", "id_keys", "variable"},
              "driver": {"role", "fact", "reboot_variable", "reboot_what", "env_file_key", "group_key"},
              "exporter": {"name", "variable", "job", "port"}}
    for key, shape in shapes.items():
        if record[key] is not None:
            assert set(record[key]) == shape, f"backend {name}: {key}"
    assert set(record["engine_dists"]) == {"wheel", "source"}, f"backend {name}: engine_dists"
    assert record["target_device"], f"backend {name}: target_device"
    # A device needs a driver, and a driver a device.
    assert (record["hardware"] is None) == (record["driver"] is None) == (record["visible"] is None), name


# Every consumer, called once per backend: a record it cannot serve fails with the backend's name.
CONSUMERS = {
    "backends.problem": lambda name: backends.problem(name, {"summary": {"backend": "cpu"}}),
    "capacity.visible_devices": lambda name: capacity.visible_devices(backends.field(name, "visible"), {}, ""),
    "reboot_gate.reboot_gate": lambda name: reboot_gate.reboot_gate(name, {"reboot_pending": True}, "h"),
    "monitoring_plan.accelerator_exporter": lambda name: monitoring_plan.accelerator_exporter(name, {}, "auto"),
    "install_state.engine_venv_action": lambda name: [install_state.engine_venv_action(True, True, False, {}, name, method, "1.0")
                                                      for method in ("wheel", "source")],
}


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
@pytest.mark.parametrize("name", backends.NAMES)
def test_every_consumer_serves_every_backend(consumer, name):
    try:
        CONSUMERS[consumer](name)
    except (KeyError, TypeError) as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"{consumer} cannot serve backend {name}: {exc!r}")


@pytest.mark.parametrize("name", backends.NAMES)
def test_a_device_backend_is_refused_without_its_device(name):
    problem = backends.problem(name, {"summary": {"backend": "cpu"}, "pci": {}})
    hardware = backends.BACKENDS[name]["hardware"]
    if hardware is None:
        assert problem is None
    else:
        assert hardware["device"] in problem and hardware["tool"] in problem


@pytest.mark.parametrize("name", backends.NAMES)
def test_reboot_gate_names_the_registry_variable(name):
    decision = reboot_gate.reboot_gate(name, {"reboot_pending": True}, "h")
    driver = backends.BACKENDS[name]["driver"]
    assert decision["stop"] is (driver is not None)
    assert decision["variable"] == (driver["reboot_variable"] if driver else None)


def _module_doc_option(module, *path):
    with open(os.path.join(ROOT, "plugins", "modules", module + ".py")) as handle:
        text = handle.read()
    option = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])["options"]
    for key in path[:-1]:
        option = option[key]["suboptions"]
    return option[path[-1]]


# The backend options: their documentation lists no choices (a new backend edits none of these files); the
# module or the role's input rule refuses a name the registry lacks, naming the registry's backends.
BACKEND_OPTIONS = [("vllm_plan", ("backend",)), ("vllm_artifact", ("backend",)), ("install_state", ("engine", "backend"))]


@pytest.mark.parametrize("module, path", BACKEND_OPTIONS)
def test_module_backend_options_list_no_choices(module, path):
    option = _module_doc_option(module, *path)
    assert "choices" not in option and "registry" in " ".join(option["description"]), f"plugins/modules/{module}.py"


def test_role_backend_option_lists_no_choices():
    with open(os.path.join(ROOT, "roles", "vllm", "meta", "argument_specs.yml")) as handle:
        option = yaml.safe_load(handle)["argument_specs"]["main"]["options"]["vllm_backend"]
    assert "choices" not in option and "registry" in option["description"]


@pytest.mark.parametrize("value, refused", [("auto", False), ("tpu", True), ("", True)] + [(name, False) for name in backends.NAMES])
def test_role_input_rule_refuses_a_name_the_registry_lacks(value, refused):
    problems = input_check.check_values("vllm", {"vllm_backend": value})
    assert bool(problems) is refused, problems
    if refused:
        assert problems[0].startswith("vllm_backend: ") and ", ".join(backends.CHOICES_WITH_AUTO) in problems[0]
    assert input_check.choices("vllm", "vllm_backend") == backends.CHOICES_WITH_AUTO


@pytest.mark.parametrize("main, args", [
    (vllm_plan.main, {"backend": "tpu", "model_config": {}}),
    (vllm_artifact.main, {"action": "identity", "backend": "tpu", "engine_version": "1", "arch": "x86_64"}),
    (install_state_module.main, {"engine": {"venv": "/nonexistent", "backend": "tpu", "engine_version": "1"}}),
])
def test_modules_refuse_a_name_the_registry_lacks(main, args):
    failed, result = run_main(main, args)
    assert failed and "unknown backend 'tpu'; known: " + ", ".join(backends.NAMES) in result["msg"], result


def _backend_modules():
    """The modules of plugins/module_utils/backends/ that define a backend (a named subclass of Backend)."""
    folder = os.path.dirname(backends.__file__)
    found = {}
    for filename in sorted(os.listdir(folder)):
        if not filename.endswith(".py") or filename == "__init__.py":
            continue
        module = importlib.import_module(f"{backends.__name__.rsplit('.', 1)[0]}.{filename[:-3]}")
        named = [cls for cls in vars(module).values() if isinstance(cls, type) and issubclass(cls, backends.Backend)
                 and cls.name and cls.__module__ == module.__name__]
        if named:
            found[filename[:-3]] = named
    return found


def test_every_backend_module_of_the_folder_is_registered():
    """A module added to the folder but not imported by the registry (so not shipped to hosts) fails here."""
    found = _backend_modules()
    assert sorted(found) == sorted(backends.NAMES)
    with open(backends.__file__) as handle:
        imported = re.search(r"^from \S+\.backends import ([\w, ]+)  # noqa", handle.read(), re.M).group(1)
    assert sorted(word.strip() for word in imported.split(",")) == sorted(found), "backends/registry.py imports"
    for module, classes in found.items():
        assert [cls.name for cls in classes] == [module], f"backends/{module}.py: one backend, named after its module"
        assert backends.INSTANCES[module].__class__ is classes[0]
