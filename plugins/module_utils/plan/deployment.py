# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The deployment plan: every decision about one host's vLLM instance, made once, in Python.

``build_plan`` takes the probe (``kunpeng_accelerators``) and the request (the
vllm role's variables) and decides the backend (``auto`` resolved here and
nowhere else), the version-matrix row and its packages, whether the model fits
and with which engine options, and then what the roles execute: the engine's
virtualenv, the pip options, the final engine config with its bind address, the
service's devices, groups and environment, and the fingerprint of all of it.
Roles read these fields; they do not decide again.  ``kunpeng.vllm.vllm_plan``
is a thin module around it.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import hashlib
import json
import os
from typing import Any, Dict, List, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, compat_matrix, index_auth, service, engine_args as engine_options
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.rehearsal import rehearsal
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError


def _normalized(args: Dict[str, Any]) -> Dict[str, Any]:
    return {str(key).replace("-", "_"): value for key, value in (args or {}).items()}


def _compute_caps(facts: Dict[str, Any], visible: Optional[Dict[str, Any]]) -> List[str]:
    """Compute capabilities of the GPUs the instance uses (the visible ones when vllm_visible_devices names them)."""
    gpus = (visible or {}).get("devices") or (facts.get("nvidia") or {}).get("gpus") or []
    return [str(gpu["compute_cap"]) for gpu in gpus if gpu.get("compute_cap")]


def select(backend: str, params: Dict[str, Any], facts: Dict[str, Any], caps: List[str], notes: List[str]) -> Dict[str, Any]:
    """Row, packages and requirements for the backend (its ``select``, ``engine_version``, ``packages`` and
    ``install_steps``)."""
    summary_problems = (facts.get("summary") or {}).get("problems") or []
    notes.extend(f"Probe: {problem}" for problem in summary_problems)
    engine = backends.backend(backend)
    row, requirements, atlas = engine.select(params, facts, caps, notes)
    if not params["python_version"]:
        notes.append(f"Python version not given: the row needs Python {row['python_range']}.")
    series = params.get("atlas_series")
    return {"engine_version": engine.engine_version(row), "row": row,
            "packages": engine.packages(row, series), "requirements": requirements,
            "install_steps": engine.install_steps(row, (facts.get("cpu") or {}).get("architecture"), series),
            "atlas_install": atlas}


# dtype values that name the series' own dtype (vLLM's --dtype spellings).
_DTYPE_ALIASES = {"float16": ("float16", "half")}


def check_series_limits(series: Optional[str], limits: Dict[str, Any], model: Optional[Dict[str, Any]],
                        requested: Dict[str, Any]) -> None:
    """Refuse what an Atlas series cannot run (:data:`compat_matrix.SERIES_LIMITS`): an attention kind it has no
    backend for, a dtype other than its own."""
    attention = (model or {}).get("attention")
    if attention and attention in limits.get("no_attention", []):
        raise CompatError(f"{model['name']} uses {attention.upper()} attention, which vllm-ascend has no backend for on "
                          f"Atlas {series} (vllm_ascend/platform.py, backend_map_310); serve it on Atlas A2 or A3, or "
                          "choose a model without MLA")
    dtype = limits.get("dtype")
    if dtype and "dtype" in requested and str(requested["dtype"]).lower() not in _DTYPE_ALIASES.get(dtype, (dtype,)):
        raise CompatError(f"vllm_engine_args dtype {requested['dtype']}: Atlas {series} has no bf16 and vllm-ascend "
                          f"serves it in {dtype}; drop dtype or set it to {dtype}")


def _versions(backend: str, params: Dict[str, Any]) -> Dict[str, Optional[str]]:
    """Fold engine_version into vllm_version / vllm_ascend_version; empty strings mean "choose"."""
    target = backends.field(backend, "version_variable")
    versions = {name: params.get(name) or None for name in ("vllm_version", "vllm_ascend_version")}
    engine = params.get("engine_version") or None
    if engine:
        if versions[target] and compat_matrix.version_cmp(versions[target], engine) != 0:
            raise PlanError(f"engine_version {engine} and {target} {versions[target]} disagree; give one of them")
        versions[target] = engine
    return versions


# vLLM's ``--quantization`` values that quantize a 16-bit checkpoint's weights at load time, with the weight format
# the engine then holds (vllm/model_executor/layers/quantization/fp8.py: Fp8Config quantizes BF16/FP16 weights to
# FP8 on load).  Other methods (awq, gptq, ascend, ...) only name the checkpoint's own quantization, which
# config.json's quantization_config already describes.
ONLINE_QUANTIZATION = {"fp8": "fp8"}


def effective_weight_dtype(declared: str, quantization: Optional[str]) -> str:
    """The weight format the plan sizes: ``vllm_model_weight_dtype`` (``declared``) read together with
    ``vllm_engine_args.quantization``.

    ``quantization: fp8`` makes vLLM load the weights as FP8 whatever the checkpoint's dtype, so with ``auto`` the
    plan must size FP8, not the checkpoint's bf16 (a 70B model is ~68 GiB, not ~131 GiB).  A declared format that
    contradicts the engine's is refused: the plan would size one thing and the engine load another.
    """
    engine_fmt = ONLINE_QUANTIZATION.get(str(quantization).lower()) if quantization else None
    if engine_fmt is None or declared == engine_fmt:
        return declared
    if declared == "auto":
        return engine_fmt
    raise PlanError(f"vllm_engine_args.quantization {quantization} makes vLLM load {engine_fmt} weights but "
                    f"vllm_model_weight_dtype is {declared}; set vllm_model_weight_dtype to {engine_fmt} or auto, "
                    "or drop quantization from vllm_engine_args")


def load_model(params: Dict[str, Any], requested: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    config = params["model_config"]
    if params["model_config_path"]:
        try:
            with open(params["model_config_path"]) as handle:
                config = json.load(handle)
        except (OSError, ValueError) as exc:
            raise PlanError(f"cannot read {params['model_config_path']}: {exc}") from None
    declared = effective_weight_dtype(params["weight_dtype"], (requested or {}).get("quantization"))
    if config is not None:
        model = capacity.model_from_config(config)
        if declared != "auto":
            if model["weight_dtype"] == "fp8" and declared != "fp8":
                model["weight_dtype_reason"] = f"declared {declared} (the config says FP8)"
            else:
                model["weight_dtype_reason"] = "declared"
            model["online_quantization"] = declared == "fp8" and model["weight_dtype"] != "fp8"
            model["block_fp8"] = model["block_fp8"] and declared == "fp8"
            model["weight_dtype"] = declared
    elif params["params_b"]:
        if declared == "auto":
            raise PlanError("params_b needs weight_dtype (bf16, fp8, w8a8, int4, ...) or vllm_engine_args.quantization fp8")
        model = capacity.model_from_declared(params["params_b"], declared)
    else:
        return None
    if params["model_name"]:
        model["name"] = params["model_name"]
    return model


def hardware(backend: str, params: Dict[str, Any], facts: Dict[str, Any], visible: Optional[Dict[str, Any]],
             notes: List[str]) -> Dict[str, Any]:
    summary = facts.get("summary") or {}
    if visible:
        notes.append(f"Planned for the {visible['count']} visible device(s) {','.join(visible['ids'])} "
                     f"({visible['variable']}) of the host's {summary.get('device_count') or 'unknown number of'}.")
    elif params.get("visible_devices") and not backends.field(backend, "visible"):
        notes.append(f"vllm_visible_devices is not used on the {backend} backend.")
    return {
        "devices_per_node": params["devices_per_node"] or (visible or {}).get("count") or summary.get("device_count") or 0,
        "device_memory_mib": params["device_memory_mib"] or (visible or {}).get("memory_mib") or summary.get("min_device_memory_mib"),
        "host_memory_mib": params["host_memory_mib"] or summary.get("host_memory_mib") or (facts.get("cpu") or {}).get("memory_mib"),
        "nodes": params["nodes"],
    }


def resolve_backend(requested: str, facts: Dict[str, Any]) -> str:
    """``auto`` becomes the probe's backend; a forced backend is checked against the probe.  The only place that resolves it."""
    if requested == "auto":
        backend = (facts.get("summary") or {}).get("backend")
        if not backend:
            raise PlanError("backend auto needs the accelerators fact (kunpeng_accelerators); or set backend")
        return backend
    problem = backends.problem(requested, facts)
    if problem:
        raise CompatError(problem)
    return requested


def build_plan(params: Dict[str, Any]) -> Dict[str, Any]:
    """The whole decision; raises CompatError / PlanError for requests that cannot work."""
    facts = params["accelerators"] or {}
    backend = resolve_backend(params["backend"], facts)
    engine = backends.backend(backend)
    params = dict(params, atlas_series=engine.series(facts))
    params.update(_versions(backend, params))
    notes: List[str] = []
    plan: Dict[str, Any] = {"backend": backend, "driver": backends.field(backend, "driver")}
    visible = capacity.visible_devices(engine.visible, facts, params.get("visible_devices"))
    caps = _compute_caps(facts, visible)
    plan.update(select(backend, params, facts, caps, notes))
    release = plan["row"].get("vllm") or plan["row"].get("vllm_cpu")
    problems = engine_options.normalize_engine_args(params["requested_engine_args"], release)[1]
    if problems:
        raise PlanError("vllm_engine_args does not fit vLLM {}:\n- {}".format(release, "\n- ".join(problems)))
    requested = _normalized(params["requested_engine_args"])
    plan["rehearsal"] = rehearsal(requested, params.get("model_files"))
    model = load_model(params, requested)
    plan["fp8_mode"] = engine.fp8_mode(model["weight_dtype"] if model else None, caps)
    plan["atlas_series"] = params["atlas_series"]
    limits = compat_matrix.series_limits(params["atlas_series"])
    check_series_limits(params["atlas_series"], limits, model, requested)
    # A backend without compute capabilities (caps empty) may answer native too: the note names none then.
    lowest = min(caps, key=compat_matrix.version_key) if caps else None
    if plan["fp8_mode"] == "native":
        notes.append(f"FP8 runs natively: compute capability {lowest}." if lowest else "FP8 runs natively.")
    elif plan["fp8_mode"] == "weight_only":
        notes.append(f"FP8 runs weight-only (W8A16, Marlin kernels){f' on compute capability {lowest}' if lowest else ''}: "
                     "memory as FP8, compute in 16-bit, no FP8 speed-up.")
    hw = hardware(backend, params, facts, visible, notes)
    plan.update(fits=None, misfit=None, fixes=[], numbers={}, model=None)
    engine_args: Dict[str, Any] = {}
    result = None
    if model:
        plan["model"] = {key: model[key] for key in ("name", "model_type", "attention", "moe", "experts", "experts_per_token", "layers",
                                                     "heads", "kv_heads", "max_position_embeddings", "weight_dtype", "weight_dtype_reason")}
        options = dict(params, smaller_formats=backends.field(backend, "smaller_formats"),
                       multinode_moe=backends.field(backend, "multinode_moe"))
        # The served dtype first: the capacity check sizes weights and KV cache in it.
        dtype, reason = engine.serve_dtype(facts, model, requested)
        if dtype and "dtype" not in requested:
            engine_args["dtype"] = dtype
            notes.append(f"Served in {dtype}: {reason}.")
        sized = dict(requested, dtype=dtype) if dtype else requested
        result = engine.plan_capacity(model, hw, sized, options, notes)
        if result:
            engine_args = dict(engine_args, **result["engine_args"])
            plan.update(fits=result["fits"], numbers=result["numbers"], fixes=result.get("fixes") or [],
                        nodes_needed=result["nodes_needed"])
            plan["misfit"] = result["misfit"]
            if model["params"]["mtp"]:
                notes.append(f"The {round(model['params']['mtp'] / 1e9, 1)}B MTP (next-token prediction) parameters are only "
                             "loaded for MTP speculative decoding and are not counted.")
    engine_args = engine.engine_args(model, result, engine_args, hw, notes)
    if limits.get("dtype") and "dtype" not in requested:
        engine_args["dtype"] = limits["dtype"]
        notes.append(f"Atlas {params['atlas_series']} has no bf16: the engine runs with dtype {limits['dtype']}, as "
                     "vllm-ascend's recipes for it do.")
    if plan["rehearsal"]["skip_tokenizer_init"] and "skip_tokenizer_init" not in requested:
        engine_args["skip_tokenizer_init"] = True
    if plan["rehearsal"]["enabled"]:
        notes.append(f"Rehearsal without weights: {plan['rehearsal']['reason']}.")
    plan["engine_args"] = dict(engine_args, **requested)
    plan["notes"] = notes
    return plan


# --- what the vllm role executes ---------------------------------------------------------------

# The request: the vllm role's variables the execution fields depend on (without the vllm_ prefix), with
# the role's defaults.  The module's ``request`` option carries them.
REQUEST_DEFAULTS: Dict[str, Any] = {
    "architecture": "",
    "install_dir": "/opt/vllm",
    "instance_name": "",
    "install_method": "wheel",
    "source_url": "",
    "extra_packages": [],
    "wheelhouse_src": "",
    "wheelhouse_requirements": "",
    "reuse_host_torch": False,
    "pip_index_url": "",
    "pip_extra_index_urls": [],
    "pip_find_links": [],
    "pip_no_index": False,
    "pip_timeout": 120,
    "host": "127.0.0.1",
    "port": 8000,
    "cpu_omp_threads_bind": "auto",
    "cpu_kvcache_space_gib": 0,
    "model_dir": "",
    "model_source": "local",
    "model_src": "",
    "service_manager": "systemd",
    "cluster_group": "",
    "ready_check": True,
}

ARCHITECTURES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def architecture(request: Dict[str, Any], facts: Dict[str, Any]) -> str:
    """The wheel architecture (x86_64 or aarch64) from Ansible's fact, else the probe; refuses anything else."""
    raw = request.get("architecture") or (facts.get("cpu") or {}).get("architecture") or ""
    arch = ARCHITECTURES.get(raw)
    if not arch:
        raise PlanError(f"architecture {raw or 'unknown'} is not supported: vLLM wheels exist for x86_64 and aarch64 hosts")
    return arch


def pip_args(request: Dict[str, Any]) -> List[str]:
    """pip options every install step shares: timeout, index, extra indexes, find-links (the wheelhouse last)."""
    args = ["--timeout", str(request["pip_timeout"])]
    credentialed = [name for name, urls in (("pip_index_url", [request["pip_index_url"]]),
                                            ("pip_extra_index_urls", request["pip_extra_index_urls"]))
                    if any(index_auth.has_credentials(url) for url in urls)]
    if credentialed:
        # the plan's pip_args are a fact and pip's command line: credentials never go there (the vllm role hands
        # the planner the URLs without them and pip the credentials in a netrc file, index_auth.py)
        raise PlanError(f"request.{credentialed[0]} carries credentials (user:password@ or token@); give the URL without "
                        "them and the credentials in a netrc file (the vllm role does this for vllm_pip_index_url and "
                        "vllm_pip_extra_index_urls)")
    if request["pip_no_index"]:
        args.append("--no-index")
    if request["pip_index_url"]:
        args += ["--index-url", request["pip_index_url"]]
    args += [f"--extra-index-url={url}" for url in request["pip_extra_index_urls"]]
    links = list(request["pip_find_links"])
    if request["wheelhouse_src"]:
        links.append(wheelhouse_dir(request))
    args += [f"--find-links={link}" for link in links]
    return args


def wheelhouse_dir(request: Dict[str, Any]) -> str:
    """Where the controller's wheelhouse lands on the node."""
    return f"{request['install_dir']}/wheelhouse"


def _has_torch_source(request: Dict[str, Any], steps: Optional[List[Dict[str, Any]]] = None) -> bool:
    """Whether the install gets its torch from somewhere other than PyPI's default: the user's wheelhouse, links or
    indexes, a source build, or the row's own step (a CPU row's torch step adds the PyTorch CPU index itself and pins
    ``torch==...+cpu``, so a Kunpeng 920 CPU-only host plans out of the box)."""
    sources = (request["wheelhouse_src"], request["pip_find_links"], request["pip_index_url"], request["pip_extra_index_urls"])
    own = any("torch" in (step.get("vendor_index") or {}) for step in steps or [])
    return request["install_method"] == "source" or own or any(bool(source) for source in sources)


def check_request(backend: str, arch: str, request: Dict[str, Any], steps: Optional[List[Dict[str, Any]]] = None) -> None:
    """Refuse, before any change, requests the install cannot carry out."""
    if request["install_method"] == "source" and not request["source_url"]:
        raise PlanError("vllm_install_method=source needs vllm_source_url (git+https://...@<ref> or an sdist path/URL)")
    if request["install_method"] == "container":
        # The image carries its engine and torch: no pip step runs (plan/container.py plans the container).
        return
    backends.backend(backend).check_request(arch, request, _has_torch_source(request, steps))


def role_steps(backend: str, steps: List[Dict[str, Any]], request: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The plan's pip steps as the role runs them.

    A source build replaces the engine step's package with ``vllm_source_url`` and sets the registry's
    ``VLLM_TARGET_DEVICE``; a wheelhouse made by kunpeng.vllm.wheelhouse (``vllm_wheelhouse_requirements``)
    is installed as its one exact resolution, without resolving; ``vllm_extra_packages`` join the last step.
    Each step gets ``requirements`` (a file on the node, or '').
    """
    out = [dict(step, requirements="") for step in steps]
    if request["wheelhouse_requirements"]:
        out = [{"name": "wheelhouse", "packages": [], "pip_args": ["--no-deps"], "env": {},
                "vendor_index": {}, "source_builds": [],
                "requirements": f"{wheelhouse_dir(request)}/{request['wheelhouse_requirements']}"}]
    elif request["install_method"] == "source":
        target = backends.field(backend, "target_device")
        engine = out[backends.field(backend, "source_engine_step")]
        engine.update(packages=[request["source_url"]], env=dict(engine["env"], VLLM_TARGET_DEVICE=target))
    out[-1] = dict(out[-1], packages=out[-1]["packages"] + list(request["extra_packages"]))
    return out


def install_hooks(backend: str, request: Dict[str, Any]) -> Dict[str, List[str]]:
    """Task files of the vllm role that run before and after the pip steps (backend-specific work)."""
    before, after = [], []
    if request["reuse_host_torch"]:
        before.append("install_host_torch.yml")
    after.extend(backends.field(backend, "install_hooks_after"))
    return {"before": before, "after": after}


def engine_config(plan: Dict[str, Any], request: Dict[str, Any], served_model_name: str) -> Dict[str, Any]:
    """The engine config before the cluster part: bind address, port, served name and the plan's options, validated."""
    release = plan["release"]
    # The plan's options (the user's vllm_engine_args among them, e.g. served_model_name) win over the defaults.
    options, problems = engine_options.normalize_engine_args(plan["engine_args"], release)
    if not problems:
        defaults = {"host": request["host"], "port": request["port"], "served-model-name": served_model_name}
        config, problems = engine_options.normalize_engine_args(dict(defaults, **options), release)
    if problems:
        raise PlanError("vllm_engine_args does not fit vLLM {}:\n- {}".format(release, "\n- ".join(problems)))
    return config


GIB = 1024 ** 3
# Sources whose weights the role downloads onto the node (a local model is there already; a controller copy is
# checked against the controller's listing by kunpeng.vllm.install_state before it starts).
DOWNLOADED_SOURCES = ("huggingface", "modelscope", "url")
# Free space kept beyond what is planned (file system metadata, pip's caches and temporary files).
DISK_MARGIN = 0.10


def existing_ancestor(path: str) -> str:
    """The nearest directory of ``path`` that exists (what a later mkdir creates is on its file system)."""
    path = os.path.abspath(path or "/")
    while not os.path.isdir(path):
        path = os.path.dirname(path)
    return path


def free_bytes(path: str) -> int:
    stats = os.statvfs(existing_ancestor(path))
    return stats.f_bavail * stats.f_frsize


def disk_needs(backend: str, plan: Dict[str, Any], request: Dict[str, Any], venv: str) -> List[Dict[str, Any]]:
    """What the install will write where: the engine virtualenv (unless it is there) and downloaded weights."""
    needs = []
    if request["install_dir"] and not os.path.isdir(venv):
        needs.append({"what": f"the {backend} engine virtualenv", "path": request["install_dir"], "variable": "vllm_install_dir",
                      "bytes": int(backends.field(backend, "venv_gib") * GIB)})
    weights = (plan.get("numbers") or {}).get("weights_gib")
    model_dir = request["model_dir"]
    downloaded = request["model_source"] in DOWNLOADED_SOURCES
    present = bool(model_dir) and os.path.isfile(os.path.join(model_dir, "config.json"))
    if weights and model_dir and downloaded and not present:
        needs.append({"what": f"the model's weights ({weights} GiB)", "path": model_dir, "variable": "vllm_model_dir",
                      "bytes": int(float(weights) * GIB)})
    return needs


def check_disk(needs: List[Dict[str, Any]], free=free_bytes) -> None:
    """Refuse, before any change, a host whose file systems cannot take what the plan writes.

    Needs on the same file system add up; each gets ``DISK_MARGIN`` on top.
    """
    by_fs: Dict[str, List[Dict[str, Any]]] = {}
    for need in needs:
        by_fs.setdefault(str(os.stat(existing_ancestor(need["path"])).st_dev), []).append(need)
    for group in by_fs.values():
        wanted = int(sum(n["bytes"] for n in group) * (1 + DISK_MARGIN))
        available = free(group[0]["path"])
        if wanted > available:
            items = " and ".join(f"{n['what']} in {n['path']} ({n['variable']})" for n in group)
            raise PlanError(f"not enough disk for {items}: {wanted / GIB:.1f} GiB needed with a {DISK_MARGIN:.0%} margin, "
                            f"{available / GIB:.1f} GiB free on {existing_ancestor(group[0]['path'])}. Free space there, or "
                            f"point {' / '.join(sorted({n['variable'] for n in group}))} at a larger file system")


def venv_path(install_dir: str, engine_version: str, backend: str, extra_packages: List[str]) -> str:
    """The virtualenv of an instance: one per engine release, backend and set of ``vllm_extra_packages``.

    pip installs into the venv an instance runs, and instances of one release
    share it: with one name per release, adding a package for one instance
    changed another's running engine, and a rollback could not undo it.
    Extra packages make their own venv, named by a short digest of the set
    (order and repeats do not count); without any the name stays
    ``<version>-<backend>``, the venvs earlier releases made.
    """
    base = f"{install_dir}/{engine_version}-{backend}"
    extras = sorted({str(item).strip() for item in extra_packages or [] if str(item).strip()})
    if not extras:
        return base
    return f"{base}-x{hashlib.sha256(chr(10).join(extras).encode()).hexdigest()[:10]}"


def served_model_dir(request: Dict[str, Any]) -> str:
    """The directory the instance serves: a ``local`` source is served where it is, any other is put in model_dir.

    The converged-state check runs before the model step, so it must name the same directory the step serves
    and the record names; this is the one place that says which.
    """
    if request["model_source"] == "local":
        return request["model_src"]
    return request["model_dir"]


def fast_path(request: Dict[str, Any]) -> bool:
    """May a re-run skip the install and configure steps when the host still holds what this plan put there?

    Only where the converged state can be asked in full, and where skipping gives what a full converge gives:

    - a systemd unit whose activity is known and an endpoint the readiness gate asks (so the check can too);
    - launcher mode (``service_manager: none``): the role writes the launcher and starts nothing, so a full
      converge checks no liveness either; the record's inputs, files, virtualenv and model decide alone
      (:func:`fast_path_live` is false there);
    - a single-node instance (a multi-node instance converges as one group, in lockstep);
    - not container mode: the converged check reads the engine virtualenv, and the container's install steps
      are lookups that change nothing on a re-run.
    """
    if request["cluster_group"] or request["install_method"] == "container":
        return False
    if request["service_manager"] == "none":
        return True
    return bool(request["service_manager"] == "systemd" and request["ready_check"])


def fast_path_live(request: Dict[str, Any]) -> bool:
    """Does the fast path also ask the unit and the endpoint?  Only where a full converge starts and checks them."""
    return fast_path(request) and request["service_manager"] == "systemd"


def fingerprint_layers() -> List[str]:
    """Prefixes of the host variables the converged fingerprint covers: the base role's and every backend's driver
    role's (a host's inventory may hold several; each can change what a converge does before the vllm role)."""
    drivers = (backends.field(name, "driver") for name in backends.NAMES)
    return ["base"] + [driver["role"].rsplit(".", 1)[-1] for driver in drivers if driver]


def execution(plan: Dict[str, Any], request: Dict[str, Any], facts: Dict[str, Any]) -> Dict[str, Any]:
    """The fields the vllm role executes, added to a plan from :func:`build_plan`."""
    request = dict(REQUEST_DEFAULTS, **{k: v for k, v in (request or {}).items() if v is not None})
    backend = plan["backend"]
    arch = architecture(request, facts)
    check_request(backend, arch, request, plan.get("install_steps"))
    release = plan["row"].get("vllm") or plan["row"].get("vllm_cpu")
    plan = dict(plan, arch=arch, release=release)
    venv = venv_path(request["install_dir"], plan["engine_version"], backend, request["extra_packages"])
    check_disk(disk_needs(backend, plan, request, venv))
    fields = {
        "arch": arch,
        "release": release,
        "install_method": request["install_method"],
        "venv": venv,
        "wheelhouse_dir": wheelhouse_dir(request),
        "push_wheelhouse": bool(request["wheelhouse_src"]),
        "pip_args": pip_args(request),
        "role_steps": role_steps(backend, plan["install_steps"], request),
        "install_hooks": install_hooks(backend, request),
        "fast_path": fast_path(request),
        "fast_path_live": fast_path_live(request),
        "fingerprint_layers": fingerprint_layers(),
        "model_dir": served_model_dir(request),
        "engine_config": engine_config(plan, request, request["instance_name"] or (plan["model"] or {}).get("name") or ""),
    }
    return fields


def plan_host(params: Dict[str, Any]) -> Dict[str, Any]:
    """The module's whole decision: :func:`build_plan`, and with a ``request`` the fields the role executes.

    On the cpu backend the OpenMP binding and the KV-cache size are derived from the probe first
    (:mod:`cpu_runtime`), so the capacity check uses the KV space the service will get.
    """
    facts = params["accelerators"] or {}
    request = params.get("request")
    backend = resolve_backend(params["backend"], facts)
    cpu_env = None
    if request is not None:
        merged = dict(REQUEST_DEFAULTS, **{k: v for k, v in request.items() if v is not None})
        cpu_env = backends.backend(backend).runtime(facts, _normalized(params["requested_engine_args"]), merged)
    if cpu_env:
        params = dict(params, kv_cache_space_gib=cpu_env["kvcache_space_gib"])
    plan = build_plan(dict(params, backend=backend))
    if request is not None:
        plan.update(execution(plan, dict(request, instance_name=params.get("model_name") or request.get("instance_name") or ""),
                              facts))
        plan["cpu_runtime"] = cpu_env
        plan["service"] = service.service_spec(backends.get(backend), facts, params.get("visible_devices") or "", cpu_env,
                                               params.get("driver_facts"))
        plan["service"]["environment"].update(service.layout_environment(backends.get(backend), plan.get("engine_args") or {}))
    return plan
