# The event stream (issue 7, "Event stream"; DESIGN §4): every call's events
# go to the ledger, to a JSONL file and to a Unix socket's subscribers;
# `toolgate log --follow` sees the calls of other processes within a second,
# with --tool, --status and --session; --session filters the plain listing
# too.  Secrets planted in the arguments (a `password` field, an `sk-` key,
# one in a path that ends up in an error message) are in none of the JSONL
# file, the socket stream, the follow output or the ledger.  A regular file
# at the socket path is refused, never replaced; a live socket is left to
# the process that serves it.
. "$(dirname "$0")/lib.sh"
cd "$WS"
PW=hunter2-PLANTED-pw
KEY=sk-proj-PLANTEDabcdefghijklmnopqrstuvwx0123
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
events:
  jsonl: .toolgate/events.jsonl
  fsync: always
  socket: .toolgate/events.sock
tools:
  login:
    description: Log in.
    input_schema: {type: object, properties: {user: {type: string}, password: {type: string}, note: {type: string}}}
    command: [/bin/sh, -c, "cat > /dev/null; echo ok"]
    read_only: true
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
echo one > a.txt

now_ms() { date +%s%3N; }

# wait_for FILE TEXT MS: until FILE contains TEXT; prints the ms it took, or -1
wait_for() {
	local t0 now; t0=$(now_ms)
	while :; do
		grep -qF -- "$2" "$1" 2> /dev/null && { echo $(($(now_ms) - t0)); return; }
		now=$(now_ms)
		[ $((now - t0)) -ge "$3" ] && { echo -1; return; }
		sleep 0.02
	done
}

# ---- followers, started before the calls, in processes of their own ----
"$TG" log --follow --json > f-all.out 2> f-all.err &
F_ALL=$!
"$TG" log --follow --json --tool read_file --status failed > f-rf.out 2> f-rf.err &
F_RF=$!
"$TG" log -f --session s-follow > f-sess.out 2> f-sess.err &
F_SESS=$!

# a follower prints only what comes after it started: probe until each is ready
ready() { # NAME OUTFILE TOOL ARGS [call options]
	local name=$1 out=$2 tool=$3 args=$4; shift 4
	for _ in $(seq 1 50); do
		tgcall "$name" "$@" "$tool" "$args"
		[ "$(wait_for "$out" "$tool" 200)" -ge 0 ] && return
	done
	fail "$out: the follower never printed anything"
}
ready probe1 f-all.out list_dir '{}'
ready probe2 f-rf.out read_file '{"path":"probe-missing.txt"}'
ready probe3 f-sess.out list_dir '{}' --session s-follow

# ---- calls from other processes, seen within a second ----
tgcall rf --session s-follow read_file '{"path":"a.txt"}'
eq "$(jqv rf.json .status)" persisted "read_file runs"
op_rf=$(jqv rf.json .op_id)
took=$(wait_for f-all.out "\"op_id\":\"$op_rf\"" 3000)
[ "$took" -ge 0 ] || fail "--follow never printed the call of another process"
[ "$took" -le 1000 ] || fail "--follow printed another process's call after $took ms (> 1 s)"
CHECKS=$((CHECKS + 2))

tgcall bad read_file "{\"path\":\"$KEY.txt\"}"
eq "$(jqv bad.json .status)" failed "reading a missing file fails"
op_bad=$(jqv bad.json .op_id)
tgcall login login "{\"user\":\"ann\",\"password\":\"$PW\",\"note\":\"key $KEY\"}"
eq "$(jqv login.json .status)" persisted "login runs"
op_login=$(jqv login.json .op_id)
[ "$(wait_for f-all.out "\"op_id\":\"$op_login\"" 3000)" -ge 0 ] || fail "--follow sees login"
[ "$(wait_for f-rf.out "\"op_id\":\"$op_bad\"" 3000)" -ge 0 ] ||
	fail "--tool read_file --status failed sees the failed read"
sleep 0.3

# the lines --follow --json prints: the sinks' shape, in seq order, each once
jq -e -s 'all(has("seq") and has("ts") and has("type") and has("stage") and has("op_id")
              and has("session") and has("principal") and has("tool") and has("status")
              and has("summary") and has("data"))' f-all.out > /dev/null ||
	fail "every followed line has the event's fields"
eq "$(jq -s '[.[].seq] | . == (sort | unique)' f-all.out)" true "followed seqs ascend, none twice"
eq "$(jq -r "select(.op_id == \"$op_rf\" and .type == \"tool.call.persisted\") | .session" f-all.out)" \
	s-follow "the session is in the line"
contains "$(jq -r "select(.op_id == \"$op_bad\") | .summary" f-all.out | head -n1)" \
	"→ failed tool_error" "a failed call's summary says how it ended"
eq "$(jq -r "select(.op_id == \"$op_rf\") | .op_id" f-all.out | sort -u)" "$op_rf" "all of one call's events"
# --tool read_file --status failed: only failed reads
eq "$(jq -r '[.tool, .status] | join(" ")' f-rf.out | sort -u)" "read_file failed" \
	"the filtered follower prints only failed reads"
eq "$(grep -c "$op_rf" f-rf.out)" 0 "the persisted read is not in the failed-reads follower"
# --session s-follow, for people: "HH:MM:SS.mmm  seq  type  tool  status  summary"
grep -qE '^[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\.[0-9]{3} +[0-9]+ +tool\.call\.persisted +read_file +persisted +read_file \{' f-sess.out ||
	fail "the human follow line: $(head -n 3 f-sess.out)"
CHECKS=$((CHECKS + 3))
eq "$(grep -c login f-sess.out)" 0 "the session follower leaves out calls of no session"

# ---- the socket: served by a long-lived gate; subscribers read lines ----
cat > drive.py <<'PY'
import json, os, socket, subprocess, sys, time
tg, key, pw = sys.argv[1:4]
serve = subprocess.Popen([tg, "serve", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=open("serve.err", "w"))
path = ".toolgate/events.sock"
subs = []
deadline = time.time() + 20
while len(subs) < 2 and time.time() < deadline:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        subs.append(s)
    except OSError:
        time.sleep(0.05)
if len(subs) < 2:
    sys.exit("no socket to subscribe to")
def send(msg):
    serve.stdin.write((json.dumps(msg) + "\n").encode())
    serve.stdin.flush()
def rpc(i, method, params):
    send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
    while True:
        r = json.loads(serve.stdout.readline())
        if r.get("id") == i:
            return r
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "events-test", "version": "1"}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
time.sleep(0.3)   # the subscribers are accepted
ops = []
for i, (tool, args) in enumerate([("read_file", {"path": "a.txt"}),
                                  ("login", {"user": "bob", "password": pw, "note": key}),
                                  ("read_file", {"path": key + ".txt"})]):
    r = rpc(10 + i, "tools/call", {"name": tool, "arguments": args})
    ops.append(r["result"]["_meta"]["toolgate/envelope"]["op_id"])
# another process while this one serves the socket: it runs, and says so once
other = subprocess.run([tg, "call", "--json", "list_dir", "{}"], capture_output=True, text=True)
open("other.out", "w").write(other.stdout)
open("other.err", "w").write(other.stderr)
serve.stdin.close()
serve.wait(timeout=20)
for n, s in enumerate(subs):
    s.settimeout(10)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    open("sub%d.out" % n, "wb").write(data)
json.dump({"ops": ops, "serve_rc": serve.returncode, "other_rc": other.returncode},
          open("drive.json", "w"))
PY
timeout 60 python3 drive.py "$TG" "$KEY" "$PW" > drive.out 2>&1
eq "$?" 0 "the serve + subscribers driver ran: $(tail -n 3 drive.out)"
sanitizers serve.err "serve"
sanitizers other.err "call while serve holds the socket"
eq "$(jqv drive.json .serve_rc)" 0 "serve exits cleanly"
eq "$(jqv drive.json .other_rc)" 0 "a call in another process runs while the socket is served"
eq "$(grep -c 'events' other.err)" 0 "and it leaves the socket alone without a word (the normal case)"
for n in 0 1; do
	jq -e -s 'length > 0' "sub$n.out" > /dev/null || fail "subscriber $n read JSON lines"
	for op in $(jq -r '.ops[]' drive.json); do
		eq "$(jq -r "select(.op_id == \"$op\") | .type" "sub$n.out" | tail -n 1)" \
			"$(sql "select type from events where op_id = '$op' order by seq desc limit 1")" \
			"subscriber $n got op $op up to its last event"
		eq "$(jq -r "select(.op_id == \"$op\") | .seq" "sub$n.out" | tr '\n' ' ')" \
			"$(sql "select seq from events where op_id = '$op' order by seq" | tr '\n' ' ')" \
			"subscriber $n got every event of op $op, with the ledger's seq"
	done
done
[ -e .toolgate/events.sock ] && fail "serve removed its socket when it stopped"
CHECKS=$((CHECKS + 1))

# the serve's calls reach the followers too (the ledger is shared)
op_serve=$(jq -r '.ops[0]' drive.json)
[ "$(wait_for f-all.out "\"op_id\":\"$op_serve\"" 3000)" -ge 0 ] || fail "--follow sees serve's calls"

# ---- SIGINT/SIGTERM end a follow cleanly ----
t0=$(now_ms)
kill -INT "$F_ALL"; wait "$F_ALL"; rc_all=$?
kill -TERM "$F_RF"; wait "$F_RF"; rc_rf=$?
kill -INT "$F_SESS"; wait "$F_SESS"; rc_sess=$?
eq "$rc_all $rc_rf $rc_sess" "0 0 0" "followers exit 0 on SIGINT/SIGTERM"
[ $(($(now_ms) - t0)) -lt 3000 ] || fail "followers stop promptly"
CHECKS=$((CHECKS + 1))
for f in f-all f-rf f-sess; do sanitizers "$f.err" "$f"; done

# ---- the JSONL file: one whole line per event of every process ----
jq -e -c . .toolgate/events.jsonl > /dev/null || fail "every JSONL line is JSON"
CHECKS=$((CHECKS + 1))
eq "$(wc -l < .toolgate/events.jsonl | tr -d ' ')" "$(sql 'select count(*) from events')" \
	"the JSONL file has every event the ledger has"
eq "$(stat -c %a .toolgate/events.jsonl)" 600 "the JSONL file is private"
eq "$(jq -r "select(.op_id == \"$op_login\" and .type == \"tool.call.persisted\") | .principal" \
	.toolgate/events.jsonl)" local "lines name the principal"

# ---- no planted secret anywhere ----
for f in .toolgate/events.jsonl sub0.out sub1.out f-all.out f-rf.out f-sess.out; do
	eq "$(grep -c -e "$PW" -e "$KEY" "$f")" 0 "no planted secret in $f"
done
eq "$(cat .toolgate/ledger.db* | grep -a -c -e "$PW" -e "$KEY")" 0 "no planted secret in the ledger"
contains "$(jq -r "select(.op_id == \"$op_login\") | .summary" .toolgate/events.jsonl | head -n 1)" \
	"«redacted:" "the summary shows where a secret was"

# ---- --session filters the plain listing too ----
eq "$("$TG" log --json --session s-follow | jq -r .session | sort -u)" s-follow \
	"toolgate log --session lists only that session's calls"
eq "$("$TG" log --json --session s-follow | jq -r .op_id | grep -c "$op_rf")" 1 "and it has the read"

# ---- bad input ----
"$TG" log --follow --limit 3 > lim.out 2> lim.err
eq "$?" 1 "--follow with --limit is a usage error"
contains "$(cat lim.err)" "--limit does not apply" "and says why"
for bad in abc -3 0 99999999999999999999999 ""; do
	"$TG" log --json --limit "$bad" > lim.out 2> lim.err
	eq "$?" 1 "--limit \"$bad\" is a usage error"
	contains "$(cat lim.err)" "--limit: expected a number of calls" "--limit \"$bad\": says what it takes"
	eq "$(wc -c < lim.out | tr -d ' ')" 0 "--limit \"$bad\": nothing listed"
done
eq "$("$TG" log --json --limit 2 | wc -l | tr -d ' ')" 2 "--limit 2 lists two calls"
cp toolgate.yaml good.yaml
sed -i 's#socket: .toolgate/events.sock#socket: a.txt#' toolgate.yaml
tgcall refused list_dir '{}'
eq "$(cat refused.exit)" 1 "a regular file at the socket path: the gate does not open"
contains "$(cat refused.err)" "toolgate.yaml:5" "the error names the line"
contains "$(cat refused.err)" "not a socket" "and what is wrong"
eq "$(cat a.txt)" one "the file is left as it was"
sed -i 's#socket: a.txt#socket: .toolgate/events.sock#; s#fsync: always#fsync: sometimes#' toolgate.yaml
tgcall badsync list_dir '{}'
eq "$(cat badsync.exit)" 1 "a bad fsync policy: the gate does not open"
contains "$(cat badsync.err)" "events.fsync: expected always, never or a number of seconds" \
	"the error says what fsync takes"
cp good.yaml toolgate.yaml
ln -s a.txt link.jsonl
sed -i 's#jsonl: .toolgate/events.jsonl#jsonl: link.jsonl#' toolgate.yaml
tgcall symlink list_dir '{}'
eq "$(cat symlink.exit)" 1 "a symlinked JSONL file is refused"
contains "$(cat symlink.err)" "symbolic link" "and the error says so"
eq "$(cat a.txt)" one "nothing was written through the link"
finish
