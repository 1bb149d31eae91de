"""Separate hosts for one test: Linux network namespaces joined by veth pairs, made and torn down by the test.

    stranger 10.231.N.6/30 ---- 10.231.N.5/30 [ head ] 10.231.N.1/30 ---- 10.231.N.2/30 far

Each namespace has its own loopback and only the addresses given here (10.231.N.0/29, N from the test's pid, so
two runs at once do not meet); nothing outside the namespaces is touched. The stranger routes through the head's
second address, so it reaches the head's listen address 10.231.N.1 from a network the head does not allow; far is
on the allowed network. Needs root and `ip` (iproute2); `available()` says why not when it cannot run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

ROLES = ("head", "far", "stranger")


@dataclass(frozen=True)
class Hosts:
    names: dict[str, str]  # role -> namespace name
    subnet: int  # N of 10.231.N.0/29

    def address(self, role: str) -> str:
        return {"head": f"10.231.{self.subnet}.1", "far": f"10.231.{self.subnet}.2",
                "head_stranger_side": f"10.231.{self.subnet}.5", "stranger": f"10.231.{self.subnet}.6"}[role]

    @property
    def head_network(self) -> str:
        return f"10.231.{self.subnet}.1/30"

    def cmd(self, role: str, argv: list[str]) -> list[str]:
        """`argv` run inside `role`'s namespace."""
        return ["ip", "netns", "exec", self.names[role], *argv]


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


def available() -> str | None:
    """None when namespaces can be made here, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not shutil.which("ip"):
        return "`ip` (iproute2) is not installed"
    probe = f"bench-probe-{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"`ip netns add` is not allowed here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def make() -> Hosts:
    """The three namespaces, their links and addresses; `remove` undoes all of it."""
    tag = os.getpid() % 100000
    hosts = Hosts(names={r: f"bench-{r}-{tag}" for r in ROLES}, subnet=20 + os.getpid() % 200)
    try:
        for name in hosts.names.values():
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
        n = hosts.names
        for peer, local_addr, peer_addr in (("far", hosts.address("head"), hosts.address("far")),
                                            ("stranger", hosts.address("head_stranger_side"),
                                             hosts.address("stranger"))):
            a, b = f"bh{peer[0]}{tag}", f"b{peer[0]}{tag}"  # interface names: at most 15 characters
            _ip("link", "add", a, "netns", n["head"], "type", "veth", "peer", "name", b, "netns", n[peer])
            _ip("-n", n["head"], "addr", "add", f"{local_addr}/30", "dev", a)
            _ip("-n", n[peer], "addr", "add", f"{peer_addr}/30", "dev", b)
            _ip("-n", n["head"], "link", "set", a, "up")
            _ip("-n", n[peer], "link", "set", b, "up")
        _ip("-n", n["stranger"], "route", "add", "default", "via", hosts.address("head_stranger_side"))
    except Exception:
        remove(hosts)
        raise
    return hosts


def remove(hosts: Hosts) -> None:
    """Delete the namespaces (their veth pairs go with them)."""
    for name in hosts.names.values():
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def listening(hosts: Hosts, role: str) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket listening in `role`'s namespace (`ss -ltn`)."""
    out = subprocess.run(hosts.cmd(role, ["ss", "-Hltn"]), capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        local = line.split()[3]
        addr, _, port = local.rpartition(":")
        addr = addr.strip("[]").split("%")[0]
        found.append((addr.removeprefix("::ffff:"), int(port)))  # an IPv4 address on an IPv6 socket (gRPC's)
    return found
