"""A process's own network, behind a router the tests and the nemesis can cut.

A client namespace reaches the host through a router namespace; the fault is a pair of
blackhole routes in the router: every packet of the flow, both ways, is dropped in the
network without a reset or an ICMP error, and neither end's own stack is touched, as
when a NAT or a firewall forgets a connection. (``tc netem`` and ``iptables`` are not on
every kernel and image this runs on; ``ip`` is.) Healing removes the routes.

Used by ``tests/test_pg_halfopen.py`` and by the nemesis's partition
(``bench/nemesis_faults.py``). Needs root and iproute2.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass


def ip(command: str) -> None:
    subprocess.run(["ip", *command.split()], check=True, capture_output=True, timeout=30)


def missing() -> str:
    """Why namespaces cannot be made here, or "" when they can."""
    return "not root" if os.geteuid() != 0 else "no ip" if not shutil.which("ip") else ""


@dataclass(frozen=True)
class Link:
    """A namespace (``ns``) whose one route to ``host_ip`` goes through ``router``."""

    ns: str
    router: str
    client_ip: str
    host_ip: str

    def cut(self) -> None:
        for address in (self.client_ip, self.host_ip):
            ip(f"-n {self.router} route add blackhole {address}/32")

    def heal(self) -> None:
        for address in (self.client_ip, self.host_ip):
            ip(f"-n {self.router} route del blackhole {address}/32")


@contextlib.contextmanager
def link() -> Iterator[Link]:
    """Client namespace ─ router namespace ─ host, on addresses of its own; removed with
    everything in it (its veths, the host's route) on the way out."""
    tag = uuid.uuid4().hex[:8]
    n = int(tag, 16)
    net = f"10.{200 + n % 50}.{(n >> 8) % 256}"
    made = Link(f"olc{tag}", f"olr{tag}", f"{net}.2", f"{net}.6")
    ns, router = made.ns, made.router
    try:
        for command in (
            f"netns add {ns}",
            f"netns add {router}",
            f"link add oa{tag} netns {ns} type veth peer ob{tag} netns {router}",
            f"link add oc{tag} netns {router} type veth peer od{tag}",
            f"-n {ns} addr add {net}.2/30 dev oa{tag}",
            f"-n {router} addr add {net}.1/30 dev ob{tag}",
            f"-n {router} addr add {net}.5/30 dev oc{tag}",
            f"addr add {net}.6/30 dev od{tag}",
            f"-n {ns} link set lo up",
            f"-n {ns} link set oa{tag} up",
            f"-n {router} link set ob{tag} up",
            f"-n {router} link set oc{tag} up",
            f"link set od{tag} up",
            f"-n {ns} route add default via {net}.1",
            f"route add {net}.0/30 via {net}.5",
        ):
            ip(command)
        forward = ["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]
        subprocess.run(["ip", "netns", "exec", router, *forward], check=True, timeout=30)
        yield made
    finally:
        for name in (ns, router):  # their veths go with them, and the host's route
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
