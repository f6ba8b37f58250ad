"""Generate the AWX / Automation Controller survey specs of the collection's
job templates from the roles' meta/argument_specs.yml.

    python scripts/awx_survey.py            # (re)write docs/awx-surveys/*.json
    python scripts/awx_survey.py --check    # exit 1 when the committed files differ

Each question's type, choices and required flag come from the option's
argument spec, and the bounds of a number from the role's range rule in
plugins/module_utils/plan/input_check.py; only the question text is written
here.  Options whose value is a secret (``no_log: true``) become ``password``
questions.  Dicts, lists and booleans are left out: a survey answer is a
string or a number (a boolean answer would arrive as the string "false"), so
those belong in group variables or the launch prompt's Variables.

AWX sends every question's default with the job as an extra variable, which
beats the inventory's group_vars and host_vars.  So an optional question has
no default.  AWX has also sent an unanswered optional text question as ``""``
(awx#9525) or ``null`` (awx#16205), and no play can unset an extra variable:
so each question asks for ``survey_<variable>``, which no role reads, and the
entry playbooks first set ``<variable>`` from each answer that is not blank
(the ``survey_answers`` entry point of the internal ``_common`` role).  A
blank question leaves the inventory's value, else the role default, named in
the question's description.

The output is AWX's survey format (the body of
``POST /api/v2/job_templates/<id>/survey_spec/``): ``name``, ``description``
and ``spec``, a list of questions with ``question_name``,
``question_description``, ``variable``, ``type`` (text, integer, float,
multiplechoice, password), ``required``, ``default``, ``choices`` and
``min`` / ``max``.
"""

import argparse
import json
import os
import re
import sys

import collection_import
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "docs", "awx-surveys")

# AWX's own bounds for a new text question (its survey editor's defaults).
TEXT_MAX = 1024

# Survey -> (playbook, description, [(role, variable, question name), ...]).
SURVEYS = {
    "site": (
        "playbooks/site.yml",
        "Probe, prepare the OS, install the planned driver stack and engine, provision the model and serve it.",
        [
            ("vllm", "vllm_model_name", "Served model name (also names vllm-<name>.service)"),
            ("vllm", "vllm_model_source", "Where the model comes from"),
            ("vllm", "vllm_model_src", "Model path, archive URL or repository id"),
            ("vllm", "vllm_model_sha256", "Archive SHA-256 (url source)"),
            ("vllm", "vllm_model_revision", "Model revision (huggingface / modelscope)"),
            ("vllm", "vllm_model_weight_dtype", "Weight format, for the planner"),
            ("vllm", "vllm_model_params_b", "Parameters in billions (hub / url sources)"),
            ("vllm", "vllm_nodes", "Nodes one instance spans"),
            ("vllm", "vllm_backend", "Backend"),
            ("vllm", "vllm_version", "Engine version (empty: the newest row that fits)"),
            ("vllm", "vllm_install_method", "Install method"),
            ("vllm", "vllm_source_url", "Source requirement (source builds)"),
            ("vllm", "vllm_port", "API port"),
            ("vllm", "vllm_host", "Listen address"),
            ("vllm", "vllm_api_key", "API key clients must send"),
            ("vllm", "vllm_visible_devices", "Devices for this instance (empty: all)"),
            ("vllm", "vllm_cpu_kvcache_space_gib", "KV cache in GiB (cpu backend)"),
            ("vllm", "vllm_ready_timeout", "Seconds the service may take to become ready"),
            ("vllm", "vllm_ready_prompt", "Readiness prompt"),
            ("vllm", "vllm_ready_expect", "Text the answer must contain (empty: not checked)"),
            ("vllm", "vllm_hf_endpoint", "Hugging Face mirror"),
            ("vllm", "vllm_hf_token", "Hugging Face token"),
            ("vllm", "vllm_modelscope_token", "ModelScope token"),
            ("vllm", "vllm_pip_index_url", "pip index (mirror)"),
            ("base", "base_service_user", "Service account"),
        ],
    ),
    "upgrade": (
        "playbooks/upgrade.yml",
        "Rolling upgrade of the engine version, with automatic rollback; stops at the first failed host.",
        [
            ("vllm", "vllm_version", "New engine version (empty: the newest row that fits)"),
            ("vllm", "vllm_ready_timeout", "Seconds the new version may take to become ready"),
            ("vllm", "vllm_ready_expect", "Text the answer must contain (empty: not checked)"),
        ],
    ),
}

# AWX's own upper bound of an integer or float question without one.
NUMBER_MAX = 2 ** 31 - 1

SCALAR_TYPES = {"str": "text", "int": "integer", "float": "float"}


def number_bounds(role, variable):
    """[min, max] of a numeric question: the role's input_check range rule."""
    found = collection_import.module_utils("plan.input_check").bounds(role, variable)
    if found is None:
        raise ValueError(f"{variable} has no range rule in plugins/module_utils/plan/input_check.py; add one "
                         "(the survey's bounds come from there)")
    low, high = found
    return low, NUMBER_MAX if high is None else high


def load_options(root=ROOT):
    """{role: {variable: spec}} of every role's ``main`` entry point."""
    options = {}
    roles = os.path.join(root, "roles")
    for role in sorted(os.listdir(roles)):
        path = os.path.join(roles, role, "meta", "argument_specs.yml")
        if os.path.exists(path):
            with open(path) as f:
                specs = yaml.safe_load(f)["argument_specs"]
            if "main" in specs:
                options[role] = specs["main"].get("options", {})
    return options


def plain(text):
    """An argument-spec description as plain text (markup such as C(x) and O(x) dropped)."""
    if isinstance(text, list):
        text = " ".join(text)
    return re.sub(r"\b[A-Z]{1,2}\(([^)]*)\)", r"\1", text or "").strip()


def awx_type(spec):
    """The AWX question type of an option, or None when a survey cannot carry it."""
    kind = spec.get("type", "str")
    if spec.get("no_log"):
        return "password" if kind == "str" else None
    if kind == "str" and spec.get("choices"):
        return "multiplechoice" if "" not in spec["choices"] else None
    return SCALAR_TYPES.get(kind)


def _default(spec):
    """The option's default as a survey default; None when it is computed at run time."""
    default = spec.get("default")
    if isinstance(default, str) and ("{{" in default or "<" in default):
        return None
    return default


def survey_variable(variable):
    """The name a survey asks for: the playbooks map its answer onto ``variable`` unless it is blank."""
    return collection_import.module_utils("plan.survey_answers").SURVEY_PREFIX + variable


def question(role, variable, spec, question_name):
    """One survey question for ``variable`` of ``role`` from its argument spec and input_check rule."""
    # A choice the rule holds (vllm_backend: the backend registry's names) is a choice of the question too.
    held = collection_import.module_utils("plan.input_check").choices(role, variable)
    if held and not spec.get("choices"):
        spec = dict(spec, choices=list(held))
    kind = awx_type(spec)
    if kind is None:
        raise ValueError(f"{variable} ({spec.get('type', 'str')}) cannot be a survey question; "
                         "set it in group variables or the launch prompt's Variables")
    required = bool(spec.get("required", False))
    default = _default(spec)
    description = plain(spec.get("description"))
    if not required:
        unset = f"the role default {default}" if default not in (None, "") else "unset"
        description += f" Unanswered: the inventory's value, else {unset}."
    q = {
        "question_name": question_name,
        "question_description": description.strip(),
        "variable": survey_variable(variable),
        "type": kind,
        "required": required,
    }
    if kind in ("text", "password"):
        q.update(min=1 if required else 0, max=TEXT_MAX)
    elif kind == "multiplechoice":
        q.update(choices=list(spec["choices"]))
    else:
        q.update(zip(("min", "max"), number_bounds(role, variable)))
    # AWX sends every default with the job, over the inventory's values, so
    # only a required question (always sent) carries one.
    if required and default not in (None, ""):
        q["default"] = default
    return q


def build(name, options=None):
    """The survey spec ``name`` (a key of SURVEYS)."""
    options = load_options() if options is None else options
    playbook, description, questions = SURVEYS[name]
    spec = []
    for role, variable, question_name in questions:
        if variable not in options.get(role, {}):
            raise KeyError(f"{variable} is not an option of roles/{role}/meta/argument_specs.yml")
        spec.append(question(role, variable, options[role][variable], question_name))
    return {"name": f"kunpeng.vllm {name} ({playbook})", "description": description, "spec": spec}


def render(survey):
    """The committed text of a survey spec."""
    return json.dumps(survey, indent=2, sort_keys=False) + "\n"


# How AWX has sent an optional question left unanswered: not at all, as "" (awx#9525) or as null (awx#16205).
OMITTED = object()


def answers(survey, given, blank=OMITTED):
    """The extra variables AWX hands the job for the answers ``given``.

    As AWX does: an answered question takes the answer, an unanswered one its
    default (when it has one; otherwise the variable is not set, or set to
    ``blank`` when that is ``""`` or None, as some AWX releases did for text
    questions), integers and floats are converted, a required question must be
    answered and a multiple-choice answer must be one of the choices.
    """
    unknown = set(given) - {q["variable"] for q in survey["spec"]}
    if unknown:
        raise KeyError(f"not survey variables: {', '.join(sorted(unknown))}")
    extra_vars = {}
    for q in survey["spec"]:
        var = q["variable"]
        value = given.get(var, q.get("default"))
        if value in ("", None):
            if q["required"]:
                raise ValueError(f"{var} is required")
            if var not in given and blank is not OMITTED and q["type"] in ("text", "password"):
                extra_vars[var] = blank
                continue
            if value is None or q["type"] in ("integer", "float"):
                continue
        if q["type"] == "integer":
            value = int(value)
        elif q["type"] == "float":
            value = float(value)
        elif q["type"] == "multiplechoice" and value not in q["choices"]:
            raise ValueError(f"{var}: {value!r} is not one of {q['choices']}")
        if q["type"] in ("integer", "float") and not q["min"] <= value <= q["max"]:
            raise ValueError(f"{var}: {value} is outside {q['min']}..{q['max']}")
        extra_vars[var] = value
    return extra_vars


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed files")
    args = parser.parse_args(argv)
    options = load_options()
    stale = []
    os.makedirs(OUT_DIR, exist_ok=True)
    for name in SURVEYS:
        path = os.path.join(OUT_DIR, f"{name}.json")
        text = render(build(name, options))
        current = open(path).read() if os.path.exists(path) else None
        if current != text:
            stale.append(os.path.relpath(path, ROOT))
            if not args.check:
                with open(path, "w") as f:
                    f.write(text)
    if args.check and stale:
        print("out of date (run python scripts/awx_survey.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
