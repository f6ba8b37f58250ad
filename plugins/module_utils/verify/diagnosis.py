# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Turn what a host shows about a vLLM instance into findings: why it does not serve, and the fix.

The input is one dict of evidence, gathered read-only by kunpeng.vllm.vllm_diagnose (or, for the
readiness gate, only the journal lines kunpeng.vllm.vllm_ready already holds):

``log``
    The engine's log lines (the unit's journal, or the launcher's log file).
``kernel``
    Kernel messages (``journalctl -k`` or ``dmesg``): NVIDIA Xid, the OOM killer.
``api``
    ``{"models": {"status": int, "body": str}, "answer": str, "expect": str}``: what the API said.
``model_dir``
    ``{"path": str, "missing": [names]}``: files a served model directory must hold but does not.
``listeners``
    ``[{"port": int, "process": str, "pid": int}]``: who listens on which TCP port (``ss -ltnp``).
``service_pids``
    The pids in the instance's unit (its cgroup); a listener on ``port`` outside them holds the port.
``port``
    The port the instance serves on (``vllm_port``).
``disks``
    ``[{"mount": str, "use_percent": int}]`` for the model and state directories.
``devices``
    ``{"missing": [paths]}``: accelerator device nodes the backend needs and the host lacks.
``plan``
    The plan's numbers (``kunpeng_vllm_plan.numbers``): ``max_model_len_limit`` is the planner's figure.

Each signature is one function over that dict returning a finding or None.  A finding names the
evidence line, the cause and the fix, with the variable to change and, where the planner or the
engine computes it, the value.  Evidence is masked before it leaves this module: API keys, Ray
tokens and netrc credentials never reach a report.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, Optional

Finding = Dict[str, Any]
Evidence = Dict[str, Any]

# Severity orders the report first, then each signature's place in SIGNATURES (most likely first).
SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2}

# vLLM's KV cache is allocated in blocks of 16 tokens; a max_model_len the engine accepts is a
# multiple of it (plugins/module_utils/plan/capacity.py BLOCK).
KV_BLOCK = 16

_SECRET_PATTERNS = (
    # --api-key VALUE / --api-key=VALUE, and the same for Ray's and HF's tokens on a command line.
    (re.compile(r"(--(?:api-key|token|auth-token)[=\s]+)(['\"]?)[^\s'\",]+"), r"\1\2****"),
    # vLLM prints its parsed arguments: 'api_key': ['VALUE'] or api_key='VALUE'.
    (re.compile(r"((?:api_key|token)['\"]?\s*[:=]\s*\[?\s*['\"])[^'\"]+"), r"\1****"),
    (re.compile(r"(?i)(authorization:\s*bearer\s+)\S+"), r"\1****"),
    (re.compile(r"(?i)\b((?:VLLM_API_KEY|RAY_AUTH_TOKEN|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|MODELSCOPE_API_TOKEN)\s*[=:]\s*)\S+"),
     r"\1****"),
    # netrc: machine HOST login USER password SECRET
    (re.compile(r"(?i)\b(login|password)(\s+)\S+"), r"\1\2****"),
    # credentials inside a URL: scheme://user:secret@host
    (re.compile(r"(://[^/\s:@]+:)[^@\s/]+@"), r"\1****@"),
)


def mask(text: str) -> str:
    """Return ``text`` with API keys, tokens and credentials replaced by ``****``."""
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
    return text


# A dict key naming a secret (an engine config's api-key, a token, a password): its string value is masked whole.
_SECRET_KEY = re.compile(r"(?i)(api[-_]?key|token|password|secret)")


def mask_tree(value: Any) -> Any:
    """``value`` with every string in it masked (dicts and lists walked; a secret key's value replaced whole)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {key: "****" if isinstance(item, str) and item and _SECRET_KEY.search(str(key)) else mask_tree(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [mask_tree(item) for item in value]
    return value


def finding(sig_id: str, severity: str, evidence: str, cause: str, fix: str,
            variable: Optional[str] = None, value: Any = None) -> Finding:
    """Build one finding; the evidence line is masked and shortened to what a summary can show."""
    line = mask(evidence.strip())
    if len(line) > 400:
        line = line[:397] + "..."
    return {"id": sig_id, "severity": severity, "evidence": line, "cause": cause, "fix": fix,
            "variable": variable, "value": value}


def _lines(evidence: Evidence, *keys: str) -> Iterable[str]:
    for key in keys:
        for line in evidence.get(key) or []:
            yield str(line)


def _last_match(pattern: re.Pattern[str], lines: Iterable[str]):
    """Return the last (line, match) for ``pattern``: the newest start attempt is the one that counts."""
    hit = None
    for line in lines:
        m = pattern.search(line)
        if m:
            hit = (line, m)
    return hit


# --- memory ---------------------------------------------------------------------------------------

_KV_OLD = re.compile(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)")
_KV_NEW = re.compile(r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the available KV cache "
                     r"memory \(([\d.]+) GiB\)(?:\. Based on the available memory, the estimated maximum model length is (\d+))?")


def kv_cache_too_small(evidence: Evidence) -> Optional[Finding]:
    """The engine refused max_model_len because one full sequence's KV cache does not fit."""
    lines = list(_lines(evidence, "log"))
    hit = _last_match(_KV_NEW, lines) or _last_match(_KV_OLD, lines)
    if not hit:
        return None
    line, m = hit
    wanted = int(m.group(1))
    engine_max = int(m.group(2)) if m.re is _KV_OLD else (int(m.group(4)) if m.group(4) else None)
    plan_max = (evidence.get("plan") or {}).get("max_model_len_limit")
    candidates = [v for v in (engine_max, plan_max) if v]
    value = (min(candidates) // KV_BLOCK) * KV_BLOCK if candidates else None
    basis = []
    if engine_max:
        basis.append(f"the engine estimates {engine_max}")
    if plan_max:
        basis.append(f"the plan computed {plan_max}")
    fit = f" ({'; '.join(basis)} tokens fit)" if basis else ""
    lower = f" to {value}" if value else ""
    return finding(
        "kv_cache_too_small", "critical", line,
        f"max_model_len {wanted} needs more KV cache than the memory left after the weights{fit}",
        f"Lower vllm_engine_args.max_model_len{lower}, or give the KV cache more memory "
        "(vllm_engine_args.gpu_memory_utilization on GPU/NPU, vllm_cpu_kvcache_space_gib on CPU), or spread the "
        "model over more devices.",
        "vllm_engine_args.max_model_len", value)


_DERIVED_LEN = re.compile(r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len "
                          r"\((?:max_position_embeddings=)?([\d.]+)")


def max_model_len_beyond_model(evidence: Evidence) -> Optional[Finding]:
    """max_model_len asks for more positions than the model's config allows (vLLM refuses it at start)."""
    hit = _last_match(_DERIVED_LEN, _lines(evidence, "log"))
    if not hit:
        return None
    asked, derived = int(hit[1].group(1)), int(float(hit[1].group(2)))
    return finding(
        "max_model_len_beyond_model", "critical", hit[0],
        f"max_model_len {asked} is beyond the {derived} positions the model's config.json allows, so vLLM refuses "
        "to start (the plan refuses it too; the engine config was changed outside the role, or the model was "
        "replaced).",
        f"Set vllm_engine_args.max_model_len to {derived} or less and converge (site.yml), which rewrites the engine "
        "config. Do not set VLLM_ALLOW_LONG_MAX_MODEL_LEN: positions past the model's give wrong answers.",
        "vllm_engine_args.max_model_len", derived)


_OOM = re.compile(r"(?:CUDA|NPU) out of memory|OutOfMemoryError")
_LOADING = re.compile(r"load_model|create_weights|[Ll]oading (?:model )?weights|weight_loader|Failed to create .*weights")


def oom_loading_weights(evidence: Evidence) -> Optional[Finding]:
    """Device memory ran out while the weights were being placed, before any KV cache existed."""
    lines = list(_lines(evidence, "log"))
    hit = _last_match(_OOM, lines)
    if not hit or not any(_LOADING.search(line) for line in lines):
        return None
    return finding(
        "oom_loading_weights", "critical", hit[0],
        "Device memory ran out while loading the weights: this layout does not hold the model "
        "(or another process holds device memory).",
        "Spread the model over more devices (vllm_engine_args.tensor_parallel_size / pipeline_parallel_size; "
        "leave them unset and the plan picks the smallest layout that fits), serve a quantized checkpoint, "
        "and check nvidia-smi / npu-smi for other processes on the devices.",
        "vllm_engine_args.tensor_parallel_size")


# --- CUDA -----------------------------------------------------------------------------------------

_NO_KERNEL = re.compile(r"no kernel image is available for execution on the device")


def no_kernel_image(evidence: Evidence) -> Optional[Finding]:
    """torch/vLLM were built without this GPU's architecture."""
    hit = _last_match(_NO_KERNEL, _lines(evidence, "log"))
    if not hit:
        return None
    return finding(
        "no_kernel_image", "critical", hit[0],
        "The installed torch/vLLM build has no kernels for this GPU's compute capability "
        "(too new for the build, or one the build's CUDA dropped).",
        "Install a vLLM release (and its torch) built for this GPU: set vllm_version to one whose CUDA build "
        "lists the GPU's compute capability, or a wheelhouse built for it (vllm_wheelhouse_src).",
        "vllm_version")


_DRIVER_OLD = re.compile(r"NVIDIA driver on your system is too old \(found version (\d+)\)")


def driver_too_old(evidence: Evidence) -> Optional[Finding]:
    """The driver's CUDA version is older than the CUDA torch was built with."""
    hit = _last_match(_DRIVER_OLD, _lines(evidence, "log"))
    if not hit:
        return None
    found = int(hit[1].group(1))
    cuda = f"{found // 1000}.{(found % 1000) // 10}"
    return finding(
        "driver_too_old", "critical", hit[0],
        f"The NVIDIA driver supports CUDA {cuda} only; the engine's torch was built for a newer CUDA.",
        "Upgrade the driver (nvidia_driver_branch, with nvidia_driver_replace: true where the driver was not "
        "installed by this collection), or pin vllm_version to a release whose torch matches CUDA " + cuda + ".",
        "nvidia_driver_branch")


# --- Ascend ---------------------------------------------------------------------------------------

_NPU_INIT = re.compile(r"dcmi module initialize failed\. ret is (-?\d+)|Failed to infer device type|"
                       r"drvGetDevNum|Permission denied: '/dev/davinci")


def npu_not_accessible(evidence: Evidence) -> Optional[Finding]:
    """The NPUs are missing, taken by another process, or not readable by the service user."""
    missing = (evidence.get("devices") or {}).get("missing") or []
    hit = _last_match(_NPU_INIT, _lines(evidence, "log"))
    if not hit and not missing:
        return None
    line = hit[0] if hit else "missing device nodes: " + " ".join(missing)
    return finding(
        "npu_not_accessible", "critical", line,
        "The engine cannot open the NPUs: device nodes absent (driver not loaded), held by another "
        "process or container (dcmi -8005/-8020), or the service user is not in the driver's group.",
        "Check npu-smi info as root; load the driver (ascend role, reboot when it asks); stop what holds the "
        "devices or give this instance other ones (vllm_visible_devices); keep the service user in "
        "ascend_install_group (HwHiAiUser by default).",
        "vllm_visible_devices")


_CANN_LIB = re.compile(r"(lib(?:ascend_hal|hccl|ascendcl|atb|ge_runner|runtime)\.so)[^:]*: cannot open shared object file")


def cann_env_missing(evidence: Evidence) -> Optional[Finding]:
    """torch_npu cannot find CANN's libraries: set_env.sh was not applied to the service."""
    hit = _last_match(_CANN_LIB, _lines(evidence, "log"))
    if not hit:
        return None
    lib = hit[1].group(1)
    part = "NNAL (nnal/atb/set_env.sh)" if lib == "libatb.so" else (
        "the driver (driver/lib64)" if lib == "libascend_hal.so" else "the CANN toolkit (ascend-toolkit/set_env.sh)")
    return finding(
        "cann_env_missing", "critical", hit[0],
        f"{lib} is not on the service's library path: the environment of {part} is not applied.",
        "Re-run site.yml so the ascend role writes ascend_env_file and the unit reads it, or add the file to "
        "vllm_environment_files; install NNAL when libatb.so is the missing one.",
        "ascend_env_file")


_HCCL_PORT = re.compile(r"listen on ip\[[^\]]*\] and specific port\[(\d+)\] fail")


def hccl_port_clash(evidence: Evidence) -> Optional[Finding]:
    """Two HCCL users on one host want the same listening port."""
    hit = _last_match(_HCCL_PORT, _lines(evidence, "log"))
    if not hit:
        return None
    return finding(
        "hccl_port_clash", "critical", hit[0],
        f"HCCL could not listen on port {hit[1].group(1)}: another instance on this host (or a stale engine "
        "process) already uses it.",
        "Stop the stale process, or give each instance on the host its own devices (vllm_visible_devices) and "
        "its own HCCL_IF_BASE_PORT (vllm_environment).",
        "vllm_environment")


_HCCL_TIMEOUT = re.compile(r"EI0006|Getting socket times out|wait socket establish timeout|"
                           r"Watchdog caught collective operation timeout")


def hccl_timeout(evidence: Evidence) -> Optional[Finding]:
    """A collective never completed: a peer rank is down, late or unreachable."""
    hit = _last_match(_HCCL_TIMEOUT, _lines(evidence, "log"))
    if not hit:
        return None
    return finding(
        "hccl_timeout", "error", hit[0],
        "An HCCL connection or collective timed out: another rank failed, started late, or its NPU network "
        "link is down.",
        "Diagnose the other members first (their first finding is the cause); check hccn_tool -i N -link -g; "
        "when members start far apart, raise HCCL_CONNECT_TIMEOUT in vllm_environment.",
        "vllm_environment")


# --- Ray ------------------------------------------------------------------------------------------

_RAY_SOCKET = re.compile(r"AF_UNIX path length cannot exceed (\d+) bytes: '([^']*)'")


def ray_socket_path_too_long(evidence: Evidence) -> Optional[Finding]:
    """Ray's session directory is too deep for a Unix socket path."""
    hit = _last_match(_RAY_SOCKET, _lines(evidence, "log"))
    if not hit:
        return None
    return finding(
        "ray_socket_path_too_long", "critical", hit[0],
        f"Ray's socket path is longer than the {hit[1].group(1)} bytes a Unix socket allows.",
        "Point Ray at a short temporary directory (RAY_TMPDIR in vllm_environment, e.g. /tmp/ray), not one "
        "below a long cache or job path.",
        "vllm_environment")


_RAY_GCS = re.compile(r"Failed to connect to GCS at address (\S+) within")


def ray_head_unreachable(evidence: Evidence) -> Optional[Finding]:
    """A Ray member cannot reach the head's GCS port."""
    hit = _last_match(_RAY_GCS, _lines(evidence, "log"))
    if not hit:
        return None
    return finding(
        "ray_head_unreachable", "critical", hit[0],
        f"This member cannot reach the Ray head at {hit[1].group(1)}: the head is down, the address is "
        "wrong, or a firewall drops the port.",
        "Start the head first (diagnose it), check the cluster address (vllm_cluster_network / "
        "vllm_cluster_interface) and open vllm_cluster_ports between the members.",
        "vllm_cluster_network")


_RAY_TOKEN = re.compile(r"InvalidAuthToken: Authentication token is missing or incorrect(\. Note: RAY_AUTH_MODE is currently '(\w+)')?")


def ray_token_refused(evidence: Evidence) -> Optional[Finding]:
    """The Ray head refuses this member's (or client's) token, or the member runs without token mode."""
    hit = _last_match(_RAY_TOKEN, _lines(evidence, "log"))
    if not hit:
        return None
    if hit[1].group(2):
        cause = (f"The Ray head requires token authentication and this member runs Ray with RAY_AUTH_MODE "
                 f"'{hit[1].group(2)}': its unit or environment predates the cluster's token.")
    else:
        cause = "The Ray head refuses this member's token: the member holds a token other than the head's."
    return finding(
        "ray_token_refused", "critical", hit[0], cause,
        "Converge the whole cluster again (site.yml on every member, head first): the role copies the head's token "
        "to <vllm_config_dir>/<instance>.ray-token on each member (0600, the service user) and writes "
        "RAY_AUTH_MODE=token into the Ray unit. Do not turn authentication off to get past it.",
        "vllm_config_dir")


# --- host and API ---------------------------------------------------------------------------------

_ADDR_IN_USE = re.compile(r"\[Errno 98\]|address already in use", re.IGNORECASE)


def _foreign(listener: Dict[str, Any], service_pids: Optional[List[int]]) -> bool:
    """Whether a listener belongs to something other than the instance's unit.

    With the unit's pids known (its cgroup) that decides; without them, a process named like the engine
    is taken to be the engine.
    """
    if not listener.get("process"):
        return False
    if service_pids is not None:
        return listener.get("pid") not in service_pids
    return "vllm" not in listener["process"]


def port_in_use(evidence: Evidence) -> Optional[Finding]:
    """Another process holds the instance's port."""
    hit = _last_match(_ADDR_IN_USE, _lines(evidence, "log"))
    port = evidence.get("port")
    on_port = [item for item in evidence.get("listeners") or [] if port and item.get("port") == port]
    holder = next((item for item in on_port if _foreign(item, evidence.get("service_pids"))), None)
    if not hit and not holder:
        return None
    who = f" ({holder['process']}, pid {holder.get('pid')}, listens on it)" if holder else ""
    line = hit[0] if hit else f"port {port} held by {holder['process']}"
    return finding(
        "port_in_use", "critical", line,
        f"Port {port or '?'} is already taken by another process{who}, so the API server cannot bind.",
        "Stop that process, or serve this instance on a free port (vllm_port).",
        "vllm_port", None)


_TOKENIZER = re.compile(r"No tokenizer file found in directory|Can't load tokenizer for|"
                        r"does not appear to have a file named|No such file or directory: '[^']*config\.json'")


def model_dir_incomplete(evidence: Evidence) -> Optional[Finding]:
    """The model directory lacks its config, tokenizer or weights."""
    model_dir = evidence.get("model_dir") or {}
    missing = model_dir.get("missing") or []
    hit = _last_match(_TOKENIZER, _lines(evidence, "log"))
    if not missing and not hit:
        return None
    where = model_dir.get("path") or "the model directory"
    line = hit[0] if hit else f"{where}: missing {', '.join(missing)}"
    gone = f" (missing {', '.join(missing)})" if missing else ""
    return finding(
        "model_dir_incomplete", "critical", line,
        f"{where} is incomplete{gone}: a download was interrupted, or the files were removed.",
        "Fetch the model again: re-run site.yml (vllm_model_source / vllm_model_src; with vllm_model_verify: true "
        "the role checks every file).",
        "vllm_model_src")


def api_key_mismatch(evidence: Evidence) -> Optional[Finding]:
    """The server answers but refuses the key the controller holds."""
    models = (evidence.get("api") or {}).get("models") or {}
    if models.get("status") != 401:
        return None
    return finding(
        "api_key_mismatch", "critical", f"GET /v1/models: HTTP 401 {models.get('body') or ''}",
        "The server refuses the API key the controller holds: the key on the host was changed, or the "
        "controller's copy is stale.",
        "Set vllm_api_key (or vllm_api_key_controller_file) to the key the host serves with, or re-run "
        "site.yml so both sides hold the same key.",
        "vllm_api_key")


def answer_check_failed(evidence: Evidence) -> Optional[Finding]:
    """The server answers, but not what vllm_ready_expect asks for."""
    api = evidence.get("api") or {}
    answer, expect, problem = api.get("answer"), api.get("expect"), api.get("problem")
    if answer is None or not (problem or (expect and expect.lower() not in answer.lower())):
        return None
    judged = problem or f"the answer {answer!r} does not contain {expect!r}"
    return finding(
        "answer_check_failed", "error", f"answer: {answer!r}",
        f"The model answers, but {judged}: wrong weights, wrong dtype or chat template, or a rehearsal's "
        "random weights.",
        "Check the served model (vllm_model_src, vllm_engine_args.dtype), or correct vllm_ready_expect.",
        "vllm_ready_expect")


_NO_SPACE = re.compile(r"No space left on device")
DISK_FULL_PERCENT = 98


def disk_full(evidence: Evidence) -> Optional[Finding]:
    """A file system the engine writes to is full."""
    hit = _last_match(_NO_SPACE, _lines(evidence, "log", "kernel"))
    full = [d for d in evidence.get("disks") or [] if (d.get("use_percent") or 0) >= DISK_FULL_PERCENT]
    if not hit and not full:
        return None
    line = hit[0] if hit else ", ".join(f"{d['mount']} {d['use_percent']}% used" for d in full)
    mounts = f" ({', '.join(d['mount'] for d in full)})" if full else ""
    return finding(
        "disk_full", "critical", line,
        f"A file system the engine needs is full{mounts}.",
        "Free space there (old models under the model directory, old backups in vllm_backup_dir, the cache "
        "in vllm_cache_dir), or move the model directory (vllm_model_dir) to a larger disk.",
        "vllm_model_dir")


_OOM_KILL = re.compile(r"Out of memory: Killed process (\d+) \(([^)]*)\)")


def oom_killer(evidence: Evidence) -> Optional[Finding]:
    """The kernel killed a process for host memory."""
    hit = _last_match(_OOM_KILL, _lines(evidence, "kernel", "log"))
    if not hit:
        return None
    return finding(
        "oom_killer", "critical", hit[0],
        f"The kernel's OOM killer killed {hit[1].group(2)} (pid {hit[1].group(1)}): the host ran out of memory.",
        "Give the engine less host memory to use (on CPU lower vllm_cpu_kvcache_space_gib; on GPU/NPU lower "
        "vllm_engine_args.max_num_seqs or swap space), or stop what else uses the host's memory.",
        "vllm_cpu_kvcache_space_gib")


_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+)")
# Xids NVIDIA documents as hardware or bus faults that need a reset or service, not a config change.
_XID_HARDWARE = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120}


def nvidia_xid(evidence: Evidence) -> Optional[Finding]:
    """The NVIDIA driver logged an Xid error for a GPU."""
    hit = _last_match(_XID, _lines(evidence, "kernel", "log"))
    if not hit:
        return None
    xid = int(hit[1].group(2))
    hardware = xid in _XID_HARDWARE
    kind = ": a hardware or bus fault (79: fallen off the bus)." if hardware else ": a driver-reported GPU error."
    return finding(
        "nvidia_xid", "critical" if hardware else "error", hit[0],
        f"GPU {hit[1].group(1)} reported Xid {xid}{kind}",
        "Look the Xid up in NVIDIA's Xid catalogue; for hardware Xids drain the host, reset the GPU or reboot, "
        "and keep it out of service (vllm_visible_devices) until it is repaired.",
        "vllm_visible_devices")


def api_not_answering(evidence: Evidence) -> Optional[Finding]:
    """The API does not answer /health, and nothing else here says why (the last resort, least specific)."""
    health = (evidence.get("api") or {}).get("health")
    if health is None or health.get("status") == 200:
        return None
    seen = f"HTTP {health['status']}" if health.get("status") else (health.get("body") or "no answer")
    return finding(
        "api_not_answering", "warning", f"GET /health: {seen}",
        "The API does not answer /health; no known failure signature explains it.",
        "Read the engine's last lines and the unit's state in the report; when the instance is not deployed, "
        "run site.yml (vllm_instance_name names the instance).",
        "vllm_instance_name")


# Most likely first: a refused start explains everything after it; an API symptom explains least.
SIGNATURES: List[Callable[[Evidence], Optional[Finding]]] = [
    port_in_use,
    model_dir_incomplete,
    kv_cache_too_small,
    max_model_len_beyond_model,
    oom_loading_weights,
    no_kernel_image,
    driver_too_old,
    npu_not_accessible,
    cann_env_missing,
    hccl_port_clash,
    ray_socket_path_too_long,
    ray_head_unreachable,
    ray_token_refused,
    disk_full,
    oom_killer,
    nvidia_xid,
    hccl_timeout,
    api_key_mismatch,
    answer_check_failed,
    api_not_answering,
]


def gate_evidence(journal: Optional[List[str]], details: Dict[str, Any], expect: Optional[str] = None) -> Evidence:
    """The evidence kunpeng.vllm.vllm_ready already holds when its wait fails.

    ``details`` are the failure's details (verify/vllm_http.py VllmNotReady): ``status`` when the API
    refused the key, ``answer`` when the answer check failed.  The gate reads /v1/models before it asks
    for an answer, and both carry the same key, so a refusal is the models endpoint's.
    """
    api: Dict[str, Any] = {}
    if details.get("status"):
        api["models"] = {"status": details["status"]}
    if details.get("answer") is not None:
        api.update(answer=details["answer"], expect=expect, problem=details.get("problem"))
    return {"log": list(journal or []), "api": api}


def diagnose(evidence: Evidence) -> List[Finding]:
    """Return every finding for ``evidence``, most likely cause first (empty when nothing matches)."""
    found = [(rank, f) for rank, sig in enumerate(SIGNATURES) for f in [sig(evidence)] if f]
    found.sort(key=lambda item: (SEVERITY_ORDER[item[1]["severity"]], item[0]))
    return [item for _rank, item in found]


def summary(findings: List[Finding]) -> str:
    """One line per finding, most likely first; what a gate's failure message or AWX output shows."""
    if not findings:
        return "no known failure signature matched"
    return "\n".join(f"{i}. [{f['id']}] {f['cause']} Fix: {f['fix']} Evidence: {f['evidence']}"
                     for i, f in enumerate(findings, 1))
