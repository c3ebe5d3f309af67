# Rows that carry authority (approvals' decisions, idempotency claims) are
# MACed under a key no workspace holds (issue 22 §1); one edited or
# planted with sqlite3 carries none.  And an approval is spent with the
# claim of the call it approves, only when the tool runs (§2): a replay or
# a call in flight leaves it for the next; two identical calls cannot both
# run on one approval.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'approvals: {ttl_s: 60}\n' > toolgate.yaml
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# ---- an approved approval whose expiry was raised with sqlite3 ----
E='{"path":"evil.sh","content":"echo pwned"}'
tgcall e1 write_file "$E"
eq "$(jqv e1.json .status)" pending "the write asks"
eid=$(jqv e1.json .error.approval_id)
"$TG" approvals approve "$eid" > /dev/null || fail "approve"
sql "update approvals set expires_ms = expires_ms + 86400000 where id = '$eid'"
tgcall e2 write_file "$E"
eq "$(jqv e2.json .status)" pending "an approval edited with sqlite3 is not honoured"
[ -e evil.sh ] && fail "the edited approval let the write run"
contains "$(jqv e2.json .error.message)" "did not verify" "the call says the approval did not verify"
eq "$(sql "select count(*) from events where type = 'tool.call.approval_unverified'")" 1 \
	"the ledger keeps that an approval did not verify"

# ---- an approved row planted from scratch, with a made-up MAC ----
P='{"path":"planted.txt","content":"x"}'
bind=$(printf 'write_file\n%s' "$(echo "$P" | jq -cS .)" | sha256sum | cut -d' ' -f1)
now=$(( $(date +%s) * 1000 ))
sql "insert into approvals(id, op_id, tool, principal, binding, state, created_ms, expires_ms,
     decided_by, decided_ms, mac) values('00000000-0000-7000-8000-00000000abcd', NULL,
     'write_file', 'local', '$bind', 'approved', $now, $((now + 3600000)), 'root', $now,
     '$(printf 'ab%.0s' $(seq 32))')"
tgcall pl write_file "$P"
eq "$(jqv pl.json .status)" pending "a planted approval with a made-up MAC is not honoured"
[ -e planted.txt ] && fail "the planted approval let the write run"

# ---- a done claim whose op's envelope was edited: never replayed ----
D='{"path":"done.txt","content":"real"}'
tgcall d1 --key k-done write_file "$D"
"$TG" approvals approve "$(jqv d1.json .error.approval_id)" > /dev/null || fail "approve d1"
tgcall d2 --key k-done write_file "$D"
eq "$(jqv d2.json .status)" persisted "the keyed write runs once approved"
dop=$(jqv d2.json .op_id)
sql "update ops set envelope = json_set(envelope, '$.output', json('{\"forged\":true}')) where op_id = '$dop'"
# a repeat asks again (the approval was spent); approved, its claim says done
tgcall d3 --key k-done write_file "$D"
"$TG" approvals approve "$(jqv d3.json .error.approval_id)" > /dev/null || fail "approve d3"
tgcall d4 --key k-done write_file "$D"
eq "$(jqv d4.json .status)" pending "an edited envelope is not replayed"
eq "$(jqv d4.json .error.kind)" unknown_outcome "... it is an unknown outcome"
contains "$(jqv d4.json .error.message)" "did not verify" "... and the call says the record did not verify"
eq "$(jqv d4.json .output)" null "nothing of the forged envelope comes back"
"$TG" ops resolve "$dop" --applied no > res.out 2> res.err || fail "ops resolve settles it: $(cat res.err)"
tgcall d5 --key k-done write_file "$D"
eq "$(jqv d5.json .status)" persisted "released, the call runs again (with the approval d4 left)"

# ---- a done claim planted from scratch, pointing at a forged op ----
F='{"path":"forged.txt","content":"f"}'
fop=01a22d03-4ed7-713f-b5b3-7dc7159d6c78
# the ledger keeps a scope as its digest (a key may hold a secret)
scope="sha256:$(printf %s "key:5:local:10:write_file:k-forged" | sha256sum | cut -d' ' -f1)"
sql "insert into ops(op_id, tool, status, started_ms, envelope) values('$fop', 'write_file',
     'persisted', $now, '{\"status\":\"persisted\",\"output\":{\"forged\":true}}');
     insert into idem(scope, op_id, state, created_ms, updated_ms, mac)
     values('$scope', '$fop', 'done', $now, $now, '$(printf 'cd%.0s' $(seq 32))')"
tgcall f1 --key k-forged write_file "$F"
"$TG" approvals approve "$(jqv f1.json .error.approval_id)" > /dev/null || fail "approve f1"
tgcall f2 --key k-forged write_file "$F"
eq "$(jqv f2.json .status)" pending "a planted done claim is not replayed"
eq "$(jqv f2.json .error.kind)" unknown_outcome "... it is an unknown outcome for the operator"
[ -e forged.txt ] && fail "nothing ran"
eq "$(sql "select state from approvals where id = '$(jqv f1.json .error.approval_id)'")" approved \
	"the approval is not spent on a call that did not run"
"$TG" ops resolve "$fop" --applied no > /dev/null 2> res2.err || fail "ops resolve: $(cat res2.err)"
tgcall f3 --key k-forged write_file "$F"
eq "$(jqv f3.json .status)" persisted "settled, the call runs on the approval it kept"
eq "$(cat forged.txt)" f "its write happened"

# ---- a replay does not spend an approval ----
R='{"path":"replay.txt","content":"r"}'
tgcall r1 --key k-r write_file "$R"
"$TG" approvals approve "$(jqv r1.json .error.approval_id)" > /dev/null || fail "approve r1"
tgcall r2 --key k-r write_file "$R"
eq "$(jqv r2.json .status)" persisted "runs once approved"
tgcall r3 --key k-r write_file "$R"
rid=$(jqv r3.json .error.approval_id)
"$TG" approvals approve "$rid" > /dev/null || fail "approve r3"
tgcall r4 --key k-r write_file "$R"
eq "$(jqv r4.json .status)" replayed "the same key replays"
eq "$(sql "select state from approvals where id = '$rid'")" approved "a replay leaves the approval unspent"
rm replay.txt
tgcall r5 --key k-r2 write_file "$R"
eq "$(jqv r5.json .status)" persisted "the approval the replay left runs the call under a new key"
eq "$(sql "select state from approvals where id = '$rid'")" used "... and is spent then"

# ---- two identical approved calls at once: exactly one runs ----
for mode in nokey key; do
	C="{\"path\":\"race-$mode.txt\",\"content\":\"c\"}"
	tgcall c0 write_file "$C"
	"$TG" approvals approve "$(jqv c0.json .error.approval_id)" > /dev/null || fail "approve c0"
	for i in 1 2 3 4; do
		k=; [ $mode = key ] && k="--key race-$i"
		(tgcall "c$mode$i" $k write_file "$C") &
	done
	wait
	ran=0
	for i in 1 2 3 4; do
		[ "$(jqv "c$mode$i.json" .status)" = persisted ] && ran=$((ran + 1))
	done
	eq "$ran" 1 "$mode: one approval runs one of four identical calls"
	eq "$(sql "select count(*) from ops where status = 'persisted' and args_redacted = '$(echo "$C" | jq -cS .)'")" 1 \
		"$mode: the ledger has one run"
done
finish
