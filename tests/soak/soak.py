#!/usr/bin/env python3
"""soak.py — the soak (make soak; docs/RELIABILITY.md): gates under pressure, then checks.

Two phases, each SOAK_SECONDS/2 long: one SQLite ledger, then one PostgreSQL
database (a throwaway cluster from scripts/pg-cluster).  In each:

  - 4 stdio gates (`toolgate serve`) and one Streamable HTTP server
    (`toolgate serve --http`) on one ledger and one workspace, driven by one
    client thread per gate and two over HTTP: read-only calls (read_file,
    list_dir, which is limited to SOAK_RATE a minute) and side-effecting
    ones with an idempotency key (`mark`, `approved_mark`: one empty file
    effects/KEY.OP_ID made per run, so a duplicate shows in the side effect
    itself).  A client retries each key until it is
    persisted, replayed, committed or an unknown outcome, and sends one key
    in five once more after its answer (a client that never saw it): that
    must replay.  approved_mark asks; a side process approves with
    `toolgate approvals approve`.
  - a fifth gate whose workspace (and, on SQLite, ledger) is a small tmpfs
    in a private mount namespace (unshare -m), which is filled up now and
    then: a full disk;
  - at random: kill -9 and SIGSTOP/SIGCONT of gates, a PostgreSQL crash and
    restart (phase 2), and once a stdio client that stops reading while it
    still sends calls.

At the end of a phase: every unknown outcome is settled with `toolgate ops
resolve` according to whether its effect is there, every key not settled is
called once more (`toolgate call --key`), and then the checks (each failure
printed, exit 1 when any failed): each key's effect exactly once (no
duplicate, none lost), no unknown outcome left, no approval used twice nor
spent by a call that did not run, the rate limit never exceeded across
processes (from the ledger's rows), the HTTP server's RSS at the end within
10% of its value after warm-up and its descriptors not grown, no call left
unanswered by a live gate, calls sent to a client that does not read not run
while it does not read.

Usage: soak.py TOOLGATE_BINARY   (SOAK_SECONDS, SOAK_RATE, SOAK_SEED,
SOAK_PHASES=sqlite,postgresql, SOAK_KEEP=1 keeps the directory)
"""
import errno
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

TG = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else sys.exit("usage: soak.py TOOLGATE")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PG_CLUSTER = os.path.join(ROOT, "scripts", "pg-cluster")
SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
RATE_N = int(os.environ.get("SOAK_RATE", "10"))
SEED = int(os.environ.get("SOAK_SEED", str(int(time.time()))))
PHASES = [p for p in os.environ.get("SOAK_PHASES", "sqlite,postgresql").split(",") if p]
KEEP = os.environ.get("SOAK_KEEP") == "1"
GATES = 4
PACE = float(os.environ.get("SOAK_PACE", "0.15"))   # seconds a client waits between calls, on average
HTTP_CLIENTS = 2
CALL_TIMEOUT = 30.0          # a live, running gate answers within this, or it is hung
TMPFS_BYTES = 48 << 20       # the full-disk lane's tmpfs
STALL_LISTS = int(os.environ.get("SOAK_STALL_LISTS", "40000"))  # ~8 KB answers each: > 256 MiB
STALL_KEYS = 5
TMPFS_MAGIC_FS = "tmpfs"
RNG = random.Random(SEED)

CONFIG = """\
default_principal: local
principals:
  local: {roles: [owner]}
roles:
  owner: {allow: ["*"]}
permissions:
  ask: ["approved_mark"]
loop_detection: {enabled: false}   # the same read again and again, on purpose
rate_limits: {list_dir: "%d/min"}
tools:
  mark:
    description: Record that a key was handled (one line per run).
    input_schema:
      type: object
      properties:
        key: {type: string, pattern: "^[a-z0-9-]+$"}
      required: [key]
      additionalProperties: false
    command: [./mark.sh]
    category: runtime
    requires_idempotency_key: true
  approved_mark:
    description: Record that a key was handled, once a person approved it.
    input_schema:
      type: object
      properties:
        key: {type: string, pattern: "^[a-z0-9-]+$"}
      required: [key]
      additionalProperties: false
    command: [./mark.sh]
    category: runtime
    requires_idempotency_key: true
"""
MARK = """\
#!/bin/sh
# one empty file per run, effects/KEY.OP_ID: made whole or not at all (a line
# appended to a full disk can be torn); a failure is the tool's error, never a
# success without its effect
key=$(sed -n 's/.*"key":"\\([a-z0-9-]*\\)".*/\\1/p')
: > "effects/$key.$TOOLGATE_OP_ID" || exit 1
printf '{"key":"%s","op":"%s"}\\n' "$key" "$TOOLGATE_OP_ID"
"""

INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "soak", "version": "1"}}


def log(msg):
    sys.stderr.write("soak: %s\n" % msg)
    sys.stderr.flush()


def now():
    return time.monotonic()


# ---------------------------------------------------------------- clients

class Stdio:
    """One `toolgate serve` over stdio: requests by id, answers by a reader thread."""

    def __init__(self, name, argv, cwd, env, errpath):
        self.name, self.argv, self.cwd, self.env, self.errpath = name, argv, cwd, env, errpath
        self.proc = None
        self.lock = threading.Lock()
        self.next_id = 1
        self.waiting = {}
        self.dead = True
        self.starts = 0

    def start(self):
        with open(self.errpath, "ab") as err:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err)
        self.waiting = {}
        self.dead = False
        self.starts += 1
        t = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        t.start()
        r = self.request("initialize", INIT, 20)
        if r[0] != "answer":
            return False
        self.notify("notifications/initialized")
        return True

    def _read(self, proc):
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict) or "id" not in msg or "method" in msg:
                continue
            with self.lock:
                w = self.waiting.pop(msg["id"], None)
            if w:
                w[1].append(msg)
                w[0].set()
        with self.lock:
            if proc is self.proc:
                self.dead = True
                for w in self.waiting.values():
                    w[0].set()
                self.waiting = {}

    def _send(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def notify(self, method):
        with self.lock:
            self._send({"jsonrpc": "2.0", "method": method})

    def request(self, method, params, timeout):
        """("answer", msg) | ("dead", None) | ("timeout", None)"""
        ev, box = threading.Event(), []
        with self.lock:
            if self.dead:
                return ("dead", None)
            rid = self.next_id
            self.next_id += 1
            self.waiting[rid] = (ev, box)
            ok = self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if not ok:
            return ("dead", None)
        if not ev.wait(timeout):
            with self.lock:
                self.waiting.pop(rid, None)
            return ("timeout", None)
        return ("answer", box[0]) if box else ("dead", None)

    def call(self, tool, args, timeout=CALL_TIMEOUT):
        return self.request("tools/call", {"name": tool, "arguments": args}, timeout)

    def pid(self):
        p = self.proc
        return p.pid if p and p.poll() is None else None

    def stop(self, timeout=15):
        """Close stdin (a clean end), then wait; kill -9 past timeout."""
        p = self.proc
        if not p:
            return
        try:
            os.kill(p.pid, signal.SIGCONT)
        except OSError:
            pass
        try:
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Http:
    """One MCP session on the Streamable HTTP server."""

    def __init__(self, port):
        self.port = port
        self.sid = None
        self.rid = 0

    def post(self, body, timeout):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "Connection": "close"}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        try:
            conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
            r = conn.getresponse()
            data = r.read().decode("utf-8", "replace")
            return r.status, r.getheader("Mcp-Session-Id"), r.getheader("Content-Type") or "", data
        finally:
            conn.close()

    def open(self):
        self.sid = None
        st, sid, _, _ = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, 20)
        if st != 200 or not sid:
            return False
        self.sid = sid
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, 20)
        return True

    def call(self, tool, args, timeout=CALL_TIMEOUT):
        self.rid += 1
        body = {"jsonrpc": "2.0", "id": self.rid, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}
        try:
            st, _, ctype, data = self.post(body, timeout)
        except (OSError, http.client.HTTPException) as e:
            return ("timeout" if "timed out" in str(e) else "dead", None)
        if st == 404:            # the session ended: open another
            self.open()
            return ("dead", None)
        if st != 200:
            return ("dead", None)
        if "text/event-stream" in ctype:
            last = None
            for line in data.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    last = line[5:].strip()
            data = last or ""
        try:
            return ("answer", json.loads(data))
        except ValueError:
            return ("dead", None)


def envelope(msg):
    """The call's envelope from an answer (None: a protocol error)."""
    if not msg or "result" not in msg:
        return None
    return (msg["result"].get("_meta") or {}).get("toolgate/envelope")


# ---------------------------------------------------------------- the keys

class Keys:
    """Every key, its answers and its retries (per lane: main, disk)."""

    def __init__(self, phase):
        self.lock = threading.Lock()
        self.keys = {}
        self.retry = {"main": [], "disk": []}
        self.n = 0
        self.phase = phase[0]

    def new(self, lane, tool):
        with self.lock:
            self.n += 1
            k = "%s%s%s%d" % (self.phase, {"main": "m", "disk": "d"}[lane],
                              "a" if tool == "approved_mark" else "", self.n)
            self.keys[k] = {"tool": tool, "lane": lane, "state": "open", "answers": [],
                            "ops": set(), "approvals": set()}
            return k

    def due(self, lane):
        t = now()
        with self.lock:
            q = self.retry[lane]
            for i, (d, k) in enumerate(q):
                if d <= t:
                    q.pop(i)
                    return k
        return None

    def requeue(self, k, delay):
        with self.lock:
            self.retry[self.keys[k]["lane"]].append((now() + delay, k))

    def answered(self, k, env):
        """Record an answer; returns the delay before a retry, or None when settled."""
        st = env.get("status")
        err = env.get("error") or {}
        kind = err.get("kind")
        with self.lock:
            rec = self.keys[k]
            rec["answers"].append(st if st != "pending" else "pending/%s" % kind)
            if env.get("op_id"):
                rec["ops"].add(env["op_id"])
            if err.get("approval_id"):
                rec["approvals"].add(err["approval_id"])
            if st in ("persisted", "replayed", "committed"):
                rec["state"] = "done"
                if "dup" not in rec:
                    # a late duplicate of one call in five (a client that never saw its
                    # answer): it must replay, and spend no approval
                    rec["dup"] = RNG.random() < 0.2
                    if rec["dup"]:
                        rec["state"] = "open"
                        return RNG.uniform(0.5, 3.0)
                return None
            if st == "pending" and kind == "unknown_outcome":
                rec["state"] = "unknown"
                return None
        if st == "pending":
            return max(0.3, float(err.get("retry_after_s") or 1.0)) if kind != "needs_approval" else 0.8
        if st == "failed":
            return 0.5
        return 2.0           # denied, invalid: unexpected here; counted, retried

    def open_count(self):
        with self.lock:
            return sum(1 for r in self.keys.values() if r["state"] == "open")


# ---------------------------------------------------------------- a phase

class Phase:
    def __init__(self, kind, base):
        self.kind = kind
        self.dir = os.path.join(base, kind)
        self.ws = os.path.join(self.dir, "ws")
        self.small = os.path.join(self.dir, "small")     # the tmpfs lane's mount point
        self.pgdir = os.path.join(self.dir, "pg")
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("TOOLGATE_") and not k.startswith("ASAN")}
        self.env["NO_COLOR"] = "1"
        self.keys = Keys(kind)
        self.calls = []                 # (lane, via, tool, status, kind)
        self.calls_lock = threading.Lock()
        self.count = {"kill -9": 0, "SIGSTOP": 0, "pg restart": 0, "disk full": 0, "stalled client": 0,
                      "hung (killed)": 0, "approvals approved": 0, "gate starts": 0}
        self.unexpected = []
        self.stop = threading.Event()       # the workers stop
        self.draining = threading.Event()   # no new keys
        self.chaos_off = threading.Event()
        self.stalling = threading.Event()
        self.hold_http = threading.Event()  # quiesce the HTTP clients for a sample
        self.http_idle = [threading.Event() for _ in range(HTTP_CLIENTS)]
        self.samples = {}
        self.fd_kinds = {}
        self.stall = {"sent": [], "ran_while_stalled": [], "unanswered": [], "read_all": None}
        self.holder = None
        self.pg_url = None
        self.failures = []
        self.figures = {}

    # -- setup
    def write_ws(self, path):
        os.makedirs(os.path.join(path, "effects"), exist_ok=True)
        with open(os.path.join(path, "toolgate.yaml"), "w") as f:
            f.write(CONFIG % RATE_N)
        with open(os.path.join(path, "mark.sh"), "w") as f:
            f.write(MARK)
        os.chmod(os.path.join(path, "mark.sh"), 0o755)
        with open(os.path.join(path, "a.txt"), "w") as f:
            f.write("alpha\nbeta\n")

    def setup(self):
        os.makedirs(self.dir)
        self.write_ws(self.ws)
        if self.kind == "postgresql":
            os.makedirs(self.pgdir)
            os.chmod(self.dir, 0o755)
            r = subprocess.run([PG_CLUSTER, "start", self.pgdir], capture_output=True, text=True)
            if r.returncode:
                raise SystemExit("soak: cannot start PostgreSQL: %s" % r.stderr.strip())
            url = r.stdout.strip()
            self.psql(url, "CREATE DATABASE soak")
            self.pg_url = url.rsplit("/", 1)[0] + "/soak"
            self.env["TOOLGATE_STORE"] = self.pg_url
        # the full-disk lane: a tmpfs in a mount namespace of its own, held by a sleeper
        os.makedirs(self.small)
        self.holder = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             'mount -t tmpfs -o size=%d tmpfs "$1" && exec sleep 1000000' % TMPFS_BYTES, "sh", self.small])
        for _ in range(100):
            if self.small_is_tmpfs():
                break
            if self.holder.poll() is not None:
                break
            time.sleep(0.05)
        if not self.small_is_tmpfs():
            raise SystemExit("soak: no private tmpfs for the full-disk lane (unshare -m and mount need root)")
        self.write_ws(self.small_path(self.small))

    def small_path(self, p):
        """A path of the tmpfs lane as this process reaches it: through the holder's root."""
        return "/proc/%d/root%s" % (self.holder.pid, p)

    def small_is_tmpfs(self):
        try:
            with open("/proc/%d/mountinfo" % self.holder.pid) as f:
                for line in f:
                    a = line.split()
                    sep = a.index("-")
                    if a[4] == self.small and a[sep + 1] == TMPFS_MAGIC_FS:
                        return True
        except (OSError, ValueError):
            pass
        return False

    def psql(self, url, sql):
        m = re.match(r"^(postgres(?:ql)?://)([^:@/]*)(?::([^@/]*))?@(.*)$", url)
        env = dict(os.environ)
        if m and m.group(3):
            env["PGPASSWORD"] = m.group(3)
            url = m.group(1) + m.group(2) + "@" + m.group(4)
        bindir = subprocess.run([PG_CLUSTER, "bindir"], capture_output=True, text=True).stdout.strip()
        r = subprocess.run([os.path.join(bindir, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                            "-d", url, "-c", sql], capture_output=True, text=True, env=env)
        if r.returncode:
            raise RuntimeError("psql: %s" % r.stderr.strip())
        return r.stdout

    def gate_argv(self, lane, *args):
        argv = [TG] + list(args)
        if lane == "disk":
            argv = ["nsenter", "-t", str(self.holder.pid), "-m", "--", "sh", "-c",
                    'cd "$1" && shift && exec "$@"', "sh", self.small] + argv
        return argv

    def run_tg(self, lane, *args):
        r = subprocess.run(self.gate_argv(lane, *args), cwd=self.ws, env=self.env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout, r.stderr

    # -- the calls
    def record(self, lane, via, tool, env):
        with self.calls_lock:
            self.calls.append((lane, via, tool, env.get("status") if env else None,
                               (env.get("error") or {}).get("kind") if env else None,
                               (env.get("error") or {}).get("message") if env else None))
            err = (env or {}).get("error") or {}
            outage = "unreachable" in (err.get("message") or "") or "unavailable" in (err.get("message") or "")
            if env and (env.get("status") == "invalid" or
                        (env.get("status") == "denied" and err.get("kind") not in ("rate_limited", "transient")
                         and not outage)):
                if len(self.unexpected) < 20:
                    self.unexpected.append("%s %s: %s" % (tool, env.get("status"),
                                                          (env.get("error") or {}).get("message")))

    def one_call(self, client, lane, via):
        """One call: a due retry, else something new.  Returns the client's answer kind."""
        k = self.keys.due(lane)
        if k is None:
            if self.draining.is_set():
                time.sleep(0.1)
                return "answer"
            r = RNG.random()
            if r < 0.3:
                tool, args = "read_file", {"path": "a.txt"}
            elif r < 0.45 and lane == "main":
                tool, args = "list_dir", {"path": "."}
            elif r < 0.55 and lane == "main":
                k = self.keys.new(lane, "approved_mark")
            else:
                k = self.keys.new(lane, "mark")
        if k is not None:
            tool = self.keys.keys[k]["tool"]
            args = {"key": k, "idempotency_key": k}
        res, msg = client.call(tool, args)
        if res != "answer":
            if k is not None:
                self.keys.requeue(k, 0.3)
            return res
        env = envelope(msg)
        if env is None:
            self.record(lane, via, tool, {"status": "rpc_error", "error": {"message": json.dumps(msg)[:200]}})
            if len(self.unexpected) < 20:
                self.unexpected.append("%s: a protocol error: %s" % (tool, json.dumps(msg)[:200]))
            if k is not None:
                self.keys.requeue(k, 1.0)
            return res
        self.record(lane, via, tool, env)
        if k is not None:
            delay = self.keys.answered(k, env)
            if delay is not None:
                self.keys.requeue(k, delay)
        return res

    def stdio_worker(self, gate, lane):
        while not self.stop.is_set():
            if gate.dead:
                time.sleep(RNG.uniform(0.1, 0.5))
                self.count["gate starts"] += 1
                if not gate.start():
                    time.sleep(0.5)
                continue
            res = self.one_call(gate, lane, "stdio")
            if res == "timeout":
                pid = gate.pid()
                if pid and not self.is_stopped(pid):
                    self.count["hung (killed)"] += 1
                    log("%s: no answer in %.0f s: killed" % (gate.name, CALL_TIMEOUT))
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            time.sleep(RNG.uniform(PACE / 2, PACE * 1.5))

    def http_worker(self, i):
        client = Http(self.http_port)
        while not client.open():
            time.sleep(0.5)
        while not self.stop.is_set():
            if self.hold_http.is_set():
                self.http_idle[i].set()
                time.sleep(0.05)
                continue
            self.http_idle[i].clear()
            res = self.one_call(client, "main", "http")
            if res == "timeout":
                self.count["hung (killed)"] += 1
                log("http client %d: no answer in %.0f s" % (i, CALL_TIMEOUT))
            time.sleep(RNG.uniform(PACE / 2, PACE * 1.5))
        self.http_idle[i].set()

    def approver(self):
        while not self.stop.is_set():
            time.sleep(RNG.uniform(0.3, 1.2))
            try:
                rc, out, _ = self.run_tg("main", "approvals", "list", "--json")
                rows = json.loads(out) if rc == 0 else []
            except (ValueError, subprocess.TimeoutExpired):
                continue
            for a in rows:
                if a.get("state") == "pending" and a.get("tool") == "approved_mark":
                    try:
                        rc, _, _ = self.run_tg("main", "approvals", "approve", a["id"])
                    except subprocess.TimeoutExpired:
                        continue
                    if rc == 0:
                        self.count["approvals approved"] += 1

    @staticmethod
    def is_stopped(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "T"
        except OSError:
            return False

    # -- chaos
    def chaos(self):
        while not self.chaos_off.wait(RNG.uniform(1.5, 4.0)):
            r = RNG.random()
            if r < 0.4 or (r >= 0.85 and self.kind != "postgresql"):
                g = RNG.choice(self.gates + [self.disk_gate])
                pid = g.pid()
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    self.count["kill -9"] += 1
            elif r < 0.65:
                g = RNG.choice(self.gates)
                pid = g.pid()
                if pid:
                    os.kill(pid, signal.SIGSTOP)
                    self.count["SIGSTOP"] += 1
                    time.sleep(RNG.uniform(0.3, 3.0))
                    os.kill(pid, signal.SIGCONT)
            elif r < 0.85:
                self.disk_full(RNG.uniform(1.0, 4.0))
            elif not self.stalling.is_set():
                self.pg_restart()

    def disk_full(self, hold):
        """Fill the lane's tmpfs (and only a tmpfs: checked, and capped at its size) for a while."""
        if not self.small_is_tmpfs():
            return
        path = self.small_path(os.path.join(self.small, ".filler"))
        written, chunk = 0, b"\0" * 65536
        try:
            with open(path, "wb") as f:
                while written < TMPFS_BYTES:
                    f.write(chunk)
                    f.flush()
                    written += len(chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                log("disk full: %s" % e)
        self.count["disk full"] += 1
        time.sleep(hold)
        try:
            os.unlink(path)
        except OSError:
            pass

    def pg_restart(self):
        subprocess.run([PG_CLUSTER, "stop", self.pgdir, "immediate"], capture_output=True)
        self.count["pg restart"] += 1
        time.sleep(RNG.uniform(0.5, 2.5))
        for _ in range(5):
            if subprocess.run([PG_CLUSTER, "restart", self.pgdir], capture_output=True).returncode == 0:
                return
            time.sleep(1)
        log("PostgreSQL did not come back")

    def stalled_client(self):
        """A stdio client that sends, then stops reading, then sends keyed calls: none may run
        while it does not read.  Then it reads again; unanswered keys go to the other gates."""
        self.count["stalled client"] += 1
        self.stalling.set()             # no PostgreSQL restart meanwhile: this is about the client
        argv = self.gate_argv("main", "serve", "--approvals-via", "queue")
        err = open(os.path.join(self.dir, "stall.err"), "ab")
        p = subprocess.Popen(argv, cwd=self.ws, env=self.env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=err)
        hello = (json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT}) + "\n" +
                 json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        p.stdin.write(hello.encode())
        p.stdin.flush()
        p.stdout.readline()             # the initialize answer: the last thing read for a while
        keys = [self.keys.new("main", "mark") for _ in range(STALL_KEYS)]
        self.stall["sent"] = keys
        done = threading.Event()

        def writer():
            try:
                line = json.dumps({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}) + "\n"
                block = (line * 500).encode()
                for _ in range(STALL_LISTS // 500):
                    p.stdin.write(block)
                for k in keys:
                    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {
                        "name": "mark", "arguments": {"key": k, "idempotency_key": k}}}) + "\n").encode())
                p.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            done.set()
        threading.Thread(target=writer, daemon=True).start()
        t0 = now()
        while now() - t0 < 60 and not done.is_set():
            time.sleep(0.2)
        self.stall["read_all"] = done.is_set()   # the server read every request meanwhile
        t1 = now()
        while True:                     # what was sent has had time to run
            ran = self.effects(self.ws)[0]
            self.stall["ran_while_stalled"] = [k for k in keys if ran.get(k)]
            if not done.is_set() or now() - t1 > 10 or len(self.stall["ran_while_stalled"]) == len(keys):
                break
            time.sleep(0.5)
        # read again: every answer still owed, for 30 s
        got = {}

        def reader():
            for line in p.stdout:
                if line.startswith(b'{"jsonrpc":"2.0","id":"l"'):
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict) and msg.get("id") in keys:
                    got[msg["id"]] = msg
        rt = threading.Thread(target=reader, daemon=True)
        rt.start()
        t1 = now()
        while now() - t1 < 30 and len(got) < len(keys):
            time.sleep(0.2)
        try:
            p.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        err.close()
        for k in keys:
            env = envelope(got.get(k))
            if env:
                self.record("main", "stall", "mark", env)
                delay = self.keys.answered(k, env)
                if delay is not None:
                    self.keys.requeue(k, delay)
            else:
                self.stall["unanswered"].append(k)
                self.keys.requeue(k, 0.5)
        self.stalling.clear()

    # -- the HTTP server
    def start_http(self):
        self.http_err = os.path.join(self.dir, "http.err")
        with open(self.http_err, "ab") as err:
            self.http = subprocess.Popen([TG, "serve", "--http", "127.0.0.1:0", "--approvals-via", "queue"],
                                         cwd=self.ws, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        for _ in range(200):
            with open(self.http_err) as f:
                m = re.search(r"serving MCP on http://[^ ]*:(\d+)/mcp", f.read())
            if m:
                self.http_port = int(m.group(1))
                return
            if self.http.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("soak: the HTTP server did not start: %s" % open(self.http_err).read())

    def sample(self, name):
        """RSS (kB) and open descriptors of the HTTP server, its clients held still."""
        self.hold_http.set()
        for e in self.http_idle:
            e.wait(CALL_TIMEOUT + 5)
        time.sleep(1.0)
        pid = self.http.pid
        rss = 0
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        fdt, peers = {}, {}
        for table in ("tcp", "tcp6", "unix"):       # a socket's inode -> what it is
            try:
                with open("/proc/%d/net/%s" % (pid, table)) as f:
                    for line in f.readlines()[1:]:
                        a = line.split()
                        if table == "unix":
                            peers[a[6]] = "unix:%s" % (a[7] if len(a) > 7 else "")
                        else:
                            lp, rp = int(a[1].split(":")[1], 16), int(a[2].split(":")[1], 16)
                            peers[a[9]] = "tcp:%d->%d" % (lp, rp)
            except OSError:
                pass
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            m = re.match(r"socket:\[(\d+)\]$", t)
            fdt[fd] = peers.get(m.group(1), "socket") if m else re.sub(r"\[\d+\]$", "", t)
        fds = len(fdt)
        self.samples[name] = (rss, fds)
        self.fd_kinds[name] = sorted(fdt.values())
        self.hold_http.clear()
        log("%s: HTTP server RSS %d kB, %d descriptors" % (name, rss, fds))

    # -- the run
    def run(self, seconds):
        self.setup()
        self.start_http()
        self.gates = [Stdio("gate%d" % i, self.gate_argv("main", "serve", "--approvals-via", "queue"),
                            self.ws, self.env, os.path.join(self.dir, "gate%d.err" % i)) for i in range(GATES)]
        self.disk_gate = Stdio("disk", self.gate_argv("disk", "serve", "--approvals-via", "queue"),
                               self.ws, self.env, os.path.join(self.dir, "disk.err"))
        threads = [threading.Thread(target=self.stdio_worker, args=(g, "main"), daemon=True)
                   for g in self.gates]
        threads.append(threading.Thread(target=self.stdio_worker, args=(self.disk_gate, "disk"), daemon=True))
        threads += [threading.Thread(target=self.http_worker, args=(i,), daemon=True)
                    for i in range(HTTP_CLIENTS)]
        threads.append(threading.Thread(target=self.approver, daemon=True))
        for t in threads:
            t.start()
        t0 = now()
        warm = max(30.0, seconds * 0.3)    # past lazy starts (the checkpointer's connection)
        time.sleep(min(warm, 5.0))
        chaos = threading.Thread(target=self.chaos, daemon=True)
        chaos.start()
        time.sleep(max(0.0, warm - (now() - t0)))
        self.sample("warm")
        stall_at = t0 + seconds * 0.4
        time.sleep(max(0.0, stall_at - now()))
        stall = threading.Thread(target=self.stalled_client, daemon=True)
        stall.start()
        time.sleep(max(0.0, t0 + seconds - now()))
        log("%s: %d s up; chaos stops, open keys are retried" % (self.kind, seconds))
        self.chaos_off.set()
        chaos.join()
        stall.join()
        self.draining.set()
        for g in self.gates + [self.disk_gate]:      # nothing stays stopped
            if g.pid():
                os.kill(g.pid(), signal.SIGCONT)
        end = now() + 60
        while now() < end and self.keys.open_count():
            time.sleep(0.5)
        self.sample("end")
        self.stop.set()
        for t in threads:
            t.join()
        for g in self.gates + [self.disk_gate]:
            g.stop()
        self.http.send_signal(signal.SIGTERM)
        try:
            self.http.wait(20)
        except subprocess.TimeoutExpired:
            self.http.kill()
            self.http.wait()
        self.check()

    # -- the end
    def effects(self, ws_path):
        """key -> [op...], op -> key, names not KEY.OP: from a workspace's effects/."""
        p = os.path.join(ws_path, "effects")
        if ws_path == self.small:
            p = self.small_path(p)
        by_key, by_op, torn = {}, {}, 0
        for name in os.listdir(p):
            k, dot, op = name.partition(".")
            if not dot or not op:
                torn += 1
                continue
            by_key.setdefault(k, []).append(op)
            by_op[op] = k
        return by_key, by_op, torn

    def ledgers(self):
        """(lane, workspace) of each ledger to settle: on PostgreSQL, one for both lanes."""
        if self.kind == "postgresql":
            return [("main", self.ws)]
        return [("main", self.ws), ("disk", self.small)]

    def fail(self, what):
        self.failures.append(what)

    def settle_unknown(self, ops_effect):
        """ops resolve each unknown outcome by whether its effect is there."""
        yes = no = 0
        claims_without_effect = {}
        # a claim whose process died before its op row names no tool, and the
        # ledger keeps only its scope's digest (execute.c make_scope)
        approved_scopes = set()
        for k, rec in self.keys.keys.items():
            if rec["tool"] == "approved_mark":
                text = "key:5:local:13:approved_mark:%s" % k
                approved_scopes.add("sha256:" + hashlib.sha256(text.encode()).hexdigest())
        for lane, _ in self.ledgers():
            rc, out, err = self.run_tg(lane, "ops", "list", "--unknown", "--json")
            if rc:
                self.fail("ops list --unknown (%s): %s" % (lane, err.strip()))
                continue
            for row in json.loads(out):
                op = row["op_id"]
                applied = "yes" if op in ops_effect else "no"
                rc, _, err = self.run_tg(lane, "ops", "resolve", op, "--applied", applied)
                if rc:
                    self.fail("ops resolve %s --applied %s: %s" % (op, applied, err.strip()))
                    continue
                if applied == "yes":
                    yes += 1
                else:
                    no += 1
                    if row.get("tool") == "approved_mark" or row.get("scope") in approved_scopes:
                        claims_without_effect[op] = row
        left = 0
        for lane, _ in self.ledgers():
            rc, out, _ = self.run_tg(lane, "ops", "list", "--unknown", "--json")
            left += len(json.loads(out)) if rc == 0 else 1
        return yes, no, left, claims_without_effect

    def final_pass(self):
        """Each key not settled (an unknown outcome now resolved, or never answered): once more."""
        n = 0
        for k, rec in list(self.keys.keys.items()):
            if rec["state"] == "done":
                continue
            n += 1
            rec["dup"] = False
            for _ in range(4):
                rc, out, err = self.run_tg(rec["lane"], "call", "--json", "--key", k, rec["tool"],
                                           json.dumps({"key": k}))
                try:
                    env = json.loads(out)
                except ValueError:
                    env = {"status": None, "error": {"message": err.strip()}}
                e = env.get("error") or {}
                if env.get("status") == "pending" and e.get("kind") == "needs_approval" and e.get("approval_id"):
                    self.run_tg("main", "approvals", "approve", e["approval_id"])
                    continue
                break
            if env.get("status"):
                self.keys.answered(k, env)
            if rec["state"] != "done":
                self.fail("key %s: the last call after the soak said %s (%s)" %
                          (k, env.get("status"), (env.get("error") or {}).get("message")))
        return n

    def ledger_rows(self, sql):
        if self.kind == "postgresql":
            out = self.psql(self.pg_url, sql)
            return [line.split("|") for line in out.splitlines() if line]
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.ws, ".toolgate", "ledger.db"), uri=True,
                             timeout=30)
        try:
            return [[str(c) if c is not None else "" for c in r] for r in db.execute(sql)]
        finally:
            db.close()

    def check(self):
        main = self.effects(self.ws)
        disk = self.effects(self.small)
        ops_effect = set(main[1]) | set(disk[1])
        unknown_yes, unknown_no, unknown_left, claims_no_effect = self.settle_unknown(ops_effect)
        reran = self.final_pass()
        main = self.effects(self.ws)
        disk = self.effects(self.small)
        by_key = dict(main[0])
        for k, v in disk[0].items():
            by_key.setdefault(k, []).extend(v)
        keys = self.keys.keys
        dups = sorted(k for k in keys if len(by_key.get(k, [])) > 1)
        lost = sorted(k for k in keys if not by_key.get(k))
        strays = sorted(k for k in by_key if k not in keys)
        torn = main[2] + disk[2]
        if dups:
            self.fail("side effects twice: %d keys (%s)" % (len(dups), ", ".join(
                "%s x%d" % (k, len(by_key[k])) for k in dups[:5])))
        if lost:
            self.fail("side effects lost: %d keys (%s)" % (len(lost), ", ".join(lost[:5])))
        if strays or torn:
            self.fail("effects of keys never sent: %s; other files in effects/: %d" %
                      (", ".join(strays[:5]), torn))
        if unknown_left:
            self.fail("unknown outcomes left after ops resolve: %d" % unknown_left)

        # approvals: each used approval is one run (or one claim whose outcome was unknown)
        used = {}
        for aid, state, args in self.ledger_rows(
                "SELECT id, state, args FROM approvals WHERE tool = 'approved_mark'"):
            try:
                k = json.loads(args).get("key")
            except (ValueError, AttributeError):
                k = None
            if state == "used":
                used[k] = used.get(k, 0) + 1
        akeys = [k for k, r in keys.items() if r["tool"] == "approved_mark"]
        runs = {k: len(by_key.get(k, [])) for k in akeys}
        twice = sorted(k for k in akeys if runs[k] > used.get(k, 0))
        spent = sum(used.values()) - sum(runs.values()) - len(claims_no_effect)
        if twice:
            self.fail("an approval used by more than one call: %d keys ran more often than approved (%s)" %
                      (len(twice), ", ".join(twice[:5])))
        if spent > 0:
            self.fail("approvals spent by calls that did not run (a replay, a call in flight, a crash "
                      "before the claim): %d of %d used" % (spent, sum(used.values())))

        # rate limit: persisted list_dir calls across every process, from the ledger
        ts = sorted(int(r[0]) for r in self.ledger_rows(
            "SELECT started_ms FROM ops WHERE tool = 'list_dir' AND status IN ('persisted', 'committed')"))
        worst, where, slack_ms = 0.0, None, 2000
        j = 0
        per_ms = RATE_N / 60000.0
        for i in range(len(ts)):          # any run of calls i..j: at most N + refill over their span
            for j in range(i, len(ts)):
                over = (j - i + 1) - (RATE_N + per_ms * (ts[j] - ts[i] + slack_ms))
                if over > worst:
                    worst, where = over, (i, j)
        max60 = 0
        j = 0
        for i in range(len(ts)):
            while j < len(ts) and ts[j] - ts[i] < 60000:
                j += 1
            max60 = max(max60, j - i)
        if worst >= 1:
            i, j = where
            self.fail("rate limit exceeded across processes: %d list_dir calls in %.1f s, a %d/min bucket "
                      "allows %d" % (j - i + 1, (ts[j] - ts[i]) / 1000.0, RATE_N,
                                     int(RATE_N + per_ms * (ts[j] - ts[i] + slack_ms))))

        # the long-lived server
        rss0, fd0 = self.samples.get("warm", (0, 0))
        rss1, fd1 = self.samples.get("end", (0, 0))
        if rss1 > rss0 * 1.10:
            self.fail("HTTP server RSS grew %d kB -> %d kB (+%.0f%%, more than 10%%)" %
                      (rss0, rss1, 100.0 * (rss1 - rss0) / max(rss0, 1)))
        if fd1 > fd0:
            a, b = list(self.fd_kinds.get("warm", [])), list(self.fd_kinds.get("end", []))
            for x in a:
                if x in b:
                    b.remove(x)
            self.fail("HTTP server descriptors grew %d -> %d (new: %s)" % (fd0, fd1, ", ".join(b)))
        if self.count["hung (killed)"]:
            self.fail("calls a running gate did not answer within %.0f s: %d" %
                      (CALL_TIMEOUT, self.count["hung (killed)"]))
        if self.stall["ran_while_stalled"]:
            self.fail("calls sent to a client that stopped reading ran while it did not read: %d of %d" %
                      (len(self.stall["ran_while_stalled"]), len(self.stall["sent"])))
        if self.unexpected:
            self.fail("unexpected answers: %d (%s)" % (len(self.unexpected), self.unexpected[0]))

        with open(os.path.join(self.dir, "calls.jsonl"), "w") as f:      # kept with SOAK_KEEP=1
            for c in self.calls:
                f.write(json.dumps(dict(zip(("lane", "via", "tool", "status", "kind", "message"), c))) + "\n")
        statuses = {"main": {}, "disk": {}}
        for c in self.calls:
            s = c[3] if c[3] != "pending" else "pending/%s" % c[4]
            if c[3] in ("denied", "failed", "invalid"):
                s += "/%s" % c[4]
            statuses[c[0]][s] = statuses[c[0]].get(s, 0) + 1
        self.figures = {
            "calls": len(self.calls), "keys": len(keys),
            "answers (gates 1-4, HTTP)": statuses["main"], "answers (full-disk lane)": statuses["disk"],
            "duplicates": len(dups), "lost": len(lost),
            "unknown resolved yes/no": "%d/%d" % (unknown_yes, unknown_no), "keys called again": reran,
            "approvals used": sum(used.values()), "approvals spent without a run": max(spent, 0),
            "list_dir persisted": len(ts), "list_dir max in 60 s": max60,
            "rss warm/end kB": "%d/%d" % (rss0, rss1), "fds warm/end": "%d/%d" % (fd0, fd1),
            "stalled client: ran while not read": "%d/%d (it read all %d requests: %s)" % (
                len(self.stall["ran_while_stalled"]), len(self.stall["sent"]), STALL_LISTS + STALL_KEYS,
                "yes" if self.stall["read_all"] else "no"),
        }
        self.figures.update(self.count)

    def cleanup(self):
        self.stop.set()
        self.chaos_off.set()
        for g in getattr(self, "gates", []) + ([self.disk_gate] if hasattr(self, "disk_gate") else []):
            p = g.proc
            if p and p.poll() is None:
                p.kill()
        if getattr(self, "http", None) and self.http.poll() is None:
            self.http.kill()
        if self.holder and self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait()
        if self.kind == "postgresql" and os.path.isdir(self.pgdir):
            subprocess.run([PG_CLUSTER, "stop", self.pgdir, "immediate"], capture_output=True)


def main():
    if os.geteuid() != 0:
        sys.exit("soak: run as root: the full-disk lane mounts a tmpfs in a private mount namespace")
    base = tempfile.mkdtemp(prefix="tg-soak.")
    os.chmod(base, 0o755)
    per = max(20, SECONDS // len(PHASES))
    log("seed %d, %d s per phase (%s), %d-core machine, %s" % (SEED, per, ", ".join(PHASES),
                                                                 os.cpu_count(), base))
    results, failed = [], False
    try:
        for kind in PHASES:
            ph = Phase(kind, base)
            try:
                ph.run(per)
            finally:
                ph.cleanup()
            results.append(ph)
            print("== %s: %d s" % (kind, per))
            for k, v in ph.figures.items():
                print("  %-36s %s" % (k, v if not isinstance(v, dict) else
                                      " ".join("%s=%d" % kv for kv in sorted(v.items()))))
            for f in ph.failures:
                print("  FAIL: %s" % f)
            print("  %s" % ("ok" if not ph.failures else "%d checks failed" % len(ph.failures)))
            sys.stdout.flush()
            failed = failed or bool(ph.failures)
    finally:
        if KEEP:
            log("kept %s" % base)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print("soak: %s" % ("FAILED" if failed else "passed"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
