"""Each role README's variables table is what scripts/role_readme.py writes from meta/argument_specs.yml.

The specs are the one declaration of a role's variables (test_argument_specs.py checks defaults/main.yml and
their use against them); the README table is generated, so it cannot drift. Run ``make role-readmes`` after
changing a spec.
"""

import os
import sys

import pytest

# The generator renders the specs' markup with antsibull-docs' parser (requirements-dev.txt); the venvs of
# scripts/core-versions.sh hold only ansible-core and the test tools, and the tables do not depend on the core.
pytest.importorskip("antsibull_docs_parser")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import role_readme  # noqa: E402


@pytest.mark.parametrize("role", role_readme.roles())
def test_readme_variables_table_is_the_generated_one(role):
    current, wanted = role_readme.expected(role)
    assert current == wanted, f"roles/{role}/README.md is out of date: run make role-readmes"


def test_every_role_is_covered():
    assert {"base", "vllm", "_common"} <= set(role_readme.roles())


def test_check_mode_names_a_stale_readme(monkeypatch, capsys):
    monkeypatch.setattr(role_readme, "expected", lambda role: ("old", "new"))
    monkeypatch.setattr(role_readme, "roles", lambda: ["base"])
    assert role_readme.main(["--check"]) == 1
    assert "roles/base/README.md" in capsys.readouterr().out


@pytest.mark.parametrize(("spec", "shown"), [
    ({"type": "str", "required": True}, "required"),
    ({"type": "str", "default": ""}, '`""`'),
    ({"type": "str", "default": "580"}, "`580`"),
    ({"type": "str", "default": "{{ vllm_host }}"}, "`{{ vllm_host }}`"),
    ({"type": "bool", "default": False}, "`false`"),
    ({"type": "int", "default": 8000}, "`8000`"),
    ({"type": "list", "default": ["OS", "everything"]}, "`[OS, everything]`"),
    ({"type": "dict", "default": {}}, "`{}`"),
    ({"type": "str", "default": "a|b"}, "`a\\|b`"),
    ({"type": "str", "default": "x`y"}, "``x`y``"),
    ({"type": "list"}, ""),
])
def test_default(spec, shown):
    assert role_readme.default(spec) == shown


@pytest.mark.parametrize(("spec", "shown"), [
    ({"type": "str"}, "str"),
    ({"type": "list", "elements": "dict"}, "list[dict]"),
    ({}, "str"),
])
def test_kind(spec, shown):
    assert role_readme.kind(spec) == shown


@pytest.mark.parametrize(("description", "cell"), [
    ("Port of C(vllm_port), see O(gateway_tls_key) and V(true).", "Port of `vllm_port`, see `gateway_tls_key` and `true`."),
    (["First M(kunpeng.vllm.vllm_plan).", "Second I(it) B(bold) U(https://x.org) L(t,https://y)."],
     "First `kunpeng.vllm.vllm_plan`.<br><br>Second *it* **bold** <https://x.org> [t](https://y)."),
    ("Ranges such as C(0-31|32-63),\n  wrapped.", "Ranges such as `0-31\\|32-63`, wrapped."),
    (None, ""),
])
def test_markdown(description, cell):
    assert role_readme.markdown(description) == cell


def test_markup_error_fails():
    with pytest.raises(ValueError, match="markup"):
        role_readme.markdown("C(unclosed")


def test_choices_follow_the_description():
    assert role_readme.description({"description": "Backend.", "choices": ["auto", "cpu"]}) == \
        "Backend. One of `auto`, `cpu`."


def test_table_one_per_entry_point_each_option_once():
    specs = {
        "drain": {"short_description": "Take it out.", "options": {
            "r_hosts": {"type": "list", "elements": "str", "required": True, "description": "Hosts."},
            "r_port": {"type": "int", "default": 1, "description": "Other text."}}},
        "main": {"short_description": "The role.", "options": {
            "r_port": {"type": "int", "default": 1, "description": "Port."}}},
    }
    assert role_readme.table(specs) == (
        "Entry point `main` (the role): The role.\n\n"
        "| Variable | Type | Default | Description |\n| --- | --- | --- | --- |\n"
        "| `r_port` | int | `1` | Port. |\n\n"
        "Entry point `drain` (`tasks_from: drain`): Take it out.\n\n"
        "| Variable | Type | Default | Description |\n| --- | --- | --- | --- |\n"
        "| `r_hosts` | list[str] | required | Hosts. |")
    assert role_readme.table({"main": specs["main"]}).startswith("| Variable |")


def test_update_replaces_only_between_the_markers():
    readme = f"# r\n\n## Variables\n\nProse.\n\n{role_readme.BEGIN}\nold\n{role_readme.END}\n\n## Next\n"
    assert role_readme.update(readme, "NEW") == \
        f"# r\n\n## Variables\n\nProse.\n\n{role_readme.BEGIN}\n\nNEW\n\n{role_readme.END}\n\n## Next\n"


@pytest.mark.parametrize("readme", [
    "no markers\n",
    f"{role_readme.END}\n{role_readme.BEGIN}\n",
    f"{role_readme.BEGIN}\n{role_readme.END}\n{role_readme.BEGIN}\n{role_readme.END}\n",
])
def test_update_refuses_a_readme_without_one_pair_of_markers(readme):
    with pytest.raises(ValueError, match="needs one line"):
        role_readme.update(readme, "NEW")
