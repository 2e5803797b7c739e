"""The one registry shape: register, a lookup that names the known ones, order, and plug-ins loaded from an
entry-point group the way a third party's package declares them (a broken one is one message naming it)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from benchlib.errors import SpecError
from benchlib.plugin import Registry
from tests.plugins import installed


@dataclass(frozen=True)
class Thing:
    name: str
    order: int = 0


THING = Thing("third", order=-1)  # what the test's entry point names


def test_lookup_names_the_known_ones_and_order_decides_iteration():
    r: Registry[Thing] = Registry("thing", order=lambda t: t.order)
    r.register(Thing("b", 2))
    r.register(Thing("a", 1))
    r.register(Thing("c", 1), name="c-alias")
    assert list(r) == ["a", "c-alias", "b"] and r.lookup("a").order == 1 and r.get("zz") is None
    with pytest.raises(SpecError, match="unknown thing 'zz'") as err:
        r.lookup("zz")
    assert "a, c-alias, b" in err.value.hint
    assert r.unregister("a") is not None and "a" not in r


def test_an_entry_point_registers_its_object_and_a_broken_one_is_named(tmp_path):
    r: Registry[Thing] = Registry("thing", group="benchlib.test_things", order=lambda t: t.order)
    r.register(Thing("own", 0))
    with installed(tmp_path / "ok", r, "third", "tests.test_plugin:THING") as found:
        assert found is THING and list(r) == ["third", "own"]
    assert "third" not in r
    broken: Registry[Thing] = Registry("thing", group="benchlib.test_broken")
    with pytest.raises(SpecError, match=r"the thing 'nope' \(tests.no_such_module:X, entry point group "
                                        r"benchlib.test_broken\) cannot be loaded: ModuleNotFoundError"):
        with installed(tmp_path / "broken", broken, "nope", "tests.no_such_module:X"):
            pass


def test_benchlib_s_own_axes_come_from_its_declared_entry_points():
    from benchlib.axis import AXES
    from benchlib.plugin import declared

    points = dict(declared("benchlib.axes"))
    assert set(points) == {"probe", "read_split", "fault", "search", "stall", "hot_rows", "tpcc", "writers", "history"} <= set(AXES)
    assert list(AXES)[:5] == ["probe", "read_split", "fault", "search", "stall"]  # their order, not the metadata's
