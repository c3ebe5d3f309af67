# toolgate serve on stdio runs a quick read (read_file, list_dir, when no
# hook and no ask rule could hold for it) on the thread that read it: no
# call thread is made for it, and every answer still comes, in full, to the
# right id.  A read that may ask goes to a call thread as before, so that
# the reader stays free (a ping is answered while the question waits).  A
# client that stops reading its answers to quick reads is pushed back on
# (the server stops reading), and the server exits cleanly when it leaves,
# every read that ran recorded.
. "$(dirname "$0")/lib.sh"
cd "$WS"
PY=
for p in /usr/bin/python3 /usr/local/bin/python3; do [ -x "$p" ] && PY=$p && break; done
[ -n "$PY" ] || { fail "python3 is not installed (scripts/install-deps installs it)"; finish; exit; }
command -v sqlite3 > /dev/null || { fail "sqlite3 is not installed"; finish; exit; }

printf 'one\ntwo\nthree\n' > small.txt
"$PY" - <<'PYEOF'
with open("big.txt", "w") as f:
    for i in range(300):
        f.write("line %04d %s\n" % (i, "y" * 60))
PYEOF
printf 'loop_detection: {enabled: false}\n' > quick.yaml
printf 'loop_detection: {enabled: false}\npermissions:\n  ask: ["read_file(small.txt)"]\n' > ask.yaml

"$PY" - "$TG" "$WS" > client.out 2> client.err <<'PYEOF'
import fcntl, json, os, select, subprocess, sys, time
tg, ws = sys.argv[1], sys.argv[2]

def start(cfg, caps):
    err = open(os.path.join(ws, "serve-%s.err" % cfg.split(".")[0]), "ab")
    p = subprocess.Popen([tg, "serve", "--workspace", ws, "--config", os.path.join(ws, cfg)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=ws)
    send(p, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": caps,
                        "clientInfo": {"name": "inline", "version": "1"}}})
    send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    recv(p)
    return p

def send(p, msg):
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()

def recv(p, timeout=30):
    r, _, _ = select.select([p.stdout], [], [], timeout)
    if not r:
        return None
    line = p.stdout.readline()
    return json.loads(line) if line else None

def call(i, tool, args):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}

def status(m):
    return m.get("result", {}).get("_meta", {}).get("toolgate/envelope", {}).get("status")

def threads(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("Threads:"):
            return int(line.split()[1])

# ---- quick reads, many in flight at once: each answered, on the reader's thread
p = start("quick.yaml", {})
base = threads(p.pid)
n = 200
data = b"".join((json.dumps(call(100 + i, "read_file" if i % 2 else "list_dir",
                                 {"path": "small.txt"} if i % 2 else {"path": "."})) + "\n").encode()
                for i in range(n))
p.stdin.write(data)
p.stdin.flush()
got = {}
for _ in range(n):
    m = recv(p)
    if m is None:
        break
    got[m["id"]] = m
ok = sum(1 for i in range(n) if status(got.get(100 + i, {})) == "persisted")
texts = sum(1 for i in range(1, n, 2)
            if "two" in got.get(100 + i, {}).get("result", {}).get("content", [{}])[0].get("text", ""))
print("answered %d of %d, persisted %d, read_file texts %d of %d" % (len(got), n, ok, texts, n // 2))
print("threads before %d after %d" % (base, threads(p.pid)))
p.stdin.close()
print("quick exit %s" % p.wait(timeout=30))

# ---- a read that may ask: a call thread; the reader answers a ping meanwhile
p = start("ask.yaml", {"elicitation": {}})
send(p, call(1, "read_file", {"path": "small.txt"}))
q = recv(p)
print("asked: %s" % (q.get("method") if q else None))
send(p, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
m = recv(p)
print("ping while asked: %s" % (m.get("id") if m else None))
send(p, {"jsonrpc": "2.0", "id": q["id"], "result": {"action": "accept", "content": {}}})
m = recv(p)
print("after accept: %s %s" % (m.get("id") if m else None, status(m) if m else None))
p.stdin.close()
print("ask exit %s" % p.wait(timeout=30))

# ---- a client that sends quick reads and stops reading their answers
err = open(os.path.join(ws, "serve-flood.err"), "ab")
p = subprocess.Popen([tg, "serve", "--workspace", ws, "--config", os.path.join(ws, "quick.yaml")],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=ws)
n = 20000
data = (json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}) + "\n").encode()
data += b"".join((json.dumps(call(10 + i, "read_file", {"path": "big.txt"})) + "\n").encode()
                 for i in range(n))
fd = p.stdin.fileno()
fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
sent, last = 0, time.time()
while time.time() - last < 3 and sent < len(data):
    try:
        k = os.write(fd, data[sent:sent + 65536])
    except BlockingIOError:
        k = 0
    if k:
        sent += k
        last = time.time()
    else:
        time.sleep(0.05)
print("flood sent all: %s" % (sent == len(data)))
os.close(fd)
p.stdout.close()
t = time.time()
try:
    rc = p.wait(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
print("flood exit %s" % rc)
PYEOF
cat client.out
for f in serve-quick.err serve-ask.err serve-flood.err; do sanitizers "$f" "the server ($f)"; done
eq "$(sed -n 's/^answered \([0-9]*\) of \([0-9]*\), persisted \([0-9]*\), read_file texts \([0-9]*\) of \([0-9]*\)$/\1 \3 \4/p' client.out)" \
	"200 200 100" "every quick read is answered, persisted, with the file's text"
set -- $(sed -n 's/^threads before \([0-9]*\) after \([0-9]*\)$/\1 \2/p' client.out)
eq "${2:-none}" "${1:-}" "quick reads make no call thread (threads before and after)"
eq "$(sed -n 's/^quick exit //p' client.out)" 0 "the server exits 0 when the client closes"
eq "$(sed -n 's/^asked: //p' client.out)" elicitation/create "a read an ask rule holds for asks the client"
eq "$(sed -n 's/^ping while asked: //p' client.out)" 2 "the reader answers a ping while the question waits"
eq "$(sed -n 's/^after accept: //p' client.out)" "1 persisted" "accepted, the read runs and answers"
eq "$(sed -n 's/^ask exit //p' client.out)" 0 "and the server exits 0"
eq "$(sed -n 's/^flood sent all: //p' client.out)" False \
	"a client that does not read its answers is pushed back on (the server stops reading)"
eq "$(sed -n 's/^flood exit //p' client.out)" 0 "the server exits cleanly when that client leaves"
eq "$(sql "SELECT count(*) FROM ops WHERE tool IN ('read_file', 'list_dir') AND status <> 'persisted'")" 0 \
	"every read that ran is persisted"
finish
