"""The backend registry is complete, and every consumer reads it instead of a table of its own.

Each record must carry every declared field; each consumer below is called for
every backend name, so a new record that a consumer cannot serve fails here,
naming the backend and the consumer.  The choices that modules and role
argument specs offer for a backend must be the registry's names.
"""

import os

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils import backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, monitoring_plan, reboot_gate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))


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
    shapes = {"hardware": {"pci_count", "section", "devices", "device", "tool"},
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


def _module_doc_choices(module, option):
    path = os.path.join(ROOT, "plugins", "modules", module + ".py")
    with open(path) as handle:
        text = handle.read()
    doc = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
    return doc["options"][option]["choices"]


@pytest.mark.parametrize("module, option, auto", [
    ("vllm_plan", "backend", True),
    ("vllm_artifact", "backend", False),
    ("install_state", "engine", None),
])
def test_module_backend_choices_are_the_registry(module, option, auto):
    if module == "install_state":
        path = os.path.join(ROOT, "plugins", "modules", "install_state.py")
        with open(path) as handle:
            doc = yaml.safe_load(handle.read().split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
        choices = doc["options"]["engine"]["suboptions"]["backend"]["choices"]
        auto = False
    else:
        choices = _module_doc_choices(module, option)
    expected = backends.CHOICES_WITH_AUTO if auto else backends.NAMES
    assert sorted(choices) == sorted(expected), f"plugins/modules/{module}.py {option}"


def test_role_backend_choices_are_the_registry():
    with open(os.path.join(ROOT, "roles", "vllm", "meta", "argument_specs.yml")) as handle:
        spec = yaml.safe_load(handle)
    assert sorted(spec["argument_specs"]["main"]["options"]["vllm_backend"]["choices"]) == sorted(backends.CHOICES_WITH_AUTO)
