"""Which server counters add up to the errors the clients of a writer node saw: the comparisons a run's ``writers``
record keeps per node (``reconciled``), made again from its counts when a campaign is analysed."""

from __future__ import annotations

__all__ = ["CANDIDATES", "reconciled", "reconciled_nodes"]

#: what a server counter (or the sum of two) is compared with: the clients' errors on its node ("errors", or those of
#: one number, "e3101"), or those of every writer node ("group e3101": a group's certifier counts every member's
#: conflicts alike). Measured: a Galera node's Handler_rollback equals its clients' 1213s; a multi-primary group
#: member's COUNT_TRANSACTIONS_LOCAL_ROLLBACK its clients' 3101s and COUNT_CONFLICTS_DETECTED the whole group's (its
#: 1180s and 1213s, local transactions the applier's lock conflicts rolled back, no group counter counts), and its
#: Handler_rollback twice each error at commit (3101, 1180) and once each 1213: every error, counted
CANDIDATES = (("Handler_rollback", "errors"), ("Com_rollback", "errors"), ("wsrep_local_cert_failures", "errors"),
              ("wsrep_local_bf_aborts", "errors"), ("wsrep_local_cert_failures+wsrep_local_bf_aborts", "errors"),
              ("gr_conflicts_detected", "errors"), ("gr_local_rollback", "errors"), ("gr_local_rollback", "e3101"),
              ("gr_conflicts_detected", "group e3101"), ("Handler_rollback", "2 e3101 + 2 e1180 + e1213"))


def _terms(what: str) -> list[tuple[int, str]]:
    """"2 e3101 + e1213" -> [(2, "e3101"), (1, "e1213")]."""
    out = []
    for term in what.split(" + "):
        k, _, key = term.rpartition(" ")
        out.append((int(k) if k else 1, key))
    return out


def _label(counter: str, what: str) -> str:
    if what == "errors":
        return counter
    if " + " in what:  # "its clients' 3101s and 1180s twice and 1213s once"
        times = {1: "once", 2: "twice"}
        by: dict[int, list[str]] = {}
        for k, key in _terms(what):
            by.setdefault(k, []).append(f"{key[1:]}s")
        said = " and ".join(f"{' and '.join(keys)} {times.get(k, f'{k} times')}" for k, keys in sorted(
            by.items(), reverse=True))
        return f"{counter} = its clients' {said}"
    group, _, code = what.rpartition(" ")
    whose = "the group's" if group else "its clients'"
    return f"{counter} = {whose} {code[1:]} errors"


def reconciled(client: dict[str, int], server: dict[str, float], group: dict[str, int] | None = None,
               slack: int = 0) -> list[str]:
    """The comparisons of ``CANDIDATES`` that hold within ``slack``: a node's server counters (``server``) against its
    clients' counts (``client``: "errors" and "eNNNN") and every writer node's (``group``, summed), each named by the
    counter alone (all errors) or "counter = its clients' 3101 errors". A count no error of that number made is 0."""
    out = []
    for counter, what in CANDIDATES:
        parts = counter.split("+")
        if not all(p in server for p in parts):
            continue
        if " + " in what:
            expected = sum(k * client.get(key, 0) for k, key in _terms(what))
        else:
            where, _, key = what.rpartition(" ")
            expected = ((group or {}) if where else client).get(key, 0)
        if " + " in what and counter in out:
            continue  # a weighting of the errors that their plain count already matched says nothing more
        if abs(sum(server[p] for p in parts) - expected) <= slack:
            out.append(_label(counter, what))
    return out


def reconciled_nodes(client: dict[str, dict[str, int]], server: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    """``reconciled`` on every writer node of a run (``client`` and ``server``: by node), the group's counts the sum
    of every writer node's."""
    group: dict[str, int] = {}
    for counts in client.values():
        for k, v in counts.items():
            group[k] = group.get(k, 0) + v
    return {n: reconciled(client.get(n, {}), server[n], group) for n in server}
