#!/usr/bin/env python3
"""Runs a command against a throwaway outboxd cluster: a fresh database on the test
PostgreSQL (OUTBOXD_TEST_PG_DIR, as CTest sets it, or OUTBOXD_TEST_ADMIN_DATABASE_URL) and N
real outboxd nodes on free 127.0.0.1 ports. The command sees, in its environment:

  OUTBOXD_TEST_DATABASE_URL  the fresh database (migrated by the nodes); with --databases,
                             the first one (the control database)
  OUTBOXD_TEST_DATABASE_URLS with --databases: a JSON object, each database's name → its URL
  OUTBOXD_TEST_NODES         comma-separated http://127.0.0.1:PORT of the nodes, in order
  OUTBOXD_TEST_NODE_PIDS     comma-separated process ids, in the same order
  OUTBOXD_TEST_BIN_DIR       the directory of the outboxd binaries
  OUTBOXD_TEST_ADMIN_TOKEN / OUTBOXD_TEST_WORKER_TOKEN   when --tokens is given
  OUTBOXD_TEST_ARTIFACTS     a directory for screenshots and other artifacts (kept)
  OUTBOXD_TEST_CA_FILE       with --tls: the PEM CA the nodes' certificate chains to

Usage: with_cluster.py --bin DIR [--nodes N] [--tokens] [--tls] [--databases N|NAME,...]
                      [--node-env K=V]... -- command...

--tls (or OUTBOXD_TEST_TLS=1 in the environment, for CTest, whose test function passes no
such option) makes a throwaway CA and a certificate for 127.0.0.1 and localhost with the
openssl CLI and starts the nodes with OUTBOXD_TLS_CERT_FILE / OUTBOXD_TLS_KEY_FILE: they serve
HTTPS and wss:// only, and OUTBOXD_TEST_NODES lists https:// URLs.

--databases (or OUTBOXD_TEST_DATABASES in the environment, for CTest) makes the nodes serve
several databases (README, "Several databases"): a fresh database on the test PostgreSQL for
each name, given to the nodes as OUTBOXD_DATABASES instead of OUTBOXD_DATABASE_URL. A number N
names them db1..dbN; a comma-separated list names them itself.

Its exit status is the command's. Node logs are printed when the command fails. Every node
is stopped and the database dropped afterwards, whatever happened.
"""
import argparse
import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request


def admin_url():
    url = os.environ.get("OUTBOXD_TEST_ADMIN_DATABASE_URL")
    if url:
        return url
    pg_dir = os.environ.get("OUTBOXD_TEST_PG_DIR")
    if not pg_dir:
        sys.exit("with_cluster: set OUTBOXD_TEST_PG_DIR (ctest does) or OUTBOXD_TEST_ADMIN_DATABASE_URL")
    with open(os.path.join(pg_dir, "url"), encoding="utf-8") as f:
        return f.read().strip()


def database_url(admin, name):
    base, _, query = admin.partition("?")
    head = base[: base.rfind("/")] if base.count("/") > 2 else base
    return head + "/" + name + ("?" + query if query else "")


DATABASE_NAME = re.compile(r"[a-z0-9_-]{1,32}")


def database_names(spec):
    """The names --databases gives: [] (one database, OUTBOXD_DATABASE_URL), db1..dbN, or the
    names listed."""
    spec = spec.strip()
    if not spec:
        return []
    names = ([f"db{k}" for k in range(1, int(spec) + 1)] if spec.isdigit()
             else [n.strip() for n in spec.split(",")])
    bad = [n for n in names if not DATABASE_NAME.fullmatch(n)]
    if not names or bad or len(set(names)) != len(names):
        sys.exit(f"with_cluster: --databases {spec!r}: want N >= 1 or distinct names "
                 "matching [a-z0-9_-]{1,32}")
    return names


def psql(url, sql):
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                   check=True, stdout=subprocess.DEVNULL)


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def ready(port, ca_file=None):
    scheme = "https" if ca_file else "http"
    context = ssl.create_default_context(cafile=ca_file) if ca_file else None
    try:
        with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/readyz", timeout=2,
                                    context=context) as r:
            return r.status == 200
    except OSError:
        return False


def make_certificates(directory):
    """A throwaway CA and a node certificate for 127.0.0.1 and localhost (as README,
    "Security"); returns (ca file, certificate file, key file)."""
    def path(name):
        return os.path.join(directory, name)

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-days", "2", "-keyout", path("ca.key"), "-out", path("ca.pem"),
            "-subj", "/CN=with_cluster test CA")
    openssl("req", *ec, "-keyout", path("node.key"), "-out", path("node.csr"),
            "-subj", "/CN=localhost")
    with open(path("node.ext"), "w", encoding="utf-8") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", path("node.csr"), "-CA", path("ca.pem"), "-CAkey",
            path("ca.key"), "-CAcreateserial", "-days", "2", "-extfile", path("node.ext"),
            "-out", path("node.pem"))
    return path("ca.pem"), path("node.pem"), path("node.key")


class Node:
    LISTENING = re.compile(r"event=listening .*address=[0-9.]+:(\d+)")

    def __init__(self, name, bin_dir, env, log_dir, ca_file=None):
        self.name = name
        self.ca_file = ca_file
        self.log_path = os.path.join(log_dir, name + ".log")
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen([os.path.join(bin_dir, "outboxd"), "serve"], env=env,
                                        stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        log.close()
        self.port = None

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def await_ready(self):
        def listening():
            match = self.LISTENING.search(self.log())
            if match:
                self.port = int(match.group(1))
            return self.port is not None or self.process.poll() is not None
        if not wait_for(listening, 60) or self.port is None:
            raise RuntimeError(f"{self.name} did not start:\n{self.log()}")
        if not wait_for(lambda: ready(self.port, self.ca_file), 60):
            raise RuntimeError(f"{self.name} never became ready:\n{self.log()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory of the outboxd binaries")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--tokens", action="store_true", help="configure admin and worker tokens")
    parser.add_argument("--tls", action="store_true",
                        default=os.environ.get("OUTBOXD_TEST_TLS", "") in ("1", "true"),
                        help="serve HTTPS and wss:// with a throwaway CA (OUTBOXD_TEST_TLS=1)")
    parser.add_argument("--databases", default=os.environ.get("OUTBOXD_TEST_DATABASES", ""),
                        metavar="N|NAME,...",
                        help="serve several fresh databases (OUTBOXD_TEST_DATABASES)")
    parser.add_argument("--node-env", action="append", default=[], metavar="K=V")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")

    admin = admin_url()
    name = "clients_" + secrets.token_hex(6)
    url = database_url(admin, name)
    # The first database keeps the name and URL it has without --databases.
    served = {n: (name if k == 0 else f"{name}_{k + 1}")
              for k, n in enumerate(database_names(args.databases))}
    urls = {n: database_url(admin, d) for n, d in served.items()}
    where = {"OUTBOXD_DATABASES": json.dumps(urls)} if urls else {"OUTBOXD_DATABASE_URL": url}
    log_dir = tempfile.mkdtemp(prefix="outboxd-clients-")
    artifacts = os.environ.get("OUTBOXD_TEST_ARTIFACTS") or os.path.join(os.getcwd(), "artifacts")
    os.makedirs(artifacts, exist_ok=True)
    env = dict(os.environ)
    for setting in ("OUTBOXD_DATABASE_URL", "OUTBOXD_DATABASES", "OUTBOXD_DATABASES_FILE"):
        env.pop(setting, None)  # the nodes' databases are the ones made here
    tokens = {}
    if args.tokens:
        tokens = {"OUTBOXD_ADMIN_TOKEN": "admin-" + secrets.token_hex(8),
                  "OUTBOXD_WORKER_TOKEN": "worker-" + secrets.token_hex(8)}
    tls = {}
    ca_file = None
    if args.tls:
        ca_file, cert_file, key_file = make_certificates(log_dir)
        tls = {"OUTBOXD_TLS_CERT_FILE": cert_file, "OUTBOXD_TLS_KEY_FILE": key_file}
    nodes = []
    created = []
    status = 1
    try:
        for database in list(served.values()) or [name]:
            psql(admin, f"CREATE DATABASE {database}")
            created.append(database)
        for k in range(1, args.nodes + 1):
            node_env = dict(env, **where, OUTBOXD_NODE_ID=f"node-{k}",
                            OUTBOXD_LISTEN="127.0.0.1:0", OUTBOXD_POLL_INTERVAL_MS="200",
                            OUTBOXD_LEASE_TTL_MS="2000", **tokens, **tls)
            for item in args.node_env:
                key, _, value = item.partition("=")
                node_env[key] = value
            nodes.append(Node(f"node-{k}", args.bin, node_env, log_dir, ca_file))
            nodes[-1].await_ready()  # one at a time: the first one migrates the database
        scheme = "https" if args.tls else "http"
        child_env = dict(env, OUTBOXD_TEST_DATABASE_URL=url, OUTBOXD_TEST_BIN_DIR=args.bin,
                         OUTBOXD_TEST_ARTIFACTS=artifacts,
                         OUTBOXD_TEST_NODES=",".join(f"{scheme}://127.0.0.1:{n.port}" for n in nodes),
                         OUTBOXD_TEST_NODE_PIDS=",".join(str(n.process.pid) for n in nodes))
        if urls:
            child_env["OUTBOXD_TEST_DATABASE_URLS"] = json.dumps(urls)
        if ca_file:
            child_env["OUTBOXD_TEST_CA_FILE"] = ca_file
        if tokens:
            child_env["OUTBOXD_TEST_ADMIN_TOKEN"] = tokens["OUTBOXD_ADMIN_TOKEN"]
            child_env["OUTBOXD_TEST_WORKER_TOKEN"] = tokens["OUTBOXD_WORKER_TOKEN"]
        status = subprocess.run(command, env=child_env, stdin=subprocess.DEVNULL).returncode
    except RuntimeError as error:
        print(f"with_cluster: {error}", file=sys.stderr)
    finally:
        for node in nodes:
            node.stop()
        if status != 0:
            for node in nodes:
                print(f"----- {node.name} log (last 60 lines) -----", file=sys.stderr)
                print("\n".join(node.log().splitlines()[-60:]), file=sys.stderr)
        for database in created:
            try:
                psql(admin, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            except subprocess.CalledProcessError:
                pass  # dies with the throwaway cluster
    return status


if __name__ == "__main__":
    sys.exit(main())
