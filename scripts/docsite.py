"""Build the collection's documentation site (make docs) with antsibull-docs and Sphinx.

antsibull-docs writes the module, filter and role pages from the plugins' DOCUMENTATION and the roles'
meta/argument_specs.yml. Its "extra docs" must be RST files under docs/docsite/rst, listed in
docs/docsite/extra-docs.yml. The project's guides are Markdown (every docs/**/*.md), so the build converts
each one with pandoc (from pypandoc-binary) into a copy of the collection under the output folder and writes
the index from the files it found: a new page needs no registration anywhere.

Links between guides become Sphinx references (``:doc:`` for a page, ``:ref:`` for a heading of a page), so a
link to a page or heading that does not exist is a Sphinx warning, and every warning fails the build.

    python scripts/docsite.py [--docs DIR] [--out DIR]     # HTML in <out>/html
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import zlib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACE, NAME = "kunpeng", "vllm"
COLLECTION = f"{NAMESPACE}.{NAME}"
# antsibull-docs keeps an extra doc only when each label it defines starts with this.
LABEL_PREFIX = f"ansible_collections.{COLLECTION}.docsite."
# What antsibull-docs reads from a collection; the rest of the checkout stays out of the copy.
COLLECTION_PARTS = ("galaxy.yml", "meta", "plugins", "roles")
# Pages of the Ansible documentation the generated pages link to. Without network the build cannot
# download that site's inventory, so it writes one holding these and the other collections' plugins
# it finds referenced (their pages follow one pattern).
ANSIBLE_DOCS = "https://docs.ansible.com/projects/ansible/devel/"
ANSIBLE_LABELS = {
    "common_return_values": ("reference_appendices/common_return_values.html#common-return-values",
                             "Return Values"),
    "ansible_configuration_settings": ("reference_appendices/config.html#ansible-configuration-settings",
                                       "Ansible Configuration Settings"),
    # the "Action plugin" attribute of a module that has one (vllm_copy, vllm_progress)
    "action_plugins": ("plugins/action.html#action-plugins", "Action plugins"),
}
PLUGIN_LABEL = re.compile(r"ansible_collections\.([a-z0-9_]+)\.([a-z0-9_]+)\.([a-z0-9_]+)_([a-z]+)(?=[>`\s])")


def markdown_pages(docs_dir: str) -> list[str]:
    """Every Markdown file under ``docs_dir``, as a path relative to it with '/' separators, sorted."""
    pages = []
    for dirpath, dirnames, files in os.walk(docs_dir):
        dirnames.sort()
        for name in files:
            if name.endswith(".md"):
                pages.append(os.path.relpath(os.path.join(dirpath, name), docs_dir).replace(os.sep, "/"))
    return sorted(pages, key=lambda page: (page.count("/"), page))


def doc_name(page: str) -> str:
    """The Sphinx document a Markdown page becomes (``benchmarks/x.md`` -> ``docsite/benchmarks/x``)."""
    return "docsite/" + page[:-len(".md")]


def heading_label(page: str, anchor: str) -> str:
    """The RST label of a heading: the collection's prefix, the page and the heading's GitHub anchor."""
    return LABEL_PREFIX + page[:-len(".md")].replace("/", ".") + "." + anchor


def link_target(page: str, url: str, pages: set[str], repository: str) -> tuple[str, str] | None:
    """How a link of ``page`` to ``url`` is written in the site, or None to keep it as it is.

    ``("doc", document)`` for another guide, ``("ref", label)`` for a heading of a guide (the page's own
    headings included), ``("url", address)`` for a file of the repository outside docs/ (its address under
    ``repository``). Absolute addresses and mail links stay as they are. A link to a guide that does not
    exist is returned as a reference anyway, so that Sphinx reports it.
    """
    if re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) or url.startswith("//"):
        return None
    path, anchor = url.split("#", 1) if "#" in url else (url, "")
    if not path:
        return ("ref", heading_label(page, anchor)) if anchor else None
    target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if target.startswith("../"):
        return "url", repository.rstrip("/") + "/blob/main/" + target[len("../"):]
    if target.endswith(".md"):
        if anchor:
            return "ref", heading_label(target, anchor)
        return "doc", "/" + doc_name(target)
    return "url", repository.rstrip("/") + "/blob/main/docs/" + target


def _plain_text(inlines: list) -> str:
    """The text of pandoc inline elements (a link's or heading's words)."""
    out = []
    for item in inlines:
        kind, content = item["t"], item.get("c")
        if kind in ("Str", "Code", "Math", "RawInline"):
            out.append(content[-1] if kind != "Str" else content)
        elif kind in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
        elif isinstance(content, list):
            nested = content[-1] if kind in ("Link", "Image", "Span", "Quoted", "Cite") else content
            if kind == "Link":
                nested = content[1]
            out.append(_plain_text(nested if isinstance(nested, list) else []))
    return "".join(out)


def _rst_escape_role_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("<", "\\<").replace(">", "\\>").replace("`", "\\`")


def rewrite(node, page: str, pages: set[str], repository: str):
    """Rewrite a pandoc AST (the JSON form) of ``page`` in place, and return it.

    Headings get the collection's labels; links to guides become Sphinx references; code blocks without a
    language become plain text (Sphinx would lex them as YAML+Jinja, antsibull-docs' default, and warn).
    """
    if isinstance(node, list):
        for index, item in enumerate(node):
            node[index] = rewrite(item, page, pages, repository)
        return node
    if not isinstance(node, dict) or "t" not in node:
        if isinstance(node, dict):
            for key, value in node.items():
                node[key] = rewrite(value, page, pages, repository)
        return node
    kind = node["t"]
    if kind == "Header":
        level, attr, inlines = node["c"]
        node["c"] = [level, [heading_label(page, attr[0]) if attr[0] else "", attr[1], attr[2]],
                     rewrite(inlines, page, pages, repository)]
        return node
    if kind == "CodeBlock":
        attr = node["c"][0]
        if not attr[1]:
            attr[1] = ["text"]
        return node
    if kind == "Link":
        attr, inlines, (url, title) = node["c"]
        target = link_target(page, url, pages, repository)
        if target is None:
            node["c"][1] = rewrite(inlines, page, pages, repository)
            return node
        role, where = target
        if role == "url":
            node["c"][2] = [where, title]
            return node
        text = _rst_escape_role_text(_plain_text(inlines).strip() or where)
        return {"t": "RawInline", "c": ["rst", f":{role}:`{text} <{where}>`"]}
    if "c" in node:
        node["c"] = rewrite(node["c"], page, pages, repository)
    return node


def first_heading(markdown: str, fallback: str) -> str:
    """The page's title: its first ATX heading (outside code blocks), else ``fallback``."""
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)):
            return match.group(1).replace("`", "")
    return fallback


def extra_docs_index(pages: list[str], titles: dict[str, str]) -> dict:
    """docs/docsite/extra-docs.yml: a section for the pages at the top of docs/, then one per folder.

    A folder's section takes the title of its index.md when it has one (listed first), else the folder name.
    """
    sections: dict[str, list[str]] = {}
    for page in pages:
        sections.setdefault(posixpath.dirname(page), []).append(page)
    index = []
    for folder in sorted(sections, key=lambda name: (name != "", name)):
        members = sorted(sections[folder], key=lambda page: (posixpath.basename(page) != "index.md", page))
        if folder == "":
            title = "Guides"
        elif members[0].endswith("/index.md"):
            title = titles[members[0]]
        else:
            title = folder.replace("-", " ").replace("_", " ").capitalize()
        index.append({"title": title, "toctree": [page[:-len(".md")] for page in members]})
    return {"sections": index}


def referenced_plugin_labels(rst_dir: str) -> set[str]:
    """Labels of other collections' plugin pages that the generated RST refers to."""
    labels = set()
    for dirpath, _dirs, files in os.walk(rst_dir):
        for name in files:
            if name.endswith(".rst"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
                    for match in PLUGIN_LABEL.finditer(handle.read()):
                        if f"{match.group(1)}.{match.group(2)}" != COLLECTION:
                            labels.add(match.group(0))
    return labels


def inventory(labels: set[str]) -> bytes:
    """A Sphinx inventory (objects.inv, version 2) of the Ansible documentation's pages named by ``labels``."""
    lines = []
    for label in sorted(set(ANSIBLE_LABELS) | labels):
        if label in ANSIBLE_LABELS:
            uri, title = ANSIBLE_LABELS[label]
        else:
            namespace, name, plugin_and_type = label.split(".")[1:4]
            uri = f"collections/{namespace}/{name}/{plugin_and_type}.html#{label.replace('.', '-').replace('_', '-')}"
            plugin, kind = plugin_and_type.rsplit("_", 1)
            title = f"{namespace}.{name}.{plugin} {kind}"
        lines.append(f"{label} std:label -1 {uri} {title}\n")
    header = "# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n" \
             "# The remainder of this file is compressed using zlib.\n"
    return header.encode() + zlib.compress("".join(lines).encode())


def _run(command: list[str], **kwargs) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def _pandoc() -> str:
    import pypandoc  # noqa: PLC0415 - only the build needs it, not the unit tests of this file

    return pypandoc.get_pandoc_path()


def convert_guides(docs_dir: str, dest: str, repository: str) -> None:
    """docs/**/*.md into ``dest`` (a collection's docs/docsite): rst/<page>.rst and extra-docs.yml."""
    pages = markdown_pages(docs_dir)
    pandoc = _pandoc()
    titles = {}
    for page in pages:
        with open(os.path.join(docs_dir, page), encoding="utf-8") as handle:
            markdown = handle.read()
        titles[page] = first_heading(markdown, page[:-len(".md")])
        ast = json.loads(subprocess.run([pandoc, "-f", "gfm", "-t", "json"], input=markdown, text=True,
                                        capture_output=True, check=True).stdout)
        rewrite(ast, page, set(pages), repository)
        rst = subprocess.run([pandoc, "-f", "json", "-t", "rst", "--columns=100"], input=json.dumps(ast),
                             text=True, capture_output=True, check=True).stdout
        target = os.path.join(dest, "rst", page[:-len(".md")] + ".rst")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(f".. Converted from docs/{page} by scripts/docsite.py; edit the Markdown file.\n\n{rst}")
    with open(os.path.join(dest, "extra-docs.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(extra_docs_index(pages, titles), handle, sort_keys=False, allow_unicode=True)
    print(f"{len(pages)} guides from {docs_dir}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--docs", default=os.path.join(ROOT, "docs"), help="folder of the Markdown guides")
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "docs"), help="build folder")
    args = parser.parse_args(argv)
    out = os.path.abspath(args.out)
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        galaxy = yaml.safe_load(handle)

    # A copy of the collection with the converted guides; the checkout itself is not written.
    collections = os.path.join(out, "collections")
    copy = os.path.join(collections, "ansible_collections", NAMESPACE, NAME)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(copy)
    for part in COLLECTION_PARTS:
        source = os.path.join(ROOT, part)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(copy, part), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, os.path.join(copy, part))
    convert_guides(os.path.abspath(args.docs), os.path.join(copy, "docs", "docsite"), galaxy["repository"])

    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_COLLECTIONS_PATHS", None)
    site = os.path.join(out, "site")
    rst = os.path.join(site, "rst")
    _run(["antsibull-docs", "lint-collection-docs", "--plugin-docs", "--check-extra-docs-refs",
          "--validate-collection-refs", "self", copy], env=env)
    for folder in (site, rst):  # antsibull-docs wants its folders writable by their owner only
        os.makedirs(folder, exist_ok=True)
        os.chmod(folder, 0o755)
    _run(["antsibull-docs", "sphinx-init", "--use-current", "--squash-hierarchy", "--fail-on-error",
          "--no-add-antsibull-docs-version", "--dest-dir", site,
          "--project", COLLECTION, "--copyright", galaxy.get("license", ["see LICENSE"])[0],
          "--title", f"{COLLECTION} {galaxy['version']}", COLLECTION], env=env)
    _run(["antsibull-docs", "--config-file", os.path.join(site, "antsibull-docs.cfg"), "collection",
          "--use-current", "--squash-hierarchy", "--fail-on-error", "--cleanup", "everything",
          "--dest-dir", rst, COLLECTION], env=env)
    with open(os.path.join(site, "ansible_devel.inv"), "wb") as handle:
        handle.write(inventory(referenced_plugin_labels(rst)))
    with open(os.path.join(site, "conf.py"), "a", encoding="utf-8") as handle:
        # Offline: the only inventory is the one written above; no download is tried.
        handle.write("\nintersphinx_mapping = {\n"
                     f"    'ansible_devel': ({ANSIBLE_DOCS!r}, '../ansible_devel.inv'),\n}}\n")
    _run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-c", site, rst,
          os.path.join(out, "html")], env=env)
    print(f"docs: {os.path.join(out, 'html', 'index.html')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
