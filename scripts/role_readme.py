"""Write the variables table of each role's README.md from its meta/argument_specs.yml (make role-readmes).

A role's variables are declared once, in meta/argument_specs.yml (name, type, default, description: what
ansible-doc, the docsite and the argument validation read). The README shows the same in a table between two
markers; this script rewrites what lies between them, and tests/unit/roles/test_role_readmes.py fails when a
README differs from what it writes.

    python scripts/role_readme.py            # rewrite roles/*/README.md
    python scripts/role_readme.py --check    # exit 1 and name the READMEs that differ
"""

from __future__ import annotations

import argparse
import os
import sys

import yaml
from antsibull_docs_parser import dom
from antsibull_docs_parser.format import Formatter, format_paragraphs
from antsibull_docs_parser.parser import Context, parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROLES = os.path.join(ROOT, "roles")
BEGIN = "<!-- BEGIN variables: generated from meta/argument_specs.yml by scripts/role_readme.py (make role-readmes) -->"
END = "<!-- END variables -->"


def code(text: str) -> str:
    """A Markdown code span that holds ``text`` whatever backticks it has."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


class _MarkdownCell(Formatter):
    """Ansible markup (C(), O(), V(), M(), U(), L(), ...) as plain GitHub Markdown for one table cell."""

    def format_error(self, part: dom.ErrorPart) -> str:
        raise ValueError(f"Ansible markup error: {part.message}")

    def format_bold(self, part: dom.BoldPart) -> str:
        return f"**{part.text}**"

    def format_code(self, part: dom.CodePart) -> str:
        return code(part.text)

    def format_horizontal_line(self, part: dom.HorizontalLinePart) -> str:
        return " "

    def format_italic(self, part: dom.ItalicPart) -> str:
        return f"*{part.text}*"

    def format_link(self, part: dom.LinkPart) -> str:
        return f"[{part.text}]({part.url})"

    def format_module(self, part: dom.ModulePart, url: str | None) -> str:
        return code(part.fqcn)

    def format_rst_ref(self, part: dom.RSTRefPart) -> str:
        return part.text

    def format_url(self, part: dom.URLPart) -> str:
        return f"<{part.url}>"

    def format_text(self, part: dom.TextPart) -> str:
        return part.text

    def format_env_variable(self, part: dom.EnvVariablePart) -> str:
        return code(part.name)

    def format_option_name(self, part: dom.OptionNamePart, url: str | None) -> str:
        return code(part.name if part.value is None else f"{part.name}={part.value}")

    def format_option_value(self, part: dom.OptionValuePart) -> str:
        return code(part.value)

    def format_plugin(self, part: dom.PluginPart, url: str | None) -> str:
        return code(part.plugin.fqcn)

    def format_return_value(self, part: dom.ReturnValuePart, url: str | None) -> str:
        return code(part.name if part.value is None else f"{part.name}={part.value}")


def markdown(description) -> str:
    """An argument spec's description (a string or a list of paragraphs) as one Markdown table cell."""
    paragraphs = [description] if isinstance(description, str) else list(description or [])
    text = format_paragraphs(parse(paragraphs, Context()), _MarkdownCell(), par_sep="<br><br>")
    return " ".join(text.split()).replace("|", "\\|")


def kind(spec: dict) -> str:
    """The option's type as the table shows it: ``str``, ``list[str]``, ``dict``."""
    shown = spec.get("type", "str")
    return f"{shown}[{spec['elements']}]" if spec.get("elements") else shown


def default(spec: dict) -> str:
    """The option's default as YAML in a code span; ``required`` for a required option, empty for none."""
    if spec.get("required"):
        return "required"
    if "default" not in spec:
        return ""
    value = spec["default"]
    if value == "":
        shown = '""'
    elif isinstance(value, str):
        shown = value
    else:
        shown = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
        shown = shown.removesuffix("\n...").removesuffix("...").strip()
    return code(shown).replace("|", "\\|")


def description(spec: dict) -> str:
    """The option's description, with its choices when it has some."""
    text = markdown(spec.get("description"))
    if spec.get("choices"):
        choices = ", ".join(code(yaml.safe_dump(c, default_flow_style=True).removesuffix("\n...\n").strip())
                            for c in spec["choices"])
        text = f"{text} One of {choices.replace('|', chr(92) + '|')}.".strip()
    return text


def table(argument_specs: dict) -> str:
    """The variables section's generated part: one table per entry point, each option once.

    With one entry point (``main``) that is one table. With several, each entry point that declares an option
    not shown yet gets a line naming it (``tasks_from``) and a table of those options.
    """
    shown: set[str] = set()
    blocks = []
    several = len(argument_specs) > 1
    for entry, spec in sorted(argument_specs.items(), key=lambda item: item[0] != "main"):
        options = {name: option for name, option in (spec.get("options") or {}).items() if name not in shown}
        if not options:
            continue
        lines = []
        if several:
            how = "the role" if entry == "main" else f"`tasks_from: {entry}`"
            lines += [f"Entry point `{entry}` ({how}): {markdown(spec.get('short_description'))}", ""]
        lines += ["| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
        for name, option in options.items():
            lines.append(f"| `{name}` | {kind(option)} | {default(option)} | {description(option)} |")
        shown |= set(options)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def update(readme: str, generated: str, where: str = "README.md") -> str:
    """``readme`` with the text between its markers replaced by ``generated``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        raise ValueError(f"{where}: needs one line {BEGIN!r} and, after it, one line {END!r}")
    head, rest = readme.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{generated}\n\n{END}{tail}"


def roles() -> list[str]:
    return sorted(name for name in os.listdir(ROLES)
                  if os.path.isfile(os.path.join(ROLES, name, "meta", "argument_specs.yml")))


def expected(role: str) -> tuple[str, str]:
    """The role README's current text and the text it should have."""
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    with open(os.path.join(ROLES, role, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    return readme, update(readme, table(specs), f"roles/{role}/README.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a README differs")
    args = parser.parse_args(argv)
    stale = []
    for role in roles():
        current, wanted = expected(role)
        if current != wanted:
            stale.append(f"roles/{role}/README.md")
            if not args.check:
                with open(os.path.join(ROLES, role, "README.md"), "w", encoding="utf-8") as handle:
                    handle.write(wanted)
    if stale:
        print(("out of date: " if args.check else "rewritten: ") + ", ".join(stale))
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
