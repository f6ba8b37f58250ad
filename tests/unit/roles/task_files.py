"""Read role task files and playbooks as data: the one walker of tasks, blocks and plays."""

import os

import yaml
from core_compat import trust_as_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def load(path):
    """YAML file ``path`` (relative to the repository root)."""
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle)


def tasks(node):
    """Every task dict in a task list or play list, blocks, rescues and handlers included."""
    if isinstance(node, list):
        for item in node:
            yield from tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            if key in node:
                yield from tasks(node[key])


def task(path, name):
    """The one task called ``name`` in ``path``."""
    (found,) = [t for t in tasks(load(path)) if t.get("name") == name]
    return found


def trusted(value):
    """Role files are trusted templates, as Ansible treats them when it loads them."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, list):
        return [trusted(item) for item in value]
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    return value
