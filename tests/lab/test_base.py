"""Every kind of lab implements the ``Lab`` protocol, a core of ten members, and its capabilities: every member, with
the protocol's parameters (the embedded lab, a remote lab, a lab benchlib provisioned on real hosts)."""

from __future__ import annotations

import importlib
import inspect
import typing

import pytest

from benchlib.lab import base
from benchlib.lab.base import Lab
from benchlib.lab.lab import LocalLab
from benchlib.provision.lab import ProvisionedLab
from benchlib.remote.lab import RemoteLab

LABS = [LocalLab, RemoteLab, ProvisionedLab]

MEMBERS = sorted({*(n for n in vars(Lab) if not n.startswith("_")), *Lab.__annotations__})
METHODS = sorted(n for n, v in vars(Lab).items() if callable(v) and not n.startswith("_"))
CAPABILITIES = {"health": base.Health, "tuning": base.Tuning, "hooks": base.RunHooks}


@pytest.mark.parametrize("cls", LABS)
def test_every_protocol_member_is_there(cls):
    annotated = typing.get_type_hints(cls)
    missing = [n for n in MEMBERS if not hasattr(cls, n) and n not in annotated
               and n not in inspect.signature(cls.__init__).parameters and n not in ("name",)]
    assert not missing, f"{cls.__name__} lacks {missing}"
    for name, protocol in CAPABILITIES.items():  # each capability it always has: a class of its own, typed
        _implements(annotated[name], protocol)


@pytest.mark.parametrize("cls", LABS)
@pytest.mark.parametrize("method", METHODS)
def test_methods_take_the_protocol_parameters(cls, method):
    """Each parameter of the protocol's method is there, of the same kind (positional or keyword-only); a lab
    may add keyword parameters of its own with defaults."""
    want = inspect.signature(getattr(Lab, method)).parameters
    have = inspect.signature(getattr(cls, method)).parameters
    for name, p in want.items():
        assert name in have, f"{cls.__name__}.{method} has no parameter {name!r}"
        assert have[name].kind == p.kind, f"{cls.__name__}.{method}({name}) is {have[name].kind}, not {p.kind}"
    extra = [q for n, q in have.items() if n not in want]
    assert all(q.default is not inspect.Parameter.empty or q.kind in (q.VAR_KEYWORD, q.VAR_POSITIONAL)
               for q in extra), f"{cls.__name__}.{method} needs parameters the protocol does not give: {extra}"


def _implements(cls: type, protocol: type) -> None:
    """``cls`` has each method of ``protocol``, with its parameters in order (and more of its own with defaults)."""
    for method in sorted(n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")):
        assert hasattr(cls, method), f"{cls.__name__} has no {method}"
        want = inspect.signature(getattr(protocol, method)).parameters
        have = inspect.signature(getattr(cls, method)).parameters
        assert list(want) == [n for n in have if n in want], f"{cls.__name__}.{method}"
        extra = [q for n, q in have.items() if n not in want]
        assert all(q.default is not inspect.Parameter.empty for q in extra), f"{cls.__name__}.{method}: {extra}"


@pytest.mark.parametrize("control, protocol", [("benchlib.lab.node_hosts:HostFaults", "FaultControl"),
                                              ("benchlib.lab.capabilities:LocalProxy", "ProxyControl"),
                                              ("benchlib.provision.lab:ProvisionedHealth", "Health")])
def test_each_lab_s_capabilities_take_their_protocols_parameters(control, protocol):
    """What a lab offers beyond the core (``faults()``, ``proxy()``) implements its capability's protocol: the faults
    the embedded and the provisioned lab share, the embedded lab's proxy, a provisioned lab's health."""
    module, _, name = control.partition(":")
    _implements(getattr(importlib.import_module(module), name), getattr(base, protocol))


@pytest.mark.parametrize("hosts", ["benchlib.lab.capabilities:LocalHosts", "benchlib.provision.lab:ProvisionedHosts"])
def test_the_embedded_and_the_provisioned_lab_reach_their_nodes_hosts_alike(hosts):
    """Both kinds of lab that fault their nodes give the one host interface the shared fault layer acts through
    (``benchlib.lab.node_hosts``), and both labs' faults() is that layer."""
    from benchlib.lab.lab import LocalLab
    from benchlib.lab.node_hosts import HostFaults, NodeHosts
    from benchlib.provision.lab import ProvisionedLab

    module, _, name = hosts.partition(":")
    cls = getattr(importlib.import_module(module), name)
    _implements(cls, NodeHosts)
    assert isinstance(cls.local_files, bool)
    for lab in (LocalLab, ProvisionedLab):
        assert inspect.signature(lab.faults).return_annotation in (HostFaults, "HostFaults", "node_hosts.HostFaults")


def test_the_lab_core_is_small_and_a_remote_lab_offers_no_faults_saying_why():
    from benchlib.lab.base import CAPABILITIES
    from benchlib.remote.spec import NO_FAULTS, RemoteLabSpec

    assert len(MEMBERS) <= 10, MEMBERS
    assert not {"inject", "release", "promote", "rejoin", "front", "heal", "set", "status"} & set(METHODS)
    assert RemoteLab.faults(None) is None and RemoteLab.proxy(None) is None  # type: ignore[arg-type]
    spec = RemoteLabSpec.model_validate({"kind": "remote", "name": "r", "credentials": {"user": "u", "password_env": "P"},
                                         "clusters": {"c": {"system": "mariadb", "nodes": [
                                             {"name": "a", "host": "h", "role": "primary"}]}}})
    assert [spec.lacks(c) for c in CAPABILITIES] == [NO_FAULTS, NO_FAULTS] and spec.nodes_of("c") == ["a"]
