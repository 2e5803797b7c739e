"""The system catalogue is the one place that names systems and topologies: pure data, written once, quoted by the
README and the report, agreeing with the appliers in benchlib.systems."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from benchlib import catalogue
from benchlib.systems import base as systems

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "benchlib"
NAMES = set(catalogue.SYSTEMS) | set(catalogue.TOPOLOGIES)
#: where naming a system or topology is the point: the catalogue, and the embedded lab's topology builders (which
#: lay nodes out, give them ports and roles, per topology); servers/ tells binary flavours apart
ALLOWED = ("catalogue.py", "lab/layout.py", "lab/topology.py", "lab/mariadb.py", "lab/mysql.py", "lab/flavors.py",
           "lab/group_replication.py", "servers/")


def _named(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [x for e in node.elts for x in _named(e)]
    return []


def _comparisons() -> list[str]:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        if rel.startswith(ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                # a name on the left of ``in`` is a substring test ("mariadb" in version): not a comparison
                sides = [node.comparators[0]] if isinstance(node.ops[0], (ast.In, ast.NotIn)) else \
                    [node.left, *node.comparators]
                names = [x for side in sides for x in _named(side)]
                if names:
                    found.append(f"benchlib/{rel}:{node.lineno} compares with {names}")
    return found


@pytest.mark.long
def test_no_module_compares_with_a_system_or_topology_name_outside_the_catalogue():
    assert _comparisons() == []


def test_the_scan_finds_a_comparison():
    tree = ast.parse('if system == "galera" or topo in ("async", "x"): pass')
    hits = [x for n in ast.walk(tree) if isinstance(n, ast.Compare) for s in [n.left, *n.comparators]
            for x in _named(s)]
    assert sorted(hits) == ["async", "galera"]


def test_every_applier_system_has_its_catalogue_entry_and_agrees_with_it():
    assert set(systems.SYSTEMS) == set(catalogue.SYSTEMS)
    for name, facts in catalogue.SYSTEMS.items():
        assert systems.get(name).title == facts.title
        known = systems.get(name).read_settings
        assert list(known) == list(facts.read_settings), name  # the appliers of exactly the settings it lists
        how = systems.failover_of(name)
        assert (how is None) == (not facts.failover)
        if how:
            assert (how.how, how.promise, how.automatic) == (facts.failover, facts.promise, facts.automatic_failover)
        assert facts.topology in catalogue.TOPOLOGIES
        if facts.roles:
            assert facts.writer_role in facts.roles


def test_each_failover_promise_is_written_once_and_the_docs_quote_it():
    readme = re.sub(r"\s+", " ", (ROOT / "docs" / "campaigns" / "faults.md").read_text())
    for facts in catalogue.SYSTEMS.values():
        if facts.promise:
            assert f"*{facts.title}* (`{facts.name}`): {facts.promise}" in readme, facts.name
    words = {f.promise[:60]: f.name for f in catalogue.SYSTEMS.values() if f.promise}
    for path in PKG.rglob("*.py"):
        text = path.read_text()
        for w, name in words.items():  # in its system's facts (or the facts of the system it shares it with) only
            assert w not in text or path.name == "facts.py", f"{path} repeats {name}'s failover promise: quote catalogue.promise"
        assert sum(w in text for w in words) <= 1, f"{path} holds the promises of several systems"


def test_unknown_names_are_refused_with_the_known_ones():
    from benchlib.errors import SpecError

    with pytest.raises(SpecError) as e:
        catalogue.of("postgres")
    assert "galera" in e.value.hint
    assert catalogue.get(float("nan")) is None and catalogue.server_name("x") == "x"
    assert catalogue.is_multi_writer("galera") and not catalogue.is_multi_writer("async")
    assert catalogue.family("group_replication") == catalogue.family("mysql") != catalogue.family("galera")
