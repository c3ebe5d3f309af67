# Queued approvals: pending with an id, approve/deny, single use, bound to
# the exact call, expiry (DESIGN §3).
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'approvals: {ttl_s: 2}\n' > toolgate.yaml
export TOOLGATE_CONFIG=$WS/toolgate.yaml
W='{"path":"notes.txt","content":"one"}'

tgcall p1 write_file "$W"
eq "$(jqv p1.json .status)" pending "a write asks; no terminal → queued"
eq "$(cat p1.exit)" 5 "pending exits 5"
id=$(jqv p1.json .error.approval_id)
[ -n "$id" ] && [ "$id" != null ] || fail "pending carries an approval_id"
[ -e notes.txt ] && fail "nothing ran while pending"
tgcall p1b write_file "$W"
eq "$(jqv p1b.json .error.approval_id)" "$id" "the same call waits on the same approval"
list=$("$TG" approvals list)
contains "$list" "$id" "approvals list shows it"
contains "$list" "write_file" "approvals list shows the tool"
eq "$("$TG" approvals list --json | jq -r '.[0].state')" pending "list --json"

# an approval is bound to the exact args
tgcall other write_file '{"path":"notes.txt","content":"two"}'
eq "$(jqv other.json .status)" pending "other args need their own approval"
[ "$(jqv other.json .error.approval_id)" != "$id" ] || fail "other args got the same approval"

"$TG" approvals approve "$id" > /dev/null || fail "approve"
tgcall dry --dry-run write_file "$W"
eq "$(jqv dry.json .status)" dry_run "a dry run of an approved call"
eq "$(jqv dry.json .output.decision)" ask "the plan says it needs approval"
tgcall run write_file "$W"
eq "$(jqv run.json .status)" persisted "approved call runs"
eq "$(cat notes.txt)" one "the approved write happened"
tgcall again write_file "$W"
eq "$(jqv again.json .status)" pending "single use: the next identical call asks again"
"$TG" approvals approve "$id" > /dev/null 2> used.err && fail "a used approval cannot be approved again"

# deny
did=$(jqv again.json .error.approval_id)
"$TG" approvals deny "$did" > /dev/null || fail "deny"
tgcall denied write_file "$W"
eq "$(jqv denied.json .status)" denied "a denied approval denies the retry"

# expiry
oid=$(jqv other.json .error.approval_id)
sleep 2.2
"$TG" approvals approve "$oid" > /dev/null 2> exp.err && fail "an expired approval cannot be approved"
contains "$(cat exp.err)" "expired" "expiry is explained"
"$TG" approvals approve 00000000-0000-7000-8000-000000000000 > /dev/null 2> none.err && fail "unknown approval"
[ -s none.err ] || fail "unknown approval: no sentence"

# an approval planted in the ledger file (never expiring, no recorded decision) grants nothing
P='{"path":"planted.txt","content":"x"}'
bind=$(printf 'write_file\n%s' "$(echo "$P" | jq -cS .)" | sha256sum | cut -d' ' -f1)
sql "insert into approvals(id, op_id, tool, principal, binding, state, created_ms, expires_ms)
     values('00000000-0000-7000-8000-00000000abcd', 'x', 'write_file', 'local', '$bind', 'approved', 0, 0)"
tgcall planted write_file "$P"
eq "$(jqv planted.json .status)" pending "a planted approval is not honoured"
[ -e planted.txt ] && fail "the planted approval let the write run"

# --wait-approval: the call waits for the decision made by another process,
# woken by the ledger's watch, then runs (or is denied)
waited() { # name, args JSON: a call that waits in the background
	(cd "$WS" && "$TG" call --json --wait-approval 20 write_file "$2" > "$WS/$1.json" \
		2> "$WS/$1.err" < /dev/null; echo $? > "$WS/$1.exit") &
}
pending_id() { # the approval queued for args $1, once there is one
	local b i
	b=$(printf 'write_file\n%s' "$(echo "$1" | jq -cS .)" | sha256sum | cut -d' ' -f1)
	for i in $(seq 1 100); do
		id=$(sql "select id from approvals where binding='$b' and state='pending'")
		[ -n "$id" ] && { echo "$id"; return; }
		sleep 0.1
	done
}
WA='{"path":"waited.txt","content":"w"}'
waited wa "$WA"
wid=$(pending_id "$WA")
[ -n "$wid" ] || fail "a waiting call queues its approval"
sleep 0.5
[ -e waited.txt ] && fail "nothing ran before the decision"
t0=$(date +%s%N)
"$TG" approvals approve "$wid" > /dev/null || fail "approve the waiting call"
wait
t1=$(date +%s%N)
eq "$(jqv wa.json .status)" persisted "the waiting call ran once approved"
eq "$(cat waited.txt)" w "its write happened"
[ $(( (t1 - t0) / 1000000 )) -lt 2000 ] || fail "released $(( (t1 - t0) / 1000000 )) ms after the decision"
WD='{"path":"waited2.txt","content":"d"}'
waited wd "$WD"
did2=$(pending_id "$WD")
"$TG" approvals deny "$did2" > /dev/null || fail "deny the waiting call"
wait
eq "$(jqv wd.json .status)" denied "the waiting call is denied by the decision"
contains "$(jqv wd.json .error.message)" "$did2" "the denial names the approval"
[ -e waited2.txt ] && fail "a denied waiting call ran"

# events
eq "$(sql "select count(*) from events where type='tool.call.approval_requested'")" 6 "approval_requested events (none for the dry run)"
eq "$(sql "select count(*) from events where type='tool.call.approved'")" 2 "approved events"
finish
