"""A role's platform data as kunpeng.vllm._common's set_vars loads it, for tests that need it without Ansible.

The layer names come from _common's own list (``__common_vars_layers``), rendered with the platform
facts as Ansible would, so the tests follow the role when the layering changes.
"""

import os

import jinja2
import yaml

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def read_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def layer_files(role, facts):
    """The role's vars files that set_vars loads for ``facts``, in load order (main.yml first)."""
    layers = read_yaml(os.path.join(ROLES, "_common", "vars", "main.yml"))["__common_vars_layers"]
    names = []
    for layer in layers:
        name = jinja2.Template(layer).render(ansible_facts=facts) + ".yml"
        if name not in names and os.path.isfile(os.path.join(ROLES, role, "vars", name)):
            names.append(name)
    return ["main.yml"] + names


def platform_vars(role, facts):
    """The role's platform variables for ``facts``: every layer, later ones overriding earlier ones."""
    data = {}
    for name in layer_files(role, facts):
        data.update(read_yaml(os.path.join(ROLES, role, "vars", name)))
    return data
