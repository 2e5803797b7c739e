"""The reference pages of docs/reference/, made from the code so that they cannot drift from it: the CLI from its
own definitions, the spec files from their models (every field with its type, default and meaning: a field's
``description``, else the comment beside it or above it in the model's source), and the environment variables.

    python -m benchlib.reference_pages          # rewrite docs/reference/ (and the made parts of other pages:
                                                # benchlib.doc_blocks)
    python -m benchlib.reference_pages --check  # exit 1 naming the pages that differ from the code

``tests/test_reference_pages.py`` fails when a committed page and the code disagree.
"""

from __future__ import annotations

import inspect
import io
import re
import sys
import tokenize
import types
import typing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["ENVIRONMENT", "OUTPUT", "PAGES", "field_rows", "main", "pages"]

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference"

#: every environment variable benchlib or its scripts read (a test checks that the code reads no other)
ENVIRONMENT: dict[str, str] = {
    "BENCHLIB_LAB_ROOT": "the folder every local lab lives in (its servers' data, sockets, logs and passwords); "
                         "default `/tmp/benchlib`",
    "BENCHLIB_PORT_CLAIMS": "where every lab root on this machine claims its labs' port blocks, so that two roots "
                            "never pick the same ports; default `/tmp/benchlib-ports`",
    "BENCHLIB_SERVERS": "where the bootstrap unpacks MySQL 9 and benchlib looks for it; default `.servers/` in "
                        "the clone",
    "BENCHLIB_HOSTROOT": "the Debian root the provisioning tests' namespace hosts boot from; default "
                         "`/var/cache/benchlib/hostroot/<suite>-<hash>`",
    "BENCHLIB_PYTHON": "the Python (3.11 or newer) the bootstrap makes `.venv/` with; default the first of "
                       "python3.11, python3.12, python3.13, python3 on `PATH`",
    "BENCHLIB_BOOTSTRAP_TESTS": "`1`: the bootstrap also installs what only the tests need (`./scripts/test` sets "
                                "it)",
    "BENCHLIB_ROOT": "set by the bootstrap for the scripts that source it: the clone's folder",
    "BENCHLIB_LOAD": "set by benchlib for the sysbench it starts: which load a process belongs to (how "
                     "interference tells benchlib's processes from others'); not for users to set",
    "BENCHLIB_SERVICE": "set by benchlib on a provisioned host's node service; not for users to set",
    "BENCHLIB_INNER": "set by benchlib for a sysbench that writes on one of several writer nodes: the oltp_* test "
                      "`writers.lua` runs inside; not for users to set",
    "BENCHLIB_TEST_LAB_ROOT": "tests only: the lab root the processes of the suite's second phase share",
    "BENCHLIB_TEST_LANES": "tests only: where a test module (a heavy test: the test) is claimed by the process that "
                           "runs it",
    "BENCHLIB_TEST_HEAVY_LAST": "tests only: `1`: the process takes the light modules first, then the heavy tests",
    "BROWSER_PATH": "the Chromium or Chrome static PNG and SVG charts are made with (`benchlib publish`); default "
                    "the first of chromium, chromium-browser, google-chrome, chrome on `PATH`",
    "XDG_CACHE_HOME": "where the run index caches its table (`benchlib runs`, `history`): "
                      "`$XDG_CACHE_HOME/benchlib/run-index/`, default `~/.cache/benchlib/run-index/`",
}

#: where output goes, for the environment page
OUTPUT: list[tuple[str, str]] = [
    ("`runs/<campaign>/`", "a campaign: `campaign.json`, one folder per run (manifest, frames, raw sysbench "
                           "output), executed notebooks under `notebooks/` (`benchlib run --runs-dir DIR` "
                           "elsewhere)"),
    ("`runs/demo/<UTC time>/quick/`", "the main job's campaign (`benchlib demo`)"),
    ("`runs/<campaign>/report/<UTC time>/`", "a published report: `report.html`, charts as PNG, SVG and HTML "
                                             "(`benchlib publish --out DIR` elsewhere)"),
    ("`$BENCHLIB_LAB_ROOT/<lab>/`", "a local lab that is up (default `/tmp/benchlib/<lab>/`): removed by "
                                    "`benchlib lab down`"),
    ("`/tmp/benchlib-ports/`", "one small file per local lab that is up, claiming its port block on this machine "
                               "(`$BENCHLIB_PORT_CLAIMS` moves it); a claim whose lab is gone is dropped"),
    ("`provisioned/<lab>/`", "what `benchlib provision` keeps: state, passwords (mode 600), the remote lab spec "
                             "(`--dir` elsewhere); removed by `benchlib unprovision`"),
    ("`~/.cache/benchlib/run-index/`", "the run index's cache of every campaign's runs (`$XDG_CACHE_HOME` moves "
                                       "it); safe to delete: it is built again"),
    ("`.venv/`, `.servers/`", "benchlib's virtual environment and MySQL prefix, made by the bootstrap "
                              "([Install](../install.md))"),
]


@dataclass(frozen=True)
class Page:
    file: str
    make: Callable[[], str]


# ---------------------------------------------------------------------------------------------------------- specs

@lru_cache(maxsize=None)  # a model's source is read and tokenized once, not once per field
def _comments(cls: type) -> dict[str, str]:
    """Field name -> the comment beside its line, else the comment lines just above it, in ``cls``'s source."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    trailing: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                trailing[tok.start[0] - 1] = tok.string
    except (tokenize.TokenError, IndentationError):
        return {}
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = re.match(r"^    (\w+)\s*:", line)
        if not m or line.lstrip().startswith("#"):
            continue
        name, said = m.group(1), ""
        if i in trailing and not line.lstrip().startswith("#"):
            said = trailing[i].lstrip("#:").strip()
        else:
            above, j = [], i - 1
            while j >= 0 and lines[j].strip().startswith("#"):
                above.insert(0, lines[j].strip().lstrip("#:").strip())
                j -= 1
            said = " ".join(above)
        if said:
            out[name] = said
    return out


def _meaning(cls: type[BaseModel], name: str) -> str:
    field = cls.model_fields[name]
    if field.description:
        return field.description
    for klass in cls.__mro__:
        if isinstance(klass, type) and issubclass(klass, BaseModel) and name in klass.__dict__.get("__annotations__", {}):
            said = _comments(klass).get(name)
            if said:
                return said
    return ""


def _type(t: Any) -> str:
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin is typing.Literal:
        return " \\| ".join(f'`{a!r}`'.replace("'", '"') for a in args)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type(a) for a in inner) + (" (optional)" if len(inner) < len(args) else "")
    if origin in (list, tuple):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return f"name → {_type(args[1])}" if args else "table"
    if isinstance(t, type) and issubclass(t, BaseModel):
        return f"{t.__name__} table"
    if t is Any:
        return "any"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(t, getattr(t, "__name__", str(t)))


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, BaseModel):
        return "its own defaults"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`".replace("'", '"')


def _bounds(field: Any) -> str:
    said = []
    for m in field.metadata:
        for attr, word in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "at least"),
                           ("max_length", "at most"), ("pattern", "matching")):
            v = getattr(m, attr, None)
            if v is not None:
                said.append(f"{word} `{v}`" if attr != "pattern" else f"matching `{v}`")
    return ", ".join(said)


def field_rows(cls: type[BaseModel]) -> list[tuple[str, str, str, str]]:
    """(key, type, default, meaning) for each field of ``cls``, as a spec file writes it."""
    rows = []
    for name, field in cls.model_fields.items():
        key = field.alias or name
        kind = _type(field.annotation)
        bounds = _bounds(field)
        rows.append((key, kind + (f"; {bounds}" if bounds else ""), _default(field), _meaning(cls, name)))
    return rows


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, its pipes escaped, no HTML (``<name>`` shows as written)."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _nested(t: Any) -> list[type[BaseModel]]:
    args = typing.get_args(t)
    if isinstance(t, type) and issubclass(t, BaseModel):
        return [t]
    return [m for a in args for m in _nested(a)]


def _table(title: str, cls: type[BaseModel], seen: set[type], out: list[str], level: int = 2,
           reserved: frozenset = frozenset(), prefix: str = "") -> None:
    """``cls``'s fields as a table, then each table it holds (but those in ``reserved``: a page's own roots)."""
    if cls in seen:
        return
    seen.add(cls)
    out.append(f"{'#' * level} {title}\n")
    doc = inspect.getdoc(cls) or ""
    if doc and cls.__doc__ and "__doc__" in cls.__dict__:
        out.append(doc.split("\n\n")[0].replace("\n", " ") + "\n")
    out.append("| key | type | default | meaning |\n|---|---|---|---|")
    for key, kind, default, meaning in field_rows(cls):
        out.append(f"| `{key}` | {kind} | {default} | {_cell(meaning)} |")
    out.append("")
    for name, field in cls.model_fields.items():
        for sub in _nested(field.annotation):
            key = field.alias or name
            many = typing.get_origin(field.annotation) is dict or any(
                typing.get_origin(a) is dict for a in typing.get_args(field.annotation))
            where = f"{prefix}{key}.<name>" if many else f"{prefix}{key}"
            if sub not in reserved:
                _table(f"`[{where}]` ({sub.__name__})", sub, seen, out, level, reserved, f"{where}.")


def spec_page(title: str, intro: str, roots: list[tuple[str, type[BaseModel], str]]) -> str:
    """A page of ``roots``: (title, model, the key its tables sit under: "" at the top level, "fault." ...)."""
    out = [f"# {title}\n", "<!-- made by python -m benchlib.reference_pages from the models: do not edit -->\n",
           intro + "\n"]
    seen: set[type] = set()
    reserved = frozenset(m for _, m, _ in roots)
    for name, model, prefix in roots:
        _table(name, model, seen, out, reserved=reserved, prefix=prefix)
    return "\n".join(out).rstrip() + "\n"


def _lab_page() -> str:
    from benchlib.lab.spec import (AsyncCluster, GaleraCluster, GroupReplicationCluster, LabSpec, SemisyncCluster,
                                   SingleCluster)

    return spec_page(
        "Reference: the lab spec",
        "A local lab spec (`examples/labs/*.toml`; `benchlib lab up SPEC`). Each `[clusters.<name>]` table is one of "
        "the kinds below, chosen by its `topology`; `[defaults]` holds server settings every cluster takes unless "
        "it sets its own. [Local labs](../labs/local.md) says what each does.",
        [("The lab (top level)", LabSpec, "")] + [
            (f"`[clusters.<name>] topology = \"{kind}\"`", model, "clusters.<name>.")
            for kind, model in (("single", SingleCluster), ("async", AsyncCluster), ("semisync", SemisyncCluster),
                                ("galera", GaleraCluster), ("group_replication", GroupReplicationCluster))])


def _campaign_page() -> str:
    from benchlib import axis as registry
    from benchlib.campaign.spec import CampaignSpec

    roots: list[tuple[str, type[BaseModel], str]] = [("The campaign (top level)", CampaignSpec, "")]
    roots += [(f"`[{name}]` (an axis: [what it does]({registry.AXES[name].docs.replace('docs/', '../')}))", model,
               f"{name}.") for name, model in registry.tables().items()]
    return spec_page(
        "Reference: the campaign spec",
        "A campaign spec (`examples/campaigns/*.toml`; `benchlib run SPEC`). [The campaign spec](../campaigns/spec.md) "
        "says how a campaign runs; the tables of the axes (`[probe]`, `[fault]` ...) are written at the top level.",
        roots)


def _remote_page() -> str:
    from benchlib.remote.spec import RemoteLabSpec

    return spec_page(
        "Reference: the remote lab spec",
        "A remote lab spec (`kind = \"remote\"`): servers benchlib reaches but did not start. Passwords and keys are "
        "named by environment variable or by a mode-600 file, never written here. [Remote labs](../labs/remote.md).",
        [("The remote lab (top level)", RemoteLabSpec, "")])


def _hosts_page() -> str:
    from benchlib.provision.hosts import HostsSpec

    return spec_page(
        "Reference: the hosts file",
        "The hosts file `benchlib provision LAB HOSTS` takes: which machine runs which node, and how to log in. "
        "[On real machines](../labs/real-machines.md).",
        [("The hosts file (top level)", HostsSpec, "")])


# ------------------------------------------------------------------------------------------------------------ CLI

def _cli_page() -> str:
    import typer.main

    from benchlib.cli import app

    root = typer.main.get_command(app)
    out = ["# Reference: the command line\n", "<!-- made by python -m benchlib.reference_pages from the CLI: do not "
           "edit -->\n", "Every command and option of `benchlib` (`benchlib COMMAND --help` prints the same). A "
           "command ends with exit 0 when it did what it says, 1 when what it measured or checked failed, 2 on bad "
           "input, and 130 when interrupted.\n"]

    def walk(cmd: Any, path: list[str]) -> None:  # typer's own click: told apart by what they have
        if hasattr(cmd, "commands"):
            if not path:
                describe(cmd, path)
            for name in sorted(cmd.commands):
                walk(cmd.commands[name], path + [name])
            return
        describe(cmd, path)

    def describe(cmd: Any, path: list[str]) -> None:
        ctx = cmd.context_class(cmd, info_name=" ".join(["benchlib", *path]))
        out.append(f"## {' '.join(['benchlib', *path])}\n")
        usage = re.sub(r"\{(\w+)\}", lambda m: m.group(1).upper(), cmd.get_usage(ctx).strip())
        out.append(f"```\n{usage}\n```\n")
        if cmd.help:
            out.append(inspect.cleandoc(cmd.help).replace("\n", " ").replace("\b", "").strip() + "\n")
        args = [p for p in cmd.params if p.param_type_name == "argument"]
        opts = [p for p in cmd.params if p.param_type_name == "option" and p.name != "help"]
        if args or opts:
            out.append("| argument or option | type | default | meaning |\n|---|---|---|---|")
            for p in args:
                helped = getattr(p, "help", "") or ""
                out.append(f"| `{(p.metavar or p.name).upper()}` | {_click_type(p, ctx)} | "
                           f"{'required' if p.required else _click_default(p)} | {helped} |")
            for p in opts:
                names = ", ".join(f"`{o}`" for o in p.opts + p.secondary_opts)
                out.append(f"| {names} | {_click_type(p, ctx)} | {_click_default(p)} | {_cell(p.help or '')} |")
            out.append("")

    walk(root, [])
    return "\n".join(out).rstrip() + "\n"


def _click_type(p: Any, ctx: Any) -> str:
    if getattr(p, "is_flag", False) and p.secondary_opts:
        return "flag, on or off"
    if getattr(p, "is_flag", False):
        return "flag"
    shown = re.sub(r"^list\[(\w+)\]$", r"\1", str(p.display_type(ctx)).strip("<>")).lower()
    text = {"str": "text", "int": "integer", "float": "number", "float range": "number",
            "int range": "integer", "path": "path", "bool": "boolean"}.get(shown, shown)
    return f"{text}, repeatable" if getattr(p, "multiple", False) else text


def _click_default(p: Any) -> str:
    d = p.default
    if callable(d):
        return "computed"
    if d is None or d == () or d == []:
        return "—"
    if isinstance(d, bool):
        return "on" if d else "off"
    if d == "" or d == ():
        return "—"
    return f"`{d}`"


# ------------------------------------------------------------------------------------------------ environment

def _environment_page() -> str:
    out = ["# Reference: environment variables and output\n",
           "<!-- made by python -m benchlib.reference_pages: do not edit -->\n",
           "## Environment variables\n",
           "Secrets are never among them by name: a spec names the variable that holds a password or a key "
           "(`password_env`, `key_env`), and benchlib reads it from there.\n",
           "| variable | meaning |\n|---|---|"]
    out += [f"| `{k}` | {v} |" for k, v in ENVIRONMENT.items()]
    out += ["", "## Where output goes\n", "| where | what |\n|---|---|"]
    out += [f"| {k} | {v} |" for k, v in OUTPUT]
    return "\n".join(out).rstrip() + "\n"


PAGES = [Page("cli.md", _cli_page), Page("lab-spec.md", _lab_page), Page("campaign-spec.md", _campaign_page),
         Page("remote-spec.md", _remote_page), Page("hosts.md", _hosts_page),
         Page("environment.md", _environment_page)]


def pages() -> dict[str, str]:
    """File name -> the page as the code makes it now."""
    return {p.file: p.make() for p in PAGES}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from benchlib import doc_blocks

    made = pages()
    if "--check" in argv:
        stale = [f"docs/reference/{f}" for f, text in made.items() if not (OUT / f).exists()
                 or (OUT / f).read_text() != text] + doc_blocks.stale()
        if stale:
            print(f"these pages differ from the code: {', '.join(stale)} "
                  "(run: python -m benchlib.reference_pages)", file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for f, text in made.items():
        (OUT / f).write_text(text)
    blocks = doc_blocks.write()
    print(f"wrote {len(made)} pages to {OUT} and the made parts of {', '.join(blocks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
