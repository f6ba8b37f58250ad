"""The modules that produce cross-role facts keep to the declared contract (module_utils/fact_contract.py).

(a) RETURN documents the declared keys, no more and no fewer;
(b) the real modules, run on the committed fixtures, produce exactly the declared keys and types.
"""

import glob
import json
import os

import fakes
import plan_hosts
import pytest
import yaml
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.modules import accelerator_facts, vllm_cluster, vllm_plan

A2 = os.path.join(FIXTURES, "ascend", "atlas-800i-a2")
A2_SYSFS = os.path.join(FIXTURES, "sysfs", "atlas-800i-a2")


def _return_doc(module):
    return yaml.safe_load(module.RETURN)


def _doc_mismatches(declared, documented, where):
    """Where the RETURN entries ``documented`` differ from the declared keys.

    A documented dict with ``contains`` must list exactly the declared keys;
    one without must name each declared key as C(key) in its description.
    """
    problems = []
    for key in sorted(set(documented) - set(declared)):
        problems.append(f"{where}.{key} is documented but not declared")
    for key in sorted(set(declared) - set(documented)):
        problems.append(f"{where}.{key} is declared but not documented")
    for key in sorted(set(declared) & set(documented)):
        field, doc = declared[key], documented[key]
        if field.keys is None or field.open_keys:
            continue
        if "contains" in doc:
            problems.extend(_doc_mismatches(field.keys, doc["contains"], f"{where}.{key}"))
            continue
        text = " ".join(doc["description"]) if isinstance(doc["description"], list) else doc["description"]
        problems.extend(f"{where}.{key}.{sub} is declared but its description does not name C({sub})"
                        for sub in sorted(field.keys) if f"C({sub})" not in text)
    return problems


def test_accelerator_facts_return_mirrors_the_contract():
    doc = _return_doc(accelerator_facts)["ansible_facts"]["contains"]["kunpeng_accelerators"]["contains"]
    assert _doc_mismatches(fact_contract.shape("kunpeng_accelerators"), doc, "kunpeng_accelerators") == []


def test_vllm_plan_return_mirrors_the_contract():
    doc = _return_doc(vllm_plan)
    assert "kunpeng_vllm_plan" in doc.pop("ansible_facts")["contains"]
    assert _doc_mismatches(fact_contract.shape("kunpeng_vllm_plan"), doc, "kunpeng_vllm_plan") == []


def test_vllm_cluster_return_mirrors_the_contract():
    doc = _return_doc(vllm_cluster)
    assert _doc_mismatches(fact_contract.shape("kunpeng_vllm_cluster"), doc, "kunpeng_vllm_cluster") == []


def test_doc_check_sees_a_renamed_key():
    """The mirror check can fail: a RETURN that renamed one key is reported on both sides."""
    doc = _return_doc(vllm_plan)
    doc.pop("ansible_facts")
    doc["driver_minimum"] = doc.pop("requirements")
    problems = _doc_mismatches(fact_contract.shape("kunpeng_vllm_plan"), doc, "kunpeng_vllm_plan")
    assert problems == ["kunpeng_vllm_plan.driver_minimum is documented but not declared",
                        "kunpeng_vllm_plan.requirements is declared but not documented"]


def _probe_hosts(tmp):
    """Module arguments of every replayable host: CPU-only, driverless and working Atlas A2, the NVIDIA captures."""
    hosts = {"plain-x86": fakes.host_args(os.path.join(tmp, "plain"), os.path.join(FIXTURES, "sysfs", "plain-x86"),
                                          "x86-avx2", "x86_64")}
    root = os.path.join(tmp, "a2-bare")
    hosts["a2-driverless"] = fakes.host_args(root, A2_SYSFS, "kunpeng920", "aarch64", **fakes.ascend_root(root))
    root = os.path.join(tmp, "a2")
    args = fakes.host_args(root, A2_SYSFS, "kunpeng920", "aarch64", **fakes.ascend_root(root))
    fakes.write_tool(args["tool_path"][0], "npu-smi", fakes.npu_smi_replies(A2))
    hosts["a2"] = args
    for case in sorted(glob.glob(os.path.join(FIXTURES, "nvidia", "*", "query-gpu.csv"))):
        name = os.path.basename(os.path.dirname(case))
        hosts[name] = fakes.nvidia_host(os.path.join(tmp, name), os.path.dirname(case))
    return hosts


def test_accelerator_facts_output_is_the_declared_shape(tmp_path):
    seen = set()
    for name, args in _probe_hosts(str(tmp_path)).items():
        result, dummy = fakes.run_module(args)
        facts = fakes.facts_of(result)
        assert fact_contract.check("kunpeng_accelerators", facts) == [], name
        seen.update(_paths(facts))
    # Every declared key outside the per-element lists shows up on some fixture host.
    declared = {path for path, dummy in fact_contract.flatten(fact_contract.shape("kunpeng_accelerators"))}
    assert {p for p in declared if not _below_list(p, "kunpeng_accelerators")} - seen == set()


def _plans():
    """vllm_plan on every replayed probe host (plan_hosts), without and with each committed model config."""
    models = [None] + sorted(glob.glob(os.path.join(FIXTURES, "models", "*.json")))
    for host in sorted(plan_hosts.HOSTS):
        facts = plan_hosts.facts(host)
        for model in models:
            args = {"accelerators": facts, "fail_on_misfit": False}
            if model:
                with open(model) as handle:
                    args["model_config"] = json.load(handle)
            failed, result = run_main(vllm_plan.main, args)
            if not failed:
                yield f"{host} + {os.path.basename(model or 'no model')}", result
        # With the vllm role's request: the execution fields too.
        request = {"install_dir": "/opt/vllm", "pip_extra_index_urls": ["https://download.pytorch.org/whl/cpu"]}
        failed, result = run_main(vllm_plan.main, {"accelerators": facts, "fail_on_misfit": False, "request": request})
        if not failed:
            yield f"{host} + request", result


def test_vllm_plan_output_is_the_declared_shape():
    seen = set()
    count = 0
    for name, result in _plans():
        plan = result["ansible_facts"]["kunpeng_vllm_plan"]
        assert fact_contract.check("kunpeng_vllm_plan", plan) == [], name
        assert {k: v for k, v in result.items() if k not in ("changed", "ansible_facts")} == plan, name
        seen.update(_paths(plan))
        count += 1
    assert count > 20
    declared = {path for path, field in fact_contract.flatten(fact_contract.shape("kunpeng_vllm_plan"))}
    # numbers' keys are the capacity arithmetic; the rest must each show up on some fixture.
    assert {p for p in declared if p[0] != "numbers" and not _below_list(p, "kunpeng_vllm_plan")} - seen == set()


def _paths(value, prefix=()):
    found = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            found.add(prefix + (key,))
            found |= _paths(sub, prefix + (key,))
    return found


def _below_list(path, name):
    keys = fact_contract.shape(name)
    for depth, part in enumerate(path[:-1]):
        field = keys[part]
        if field.kind == fact_contract.LIST:
            return True
        keys = field.keys
        if keys is None:
            return depth < len(path) - 1
    return False


@pytest.mark.parametrize("mutate, problem", [
    (lambda f: f["summary"].pop("backend"), "kunpeng_accelerators.summary.backend is missing"),
    (lambda f: f["summary"].update(device_total=1), "kunpeng_accelerators.summary.device_total is not declared"),
    (lambda f: f["cpu"].update(logical_cpus="8"), "kunpeng_accelerators.cpu.logical_cpus is str, declared int"),
    (lambda f: f["nvidia"]["gpus"][0].update(gpu_name="x"), "kunpeng_accelerators.nvidia.gpus[0].gpu_name is not declared"),
])
def test_check_reports_each_departure(mutate, problem):
    with open(os.path.join(FIXTURES, "nvidia", "h200", "expected.json")) as handle:
        facts = json.load(handle)
    mutate(facts)
    assert fact_contract.check("kunpeng_accelerators", facts) == [problem]
