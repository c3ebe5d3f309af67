# Rate limits across processes (issue 22 §2): four gates on one SQLite
# ledger at once draw from one bucket, so `10/min` passes exactly 10 calls
# however the 40 calls are spread over the processes.  First four
# long-lived `toolgate serve` processes (each meets the bucket with one
# call, then sends its other nine at once), then four loops of one-call
# `toolgate call` processes side by side.  A token comes back every 6 s:
# a run slower than that may pass one more per 6 s, and the check allows
# exactly that many.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'one\ntwo\n' > hello.txt
cat > toolgate.yaml <<'YAML'
default_principal: dev
principals:
  dev: {roles: [owner]}
  ci:  {roles: [owner]}
roles:
  owner: {allow: ["*"]}
rate_limits:
  read_file: 10/min
loop_detection: {enabled: false}   # the same read 10 times in a session is the point here
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# at most: 10, and one more for every whole 6 s the calls took
most() { awk -v s="$1" 'BEGIN { printf "%d", 10 + int(s / 6) }'; }

# ---- four `toolgate serve` processes, 10 calls each ----
cat > drive.py <<'PY'
import json, subprocess, sys, time
tg, nproc, per = sys.argv[1], 4, 10
procs = [subprocess.Popen([tg, "serve", "--stdio"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=open("serve%d.err" % i, "w"))
         for i in range(nproc)]
def send(p, msg):
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()
def recv(p, ids):
    got = {}
    while len(got) < len(ids):
        line = p.stdout.readline()
        if not line:
            sys.exit("a server closed its output")
        r = json.loads(line)
        if r.get("id") in ids:
            got[r["id"]] = r
    return got
def call(p, i):
    send(p, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": {"name": "read_file", "arguments": {"path": "hello.txt"}}})
for p in procs:
    send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "rate-test", "version": "1"}}})
for p in procs:
    recv(p, [1])
    send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
t0 = time.time()
answers = []
# every process meets the bucket before any has used it up
for p in procs:
    call(p, 100)
for p in procs:
    answers += recv(p, [100]).values()
# then the rest, all in flight at once
for p in procs:
    for k in range(1, per):
        call(p, 100 + k)
for p in procs:
    answers += recv(p, [100 + k for k in range(1, per)]).values()
elapsed = time.time() - t0
for p in procs:
    p.stdin.close()
rcs = [p.wait(timeout=30) for p in procs]
out = {"persisted": 0, "rate_limited": 0, "other": 0, "elapsed": elapsed, "rcs": rcs}
for a in answers:
    env = a.get("result", {}).get("_meta", {}).get("toolgate/envelope", {})
    kind = (env.get("error") or {}).get("kind")
    if env.get("status") == "persisted":
        out["persisted"] += 1
    elif kind == "rate_limited":
        out["rate_limited"] += 1
    else:
        out["other"] += 1
        out["example"] = a
json.dump(out, open("drive.json", "w"))
PY
timeout 120 python3 drive.py "$TG" > drive.out 2>&1
eq "$?" 0 "the four servers ran: $(tail -n 3 drive.out)"
for i in 0 1 2 3; do sanitizers "serve$i.err" "serve $i"; done
eq "$(jqv drive.json '.rcs | map(tostring) | join(",")')" "0,0,0,0" "every server exits 0"
elapsed=$(jqv drive.json .elapsed)
passed=$(jqv drive.json .persisted)
limited=$(jqv drive.json .rate_limited)
eq "$(jqv drive.json .other)" 0 "serve: every call passed or was rate_limited: $(jq -c .example drive.json | cut -c1-600)"
eq "$((passed + limited))" 40 "serve: 40 answers"
max=$(most "$elapsed")
if [ "$max" -eq 10 ]; then
	eq "$passed" 10 "serve: four processes together pass exactly 10 of 40 calls at 10/min"
	eq "$limited" 30 "serve: the other 30 are rate_limited"
else
	CHECKS=$((CHECKS + 1))
	[ "$passed" -ge 10 ] && [ "$passed" -le "$max" ] ||
		fail "serve: $passed calls passed in ${elapsed}s; expected 10 to $max"
fi
eq "$(sql "SELECT count(*) FROM ops WHERE tool = 'read_file' AND principal = 'dev' AND status = 'persisted'")" \
	"$passed" "serve: the ledger holds as many persisted reads as passed"
eq "$(sql "SELECT count(*) FROM ops WHERE principal = 'dev' AND error_kind = 'rate_limited'")" \
	"$limited" "serve: and as many rate_limited rows as were refused"

# ---- four loops of one-call processes, 10 calls each, as ci ----
t0=$(date +%s.%N)
for p in 0 1 2 3; do
	(
		for i in $(seq 1 10); do
			"$TG" call --json --as ci read_file '{"path":"hello.txt"}' \
				> "$WS/c$p-$i.json" 2> "$WS/c$p-$i.err" < /dev/null
		done
	) &
done
wait
t1=$(date +%s.%N)
for f in "$WS"/c[0-3]-*.err; do sanitizers "$f" "$(basename "$f")"; done
passed=$(cat "$WS"/c[0-3]-*.json | jq -r .status | grep -c '^persisted$')
limited=$(cat "$WS"/c[0-3]-*.json | jq -r '.error.kind // empty' | grep -c '^rate_limited$')
eq "$((passed + limited))" 40 "call: every one of the 40 calls passed or was rate_limited"
max=$(most "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
if [ "$max" -eq 10 ]; then
	eq "$passed" 10 "call: four loops of processes together pass exactly 10 of 40 calls"
else
	CHECKS=$((CHECKS + 1))
	[ "$passed" -ge 10 ] && [ "$passed" -le "$max" ] ||
		fail "call: $passed calls passed; expected 10 to $max"
fi
eq "$(sql "SELECT count(*) FROM ops WHERE principal = 'ci' AND status = 'persisted'")" \
	"$passed" "call: the ledger agrees"

finish
