"""Opening a lab by its spec: the kind field decides, and a spec of one kind with the other's fields gets one message."""

from __future__ import annotations

import pytest

from benchlib.errors import SpecError
from benchlib.lab.spec import LabSpec
from benchlib.labs import load_lab_spec
from benchlib.remote.spec import RemoteLabSpec
from tests.conftest import ROOT

REMOTE = '''kind = "remote"
name = "r"
[credentials]
user = "bench"
password_env = "BENCH_DB_PASSWORD"
[clusters.m]
system = "mysql"
nodes = [{ name = "m1", host = "127.0.0.1", port = 3307, role = "primary" },
         { name = "m2", host = "127.0.0.1", port = 3308, role = "replica" }]
'''


def test_the_kind_field_chooses_the_spec(tmp_path):
    assert isinstance(load_lab_spec(ROOT / "examples" / "labs" / "demo.toml"), LabSpec)
    assert isinstance(load_lab_spec(ROOT / "examples" / "remote" / "gr9.toml"), RemoteLabSpec)
    no_clients = tmp_path / "r.toml"
    no_clients.write_text(REMOTE)
    spec = load_lab_spec(no_clients)
    assert isinstance(spec, RemoteLabSpec) and spec.clients == {}  # sysbench runs on the benchlib host
    assert spec.setting_rules("m").parse("parallel_threads", "4") == 4


def test_a_spec_with_the_other_kinds_fields_gets_one_clear_message(tmp_path):
    local = tmp_path / "local.toml"
    local.write_text('name = "x"\n[credentials]\nuser = "bench"\npassword_env = "P"\n'
                     '[clusters.a]\ntopology = "async"\n')
    with pytest.raises(SpecError) as err:
        load_lab_spec(local)
    assert "credentials is a field of remote lab specs" in err.value.message and 'kind = "remote"' in err.value.hint
    remote = tmp_path / "remote.toml"
    remote.write_text(REMOTE.replace('[credentials]\nuser = "bench"\npassword_env = "BENCH_DB_PASSWORD"\n', ""))
    with pytest.raises(SpecError) as err:
        load_lab_spec(remote)
    assert "needs [credentials]" in err.value.message and "password_env" in err.value.hint
    odd = tmp_path / "odd.toml"
    odd.write_text('kind = "cloud"\n' + REMOTE.split("\n", 1)[1])
    with pytest.raises(SpecError, match="kind = 'cloud'"):
        load_lab_spec(odd)


@pytest.mark.long
def test_the_lab_commands_say_it_in_one_message(tmp_path):
    import subprocess
    import sys

    local = tmp_path / "local.toml"
    local.write_text('name = "x"\n[clients.c1]\nhost = "h"\nuser = "u"\nagent = true\n[clusters.a]\ntopology = "async"\n')
    for command in ("status", "check"):
        res = subprocess.run([sys.executable, "-m", "benchlib.cli", "lab", command, str(local)], capture_output=True,
                             text=True)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert "clients is a field of remote lab specs" in res.stderr and 'kind = "remote"' in res.stderr
