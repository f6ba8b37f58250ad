"""scripts/docsite.py: how the Markdown guides become antsibull-docs extra docs (links, labels, index).

The build itself (pandoc, antsibull-docs, Sphinx with -W) runs in the docs stage of scripts/run-tests.sh.
"""

import os
import sys
import zlib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import docsite  # noqa: E402

REPO = "https://forge.example/kunpeng/vllm"
PAGES = {"gateway.md", "upgrade.md", "benchmarks/index.md", "benchmarks/2026-12-01-one-plan.md"}
P = docsite.LABEL_PREFIX


@pytest.mark.parametrize(("page", "url", "expected"), [
    ("upgrade.md", "gateway.md", ("doc", "/docsite/gateway")),
    ("upgrade.md", "gateway.md#rolling-upgrades", ("ref", P + "gateway.rolling-upgrades")),
    ("upgrade.md", "#drain", ("ref", P + "upgrade.drain")),
    ("upgrade.md", "benchmarks/2026-12-01-one-plan.md", ("doc", "/docsite/benchmarks/2026-12-01-one-plan")),
    ("benchmarks/index.md", "../gateway.md", ("doc", "/docsite/gateway")),
    ("benchmarks/index.md", "2026-12-01-one-plan.md#raw", ("ref", P + "benchmarks.2026-12-01-one-plan.raw")),
    # A page that does not exist stays a reference: Sphinx reports it and the build fails.
    ("upgrade.md", "gone.md", ("doc", "/docsite/gone")),
    # Files of the repository outside the guides: their address in the repository.
    ("upgrade.md", "../roles/vllm/README.md", ("url", REPO + "/blob/main/roles/vllm/README.md")),
    ("benchmarks/index.md", "../../playbooks/site.yml", ("url", REPO + "/blob/main/playbooks/site.yml")),
    ("awx.md", "awx-surveys/site.json", ("url", REPO + "/blob/main/docs/awx-surveys/site.json")),
    ("upgrade.md", "https://docs.vllm.ai/", None),
    ("upgrade.md", "mailto:ops@example.org", None),
    ("upgrade.md", "", None),
])
def test_link_target(page, url, expected):
    assert docsite.link_target(page, url, PAGES, REPO) == expected


def _doc(*blocks):
    return {"pandoc-api-version": [1, 23, 1, 1], "meta": {}, "blocks": list(blocks)}


def test_rewrite_labels_headings_and_turns_guide_links_into_references():
    ast = _doc(
        {"t": "Header", "c": [2, ["rolling-upgrades", [], []], [{"t": "Str", "c": "Rolling"}]]},
        {"t": "Para", "c": [
            {"t": "Link", "c": [["", [], []], [{"t": "Str", "c": "the"}, {"t": "Space"}, {"t": "Code", "c": [["", [], []], "<gateway>"]}],
                                ["gateway.md#tls", ""]]},
            {"t": "Link", "c": [["", [], []], [{"t": "Str", "c": "vLLM"}], ["https://docs.vllm.ai/", ""]]},
        ]},
        {"t": "CodeBlock", "c": [["", [], []], "plain\n"]},
        {"t": "CodeBlock", "c": [["", ["yaml"], []], "a: 1\n"]},
    )
    blocks = docsite.rewrite(ast, "upgrade.md", PAGES, REPO)["blocks"]
    assert blocks[0]["c"][1][0] == P + "upgrade.rolling-upgrades"
    assert blocks[1]["c"][0] == {"t": "RawInline", "c": ["rst", f":ref:`the \\<gateway\\> <{P}gateway.tls>`"]}
    assert blocks[1]["c"][1]["c"][2] == ["https://docs.vllm.ai/", ""]
    assert blocks[2]["c"][0][1] == ["text"], "a block without a language would be lexed as YAML+Jinja"
    assert blocks[3]["c"][0][1] == ["yaml"]


def test_markdown_pages_lists_every_md_file_top_level_first(tmp_path):
    for name in ("b.md", "a.md", "benchmarks/index.md", "benchmarks/2026.md", "awx-surveys/site.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# x\n")
    assert docsite.markdown_pages(str(tmp_path)) == ["a.md", "b.md", "benchmarks/2026.md", "benchmarks/index.md"]


@pytest.mark.parametrize(("markdown", "title"), [
    ("# Upgrade `vllm`\n\ntext\n## Later\n", "Upgrade vllm"),
    ("```\n# not a heading\n```\n\n## Real ##\n", "Real"),
    ("no heading\n", "fallback"),
])
def test_first_heading(markdown, title):
    assert docsite.first_heading(markdown, "fallback") == title


def test_extra_docs_index_one_section_per_folder_index_first():
    pages = ["gateway.md", "upgrade.md", "benchmarks/2026.md", "benchmarks/index.md", "how-to/x.md"]
    titles = {"benchmarks/index.md": "Benchmarks and evidence"}
    assert docsite.extra_docs_index(pages, titles) == {"sections": [
        {"title": "Guides", "toctree": ["gateway", "upgrade"]},
        {"title": "Benchmarks and evidence", "toctree": ["benchmarks/index", "benchmarks/2026"]},
        {"title": "How to", "toctree": ["how-to/x"]},
    ]}


def test_inventory_holds_the_ansible_pages_and_other_collections_plugins(tmp_path):
    (tmp_path / "x_module.rst").write_text(
        ":ref:`community.general.haproxy <ansible_collections.community.general.haproxy_module>`\n"
        ":ref:`own <ansible_collections.kunpeng.vllm.vllm_plan_module>`\n")
    labels = docsite.referenced_plugin_labels(str(tmp_path))
    assert labels == {"ansible_collections.community.general.haproxy_module"}
    header, body = docsite.inventory(labels).split(b"zlib.\n", 1)
    assert header.startswith(b"# Sphinx inventory version 2\n")
    lines = zlib.decompress(body).decode().splitlines()
    assert ("ansible_collections.community.general.haproxy_module std:label -1 "
            "collections/community/general/haproxy_module.html"
            "#ansible-collections-community-general-haproxy-module community.general.haproxy module") in lines
    assert any(line.startswith("common_return_values std:label -1 reference_appendices/") for line in lines)
