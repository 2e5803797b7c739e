"""What every spec file shares: a strict, frozen pydantic base, reading TOML, and validation errors as lines.

Lab specs (local and remote) and campaign specs are TOML files validated by pydantic models;
a file that does not validate raises one ``SpecError`` whose detail names every bad field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchlib import catalogue
from benchlib.errors import SpecError

__all__ = ["CLUSTER_NAME", "CLUSTER_NAME_RULE", "Site", "Strict", "check_sites", "format_validation", "named_keys", "read_toml",
           "site_of"]

#: the name of a cluster, site or client host table in a lab spec (local or remote)
CLUSTER_NAME = r"[a-z][a-z0-9]{0,11}"
CLUSTER_NAME_RULE = "lower-case letters and digits, starting with a letter, at most 12"
_TOPOLOGY_TAGS = tuple(catalogue.local_topologies())  # the tags of a local cluster's topology union


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Site(Strict):
    """Nodes in a place of their own, ``rtt_ms`` away from the rest of the lab (a local lab emulates it; a provisioned
    one emulates it on its hosts; any other remote lab declares what its network has)."""

    #: the nodes in this place
    nodes: list[str] = Field(min_length=1)
    #: the round trip between this place and the rest of the lab, in milliseconds
    rtt_ms: float = Field(gt=0, le=5000)
    #: variation of the delay, in milliseconds (at most half of rtt_ms)
    jitter_ms: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _jitter_below_delay(self):
        if self.jitter_ms * 2 > self.rtt_ms:
            raise ValueError(f"jitter_ms ({self.jitter_ms}) must be at most half of rtt_ms ({self.rtt_ms})")
        return self


def check_sites(sites: dict[str, Site], nodes: list[str]) -> None:
    """Every site names nodes of the lab, each node in one site at most (a ValueError says which is not)."""
    known = set(nodes)
    seen: dict[str, str] = {}
    for site_name, site in sites.items():
        for node in site.nodes:
            if node not in known:
                raise ValueError(
                    f"sites.{site_name}.nodes: no node {node!r} in this lab (nodes are: {', '.join(sorted(known))})")
            if node in seen:
                raise ValueError(f"sites: node {node!r} is in both {seen[node]!r} and {site_name!r}")
            seen[node] = site_name


def site_of(sites: dict[str, Site], node: str) -> str | None:
    """The site ``node`` is in (None: the lab's own place)."""
    return next((name for name, site in sites.items() if node in site.nodes), None)


def named_keys(*fields: str, pattern: str, rule: str, what: str = ""):
    """A validator for tables of named entries: every key of ``fields`` matches ``pattern``.

    A bad key raises "<what> name 'key': <rule>"; ``what`` defaults to the field's name less its plural
    "s" (clusters: cluster, hosts: host).
    """

    def check(cls, v: dict, info) -> dict:
        for key in v:
            if not re.fullmatch(pattern, key):
                raise ValueError(f"{what or info.field_name.removesuffix('s')} name {key!r}: {rule}")
        return v

    return field_validator(*fields)(check)


def read_toml(path: str | Path, what: str, example: str = "") -> dict[str, Any]:
    """The TOML table in ``path``; a missing, unreadable or invalid file raises one ``SpecError``."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{what} not found: {p}", hint=f"give the path of a TOML file{', e.g. ' + example if example else ''}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read {what} {p}: {exc.__class__.__name__}", hint="give the path of a readable TOML file") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{p}: not valid TOML: {exc}", hint="fix the syntax at the line and column given") from None


def format_validation(err: ValidationError, source: str, page: str) -> str:
    """One line per problem: where (file and field) and what is wrong; an unknown field names ``page``, the docs page
    of what the file describes."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if not (isinstance(p, str) and p in _TOPOLOGY_TAGS))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = f"unknown field (check the spelling; the fields are in {page})"
        elif e["type"] == "union_tag_invalid":
            msg = f"topology must be one of: {', '.join(_TOPOLOGY_TAGS)}"
        elif e["type"] == "string_pattern_mismatch" and loc == "name":
            msg = f"lab name {e['input']!r}: lower-case letters, digits and '-', starting with a letter, at most 24"
        elif e["type"] == "union_tag_not_found":
            msg = f"missing 'topology' (one of: {', '.join(_TOPOLOGY_TAGS)})"
        elif "input" in e and e["type"] not in {"missing"} and not isinstance(e["input"], dict):
            msg = f"{msg} (got {e['input']!r})"
        lines.append(f"  {source}: {loc or '(top level)'}: {msg}")
    return "\n".join(lines)
