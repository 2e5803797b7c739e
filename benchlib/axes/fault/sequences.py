"""A fault as a timed sequence of steps on named targets: what a fault run does, and when.

Every fault is a sequence. The single faults are one or two steps: ``kill`` (kill the target), ``freeze`` and ``cut``
(then ``release`` it after ``duration_s``). The sequences of what users fear, built in (``D``: ``fault.duration_s``):

- ``host_loss``: the write node is cut off from the rest of its cluster while its clients still reach it (``isolate``),
  killed ``D`` seconds later, and the cut is released half a second after the kill. What it acknowledged in those
  ``D`` seconds never reached a replica: async loses it, semi-sync loses it once its timeout is shorter than ``D``.
- ``isolation``: the write node is cut off for ``D`` seconds while its clients keep writing, then let back: the
  cluster (or the lab's promotion) fails over meanwhile, and the old primary comes back beside a new one.
- ``replica_then_loss``: the last replica is cut off first (a semi-sync primary with one replica falls back to async
  after its timeout), the write node is killed ``D`` seconds later, and the replica let back half a second after.
- ``switchover``: a planned change of primary, not a failure: the lab's controlled switch on async and semi-sync
  clusters (the primary read-only, every replica caught up, the first replica promoted, the others following), Group
  Replication's ``group_replication_set_as_primary`` on a group. ``fault.open_transaction`` leaves a transaction open
  and idle on the old primary first: both wait for it up to ``fault.switchover_wait_s``, then disconnect it.
- ``power_cut``: every node of the cluster killed at once (SIGKILL to each within a millisecond or so), as a power
  loss of the whole cluster would: what survives is what each server had handed to the operating system. With
  ``innodb_flush_log_at_trx_commit = 0`` the log buffer dies with the process, so a kill shows that setting's loss;
  setting 2's (the page cache lost with the OS) needs an OS crash or power loss, which a process kill does not
  reproduce. The heal starts the whole cluster again (Galera: every node recovers its position, the saved primary
  view comes back).

A campaign can name its own in ``[fault.sequences]``: a list of steps, each ``{at_s, do, target}`` with ``at_s`` from
the fault's start (``fault.at_s`` into the load), ``do`` one of kill, freeze, cut, isolate, release, and ``target``
write_node, replica, all_nodes or site:NAME. ``check`` refuses what the lab could not undo: a release of nothing, a step on a
killed node, a freeze of a frozen one.
"""

from __future__ import annotations

from dataclasses import dataclass
from benchlib.schema import Cell

__all__ = ["ACTIONS", "BUILT_IN", "SINGLE", "Step", "check", "steps_of"]

#: what a step can do; ``release`` ends the freeze, cut or isolation of its target
ACTIONS = ("kill", "freeze", "cut", "isolate", "release", "switchover")
#: the single faults: one step, and its release after duration_s (a kill lasts until the heal)
SINGLE = ("kill", "freeze", "cut")
BUILT_IN = ("host_loss", "isolation", "replica_then_loss", "power_cut", "switchover")
AFTER_KILL_S = 0.5  # a sequence's cut is released this long after its kill


@dataclass(frozen=True)
class Step:
    at_s: float  # from the fault's start
    do: str  # kill | freeze | cut | isolate | release
    target: str  # write_node | replica | all_nodes | site:NAME

    def as_dict(self) -> dict[str, Cell]:
        return {"at_s": self.at_s, "do": self.do, "target": self.target}


def steps_of(kind: str, target: str, duration_s: float, own: dict[str, list[Step]] | None = None) -> tuple[Step, ...]:
    """The steps of fault ``kind`` on ``target`` (the built-in sequences name their own targets)."""
    if own and kind in own:
        return tuple(sorted(own[kind], key=lambda s: s.at_s))
    if kind == "kill":
        return (Step(0.0, "kill", target),)
    if kind in ("freeze", "cut"):
        return (Step(0.0, kind, target), Step(duration_s, "release", target))
    if kind == "host_loss":
        return (Step(0.0, "isolate", "write_node"), Step(duration_s, "kill", "write_node"),
                Step(duration_s + AFTER_KILL_S, "release", "write_node"))
    if kind == "isolation":
        return (Step(0.0, "isolate", "write_node"), Step(duration_s, "release", "write_node"))
    if kind == "power_cut":
        return (Step(0.0, "kill", "all_nodes"),)
    if kind == "switchover":
        return (Step(0.0, "switchover", "write_node"),)
    if kind == "replica_then_loss":
        return (Step(0.0, "isolate", "replica"), Step(duration_s, "kill", "write_node"),
                Step(duration_s + AFTER_KILL_S, "release", "replica"))
    raise ValueError(f"unknown fault kind {kind!r}")


def check(steps: tuple[Step, ...] | list[Step]) -> str | None:
    """Why the lab could not stage ``steps`` one after the other (None: it can): a release of nothing held, a step on
    a node already killed, the same hold twice."""
    held: dict[str, str] = {}  # target -> freeze | cut | isolate
    killed: set[str] = set()
    for s in sorted(steps, key=lambda s: s.at_s):
        if s.do not in ACTIONS:
            return f"step {s.do!r} at {s.at_s:g} s: a step is one of {', '.join(ACTIONS)}"
        if s.target in killed and not (s.do == "release" and s.target in held):  # a cut outlives its node
            return f"{s.do} of {s.target} at {s.at_s:g} s: it was killed before (a kill lasts until the heal)"
        if s.do == "release":
            if s.target not in held:
                return f"release of {s.target} at {s.at_s:g} s: nothing holds it then (freeze, cut or isolate first)"
            del held[s.target]
        elif s.do == "switchover":
            if s.target != "write_node":
                return f"switchover of {s.target} at {s.at_s:g} s: a switchover moves the write node's role"
        elif s.do == "kill":
            killed.add(s.target)
            if held.get(s.target) == "freeze":  # SIGKILL ends a freeze
                del held[s.target]
        else:
            if s.target in held:
                return f"{s.do} of {s.target} at {s.at_s:g} s: it is already under {held[s.target]}"
            held[s.target] = s.do
    return None
