# Interrupting a call (issue 21): `toolgate call` stopped by SIGINT or
# SIGTERM while its command runs kills the command's process group,
# records the call (failed, applied unknown, the signal named, with its
# events), exits by the signal, and `ops list --unknown` lists it (with a
# key: its claim) until `ops resolve` settles it.  `toolgate serve` stopped
# by SIGTERM after its stdin closed cancels the running call at once, and
# the call says the server received the signal.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'mode: bypassPermissions\n' > toolgate.yaml
export TOOLGATE_CONFIG=$WS/toolgate.yaml
# a sleep of a length no other test uses, to find it among the processes
NAP=29.$$
alive() { pgrep -f "^sleep $NAP" > /dev/null; }
# wait_for COND...: up to 10 s
wait_for() { for _ in $(seq 200); do "$@" && return 0; sleep 0.05; done; return 1; }
gone() { ! alive; }

# interrupt NAME SIGNAL ARGS...: toolgate call ARGS in the background (its
# SIGINT not ignored, as at a terminal), SIGNAL once the command runs
interrupt() {
	local name=$1 sig=$2; shift 2
	env --default-signal=INT "$TG" call --json "$@" > "$name.json" 2> "$name.err" < /dev/null &
	local pid=$!
	CHECKS=$((CHECKS + 1))
	wait_for alive || fail "$name: the command did not start"
	kill -"$sig" $pid
	wait $pid
	echo $? > "$name.exit"
	sanitizers "$name.err" "$name"
	CHECKS=$((CHECKS + 1))
	wait_for gone || fail "$name: the command still runs after SIG$sig: $(pgrep -fa "^sleep $NAP")"
}
events() { sql "select group_concat(type || coalesce(' ' || data, ''), ', ') from (select * from events where op_id = '$1' order by seq)"; }

# ---- SIGINT (Ctrl-C)
interrupt int INT shell "{\"command\":\"sleep $NAP\"}"
eq "$(cat int.exit)" 130 "SIGINT: toolgate exits by the signal"
eq "$(jqv int.json .status)" failed "SIGINT: the envelope says failed"
eq "$(jqv int.json .error.applied)" unknown "SIGINT: applied unknown"
contains "$(jqv int.json .error.message)" "received SIGINT" "SIGINT: the message names the signal"
int_op=$(jqv int.json .op_id)
eq "$(sql "select status from ops where op_id = '$int_op'")" failed "SIGINT: the call has its op row"
eq "$(events "$int_op")" \
	'tool.call.received, tool.call.started, tool.call.cancelled {"signal":"SIGINT"}, tool.call.failed {"kind":"tool_error"}' \
	"SIGINT: the call's events, the cancel naming the signal"

# ---- SIGTERM, with an idempotency key: the claim is settled unknown
interrupt term TERM shell "{\"command\":\"sleep $NAP\"}" --key k1
eq "$(cat term.exit)" 143 "SIGTERM: toolgate exits by the signal"
eq "$(jqv term.json .status)/$(jqv term.json .error.applied)" failed/unknown "SIGTERM: failed, applied unknown"
contains "$(jqv term.json .error.message)" "received SIGTERM" "SIGTERM: the message names the signal"
term_op=$(jqv term.json .op_id)
eq "$(sql "select state from idem where op_id = '$term_op'")" unknown "SIGTERM: the key's claim is unknown, not in_flight"
tgcall again shell "{\"command\":\"sleep $NAP\"}" --key k1
eq "$(jqv again.json .error.kind)" unknown_outcome "a retry with the key is told the outcome is unknown"

# ---- a claim whose process was killed outright has no row: listed too
(exec "$TG" call --json shell "{\"command\":\"sleep $NAP\"}" --key k9 > k9.json 2>&1 < /dev/null) &
k9=$!
CHECKS=$((CHECKS + 1))
wait_for alive || fail "kill -9: the command did not start"
kill -9 $k9
wait $k9 2> /dev/null
CHECKS=$((CHECKS + 1))
wait_for gone || fail "kill -9: the sandboxed command outlived the gate"
k9_op=$(sql "select op_id from idem where state = 'in_flight'")   # scopes are digests

# ---- ops list --unknown
"$TG" ops list --unknown --json > unknown.json 2> unknown.err
eq "$?" 0 "ops list --unknown"
eq "$(jq -r '[.[].op_id] | join(" ")' unknown.json)" "$int_op $term_op $k9_op" \
	"ops list --unknown: the two interrupted calls and the killed one, oldest first"
eq "$(jq -r ".[] | select(.op_id == \"$int_op\") | .claim" unknown.json)" null "without a key: no claim"
eq "$(jq -r ".[] | select(.op_id == \"$term_op\") | .claim" unknown.json)" unknown "with a key: its claim"
eq "$(jq -r ".[] | select(.op_id == \"$k9_op\") | .claim + \" \" + (.tool // \"-\")" unknown.json)" \
	"in_flight -" "killed: its in_flight claim, no row"
contains "$(jq -r ".[] | select(.op_id == \"$term_op\") | .message" unknown.json)" "received SIGTERM" \
	"the list says why"
"$TG" ops list --unknown > unknown.txt
contains "$(cat unknown.txt)" "$int_op" "the text list names the call"
contains "$(cat unknown.txt)" "ops resolve" "the text list says how to settle them"
"$TG" ops list > /dev/null 2> list.err
eq "$?" 1 "ops list without --unknown is a usage error"
contains "$(cat list.err)" "--unknown" "and says what to add"

# ---- ops resolve settles each, with a key or without
for op in "$int_op" "$term_op" "$k9_op"; do
	"$TG" ops resolve "$op" --applied no > /dev/null 2> resolve.err || fail "ops resolve $op: $(cat resolve.err)"
done
eq "$("$TG" ops list --unknown --json | jq length)" 0 "settled: none is listed"
"$TG" ops resolve "$int_op" --applied no > /dev/null 2>&1 && fail "resolving twice is refused"
tgcall again2 shell '{"command":"echo again"}' --key k1
eq "$(jqv again2.json .status)" persisted "settled as not applied: the key runs again"

# ---- toolgate serve: stdin closed, then SIGTERM cancels the running call at once
rm -f .toolgate/ledger.db*
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"shell\",\"arguments\":{\"command\":\"sleep $NAP\"}}}" |
	"$TG" serve > serve.out 2> serve.err &
srv=$!
CHECKS=$((CHECKS + 1))
wait_for alive || fail "serve: the command did not start"
t0=$(date +%s%N)
kill -TERM $srv
wait $srv
eq "$?" 0 "serve: a clean stop"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
CHECKS=$((CHECKS + 1))
[ "$ms" -lt 10000 ] || fail "serve: stopped ${ms} ms after SIGTERM (the call was not cancelled: it sleeps 29 s)"
sanitizers serve.err serve
CHECKS=$((CHECKS + 1))
wait_for gone || fail "serve: the command still runs after SIGTERM"
eq "$(sql "select status || ' ' || json_extract(envelope, '$.error.applied') from ops where tool = 'shell'")" \
	"failed unknown" "serve: the call is recorded failed, applied unknown"
msg=$(sql "select json_extract(envelope, '$.error.message') from ops where tool = 'shell'")
contains "$msg" "received SIGTERM" "serve: the call says the server received SIGTERM"
case "$msg" in *client*) fail "serve: a signal is worded as the client's cancel: $msg" ;; esac
CHECKS=$((CHECKS + 1))
eq "$(sql "select data from events where type = 'tool.call.cancelled'")" '{"signal":"SIGTERM"}' \
	"serve: the cancel event names the signal"
finish
