# toolgate serve on stdio with a client that stops reading: the server stops
# reading requests once its answers cannot be written (the pipe pushes back
# on the client), so the side-effecting calls that run stay bounded rather
# than all of them running with their answers dropped; when the client
# finally exits, the server exits cleanly, calls not yet started are never
# started, and every call that ran has a settled ledger row; a call that was
# running when the client went away (and one that had ended) is replayed by
# its idempotency key for a new client, its side effect done once.
. "$(dirname "$0")/lib.sh"
cd "$WS"
PY=
for p in /usr/bin/python3 /usr/local/bin/python3; do [ -x "$p" ] && PY=$p && break; done
[ -n "$PY" ] || { fail "python3 is not installed (scripts/install-deps installs it)"; finish; exit; }
command -v sqlite3 > /dev/null || { fail "sqlite3 is not installed"; finish; exit; }

mkdir out
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
sandbox: danger-full-access
loop_detection: {enabled: false}
tools:
  put:                       # one file per run: the side effect, counted
    description: Record a put.
    input_schema: {type: object, properties: {n: {type: integer}, wait: {type: integer}}}
    command: [sh, -c, 'f=$(mktemp out/put.XXXXXX) && cat > "$f" && sleep "${WAIT:-0}"']
    requires_idempotency_key: true
  slowput:                   # runs until the file "go" exists, then its side effect
    description: Record a put, later.
    input_schema: {type: object, properties: {n: {type: integer}}}
    command: [sh, -c, 'while [ ! -e go ]; do sleep 0.1; done; f=$(mktemp out/slow.XXXXXX) && cat > "$f"']
    requires_idempotency_key: true
    timeout_s: 300
YAML

N=4000
"$PY" - "$TG" "$WS" "$N" > client.out 2> client.err <<'PYEOF'
import fcntl, json, os, subprocess, sys, time
tg, ws, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
err = open(os.path.join(ws, "serve.err"), "wb")
p = subprocess.Popen([tg, "serve", "--workspace", ws], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=err, cwd=ws)
def line(i, method, params):
    return (json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode()
data = line(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "pressure", "version": "1"}})
data += b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
data += line(1, "tools/call", {"name": "slowput", "arguments": {"n": -1, "idempotency_key": "slow-0"}})
for i in range(n):
    data += line(100 + i, "tools/call", {"name": "put", "arguments": {"n": i, "idempotency_key": "k-%d" % i}})
fd = p.stdin.fileno()
fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
sent, last_progress, last_count, stable_since = 0, time.time(), -1, time.time()
t0 = time.time()
def count():
    return len([f for f in os.listdir(os.path.join(ws, "out")) if f.startswith("put.")])
# write what the server takes, never reading its answers, until it takes
# nothing more and the side effects stop growing (or everything went)
while time.time() - t0 < 120:
    try:
        k = os.write(fd, data[sent:sent + 65536]) if sent < len(data) else 0
    except BlockingIOError:
        k = 0
    if k:
        sent += k
        last_progress = time.time()
    c = count()
    if c != last_count:
        last_count, stable_since = c, time.time()
    if time.time() - stable_since > 3 and (sent == len(data) or time.time() - last_progress > 3):
        break
    if not k:
        time.sleep(0.05)
print("sent %d of %d bytes" % (sent, len(data)))
print("executed %d of %d" % (count(), n))
# the client exits: both pipes close
t1 = time.time()
os.close(fd)
p.stdout.close()
time.sleep(1)
print("waits for the running call: %s" % (p.poll() is None))
open(os.path.join(ws, "go"), "w").close()
try:
    rc = p.wait(timeout=60)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
print("exit %s after %.1f s" % (rc, time.time() - t1))
print("final %d" % count())
PYEOF
cat client.out
sanitizers serve.err "the server"
sent=$(sed -n 's/^sent \([0-9]*\) of \([0-9]*\) bytes$/\1 \2/p' client.out)
executed=$(sed -n 's/^executed \([0-9]*\) of .*/\1/p' client.out)
final=$(sed -n 's/^final \([0-9]*\)$/\1/p' client.out)
eq "$(sed -n 's/^waits for the running call: //p' client.out)" True \
	"the server waits for the call that runs when the client leaves"
eq "$(sed -n 's/^exit \([^ ]*\) .*/\1/p' client.out)" 0 "the server exits cleanly when the client is gone"
[ -n "$executed" ] && [ "$executed" -lt $((N / 2)) ] ||
	fail "a client that does not read: $executed of $N calls ran (the server kept reading)"
set -- $sent
[ -n "${1:-}" ] && [ "$1" -lt "$2" ] || fail "the server read every request (sent: $sent)"
# nothing started after the client left but what had been read and admitted
[ -n "$final" ] && [ "$final" -lt $((N / 2)) ] || fail "after the client left, $final calls had run"

# every call that ran has its row, settled
eq "$(sql "SELECT count(*) FROM ops WHERE tool = 'put'")" "$final" "one ledger row per put that ran"
eq "$(sql "SELECT count(*) FROM ops WHERE tool = 'put' AND status <> 'persisted'")" 0 \
	"every put that ran is persisted"
eq "$(sql "SELECT count(*) FROM idem WHERE state <> 'done'")" 0 "no claim is left open"
eq "$(ls out | grep -c '^slow\.')" 1 "the slow call, running when the client left, ran to its end"
eq "$(sql "SELECT status FROM ops WHERE tool = 'slowput'")" persisted "and is persisted"

# a new client repeats the slow call, a put that ran and one never started
ran=$(cat out/put.* | jq -r '.args.idempotency_key' | sort -t- -k2 -n | head -1)
last="k-$((N - 1))"
rm out/slow.*
{
	echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}'
	echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	echo '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slowput","arguments":{"n":-1,"idempotency_key":"slow-0"}}}'
	echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"put\",\"arguments\":{\"n\":${ran#k-},\"idempotency_key\":\"$ran\"}}}"
	echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"put\",\"arguments\":{\"n\":$((N - 1)),\"idempotency_key\":\"$last\"}}}"
} | timeout 60 "$TG" serve --workspace "$WS" > again.out 2> again.err
sanitizers again.err "the second server"
st() { jq -r "select(.id == $1) | .result._meta[\"toolgate/envelope\"].status" again.out; }
eq "$(st 1)" replayed "the call running when the client left is replayed by its key"
eq "$(ls out | grep -c '^slow\.')" 0 "its side effect is not done again"
eq "$(st 2)" replayed "a put that ran is replayed by its key"
eq "$(grep -l "\"$ran\"" out/put.* | wc -l)" 1 "its side effect was done once"
eq "$(st 3)" persisted "a put never started runs now"
finish
