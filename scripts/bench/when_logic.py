"""Share of `when:` clauses that carry logic, over roles/ and playbooks/.

A clause is one `when:` string, or one item of a `when:` list.  It carries
logic when, outside its string literals, it has ` and `, ` or ` or a Jinja
filter (`|`): the decision then lives in YAML instead of in the Python that
plans the role.  Every YAML file under roles/ and playbooks/ is read (tasks,
handlers, blocks and their rescue/always, plays' pre/post tasks, nested at any
depth); the worst files come last.  Only the standard library and PyYAML.

    python scripts/bench/when_logic.py [--root DIR] [--top N] [--json]
"""

import argparse
import json
import os
import re
import sys

import yaml

# A string literal in a Jinja expression: its content is data, not logic.
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
# `and` / `or` as words (a newline or several spaces count as the space), or
# a filter bar that is not part of `||` (no such operator in Jinja; kept apart
# so a shell snippet quoted without quotes is not counted twice).
_LOGIC = re.compile(r"\s(and|or)\s|\|")

SEARCHED = ("roles", "playbooks")


def carries_logic(clause):
    """True when one when-clause has `and`, `or` or a filter outside its string literals."""
    if isinstance(clause, bool) or clause is None:
        return False
    text = " " + _STRING.sub("''", str(clause)) + " "
    return bool(_LOGIC.search(text))


def clauses(when):
    """The clauses of one `when:` value: each list item is one, a scalar is one."""
    if isinstance(when, list):
        return list(when)
    return [when]


def when_values(node):
    """Every `when:` value in a parsed YAML document, at any depth (tasks, blocks, handlers)."""
    if isinstance(node, dict):
        if "when" in node and isinstance(node.get("when"), (str, bool, list)):
            yield node["when"]
        for value in node.values():
            yield from when_values(value)
    elif isinstance(node, list):
        for item in node:
            yield from when_values(item)


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads Ansible's own tags (!unsafe, !vault) as plain scalars."""


def _any_tag(loader, _suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_Loader.add_multi_constructor("!", _any_tag)


def count_text(text):
    """(clauses, clauses with logic) of one YAML file's text."""
    total = logic = 0
    for document in yaml.load_all(text, Loader=_Loader):
        for when in when_values(document):
            for clause in clauses(when):
                total += 1
                logic += carries_logic(clause)
    return total, logic


def yaml_files(root):
    for top in SEARCHED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(dirpath, name)


def survey(root):
    """{relative path: (clauses, with logic)} for every file that has a when-clause."""
    result = {}
    for path in yaml_files(root):
        with open(path, encoding="utf-8") as handle:
            total, logic = count_text(handle.read())
        if total:
            result[os.path.relpath(path, root)] = (total, logic)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--top", type=int, default=15, help="worst files to list")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    files = survey(args.root)
    total = sum(count for count, dummy in files.values())
    logic = sum(count for dummy, count in files.values())
    share = 100.0 * logic / total if total else 0.0
    worst = sorted(files.items(), key=lambda kv: (kv[1][1], kv[0]), reverse=True)
    worst = [(path, t, n) for path, (t, n) in worst if n][: args.top]
    if args.json:
        json.dump({"clauses": total, "with_logic": logic, "share_percent": round(share, 1),
                   "worst": [{"path": p, "clauses": t, "with_logic": n} for p, t, n in worst]}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"when-clauses: {total}, with logic: {logic} ({share:.1f} %) in {len(files)} files")
    for path, t, n in worst:
        print(f"  {n:3d}/{t:<3d} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
