"""Capture the ``vllm serve`` option names of each vLLM release in the version matrix.

For every vLLM version the matrix rows name (CPU, CUDA and Ascend rows), this
downloads the release's sdist from the package index (``pip download --no-deps
--no-binary :all: vllm==X``) and reads its argument parser without running it:

* every ``"--long-name"`` string literal passed to ``add_argument`` in
  ``vllm/engine/arg_utils.py``, the OpenAI frontend's ``cli_args.py`` (wherever
  the release keeps it: the file that defines ``make_arg_parser``) and
  ``vllm/entrypoints/cli/serve.py``;
* the fields of the frontend's argument dataclasses (``FrontendArgs`` and its
  bases), which vLLM turns into ``--field-name`` flags.

The result is written as ``plugins/module_utils/plan/engine_options.py`` (module_utils
must be Python to travel with the modules).  ``--check FILE VERSION`` compares
the extractor with a captured ``vllm serve --help=all`` option list instead.

Usage:
  scripts/matrix/capture-engine-options.py [--cache DIR] [--output FILE]
  scripts/matrix/capture-engine-options.py --check tests/unit/fixtures/vllm/serve-options-0.32.0.txt 0.32.0
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import tarfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdists import CACHE, ROOT, matrix_versions, module_header, releases_function, sdist  # noqa: E402

FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
# Options of the argparse machinery itself, not serve options a config file can set.
NOT_OPTIONS = {"help"}


def parser_sources(archive):
    """{relative path: source} of the files that define `vllm serve`'s parser."""
    found = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name.split("/", 1)[-1]
            if not name.endswith(".py") or not name.startswith("vllm/"):
                continue
            wanted = name in ("vllm/engine/arg_utils.py", "vllm/entrypoints/cli/serve.py")
            if not wanted and name.startswith("vllm/entrypoints/") and name.endswith("cli_args.py"):
                wanted = True
            if wanted:
                text = tar.extractfile(member).read().decode("utf-8")
                if name.endswith("cli_args.py") and "def make_arg_parser" not in text and "FrontendArgs" not in text:
                    continue
                found[name] = text
    return found


def _flags_in_calls(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and FLAG.match(arg.value):
                    names.add(arg.value[2:])
    return names


def _dataclass_fields(tree):
    """Fields of *FrontendArgs classes and their bases defined in the same file."""
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    names = set()

    def fields(cls, seen):
        if cls.name in seen:
            return
        seen.add(cls.name)
        for base in cls.bases:
            base_name = getattr(base, "id", None)
            if base_name in classes:
                fields(classes[base_name], seen)
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if "ClassVar" in ast.dump(item.annotation) or item.target.id.startswith("_"):
                    continue
                names.add(item.target.id.replace("_", "-"))

    for name, cls in classes.items():
        if name.endswith("FrontendArgs"):
            fields(cls, set())
    return names


def extract(sources):
    """The long option names `vllm serve` accepts, from the parser's sources."""
    names = set()
    for path, text in sources.items():
        tree = ast.parse(text)
        names |= _flags_in_calls(tree)
        if path.endswith("cli_args.py"):
            names |= _dataclass_fields(tree)
    return names - NOT_OPTIONS


def _wrapped(names, indent):
    return [indent + line for line in textwrap.wrap(" ".join(sorted(names)), width=110, break_on_hyphens=False)]


def render(options):
    """The module text: the oldest release's options in full, then each release as changes to the one before."""
    lines = module_header("""Long option names of ``vllm serve`` per vLLM release, without dashes (generated; do not edit).

Read from each release's sdist on PyPI by ``scripts/matrix/capture-engine-options.py``
(its docstring says how).  The oldest release is listed in full, each later
one as the names it adds to and removes from the release before it.
""")
    versions = list(options)
    lines.append(f'_FIRST = "{versions[0]}"')
    lines.append('_FIRST_OPTIONS = """')
    lines += _wrapped(options[versions[0]], "    ")
    lines.append('"""')
    lines.append("")
    lines.append("# version: (added, removed)")
    lines.append("_CHANGES = [")
    for previous, version in zip(versions, versions[1:]):
        lines.append(f'    ("{version}", """')
        lines += _wrapped(options[version] - options[previous], "        ")
        lines.append('    """, """')
        lines += _wrapped(options[previous] - options[version], "        ")
        lines.append('    """),')
    lines.append("]")
    lines += releases_function("frozenset(_FIRST_OPTIONS.split())",
                               "(current | frozenset(added.split())) - frozenset(removed.split())")
    lines += ["OPTIONS_BY_RELEASE = _releases()", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=CACHE)
    parser.add_argument("--output", default=os.path.join(ROOT, "plugins", "module_utils", "engine_options.py"))
    parser.add_argument("--check", nargs=2, metavar=("HELP_LIST", "VERSION"))
    parser.add_argument("versions", nargs="*")
    args = parser.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    if args.check:
        listed, version = args.check
        with open(listed) as handle:
            real = {line.strip() for line in handle if line.strip() and not line.startswith("#")}
        got = extract(parser_sources(sdist(version, args.cache)))
        print(f"vllm {version}: {len(got)} extracted, {len(real)} in {os.path.basename(listed)}")
        print("only extracted:", " ".join(sorted(got - real)) or "-")
        print("only in --help=all:", " ".join(sorted(real - got)) or "-")
        return 0 if got == real else 1
    versions = args.versions or matrix_versions()
    options = {}
    for version in versions:
        options[version] = extract(parser_sources(sdist(version, args.cache)))
        print(f"vllm {version}: {len(options[version])} options", file=sys.stderr)
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(render(options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
