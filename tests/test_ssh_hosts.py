"""Host lists, ssh config resolution and the pasteable ssh line: no daemon needed."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pytest_dlperf.clusters.base import Node, NodeCommand
from pytest_dlperf.clusters.hosts import HostSpec, parse_hostfile, parse_hostfile_text, parse_hosts
from pytest_dlperf.clusters.ssh import SSHCluster
from pytest_dlperf.clusters.ssh.connect import SSHSettings, load_config, resolve


def test_hosts_horovod_form():
    assert parse_hosts("10.0.0.2:8,10.0.0.3:8") == [HostSpec("10.0.0.2", 8), HostSpec("10.0.0.3", 8)]
    assert parse_hosts("alice@gpu1:4,[fe80::1]:2,bare") == [
        HostSpec("gpu1", 4, "alice"), HostSpec("fe80::1", 2), HostSpec("bare", None)]
    assert parse_hosts(" a:1 , b:2 ")[1] == HostSpec("b", 2)


@pytest.mark.parametrize("text, words", [
    ("a:0", ["'a:0'", "slots must be a whole number >= 1", "host:slots"]),
    ("a:x", ["'a:x'", "slots must be"]),
    ("a:1,,b:1", ["empty entry"]),
    ("a:1,a:2", ["host a is listed twice"]),
    ("fe80::1:2", ["IPv6", "brackets"]),
    ("[fe80::1:2", ["missing ']'"]),
    ("-oProxyCommand=x:1", ["cannot start with '-'"]),
    ("a/b:1", ["'/'"]),
    (":4", ["no host name"]),
])
def test_bad_hosts_name_the_entry_and_the_form(text, words):
    with pytest.raises(ValueError) as err:
        parse_hosts(text)
    for w in words:
        assert w in str(err.value)
    assert "expected" in str(err.value) or "listed twice" in str(err.value)


def test_hostfile_mpi_horovod_form(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_text("# cluster\n10.0.0.2 slots=8\n\n10.0.0.3 slots=8 max_slots=16  # spare\nbob@10.0.0.4\n")
    assert parse_hostfile(f) == [HostSpec("10.0.0.2", 8), HostSpec("10.0.0.3", 8), HostSpec("10.0.0.4", None, "bob")]


@pytest.mark.parametrize("text, words", [
    ("a slots=8\nb slots=eight\n", ["hostfile:2", "slots must be", "'b slots=eight'"]),
    ("a slots=8\nb cpus=4\n", ["hostfile:2", "unknown field 'cpus=4'", "host slots=N"]),
    ("a slots=1\na slots=2\n", ["listed twice"]),
    ("# nothing\n", ["no hosts"]),
])
def test_bad_hostfile_lines_are_named(text, words):
    with pytest.raises(ValueError) as err:
        parse_hostfile_text(text, "hostfile")
    for w in words:
        assert w in str(err.value)


def test_missing_hostfile_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such-hosts.txt"):
        parse_hostfile(tmp_path / "no-such-hosts.txt")


def test_command_line_wins_over_ssh_config(tmp_path):
    cfg = tmp_path / "config"
    cfg.write_text("Host gpu*\n  HostName 10.1.0.%h\n  Port 2200\n  User carol\n  IdentityFile ~/.ssh/id_gpu\n"
                   "  UserKnownHostsFile /etc/dlperf_known\n  ProxyJump bastion\nHost bastion\n  Port 22\n")
    config = load_config(str(cfg))
    t = resolve(HostSpec("gpu1"), SSHSettings(config=str(cfg)), config)
    assert (t.hostname, t.port, t.user, t.proxy_jump) == ("10.1.0.gpu1", 2200, "carol", "bastion")
    assert t.keys == (str(Path("~/.ssh/id_gpu").expanduser()),)
    assert t.known_hosts == ("/etc/dlperf_known",)
    assert t.key_name == "[10.1.0.gpu1]:2200"
    t = resolve(HostSpec("gpu1", 8, "dave"), SSHSettings(config=str(cfg), port=22, user="erin", key="/k",
                                                         known_hosts="/kh"), config)
    assert (t.port, t.user, t.keys, t.known_hosts, t.key_name) == (22, "dave", ("/k",), ("/kh",), "10.1.0.gpu1")


def test_constructor_connects_nothing():
    # 192.0.2.1 is TEST-NET-1: nothing answers there, so a connection attempt would hang or fail.
    cluster = SSHCluster(parse_hosts("192.0.2.1:1"), SSHSettings(config=None, connect_timeout=0.1, retries=0))
    assert cluster._hosts[0].conn is None
    cluster.close()


HOSTILE = ["a b", "it's", 'say "hi"', "$(touch /tmp/dlperf-pwned)", "`id`", "x; rm -rf /", "&&", "|", "*", "~",
           "new\nline", "tab\there", "$HOME", "\\"]


def test_render_is_a_pasteable_ssh_line_quoting_everything():
    cluster = SSHCluster(parse_hosts("o'dd;$(host):1"), SSHSettings(config=None, port=2222, user="u s",
                                                                      key="/keys/my key", known_hosts="/k h"))
    node = Node("o'dd;$(host)", "o'dd;$(host)", 1, 1)
    cmd = NodeCommand(node, ["python3", *HOSTILE], {"DLPERF_RUN_TAG": "t", "V": "$(x) 'y' \"z\";"},
                      cwd="/runs/it's a dir; $(x)")
    line = cluster.render(cmd)
    argv = shlex.split(line)
    assert argv[:6] == ["ssh", "-p", "2222", "-i", "/keys/my key", "-o"]
    assert argv[6] == 'UserKnownHostsFile="/k h"'
    assert argv[7:9] == ["u s@o'dd;$(host)", "--"] and len(argv) == 10
    remote = shlex.split(argv[9])  # what the remote shell parses
    assert remote[:3] == ["cd", "/runs/it's a dir; $(x)", "&&"]
    assert remote[3:6] == ["env", "DLPERF_RUN_TAG=t", "V=$(x) 'y' \"z\";"]
    assert remote[6:] == ["python3", *HOSTILE]
    cluster.close()
