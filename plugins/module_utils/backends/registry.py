# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The backend registry: one class per backend, its data and its decisions.

A backend is what runs the engine: ``cpu`` (backends/cpu.py), ``cuda`` (NVIDIA
GPUs, backends/cuda.py) or ``ascend`` (Huawei Ascend NPUs, backends/ascend.py).
Each is a subclass of :class:`~.base.Backend`: a ``record`` with every field of
:data:`FIELDS` (device, driver role, engine distributions, service and container
devices, ...) and the methods of the interface (matrix row, install steps,
capacity, cluster environment, Kubernetes resource, ...).  Code outside this
package imports this module (``from ...module_utils.backends import registry as
backends``), asks :func:`backend` for the object and calls it; it does not compare a
backend's name.

Adding a backend is adding its module to this folder and importing it below (``docs/extending.md``); the contract
test (``tests/unit/plugins/module_utils/backends/test_contract.py``) calls every
method of every backend on its probe fixture, and a backend that lacks a method
is refused by name wherever the plan needs it.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, Iterator, List, Optional, Type

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import FIELDS, METHODS, Backend, BackendMissing

# Registration is importing the backend's module; the registry then finds its class (a named subclass of
# Backend).  The imports are written out because a module shipped to a host carries only the module_utils its
# code imports by name (Ansible's AnsiballZ reads the import statements, it does not list this folder);
# tests/unit/plugins/module_utils/backends/test_registry.py fails for a module of this folder left out here.
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import ascend, cpu, cuda  # noqa: F401,E402  # pylint: disable=unused-import

__all__ = ["FIELDS", "METHODS", "Backend", "BackendMissing", "BACKENDS", "INSTANCES", "NAMES", "CHOICES_WITH_AUTO",
           "UnknownBackend", "backend", "get", "field", "missing_fields", "driver_fact", "shows_device", "problem"]


def _classes(base: Type[Backend] = Backend) -> Iterator[Type[Backend]]:
    for cls in base.__subclasses__():
        yield cls
        yield from _classes(cls)


# Every named class of the imported modules, in the order of their rank (cpu, cuda, ascend): the order of the
# registry's names in choices and messages.
INSTANCES: Dict[str, Backend] = {cls.name: cls() for cls in sorted((c for c in _classes() if c.name), key=lambda c: (c.rank, c.name))}
BACKENDS: Dict[str, Dict[str, Any]] = {name: instance.record for name, instance in INSTANCES.items()}

NAMES: List[str] = list(BACKENDS)
CHOICES_WITH_AUTO: List[str] = ["auto"] + NAMES


class UnknownBackend(ValueError):
    """A backend name that has no record."""


def backend(name: str) -> Backend:
    """The backend object of ``name``; raises :class:`UnknownBackend` naming the known ones."""
    try:
        return INSTANCES[name]
    except KeyError:
        raise UnknownBackend(f"unknown backend {name!r}; known: {', '.join(INSTANCES)}") from None


def get(name: str) -> Dict[str, Any]:
    """The record of ``name``; raises :class:`UnknownBackend` naming the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise UnknownBackend(f"unknown backend {name!r}; known: {', '.join(NAMES)}") from None


def field(name: str, key: str) -> Any:
    """One field of a backend's record (``KeyError`` names a record that lacks it)."""
    record = get(name)
    if key not in record:
        raise KeyError(f"backend {name!r} has no {key!r} in plugins/module_utils/backends/{name}.py")
    return record[key]


def missing_fields(record: Dict[str, Any]) -> List[str]:
    """The fields of :data:`FIELDS` a record lacks, and the ones it has that are not declared."""
    missing = [key for key in FIELDS if key not in record]
    unknown = [f"{key} (undeclared)" for key in record if key not in FIELDS]
    return missing + unknown


def driver_fact(name: str) -> Optional[str]:
    """The report fact of the backend's driver role, or ``None`` for a backend without a driver."""
    driver = field(name, "driver")
    return driver["fact"] if driver else None


def shows_device(name: str, facts: Dict[str, Any]) -> bool:
    """Does the probe show the backend's device, on the PCI bus or through its tool?  (A backend without
    hardware shows none.)"""
    hardware = field(name, "hardware")
    if not hardware:
        return False
    return bool((facts.get("pci") or {}).get(hardware["pci_count"]) or (facts.get(hardware["section"]) or {}).get(hardware["devices"]))


def problem(name: str, facts: Dict[str, Any]) -> Optional[str]:
    """Why the probe contradicts a forced backend, or ``None``.

    The hardware decides, not the driver: the backend's device on the PCI bus is
    enough (the driver role installs the driver), so only a host with no such
    device at all is refused.  A backend without hardware runs anywhere, and
    without probe facts nothing can be said.
    """
    hardware = field(name, "hardware")
    if not facts or not hardware or shows_device(name, facts):
        return None
    device, tool = hardware["device"], hardware["tool"]
    summary = facts.get("summary") or {}
    probed = summary.get("backend") or "cpu"
    return (f"vllm_backend is {name}, but the probe found no {device} on the PCI bus or through {tool}: "
            f"{summary.get('backend_reason') or 'no accelerator'} (probed backend {probed}). Set vllm_backend to auto "
            f"or {probed}, or run the play against a host with an {device}")
