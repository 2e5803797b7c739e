"""docs/reference/ is made from the code: the CLI, the spec models and the environment variables. A page that
differs from what the code makes now fails here, as does a field without a meaning or an environment variable the
code reads that the page does not list."""

from __future__ import annotations

import re
from pathlib import Path

from benchlib import reference_pages

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_reference_pages_are_what_the_code_makes():
    made = reference_pages.pages()
    for name, text in made.items():
        page = ROOT / "docs" / "reference" / name
        assert page.is_file() and page.read_text() == text, (
            f"docs/reference/{name} differs from the code: run .venv/bin/python -m benchlib.reference_pages")
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(f"reference/{name}" in nav for name in made), "a reference page is missing from mkdocs.yml's nav"


def test_every_spec_field_and_option_has_a_type_a_default_and_a_meaning():
    for name, text in reference_pages.pages().items():
        rows = [line for line in text.splitlines() if line.startswith("| `") or line.startswith("| `-")]
        assert rows, name
        empty = [line for line in rows if line.rstrip().endswith("|  |") or "|  |" in line]
        assert not empty, f"{name}: rows without a meaning: {empty[:5]}"


def test_the_cli_page_has_every_command_and_option():
    import typer.main

    from benchlib.cli import app

    page = reference_pages.pages()["cli.md"]
    root = typer.main.get_command(app)
    todo = [([], root)]
    while todo:
        path, cmd = todo.pop()
        if hasattr(cmd, "commands"):
            todo += [(path + [n], c) for n, c in cmd.commands.items()]
            continue
        assert f"## benchlib {' '.join(path)}\n" in page
        for p in cmd.params:
            if p.param_type_name == "option" and p.name != "help":
                assert f"`{p.opts[0]}`" in page, (path, p.opts)


def test_the_environment_page_lists_every_variable_the_code_reads():
    read: set[str] = set()
    for folder in ("benchlib", "scripts", ".ci"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ""} and "__pycache__" not in path.parts:
                text = path.read_text(errors="replace")
                read |= set(re.findall(r"\bBENCHLIB_[A-Z_]+\b", text))
                read |= set(re.findall(r"environ(?:\.get)?[\[(]\"([A-Z_]+)\"", text))
    assert read == set(reference_pages.ENVIRONMENT), (sorted(read - set(reference_pages.ENVIRONMENT)),
                                                       sorted(set(reference_pages.ENVIRONMENT) - read))


def test_the_made_parts_of_the_architecture_page_are_what_the_code_makes():
    """docs/architecture.md's layer table is benchlib.layers' (what tests/test_layering.py enforces), and its table
    of axes the registry's."""
    from benchlib import doc_blocks
    from benchlib.axis import AXES

    assert doc_blocks.stale() == [], "docs/architecture.md differs from the code: run .venv/bin/python -m benchlib.reference_pages"
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert all(f"| `{name}` |" in page for name in AXES)
