# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Which installer runs an install step of the engine virtualenv: uv or pip.

uv installs the same wheels in 0.56x of pip's time with ``--compile-bytecode``
(docs/benchmarks/2026-12-02-offline-install.md).  It is used only
where it installs exactly what pip would, from local files, with no secret on
its command line:

- the install reads no index (``vllm_pip_no_index``) and every find-links
  location is a local folder: uv resolves several indexes differently from
  pip (``--index-strategy first-index``), and an index URL or a find-links URL
  may carry credentials;
- the step adds no pip option but ``--no-deps`` (index options excepted: with
  ``--no-index`` pip ignores ``--index-url`` and ``--extra-index-url``, so the
  cpu steps' PyTorch CPU index changes nothing offline) and sets no
  environment, unless the variables only steer a source build
  (``VLLM_TARGET_DEVICE``) and every package is a requirement, not a path or
  URL: uv then runs with ``--no-build`` (wheels only), where those variables
  cannot matter;
- with the host's torch (``vllm_reuse_host_torch``), only a ``--no-deps``
  step: uv reads the virtualenv's own site-packages, not the folders a
  ``.pth`` file adds, so it would install torch again ("We don't read
  arbitrary locations from sys.path": github.com/astral-sh/uv issues 16541
  and 2500);
- a uv binary is on the node (from the wheelhouse's uv wheel, or on PATH).

Otherwise pip, which also stays when ``vllm_installer`` is ``pip``.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import index_auth

CHOICES = ("auto", "pip", "uv")
# Options of a step uv takes as they are.  uv pip install --help (uv 0.13.9):
# --no-deps, --no-index, --offline, --no-config, --find-links, --compile-bytecode
# ("Compile Python files to bytecode after installation"; pip compiles by default).
_UV_STEP_OPTIONS = ("--no-deps",)
# pip options that only name an index: ignored by pip under --no-index, never given to uv.
_INDEX_OPTIONS = ("--index-url", "--extra-index-url")
# Environment of a step that only a source build reads (compat_matrix sets it on engine steps).
_BUILD_ONLY_ENV = ("VLLM_TARGET_DEVICE",)


def _local(link):
    return "://" not in link or link.startswith("file://")


def _index_option(arg):
    """``--extra-index-url=URL`` and the like (the ``=`` form the plan writes)."""
    return arg.split("=", 1)[0] in _INDEX_OPTIONS and "=" in arg


def _wheels_only(step):
    """Whether uv may run ``step`` with ``--no-build``: its environment only steers a source build, and every
    package is a requirement specifier (no path, no URL), so no source build is asked for."""
    build_only = all(name in _BUILD_ONLY_ENV for name in step.get("env") or {})
    plain = all("/" not in package and "://" not in package for package in step.get("packages") or [])
    return build_only and plain


def uv_refusal(step, no_index, find_links, reuse_host_torch, uv):
    """Why uv cannot run ``step`` ('' when it can)."""
    if not uv:
        return "no uv on the node (no uv wheel in the wheelhouse, none on PATH)"
    if not no_index:
        return "the install reads a package index (vllm_pip_no_index is false)"
    if not all(_local(link) for link in find_links):
        return "a find-links location is a URL"
    other = [arg for arg in step.get("pip_args") or [] if arg not in _UV_STEP_OPTIONS and not _index_option(arg)]
    if other:
        return f"the step passes pip options uv is not given ({' '.join(other)})"
    if step.get("env") and not _wheels_only(step):
        return "the step sets environment variables (a source build or a vendor index)"
    if reuse_host_torch and "--no-deps" not in (step.get("pip_args") or []):
        return "the host's torch is reused and the step resolves dependencies (uv does not read the .pth file)"
    return ""


def uv_argv(uv, venv, step, find_links):
    """``uv pip install`` of ``step`` into ``venv``: offline, from ``find_links``, bytecode compiled (as pip does)."""
    argv = [uv, "pip", "install", "--python", f"{venv}/bin/python", "--no-index", "--offline", "--no-config",
            "--compile-bytecode"]
    for link in find_links:
        argv += ["--find-links", link]
    argv += [arg for arg in step.get("pip_args") or [] if arg in _UV_STEP_OPTIONS]
    if step.get("env"):
        # the step's variables only steer a source build: uv installs wheels only
        argv.append("--no-build")
    if step.get("requirements"):
        argv += ["--requirement", step["requirements"]]
    return argv + list(step.get("packages") or [])


_INDEX_OPTIONS = ("--index-url", "--extra-index-url", "--find-links", "-i", "-f")


def install_source(tool, pip_args, step_args, no_index, find_links):
    """Where a step's packages come from, as a progress line or a stall failure names it (no credentials).

    uv reads only the local find-links folders; pip reads the indexes and find-links locations of the plan's
    and the step's options, else the index of pip's own configuration (PyPI unless it names another).
    """
    if tool == "uv":
        return "the wheels in " + ", ".join(find_links)
    locations = []
    args = list(pip_args) + list(step_args or [])
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in _INDEX_OPTIONS and not eq and i + 1 < len(args):
            value = args[i + 1]
        elif name not in _INDEX_OPTIONS or not eq:
            continue
        location = index_auth.without_credentials(value)
        if location not in locations:
            locations.append(location)
    if not no_index and not any(arg.partition("=")[0] in ("--index-url", "-i") for arg in args):
        locations.append("the index of pip's configuration")
    return "pip from " + ", ".join(locations)


def choose(step, installer, no_index, find_links, reuse_host_torch, uv, venv):
    """``{"tool": "uv"|"pip", "argv": [...] (uv only, else []), "reason"}`` for one install step.

    ``installer``: ``vllm_installer`` (auto, pip or uv); ``uv`` the node's uv binary ('' when none).  With ``uv``
    a step uv cannot run is an error (``tool`` is '' and ``reason`` says why): the operator asked for uv.
    """
    if installer not in CHOICES:
        raise ValueError(f"installer must be one of {', '.join(CHOICES)}, not {installer!r}")
    if installer == "pip":
        return {"tool": "pip", "argv": [], "reason": "vllm_installer is pip"}
    refusal = uv_refusal(step, no_index, find_links, reuse_host_torch, uv)
    if refusal:
        return {"tool": "pip" if installer == "auto" else "", "argv": [], "reason": refusal}
    return {"tool": "uv", "argv": uv_argv(uv, venv, step, find_links), "reason": "offline install from local wheels"}


def find_links(pip_args):
    """The ``--find-links=`` locations of the plan's pip options, in order."""
    prefix = "--find-links="
    return [arg[len(prefix):] for arg in pip_args if arg.startswith(prefix)]


def plan_steps(steps, pip_args, installer, reuse_host_torch, uv, venv):
    """:func:`choose` for each of the plan's ``role_steps``, from its shared ``pip_args``; each step comes back
    with ``installer`` added."""
    no_index = "--no-index" in pip_args
    links = find_links(pip_args)
    out = []
    for step in steps:
        chosen = choose(step, installer, no_index, links, reuse_host_torch, uv, venv)
        chosen["source"] = install_source(chosen["tool"], pip_args, step.get("pip_args"), no_index, links)
        out.append(dict(step, installer=chosen))
    return out
