# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The building blocks of a fact's declared shape (fact_contract.py).

They sit apart from fact_contract.py so that a backend's class
(plugins/module_utils/backends/) can declare the keys of its probe section and
of its driver role's report fact, and fact_contract.py can build its shapes
from the backend registry without an import cycle.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Dict, Optional

STR = "str"
INT = "int"
FLOAT = "float"
BOOL = "bool"
LIST = "list"
DICT = "dict"
ANY = "any"

_PYTHON_TYPES = {
    STR: (str,),
    INT: (int,),
    FLOAT: (float, int),
    BOOL: (bool,),
    LIST: (list,),
    DICT: (dict,),
}


class Field:
    """One key of a fact.

    ``kind`` is one of STR, INT, FLOAT, BOOL, LIST, DICT, ANY.  ``keys`` is the
    declared sub-shape of a DICT (or of each element of a LIST of dicts);
    ``open_keys`` marks a DICT whose keys are data, not contract (engine
    arguments, raw KEY=VALUE files).  ``optional`` keys may be absent;
    ``nullable`` values may be None.
    """

    def __init__(self, kind: str, keys: Optional[Dict[str, "Field"]] = None, optional: bool = False,
                 nullable: bool = False, open_keys: bool = False, elements: Optional[str] = None) -> None:
        self.kind = kind
        self.keys = keys
        self.optional = optional
        self.nullable = nullable
        self.open_keys = open_keys
        self.elements = elements

    def __repr__(self) -> str:
        return f"Field({self.kind}{', optional' if self.optional else ''}{', nullable' if self.nullable else ''})"


def _f(kind, **kwargs):
    return Field(kind, **kwargs)


def _str(**kwargs):
    return Field(STR, **kwargs)


def _int(**kwargs):
    return Field(INT, **kwargs)


def _bool(**kwargs):
    return Field(BOOL, **kwargs)


def _nstr(**kwargs):
    return Field(STR, nullable=True, **kwargs)


def _strs(**kwargs):
    return Field(LIST, elements=STR, **kwargs)


def _dicts(keys, **kwargs):
    return Field(LIST, elements=DICT, keys=keys, **kwargs)


def _optional(kind, *names):
    return {name: Field(kind, optional=True) for name in names}


# One PCI function as plugins/module_utils/probe/pci.py lists it under a backend's section name.
PCI_FUNCTION = {
    "bus_id": _str(),
    "vendor_id": _str(),
    "device_id": _str(),
    "subsystem_vendor_id": _str(),
    "subsystem_device_id": _str(),
    "class": _str(),
    "numa_node": _int(nullable=True),
}
