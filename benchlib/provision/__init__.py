"""Real hosts built from a lab spec: ``benchlib provision`` installs, configures and wires the spec's clusters on
machines reached over SSH, with Ansible underneath, and writes the remote lab spec of what it built;
``benchlib unprovision`` takes it all away again.

- ``hosts``: the hosts file (which machine runs which node, how to log in);
- ``plan``: the nodes on their hosts, each with the my.cnf the embedded lab would give it;
- ``build``: provision and unprovision (state kept in a folder of their own);
- ``ansible_run``: ansible-runner underneath (progress, log, one message for a failed task);
- ``ansible/``: the playbooks and the service script (``benchlib-node``) and systemd unit they install;
- ``collections``: Ansible's community.mysql, taken from PyPI's ansible bundle;
- ``hostroot`` and ``nshosts``: machines on this one for the tests (a Debian root filesystem, network namespaces,
  copy-on-write layers, their own sshd).
"""

__all__ = ["ansible_run", "build", "collections", "hostroot", "hosts", "nshosts", "plan"]
