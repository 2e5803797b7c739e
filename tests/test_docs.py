"""The documentation: the site builds with warnings as errors, every command it (and the README) shows exists with
the options it is shown with, every page an error message names exists, and the README stays a first screen."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from benchlib.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
SHELLS = {"", "sh", "bash", "console", "shell"}


def _shell_lines(text: str) -> list[str]:
    """The lines of a page's shell blocks (```sh, or no language), comments cut, continuation lines joined."""
    out, lang, buf = [], None, ""
    for line in text.splitlines():
        fence = re.match(r"^\s*```(\w*)", line)
        if fence:
            lang = None if lang is not None else fence.group(1)
            continue
        if lang in SHELLS:
            line = re.sub(r"(^|\s)#.*$", "", line).rstrip()
            buf += line.strip().removeprefix("$ ")
            if buf.endswith("\\"):
                buf = buf[:-1] + " "
                continue
            if buf:
                out.append(buf)
            buf = ""
    return out


def _inline_commands(text: str) -> list[str]:
    """Inline code that shows a benchlib command: `benchlib pack runs/quick`."""
    return [m.strip() for m in re.findall(r"`(benchlib [a-z][^`]*)`", text)]


def _commands() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        text = page.read_text()
        found += [(page, c) for c in _shell_lines(text) + _inline_commands(text)]
    return found


ROOT_COMMAND = typer.main.get_command(app)


def _check_benchlib(words: list[str]) -> str | None:
    """What is wrong with ``benchlib ...`` as shown, or None."""
    cmd = ROOT_COMMAND  # typer's own click: a group is what has commands
    rest = words[1:]
    while hasattr(cmd, "commands") and rest and not rest[0].startswith("-"):
        if rest[0] not in cmd.commands:
            return f"no command {rest[0]!r} (known: {', '.join(sorted(cmd.commands))})"
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    if hasattr(cmd, "commands"):
        return None  # `benchlib lab`: a group shown by itself
    opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
    for w in rest:
        w = w.strip("[]|")
        if w.startswith("--") and w.split("=")[0] not in opts:
            return f"{cmd.name} has no option {w.split('=')[0]} (its options: {', '.join(sorted(opts))})"
    return None


def _check(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return None
    head = words[0]
    if head in ("benchlib", ".venv/bin/benchlib"):
        return _check_benchlib(["benchlib", *words[1:]])
    if head.startswith(("./scripts/", "scripts/")):
        return None if (ROOT / head.removeprefix("./")).is_file() else f"no script {head}"
    if head in ("python", "python3", ".venv/bin/python"):
        if words[1:2] == ["-m"]:
            module = words[2]
            return None if importlib.util.find_spec(module) else f"no module {module}"
        script = next((w for w in words[1:] if w.endswith(".py")), None)
        return None if script is None or (ROOT / script).is_file() else f"no script {script}"
    if head.startswith(".venv/bin/"):
        return None if head.removeprefix(".venv/bin/") in ("jupyter", "mkdocs", "python", "benchlib", "pytest", "pip") \
            else f"{head} is not installed by the bootstrap"
    return None


def test_every_command_the_docs_show_exists_with_its_options():
    commands = _commands()
    assert len(commands) > 40  # the pages show commands: the parser found them
    wrong = [f"{p.relative_to(ROOT)}: `{c}`: {why}" for p, c in commands if (why := _check(c))]
    assert not wrong, "\n".join(wrong)


def test_every_file_a_shown_command_names_exists():
    missing = []
    for page, command in _commands():
        for word in command.split():
            if re.match(r"^(examples|notebooks|data/campaigns|bench|scripts)/[\w./-]+$", word) and "*" not in word:
                if not (ROOT / word).exists():
                    missing.append(f"{page.relative_to(ROOT)}: {word}")
    assert not missing, "\n".join(missing)


def test_every_page_an_error_message_names_exists():
    named = set()
    for path in (ROOT / "benchlib").rglob("*.py"):
        named |= set(re.findall(r"docs/[\w/-]+\.md", path.read_text()))
    assert named  # messages do point to pages
    assert not [n for n in named if not (ROOT / n).is_file()]


def test_the_readme_is_a_first_screen_that_links_onward():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert {ROOT / link for link in links} >= set(DOCS.rglob("*.md")) - {DOCS / "index.md"}  # every page reachable
    assert all((ROOT / link).is_file() for link in links)


@pytest.mark.timeout(120)
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=110,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "WARNING" not in out.stderr, out.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Where to start" in index and "Quickstart" in index


def test_a_bad_field_names_the_page_that_lists_the_fields(tmp_path):
    from benchlib.campaign.spec import load_campaign_spec
    from benchlib.errors import SpecError
    from benchlib.lab.spec import load_spec

    quick = (ROOT / "examples" / "campaigns" / "quick.toml").read_text()
    cases = {
        "campaign.toml": (f"colour = 'red'\n{quick}", load_campaign_spec, "docs/reference/campaign-spec.md"),
        "fault.toml": (f"{quick}\n[fault]\nkind = 'kill'\nat_s = 5\nhue = 1\n", load_campaign_spec,
                       "docs/campaigns/faults.md"),
        "lab.toml": ("name = 'x'\ncolour = 1\n[clusters.a]\ntopology = 'async'\n", load_spec, "docs/reference/lab-spec.md"),
    }
    for name, (text, load, page) in cases.items():
        path = tmp_path / name
        path.write_text(text.replace('lab = "', f'lab = "{ROOT}/examples/campaigns/'))
        with pytest.raises(SpecError) as err:
            load(path)
        assert f"unknown field (check the spelling; the fields are in {page})" in err.value.render(), name
        assert (ROOT / page).is_file()


def test_no_file_of_the_project_points_outside_it():
    """A user's clone is all there is: no committed file refers to the developers' notes beside the repository."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    outside = re.compile(r"\.\./shared|shared/(notes|specs|seeds|data)/")
    hits = []
    for name in filter(None, files.split("\0")):
        path = ROOT / name
        if path.suffix in {".parquet", ".zst", ".png", ".gz"} or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        hits += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if outside.search(line)]
    assert not hits, hits


def _bootstrap_list(name: str) -> list[str]:
    text = (ROOT / "scripts" / "bootstrap").read_text()
    found = re.search(rf"^{name}=\(([^)]*)\)", text, re.M)
    assert found, f"scripts/bootstrap has no {name}"
    return found.group(1).split()


def test_the_setup_pages_list_the_packages_the_bootstrap_installs():
    main, tests = " ".join(_bootstrap_list("MAIN_PACKAGES")), " ".join(_bootstrap_list("TEST_PACKAGES"))
    for page in ("README.md", "docs/quickstart.md", "docs/install.md"):
        text = re.sub(r"\s+", " ", (ROOT / page).read_text())
        assert f"`{main}`" in text, f"{page} does not list the main job's packages as scripts/bootstrap does: {main}"
        assert f"`{tests}`" in text, f"{page} does not list the tests' packages as scripts/bootstrap does: {tests}"
