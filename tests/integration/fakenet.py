"""A fake internet for the egress tests, made of network namespaces this
test creates and removes (never the real internet):

  web   198.51.100.130/25 on a veth to the host (198.51.100.129), with
        more local addresses for test names (NAMES), 203.0.113.140 behind
        it (a second range, for CIDR rules), an HTTP server on :80 and an
        HTTPS server on :443 (a certificate from a CA made here, now), and
        a DNS server at 198.51.100.153 that answers from zone.json.
  trap  198.51.100.2/30 on a veth to the host (198.51.100.1), holding every
        address a test expects to be refused (TRAPPED: private, CGNAT,
        metadata), each routed there by a /32 on the host. It logs any
        connection that reaches it: even a leak cannot leave the machine.

FakeNet.start() builds it and FakeNet.stop() takes it all down: the
servers (by pid), the routes, the veths and both namespaces.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WEB_HOST, WEB_NS, DNS_ADDR = "198.51.100.129", "198.51.100.130", "198.51.100.153"
NAMES = {"a.test": "198.51.100.140", "b.test": "198.51.100.141", "x.w.test": "198.51.100.142",
         "deep.x.w.test": "198.51.100.142", "w.test": "198.51.100.143", "c.test": "198.51.100.144",
         "pkg.test": "198.51.100.145", "rebind.test": "198.51.100.146"}
CIDR_NET, CIDR_HOST = "203.0.113.128/25", "203.0.113.140"
TRAP_HOST, TRAP_NS = "198.51.100.1", "198.51.100.2"
TRAPPED = ["10.77.0.5", "172.16.77.7", "192.168.77.7", "100.64.77.7", "169.254.169.254", "169.254.77.7"]


def sh(*argv, check=True, ns=None):
    if ns:
        argv = ("ip", "netns", "exec", ns) + argv
    p = subprocess.run(argv, capture_output=True, text=True)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p


class FakeNet:
    def __init__(self):
        tag = str(os.getpid() % 100000)
        self.web, self.trap = f"xbnet{tag}w", f"xbnet{tag}t"
        self.vweb, self.vtrap = f"xbw{tag}", f"xbt{tag}"
        self.dir = tempfile.mkdtemp(prefix="xbnet-")
        self.zone = os.path.join(self.dir, "zone.json")
        self.traplog = os.path.join(self.dir, "trap.log")
        self.procs: list[subprocess.Popen] = []
        self.routes: list[str] = []
        self.ca = os.path.join(self.dir, "ca.pem")

    # -- names --
    def set_zone(self, names: dict[str, list[str]]) -> None:
        tmp = self.zone + ".new"
        with open(tmp, "w") as f:
            json.dump(names, f)
        os.replace(tmp, self.zone)

    def trapped(self) -> str:
        try:
            with open(self.traplog) as f:
                return f.read()
        except OSError:
            return ""

    # -- up and down --
    def _certs(self):
        d = self.dir
        sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=execbox test CA",
           "-keyout", f"{d}/ca.key", "-out", self.ca)
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=a.test", "-keyout", f"{d}/key.pem",
           "-out", f"{d}/req.pem")
        with open(f"{d}/ext.cnf", "w") as f:
            f.write("subjectAltName=" + ",".join(f"DNS:{n}" for n in list(NAMES) + ["*.w.test"]) +
                    f",IP:{CIDR_HOST}\n")
        sh("openssl", "x509", "-req", "-in", f"{d}/req.pem", "-CA", self.ca, "-CAkey", f"{d}/ca.key",
           "-CAcreateserial", "-days", "2", "-extfile", f"{d}/ext.cnf", "-out", f"{d}/cert.pem")

    def _serve(self, ns, *args):
        p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, os.path.join(HERE, "fakenet_server.py"),
                              *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"fake server {args[0]} did not start: {p.stderr.read()[:500]}")

    def _route(self, dst, via):
        sh("ip", "route", "add", dst, "via", via)
        self.routes.append(dst)

    @staticmethod
    def reap_stale() -> None:
        """Take down the fake internet of a run that was killed (its pid is
        gone): its routes go with its veths, then its namespaces."""
        out = sh("ip", "netns", "list", check=False).stdout
        for line in out.splitlines():
            name = line.split()[0] if line.split() else ""
            if not (name.startswith("xbnet") and name[-1:] in ("w", "t") and name[5:-1].isdigit()):
                continue
            tag = name[5:-1]
            if any(os.path.exists(f"/proc/{p}") and str(p % 100000) == tag
                   for p in (int(d) for d in os.listdir("/proc") if d.isdigit())):
                continue
            for pid in sh("ip", "netns", "pids", name, check=False).stdout.split():
                try:
                    os.kill(int(pid), 9)
                except OSError:
                    pass
            sh("ip", "link", "del", ("xbw" if name.endswith("w") else "xbt") + tag, check=False)
            sh("ip", "netns", "del", name, check=False)

    def start(self) -> "FakeNet":
        self.reap_stale()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        self._certs()
        self.set_zone({n: [a] for n, a in NAMES.items()})
        for ns, veth, host, inside, plen in ((self.web, self.vweb, WEB_HOST, WEB_NS, 25),
                                             (self.trap, self.vtrap, TRAP_HOST, TRAP_NS, 30)):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "addr", "add", f"{host}/{plen}", "dev", veth)
            sh("ip", "link", "set", veth, "up")
            sh("ip", "addr", "add", f"{inside}/{plen}", "dev", "eth0", ns=ns)
            sh("ip", "link", "set", "eth0", "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh("ip", "route", "add", "default", "via", host, ns=ns)
        for a in set(NAMES.values()) | {DNS_ADDR}:
            sh("ip", "addr", "add", f"{a}/32", "dev", "eth0", ns=self.web)
        sh("ip", "addr", "add", f"{CIDR_HOST}/32", "dev", "lo", ns=self.web)
        self._route(CIDR_NET, WEB_NS)
        for a in set(NAMES.values()) | {DNS_ADDR}:
            self._route(f"{a}/32", WEB_NS)
        for a in TRAPPED:
            sh("ip", "addr", "add", f"{a}/32", "dev", "lo", ns=self.trap)
            self._route(f"{a}/32", TRAP_NS)
        self._serve(self.web, "web", self.dir)
        self._serve(self.web, "dns", DNS_ADDR, self.zone)
        self._serve(self.trap, "trap", self.traplog)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []
        for dst in self.routes:
            sh("ip", "route", "del", dst, check=False)
        self.routes = []
        for veth in (self.vweb, self.vtrap):
            sh("ip", "link", "del", veth, check=False)
        for ns in (self.web, self.trap):
            sh("ip", "netns", "del", ns, check=False)
        subprocess.run(["rm", "-rf", self.dir])


def module_net():
    """A generator fixture body: the fake internet for a whole module, and a
    check at its end that it left nothing on the host."""
    import xbhost

    before = xbhost.HostState.capture()
    n = FakeNet().start()
    try:
        yield n
    finally:
        n.stop()
    leaks = xbhost.wait_for_no_leaks(before)
    assert not leaks, "the fake internet left these behind:\n  " + "\n  ".join(leaks)


def module_server(execbox, net, tmp_path_factory, name, *args):
    """A generator fixture body: a no-auth server of a module's own on the
    fake internet (its DNS, and the test CA for upstreams), checked at its
    end for what it left behind."""
    from server_fixture import finish_server, start_server

    s = start_server(execbox, str(tmp_path_factory.mktemp(name)), "--dns-server", DNS_ADDR, "--upstream-ca", net.ca,
                     *args, no_auth=True, pool=0)
    try:
        yield s
    finally:
        problems = finish_server(s)
        assert not problems, "\n".join(problems)
