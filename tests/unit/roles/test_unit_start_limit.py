"""Issue 37: a crash-looping vLLM or Ray unit stops (systemd's start limit) instead of restarting forever, and the
role can still start it afterwards.

The units are rendered with the role's defaults and vars (test_unit_exposure's and test_quadlet_template's
renderers; the Ray units are the committed renders test_vllm_cluster_units compares).  ``trips`` is systemd's
rate limit (src/basic/ratelimit.c): a start is refused when ``burst`` starts already fell in the current window
of ``interval`` seconds, which opens at the first start after the last window closed.
"""

import glob
import os

import pytest
import test_quadlet_template as quadlet
from task_files import ROOT, load, tasks
from test_unit_exposure import HOST, _vllm, _vllm_container, render

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends


def section(text, name):
    """{key: value} of section ``name`` of a unit file (the last value of a repeated key)."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("["):
            inside = line == f"[{name}]"
        elif inside and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            rows[key] = value
    return rows


def trips(interval, burst, start_times):
    """The index of the first start systemd refuses (start-limit-hit), or None."""
    begin, count = None, 0
    for index, at in enumerate(start_times):
        if begin is None or at - begin >= interval:
            begin, count = at, 0
        if count >= burst:
            return index
        count += 1
    return None


def crash_loop(restart_sec, runs_for, starts=1000):
    """Start times of a unit that ends ``runs_for`` seconds after each start and is restarted ``restart_sec`` later."""
    return [index * (runs_for + restart_sec) for index in range(starts)]


ENGINE_UNITS = {
    **{f"{name}, host": lambda name=name: render("vllm/templates/vllm.service.j2", _vllm(name, HOST))
       for name in backends.NAMES},
    "container": lambda: render("vllm/templates/vllm-container.service.j2",
                                _vllm_container("cpu", "podman version 4.3.1")),
    "quadlet": lambda: quadlet.render(quadlet.TEMPLATE, quadlet._variables("cpu", [], "podman version 4.9.3")),
}
RAY_UNITS = sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "fixtures", "cluster", "units", "*vllm-ray-*")))


def _limits(text):
    unit, service = section(text, "Unit"), section(text, "Service")
    return int(unit["StartLimitIntervalSec"]), int(unit["StartLimitBurst"]), int(service["RestartSec"])


@pytest.mark.parametrize("variant", sorted(ENGINE_UNITS))
def test_an_engine_crash_loop_stops_and_a_slow_start_never_trips(variant):
    interval, burst, restart_sec = _limits(ENGINE_UNITS[variant]())
    # A server that dies on its config a few seconds after each start: systemd gives up within the interval.
    stopped = trips(interval, burst, crash_loop(restart_sec, runs_for=10))
    assert stopped == burst and stopped * (10 + restart_sec) < interval
    # One start that loads a checkpoint for an hour is one start; so are the role's own starts of one run
    # (start, handler restart, rollback restart), and it clears the record before them anyway.
    assert trips(interval, burst, [0, 3600, 3700, 3800]) is None


@pytest.mark.parametrize("path", RAY_UNITS, ids=os.path.basename)
def test_a_ray_node_waits_out_a_head_reboot_but_not_a_crash_loop(path):
    with open(path, encoding="utf-8") as handle:
        interval, burst, restart_sec = _limits(handle.read())
    # A worker whose 'ray start' fails at once while the head reboots keeps trying for five minutes.
    assert trips(interval, burst, crash_loop(restart_sec, runs_for=0, starts=300 // restart_sec)) is None
    assert trips(interval, burst, crash_loop(restart_sec, runs_for=1)) is not None


def test_the_limit_of_the_units_is_in_their_unit_section():
    """systemd reads StartLimit* in [Unit] only; the ray renders are checked by the file, the others above."""
    assert len(RAY_UNITS) >= 2
    texts = [rendered() for rendered in ENGINE_UNITS.values()]
    texts += [open(path, encoding="utf-8").read() for path in RAY_UNITS]
    for text in texts:
        assert "StartLimitBurst" not in section(text, "Service")


STARTS = ("started", "restarted")
# A list the role takes from a module, and the units it holds (test_instance_lifecycle checks the module).
CLEARS = {
    "{{ __vllm_rollback_state.rollback.start_units }}": {
        "{{ __vllm_rollback_state.rollback.unit }}",
        "{{ __vllm_rollback_state.rollback.restart_ray }}",
    },
}


def _started_units(task):
    module = task.get("ansible.builtin.systemd_service") or {}
    state = str(module.get("state", ""))
    return [module["name"]] if "name" in module and any(word in state for word in STARTS) else []


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "roles", "vllm", "tasks", "*.yml")))
                         + [os.path.join(ROOT, "roles", "vllm", "handlers", "main.yml")], ids=os.path.basename)
def test_every_start_of_an_instance_unit_clears_the_start_limit_first(path):
    """After a crash loop the unit is failed and refuses a start, even rollback's, until reset-failed."""
    cleared = set()
    for task in tasks(load(os.path.relpath(path, ROOT))):
        if task.get("ansible.builtin.import_tasks") == "unit_start_limit.yml":
            units = task["vars"]["__vllm_start_limit_units"]
            cleared.update(CLEARS[units] if isinstance(units, str) else units)
        command = task.get("ansible.builtin.command") or {}
        if command.get("argv", [])[:2] == ["systemctl", "reset-failed"]:
            cleared.update(command["argv"][3:])
        for unit in _started_units(task):
            assert unit in cleared, f"{task['name']!r} starts {unit} without clearing its start limit first"


def test_the_handler_clears_before_it_restarts():
    handlers = load("roles/vllm/handlers/main.yml")
    order = [task["name"] for task in handlers if task.get("listen") == "Restart vLLM" or task["name"] == "Restart vLLM"]
    assert order == ["Clear the start limit before restarting vLLM", "Restart vLLM"]
