# Queued approvals: pending with an id, approve/deny, single use, bound to
# the exact call, expiry (DESIGN §3).  An approval carries the call's plan
# (as a dry run shows it, redacted); a decision carries who made it and
# why (--reason), and a denied call is told the reason, waiting or retried.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'approvals: {ttl_s: 60}\n' > toolgate.yaml
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
"$TG" approvals list --json > l1.json
eq "$(jq -r '.[0].state' l1.json)" pending "list --json"
# the plan of the queued call: what the write would do, as a dry run shows it
eq "$(jq -r '.[0].plan.path' l1.json)" notes.txt "the approval carries the call's plan"
contains "$(jq -r '.[0].plan.diff' l1.json)" "+one" "the plan's diff shows the new content"
eq "$(jq -r '.[0].plan.exists' l1.json)" false "the plan says the file is new"
eq "$(jq -r '.[0] | [.decided, .decided_by, .decided_reason] | map(tostring) | join(",")' l1.json)" \
	null,null,null "undecided: no decision yet"

# an approval is bound to the exact args
tgcall other write_file '{"path":"notes.txt","content":"two"}'
eq "$(jqv other.json .status)" pending "other args need their own approval"
[ "$(jqv other.json .error.approval_id)" != "$id" ] || fail "other args got the same approval"

USER=alice "$TG" approvals approve "$id" --reason "reviewed the diff" > /dev/null || fail "approve"
tgcall dry --dry-run write_file "$W"
eq "$(jqv dry.json .status)" dry_run "a dry run of an approved call"
eq "$(jqv dry.json .output.decision)" ask "the plan says it needs approval"
tgcall run write_file "$W"
eq "$(jqv run.json .status)" persisted "approved call runs"
eq "$(cat notes.txt)" one "the approved write happened"
tgcall again write_file "$W"
eq "$(jqv again.json .status)" pending "single use: the next identical call asks again"
"$TG" approvals approve "$id" > /dev/null 2> used.err && fail "a used approval cannot be approved again"
# ap ID FILTER: that approval, as list --all --json shows it
ap() { "$TG" approvals list --all --json | jq -r --arg id "$1" ".[] | select(.id == \$id) | $2"; }
eq "$(ap "$id" .decided_by)" alice "the approval records who decided"
eq "$(ap "$id" .decided_reason)" "reviewed the diff" "approve --reason is recorded"
[ "$(ap "$id" .decided)" != null ] || fail "the approval records when it was decided"
eq "$(ap "$id" .plan.path)" notes.txt "a used approval keeps its plan"

# deny, with a reason: the retry is told who denied it and why
did=$(jqv again.json .error.approval_id)
USER=bob "$TG" approvals deny "$did" --reason "notes are frozen until Monday" > /dev/null || fail "deny"
tgcall denied write_file "$W"
eq "$(jqv denied.json .status)" denied "a denied approval denies the retry"
eq "$(jqv denied.json .error.message)" \
	"the owner denied this call (approval $did, by bob): notes are frozen until Monday; do not retry; ask the owner" \
	"the denied retry is told the approval, who denied it, and why"
eq "$(jqv denied.json .error.approval_id)" "$did" "the denied retry names its approval"
eq "$(ap "$did" .decided_reason)" "notes are frozen until Monday" "the reason is listed"
eq "$(ap "$did" .state)/$(ap "$did" .decided_by)" denied/bob "denied, by bob"

# expiry (approvals queued under a ttl of 1 s)
printf 'approvals: {ttl_s: 1}\n' > toolgate.yaml
tgcall exp write_file '{"path":"notes.txt","content":"three"}'
oid=$(jqv exp.json .error.approval_id)
printf 'approvals: {ttl_s: 60}\n' > toolgate.yaml
sleep 1.2
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
USER=bob "$TG" approvals deny "$did2" --reason "use a branch" > /dev/null || fail "deny the waiting call"
wait
eq "$(jqv wd.json .status)" denied "the waiting call is denied by the decision"
contains "$(jqv wd.json .error.message)" "$did2" "the denial names the approval"
eq "$(jqv wd.json .error.message)" \
	"the owner denied this call (approval $did2, by bob): use a branch; do not retry; ask the owner" \
	"the waiting call is told who denied it and why"
eq "$(sql "select json_extract(data, '$.reason') from events where op_id = '$(jqv wd.json .op_id)' and type = 'tool.call.rejected'")" \
	"use a branch" "the rejected event keeps the reason"
[ -e waited2.txt ] && fail "a denied waiting call ran"

# events
eq "$(sql "select count(*) from events where type='tool.call.approval_requested'")" 7 "approval_requested events (none for the dry run)"
eq "$(sql "select count(*) from events where type='tool.call.approved'")" 2 "approved events"

"$TG" approvals list --reason x > /dev/null 2> lr.err && fail "list --reason is refused"
contains "$(cat lr.err)" "approve or deny" "list --reason: the error says where it goes"

# a denial without a reason says so without one
WN='{"path":"plain.txt","content":"p"}'
tgcall n1 write_file "$WN"
nid=$(jqv n1.json .error.approval_id)
USER=bob "$TG" approvals deny "$nid" > /dev/null || fail "deny without a reason"
tgcall n2 write_file "$WN"
eq "$(jqv n2.json .error.message)" \
	"the owner denied this call (approval $nid, by bob); do not retry; ask the owner" \
	"a denial without a reason"
eq "$(ap "$nid" .decided_reason)" null "no reason: decided_reason is null"

# a reason over 500 bytes is refused and decides nothing; a reason's
# controls become spaces, and a secret in it is masked
WL='{"path":"long.txt","content":"l"}'
tgcall l1 write_file "$WL"
lid=$(jqv l1.json .error.approval_id)
"$TG" approvals deny "$lid" --reason "$(printf 'x%.0s' $(seq 501))" > /dev/null 2> long.err &&
	fail "a reason of 501 bytes is accepted"
contains "$(cat long.err)" "too long" "the refusal says the reason is too long"
eq "$(ap "$lid" .state)" pending "a refused decision leaves the approval pending"
KEY=AKIA$(printf 'Q%.0s' $(seq 16))
"$TG" approvals deny "$lid" --reason "$(printf 'leaked %s\tin\nthe diff' "$KEY")" > /dev/null || fail "deny with a secret in the reason"
r=$(ap "$lid" .decided_reason)
contains "$r" "«redacted:" "a secret in the reason is masked"
case "$r" in *"$KEY"*) fail "the reason keeps the secret: $r" ;; esac
contains "$r" " in the diff" "control characters in the reason become spaces"
tgcall l2 write_file "$WL"
eq "$(jqv l2.json .status)" denied "denied, with a masked reason"
contains "$(jqv l2.json .error.message)" "«redacted:" "the denied call is told the masked reason"
case "$(jqv l2.json .error.message)" in *"$KEY"*) fail "the denied call is told the secret" ;; esac

# the plan is redacted like the args: a secret in the content never reaches the approval
printf 'old\n' > secret.txt
tgcall s1 write_file "{\"path\":\"secret.txt\",\"content\":\"key $KEY\\n\"}"
sid=$(jqv s1.json .error.approval_id)
contains "$(ap "$sid" .plan.diff)" "-old" "the plan's diff of an existing file"
contains "$(ap "$sid" .plan.diff)" "«redacted:" "the plan's diff masks the secret"
case "$("$TG" approvals list --all --json)" in *"$KEY"*) fail "an approval shows the secret" ;; esac
eq "$(sql "select count(*) from approvals where plan like '%$KEY%' or args like '%$KEY%'")" 0 \
	"the ledger keeps no secret in an approval"

# a shell call's plan: argv, workdir and sandbox
tgcall sh1 shell '{"command":"rm -rf build"}'
if [ "$(jqv sh1.json .status)" = pending ]; then
	shid=$(jqv sh1.json .error.approval_id)
	eq "$(ap "$shid" '.plan.argv | join(" ")')" "/bin/sh -c rm -rf build" "a shell plan's argv"
	eq "$(ap "$shid" '.plan.workdir')" . "a shell plan's workdir"
	[ "$(ap "$shid" '.plan.sandbox')" != null ] || fail "a shell plan's sandbox"
else
	fail "rm -rf build is not queued for approval: $(jqv sh1.json .status)"
fi
eq "$(sql "select count(*) from approvals where plan is not null and json_valid(plan) = 0")" 0 \
	"every stored plan is JSON"
finish
