# An approval decided in one process releases a call waiting in another
# (issue 9): on one PostgreSQL ledger, process A runs `toolgate call
# --wait-approval 30`, process B (another directory, as another host would)
# approves it; A finishes `persisted` soon after the decision, woken by
# LISTEN/NOTIFY.  A denied one ends `denied` saying so; one nobody decides
# is `pending` when its wait runs out.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
pg_newdb DB approval
export TOOLGATE_STORE=$DB
mkdir -p "$WS/a" "$WS/b"
printf 'approvals: {ttl_s: 120}\n' > "$WS/a/toolgate.yaml"
cp "$WS/a/toolgate.yaml" "$WS/b/toolgate.yaml"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# waiter NAME WAIT ARGS: process A, in the background; its end time in NAME.end
waiter() {
	local name=$1 wait=$2 args=$3
	(cd "$WS/a" && "$TG" call --json --wait-approval "$wait" write_file "$args" \
		> "$WS/$name.json" 2> "$WS/$name.err" < /dev/null
	 echo $? > "$WS/$name.exit"; now > "$WS/$name.end") &
	eval "${name}_pid=$!"
}

# queued ID_VAR TOOL_ARGS_SUBSTRING: wait (5 s at most) until process B sees
# the queued approval; its id in ID_VAR
queued() {
	local _q_id="" _q_i
	for _q_i in $(seq 100); do
		_q_id=$(cd "$WS/b" && "$TG" approvals list --json 2> /dev/null |
			jq -r --arg s "$2" '[.[] | select(.state == "pending" and (.args | tostring | contains($s)))][0].id // empty')
		[ -n "$_q_id" ] && break
		sleep 0.05
	done
	printf -v "$1" '%s' "$_q_id"
}

# ---- approved from B: A runs, soon ----
t0=$(now)
waiter w1 30 '{"path":"approved.txt","content":"yes"}'
queued id approved.txt
[ -n "$id" ] || fail "process B never saw the queued approval"
sleep 1   # A is waiting now, not polling for its answer
kill -0 "$w1_pid" 2> /dev/null || fail "process A did not wait for the approval: $(cat "$WS/w1.json" 2>/dev/null | head -c 300)"
[ -e "$WS/a/approved.txt" ] && fail "the write ran before it was approved"
(cd "$WS/b" && "$TG" approvals approve "$id" > "$WS/approve.out" 2> "$WS/approve.err") ||
	fail "approvals approve in process B: $(cat "$WS/approve.err")"
td=$(now)
wait "$w1_pid"
eq "$(cat "$WS/w1.exit")" 0 "the approved call exits 0"
eq "$(jqv "$WS/w1.json" .status)" persisted "the approved call ran and was persisted"
eq "$(cat "$WS/a/approved.txt" 2>/dev/null)" yes "the approved write happened"
d=$(secs "$td" "$(cat "$WS/w1.end")")
echo "approval decided in process B -> process A finished in $d s (waited $(secs "$t0" "$td") s in all)"
lt "$d" 2 || fail "process A took $d s after the decision to finish (2 s at most: it is woken, not polling)"
eq "$(pgq "$DB" "select status from ops where op_id = '$(jqv "$WS/w1.json" .op_id)'")" persisted \
	"its row is committed"
eq "$(cd "$WS/b" && "$TG" approvals list --all --json | jq -r --arg id "$id" '.[] | select(.id == $id) | .state')" \
	used "the approval was used (once)"
eq "$(pgq "$DB" "select count(*) from events where op_id = '$(jqv "$WS/w1.json" .op_id)' and type = 'tool.call.approved'")" \
	1 "the approved event is in the ledger"
sanitizers "$WS/w1.err" "process A"

# ---- denied from B: A ends denied, with why ----
waiter w2 30 '{"path":"denied.txt","content":"no"}'
queued id2 denied.txt
[ -n "$id2" ] || fail "process B never saw the second queued approval"
sleep 0.5
kill -0 "$w2_pid" 2> /dev/null || fail "process A did not wait for the second approval"
(cd "$WS/b" && "$TG" approvals deny "$id2" > /dev/null 2> "$WS/deny.err") || fail "approvals deny: $(cat "$WS/deny.err")"
td=$(now)
wait "$w2_pid"
eq "$(jqv "$WS/w2.json" .status)" denied "the denied call is denied"
eq "$(cat "$WS/w2.exit")" 3 "denied exits 3"
eq "$(jqv "$WS/w2.json" .error.kind)" not_permitted "denied: not_permitted"
contains "$(jqv "$WS/w2.json" .error.message)" denied "the message says it was denied"
contains "$(jqv "$WS/w2.json" .error.message)" "$id2" "the message names the approval"
[ -e "$WS/a/denied.txt" ] && fail "the denied write ran"
d=$(secs "$td" "$(cat "$WS/w2.end")")
lt "$d" 2 || fail "process A took $d s after the denial to finish"
sanitizers "$WS/w2.err" "process A (denied)"

# ---- nobody decides: pending once the wait runs out ----
t0=$(now)
(cd "$WS/a" && "$TG" call --json --wait-approval 2 write_file '{"path":"late.txt","content":"x"}' \
	> "$WS/w3.json" 2> "$WS/w3.err" < /dev/null; echo $? > "$WS/w3.exit")
d=$(secs "$t0" "$(now)")
eq "$(jqv "$WS/w3.json" .status)" pending "undecided: pending when the wait runs out"
eq "$(cat "$WS/w3.exit")" 5 "pending exits 5"
[ "$(jqv "$WS/w3.json" .error.approval_id)" != null ] || fail "the pending result names its approval"
lt 1.9 "$d" || fail "the wait of 2 s ended after $d s"
lt "$d" 6 || fail "the wait of 2 s took $d s"
[ -e "$WS/a/late.txt" ] && fail "the undecided write ran"
# approved later, the same call runs on its next try (without waiting)
id3=$(jqv "$WS/w3.json" .error.approval_id)
(cd "$WS/b" && "$TG" approvals approve "$id3" > /dev/null 2>&1) || fail "approve after the wait"
(cd "$WS/a" && "$TG" call --json write_file '{"path":"late.txt","content":"x"}' > "$WS/w4.json" 2>/dev/null < /dev/null)
eq "$(jqv "$WS/w4.json" .status)" persisted "approved after the wait: the retry runs"
# a bad --wait-approval is refused, nothing queued
(cd "$WS/a" && "$TG" call --json --wait-approval -3 write_file '{"path":"x.txt","content":"x"}' \
	> "$WS/bad.json" 2> "$WS/bad.err" < /dev/null)
eq "$?" 1 "--wait-approval -3: usage error"
contains "$(cat "$WS/bad.err")" "wait-approval" "the error names the option"
finish
