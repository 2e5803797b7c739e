"""Open any lab from its spec or name: the one place that knows there are two kinds.

A lab spec file says which kind it is with its ``kind`` field: ``"local"`` (the default: the
embedded lab this machine runs, ``benchlib.lab.spec``) or ``"remote"`` (servers benchlib
connects to, ``benchlib.remote.spec``). Everything else talks to the ``benchlib.lab.base.Lab``
protocol and never asks which kind it has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from benchlib.errors import LabError, LabSpecMismatch, SpecError
from benchlib.lab.base import Lab, quiet
from benchlib.lab.spec import LabSpec, lab_spec_from
from benchlib.remote.spec import RemoteLabSpec, remote_spec_from
from benchlib.specs import read_toml

__all__ = ["AnyLabSpec", "load_lab_spec", "open_lab", "open_target"]

AnyLabSpec = LabSpec | RemoteLabSpec
REMOTE_FIELDS = ("clients", "credentials", "allow_restart")


def load_lab_spec(path: str | Path) -> AnyLabSpec:
    """A local or remote lab spec, by its ``kind`` field."""
    data = read_toml(path, "lab spec", "examples/labs/async-1p2r.toml")
    kind = data.get("kind", "local")
    if kind == "remote":
        return remote_spec_from(data, str(path))
    if kind != "local":
        raise SpecError(f"{path}: kind = {kind!r}: a lab is \"local\" (this machine runs it) or \"remote\"",
                        hint='kind = "remote" for servers benchlib connects to; leave kind out for a local lab')
    stray = [f for f in REMOTE_FIELDS if f in data]
    if stray:
        raise SpecError(f"{path}: {', '.join(stray)} {'is a field' if len(stray) == 1 else 'are fields'} of remote "
                        "lab specs, and this one is local",
                        hint='for servers benchlib connects to, add kind = "remote" at the top; for a lab this '
                             f"machine runs, remove {', '.join(stray)}")
    return lab_spec_from(data, str(path))


def open_lab(spec: AnyLabSpec, *, bring_up: bool = False,
             progress: Callable[[str], None] = quiet) -> tuple[Lab, bool]:
    """The lab of ``spec``: a remote lab (connect only), the running local lab of that name (its spec must be
    ``spec``), or with ``bring_up`` a new local lab. Returns (lab, True when this call brought it up)."""
    if isinstance(spec, RemoteLabSpec):
        if spec.provisioned:  # benchlib built these servers: it may also kill, freeze and restart them
            from benchlib.provision.lab import ProvisionedLab

            return ProvisionedLab(spec), False
        from benchlib.remote.lab import RemoteLab

        return RemoteLab(spec), False
    from benchlib.lab.lab import LocalLab
    from benchlib.lab.state import list_labs

    if spec.name in list_labs():
        lab = LocalLab.open(spec.name)
        if lab.spec != spec:
            raise LabSpecMismatch(f"lab {spec.name} is up with a different spec",
                           hint=f"benchlib lab down {spec.name} (it is brought up as specified), or point at the "
                                "running lab's spec")
        return lab, False
    if not bring_up:
        raise LabError(f"lab {spec.name} is not up", hint="benchlib lab up SPEC")
    progress(f"bringing up lab {spec.name} ...")
    return LocalLab.up(spec, progress=progress), True


def open_target(target: str | None) -> Lab:
    """What the ``lab`` commands take: a spec file (local or remote) or the name of a local lab that is up."""
    if target and (target.endswith(".toml") or Path(target).is_file()):
        return open_lab(load_lab_spec(target))[0]
    from benchlib.lab.lab import LocalLab

    return LocalLab.open(target)
