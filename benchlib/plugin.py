"""One registry for everything pluggable: axes, systems, server flavours, topologies, link shapers, studies.

    AXES: Registry[Axis] = Registry("axis", group="benchlib.axes")
    AXES.register(MyAxis())           # or declared as an entry point, in the package that defines it
    AXES.lookup("fault")              # raises, naming every known one
    AXES.get("fault")                 # None when unknown (a Mapping)

A registry with an entry-point ``group`` loads that group the first time it is read: each entry point names an
object (``benchlib.axes.fault:AXIS``), registered as it loads. benchlib's own axes and systems are declared that way
in its ``pyproject.toml``, so a third party's package registers an axis or a system exactly as benchlib does:

    [project.entry-points."benchlib.axes"]
    myaxis = "mypackage.myaxis:AXIS"

Run from a checkout that is not installed (no package metadata), the checkout's own ``pyproject.toml`` declares the
built-in ones.
"""

from __future__ import annotations

import importlib
import tomllib
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Generic, TypeVar

from benchlib.errors import BenchlibError, SpecError

__all__ = ["Registry", "declared"]

T = TypeVar("T")

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def declared(group: str) -> list[tuple[str, str]]:
    """The entry points of ``group`` as (name, "module:object"): installed packages', and benchlib's own from the
    ``pyproject.toml`` of the checkout it runs from (so a checkout that is not installed, or whose metadata is older
    than its pyproject, still has them all), else from its installed metadata."""
    checkout = PYPROJECT.exists()
    found = [(ep.name, ep.value) for ep in metadata.entry_points(group=group)
             if not (checkout and ep.dist is not None and ep.dist.name == "benchlib")]
    if checkout:
        table = tomllib.loads(PYPROJECT.read_text()).get("project", {}).get("entry-points", {}).get(group, {})
        found = [*table.items(), *found]
    return found


def _load(value: str) -> object:
    module, _, attr = value.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Mapping[str, T], Generic[T]):
    """Named plug-ins of one kind, in registration order (or by ``order``, a key on the item, when given).

    ``what`` names the kind in messages ("axis"); ``key`` gives an item's name (default: its ``name``); ``group`` is
    the entry-point group loaded on first use; ``error`` and ``hint`` shape the message of a failed ``lookup``;
    ``items`` are registered at once; ``on_register`` is told of each item registered (a system registers the
    topologies it brings); ``found`` finds items when the registry is first read, as a group's entry points are (the
    systems' lab-side parts, found beside their facts). ``origin`` holds where each entry point's item came from
    (``"package.module:object"``)."""

    def __init__(self, what: str, *, group: str | None = None, key: Callable[[T], str] | None = None,
                 order: Callable[[T], object] | None = None, error: type[BenchlibError] = SpecError,
                 hint: Callable[[list[str]], str] | None = None, items: Iterable[T] = (),
                 on_register: Callable[[T], None] | None = None, found: Callable[[], Iterable[T]] | None = None):
        self.what = what
        self.group = group
        self._key = key or (lambda item: getattr(item, "name"))
        self._order = order
        self._error = error
        self._hint = hint or (lambda names: f"known {what} names: {', '.join(names) or 'none'}")
        self._items: dict[str, T] = {}
        self._on_register = on_register
        self._found = found
        self._requires: list[Registry] = []
        self._stamp: tuple[int, ...] = ()  # the versions of the registries it requires, when it last loaded
        self._from_found: set[str] = set()
        self.version = 0  # counts registrations and removals (a registry that requires this one loads again)
        self.origin: dict[str, str] = {}
        self._loaded = group is None and found is None
        self._loading = False
        for item in items:
            self.register(item)

    # -- registering -------------------------------------------------------------------------------------------
    def register(self, item: T, name: str | None = None) -> T:
        """Add ``item`` under ``name`` (default: its own; a later one of the same name replaces it); returns it
        (usable as a decorator)."""
        self._items[name if name is not None else self._key(item)] = item
        self.version += 1
        if self._on_register is not None:
            self._on_register(item)
        return item

    def requires(self, other: "Registry") -> None:
        """Load ``other`` before this one is read (the topologies a system brings come with the systems)."""
        self._requires.append(other)

    def unregister(self, name: str) -> T | None:
        """Remove ``name`` (tests register throwaway plug-ins); returns what was there."""
        self.origin.pop(name, None)
        self.version += 1
        return self._items.pop(name, None)

    def load(self) -> None:
        """Load the entry points of the group once (each registers its object; a module registers by import)."""
        for other in self._requires:
            other.load()
        stamp = tuple(other.version for other in self._requires)
        if stamp != self._stamp and self._found is not None and not self._loading:
            self._loaded = False  # what it finds follows what it requires (a system installed, or taken away)
        self._stamp = stamp
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            if self._found is not None:
                for name in self._from_found:
                    self._items.pop(name, None)
                self._from_found = set()
                for item in self._found():
                    if self._key(item) not in self._items:  # one registered by hand stays
                        self._items[self._key(item)] = item
                        self._from_found.add(self._key(item))
            for name, value in declared(self.group) if self.group else ():
                try:
                    obj = _load(value)
                except Exception as exc:  # a broken third-party plug-in is named, not a traceback
                    raise self._error(f"the {self.what} {name!r} ({value}, entry point group {self.group}) cannot be "
                                      f"loaded: {type(exc).__name__}: {exc}",
                                      hint="fix or uninstall the package that declares it") from exc
                if not isinstance(obj, types.ModuleType) and name not in self._items:
                    self.register(obj)  # type: ignore[arg-type]
                    self.origin[self._key(obj)] = value  # type: ignore[arg-type]
            self._loaded = True
        finally:
            self._loading = False

    def reload(self) -> None:
        """Load the group's entry points again: those of packages installed since (the ones loaded stay)."""
        self._loaded = self.group is None and self._found is None
        for other in self._requires:
            other.reload()
        self.load()

    # -- reading -----------------------------------------------------------------------------------------------
    def lookup(self, name: str) -> T:
        """The plug-in ``name``; a ``SpecError`` (or the registry's error) naming every known one otherwise."""
        self.load()
        try:
            return self._items[name]
        except KeyError:
            raise self._error(f"unknown {self.what} {name!r}", hint=self._hint(self.names())) from None

    def names(self) -> list[str]:
        return list(self)

    def __getitem__(self, name: str) -> T:
        self.load()
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        if self._order is None:
            return iter(list(self._items))
        order = self._order
        return iter(sorted(self._items, key=lambda n: order(self._items[n])))  # type: ignore[arg-type,return-value]

    def __len__(self) -> int:
        self.load()
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._items)})"
