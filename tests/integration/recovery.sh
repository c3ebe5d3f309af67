# Exactly once across processes and crashes: in_flight claims, pending while
# running, unknown outcome after a kill -9, settled by `toolgate ops resolve`.
. "$(dirname "$0")/lib.sh"
cd "$WS"
cat > slow.sh <<'SH'
#!/bin/sh
cat > /dev/null
echo "$TOOLGATE_OP_ID" >> runs.log
sleep 1.5
echo '{"ok":true}'
SH
chmod +x slow.sh
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
tools:
  slow:
    description: A slow side effect.
    input_schema: {type: object, properties: {n: {type: integer}}}
    command: [./slow.sh]
    requires_idempotency_key: true
    timeout_s: 30
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# eight processes at once, one key: exactly one runs
for i in 1 2 3 4 5 6 7 8; do tgcall "c$i" slow '{"n":1}' --key same & done
wait
eq "$(wc -l < runs.log)" 1 "eight concurrent calls, one run"
eq "$(cat c*.json | jq -r .status | grep -c persisted)" 1 "one persisted"
others=$(cat c*.json | jq -r .status | grep -v persisted | sort -u | tr '\n' ' ')
case "$others" in "pending "|"replayed "|"pending replayed "|"") ;; *) fail "others: $others" ;; esac
for f in c*.json; do
	if [ "$(jqv "$f" .status)" = pending ]; then
		eq "$(jqv "$f" .error.kind)" transient "in flight: transient"
		[ "$(jqv "$f" .error.retry_after_s)" != null ] || fail "in flight: retry_after_s"
	fi
done
tgcall c9 slow '{"n":1}' --key same
eq "$(jqv c9.json .status)" replayed "afterwards: replayed"
eq "$(jqv c9.json .output.ok)" true "replay returns the stored output"

# the same key for a different call is refused, never answered with another call's result
n=$(wc -l < runs.log)
tgcall conflict slow '{"n":99}' --key same
eq "$(jqv conflict.json .status)" invalid "same key, other args: refused"
eq "$(jqv conflict.json .error.kind)" ambiguous "same key, other args: ambiguous"
contains "$(jqv conflict.json .error.message)" "new key" "says what to do"
eq "$(wc -l < runs.log)" "$n" "same key, other args: nothing ran"
tgcall cid1 --mode bypassPermissions write_file '{"path":"a.txt","content":"a"}' --session s --call-id c1
tgcall cid2 --mode bypassPermissions write_file '{"path":"b.txt","content":"b"}' --session s --call-id c1
eq "$(jqv cid1.json .status)/$(jqv cid2.json .status)" persisted/invalid \
	"a provider call id reused for another call: refused, not replayed"
[ -e b.txt ] && fail "the second write ran"

# the key is scoped to principal:tool:key — another key runs
tgcall k2 slow '{"n":2}' --key other
eq "$(jqv k2.json .status)" persisted "another key runs"
eq "$(wc -l < runs.log)" 2 "two runs"

# kill -9 while in flight → unknown outcome, never re-run silently
(cd "$WS" && exec "$TG" call --json slow '{"n":3}' --key crash > crash.json 2>&1 < /dev/null) &
pid=$!
for _ in $(seq 50); do [ "$(wc -l < runs.log)" -ge 3 ] && break; sleep 0.1; done
kill -9 $pid; wait $pid 2>/dev/null
sleep 2 # the orphaned tool finishes on its own
runs=$(wc -l < runs.log)
tgcall after slow '{"n":3}' --key crash
eq "$(jqv after.json .status)" pending "after a crash: pending"
eq "$(jqv after.json .error.kind)" unknown_outcome "after a crash: unknown_outcome"
eq "$(jqv after.json .error.applied)" unknown "after a crash: applied unknown"
contains "$(jqv after.json .error.message)" "ops resolve" "the message says how to settle it"
eq "$(wc -l < runs.log)" "$runs" "not re-run"
crash_op=$(sed -n 's/.*(op \([0-9a-f-]*\)).*/\1/p' <<< "$(jqv after.json .error.message)" | head -1)
[ -n "$crash_op" ] || fail "the message names the op"

"$TG" ops resolve "$crash_op" --applied no > /dev/null || fail "ops resolve --applied no"
tgcall retry slow '{"n":3}' --key crash
eq "$(jqv retry.json .status)" persisted "settled as not applied: runs again"

# settle as applied → replays
(cd "$WS" && exec "$TG" call --json slow '{"n":4}' --key crash2 > crash2.json 2>&1 < /dev/null) &
pid=$!
n=$(wc -l < runs.log)
for _ in $(seq 50); do [ "$(wc -l < runs.log)" -gt "$n" ] && break; sleep 0.1; done
kill -9 $pid; wait $pid 2>/dev/null
tgcall after2 slow '{"n":4}' --key crash2
op2=$(sed -n 's/.*(op \([0-9a-f-]*\)).*/\1/p' <<< "$(jqv after2.json .error.message)" | head -1)
"$TG" ops resolve "$op2" --applied yes > /dev/null || fail "ops resolve --applied yes"
tgcall replay2 slow '{"n":4}' --key crash2
eq "$(jqv replay2.json .status)" replayed "settled as applied: replays"
"$TG" ops resolve "$op2" --applied yes > /dev/null 2>&1 && fail "resolving twice is refused"

# a read-only call needs no key and never claims
eq "$(sql "select count(*) from idem i join ops o on o.op_id = i.op_id where o.tool = 'read_file'")" 0 "reads claim nothing"
finish
