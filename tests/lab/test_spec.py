"""Lab specs: every example validates; bad specs name every bad field."""

from __future__ import annotations

import pytest

from benchlib.errors import SpecError
from benchlib.lab.spec import LabSpec, load_spec, parse_size, parse_spec
from tests.conftest import EXAMPLES


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_validates(path):
    spec = load_spec(path)
    assert spec.name == path.stem
    assert spec.node_names()


def test_examples_cover_every_topology():
    topologies = {c.topology for p in EXAMPLES.glob("*.toml") for c in load_spec(p).clusters.values()}
    assert topologies == {"single", "async", "semisync", "galera", "group_replication"}
    servers = {(c.system, c.topology) for p in EXAMPLES.glob("*.toml") for c in load_spec(p).clusters.values()}
    assert {("mysql", "async"), ("mysql", "semisync"), ("mysql", "group_replication")} <= servers
    assert any(load_spec(p).sites for p in EXAMPLES.glob("*.toml"))


def test_node_names_and_settings_layers():
    spec = parse_spec(
        'name = "x"\n[defaults]\ndurability = "relaxed"\nbuffer_pool = "256M"\n'
        '[clusters.a]\ntopology = "async"\nreplicas = 2\nparallel_threads = [0, 4]\n'
        '[clusters.g]\ntopology = "galera"\nbuffer_pool = "64M"\n'
    )
    assert spec.node_names() == ["a-1", "a-2", "a-3", "g-1", "g-2", "g-3"]
    assert spec.settings_for("a").durability == "relaxed"
    assert spec.settings_for("a").buffer_pool == "256M"
    assert spec.settings_for("g").buffer_pool == "64M"
    assert spec.settings_for("g").redo_log == "96M"  # built-in default
    assert spec.clusters["a"].replica_parallel(2) == (4, "optimistic")


@pytest.mark.parametrize(
    "text, expected",
    [
        ('name = "x"\n[clusters.a]\ntopology = "asyn"', ["clusters.a: topology must be one of"]),
        ('name = "x"\n[clusters.a]\nreplicas = 2', ["missing 'topology'"]),
        ('name = "X y"\n[clusters.a]\ntopology = "single"', ["lab name 'X y'"]),
        ('name = "x"\n[clusters.a]\ntopology = "async"\nreplicas = 0\ncolour = 1',
         ["clusters.a.replicas: Input should be greater than or equal to 1", "clusters.a.colour: unknown field"]),
        ('name = "x"\n[clusters.g]\ntopology = "galera"\nnodes = 2', ["clusters.g.nodes"]),
        ('name = "x"\n[clusters.g]\ntopology = "galera"\nnodes = 10', ["clusters.g.nodes"]),
        ('name = "x"\n[clusters.a]\ntopology = "async"\nreplicas = 2\nparallel_threads = [1]',
         ["one value per replica"]),
        ('name = "x"\n[clusters.a]\ntopology = "single"\nbuffer_pool = "1K"', ["clusters.a.buffer_pool"]),
        ('name = "x"\n[clusters.a]\ntopology = "single"\n[sites.far]\nnodes = ["b-1"]\nrtt_ms = 10',
         ["no node 'b-1' in this lab"]),
        ('name = "x"\n[clusters.a]\ntopology = "single"\n[sites.far]\nnodes = ["a-1"]\nrtt_ms = 10\njitter_ms = 6',
         ["jitter_ms (6.0) must be at most half"]),
        ('name = "x"\n[clusters.a]\ntopology = "semisync"\nwait_point = "LATER"', ["wait_point"]),
        ('name = "x"\n[clusters]', ["clusters: Dictionary should have at least 1 item"]),
        ('name = "x"\n[clusters', ["not valid TOML"]),
    ],
)
def test_bad_specs_name_the_field(text, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(text, "bad.toml")
    message = info.value.render()
    assert message.startswith("bad.toml: ")
    for fragment in expected:
        assert fragment in message


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError, match="lab spec not found"):
        load_spec(tmp_path / "nope.toml")


def test_sizes():
    assert parse_size("128M") == 128 << 20
    assert parse_size("1G") == 1 << 30
    assert parse_size(4096) == 4096
    with pytest.raises(ValueError):
        parse_size("lots")


def test_spec_round_trips_through_json():
    spec = load_spec(EXAMPLES / "demo.toml")
    assert LabSpec.model_validate(spec.model_dump(mode="json")) == spec


def test_a_lab_whose_spec_this_process_cannot_validate_still_holds_its_ports(tmp_path):
    """A lab brought up with a flavour another process registered (or by an older benchlib) keeps its ports: the
    allocator counts them from the raw spec instead of failing."""
    from benchlib.lab import state
    from benchlib.lab.layout import PORTS_PER_NODE

    raw = {"name": "t-other", "clusters": {"a": {"topology": "async", "system": "unknownflavour", "replicas": 1},
                                           "g": {"topology": "galera", "nodes": 5}}}
    (tmp_path / "t-other").mkdir()
    state.write(tmp_path / "t-other", state.LabRecord("t-other", raw, 24000, None, None))
    taken = state.ports_of_other_labs(tmp_path)
    assert min(taken) == 24000 and len(taken) == PORTS_PER_NODE * (3 + 5)


def test_labs_of_another_root_keep_their_ports(tmp_path, monkeypatch):
    """Two lab roots on one machine (a campaign's and the test suite's): a lab's port block is claimed machine-wide,
    so the other root's allocator never picks it, even while a node of it is down and its port free for a moment; a
    claim whose lab is gone is dropped."""
    from benchlib.lab import state

    monkeypatch.setattr(state, "CLAIMS", tmp_path / "claims")
    a = tmp_path / "rootA" / "t-a"
    a.mkdir(parents=True)
    state.write(a, state.LabRecord("t-a", {"name": "t-a", "clusters": {}}, 21000, None, None))
    with state.claims_lock():
        state.claim_ports(a, 21000, 21030)
        assert state.claimed_ports() == set(range(21000, 21030))
    state.release_ports(a)
    assert state.claimed_ports() == set()
    state.claim_ports(a, 21000, 21030)
    (a / "lab.json").unlink()  # the lab went away without releasing: its claim is stale
    assert state.claimed_ports() == set() and not list((tmp_path / "claims").glob("*.claim"))
