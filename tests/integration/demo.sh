# make demo (scripts/demo): the built-in script plays the model through
# `toolgate agent` as ci-bot on a fresh copy of examples/demo/.  Every
# outcome is read back from the ledger and the files: the first turn's
# three calls in one batch, the write, the patch that lands and the one
# rejected whole (its new file never made, app.py as the first patch left
# it), the prod deploy denied by the deny rule, the invalid call stopped at
# validate, one deploy run and its repeat replayed (one line in
# deploys.log), git status allowed by execpolicy, curl | sh denied by the
# floor, the final answer; then the log and stats the demo prints.
. "$(dirname "$0")/lib.sh"
R=$WS/run
mkdir -p "$R"
bash "$ROOT/scripts/demo" "$TG" "$WS/demo" > "$R/out" 2> "$R/err" < /dev/null
eq "$?" 0 "scripts/demo exits 0"
sanitizers "$R/err" "scripts/demo"
D=$WS/demo
q() { sqlite3 "$D/.toolgate/ledger.db" "$1"; }
op() { # CALL_ID FIELD (a SQL expression over ops)
	q "SELECT $2 FROM ops WHERE session = 'demo' AND call_id = 'toolu_demo_$1'"
}
stage() { # CALL_ID STAGE KEY: a key of one stage of the envelope
	q "SELECT json_extract(s.value, '\$.$3') FROM ops, json_each(json_extract(envelope, '\$.stages')) s
	   WHERE session = 'demo' AND call_id = 'toolu_demo_$1' AND json_extract(s.value, '\$.stage') = '$2'"
}

# ---- every call of the session, in order, with its status
eq "$(q "SELECT count(*) FROM ops")" 12 "twelve calls in the ledger"
eq "$(q "SELECT count(*) FROM ops WHERE session = 'demo'")" 12 "all of them in the session"
eq "$(q "SELECT group_concat(call_id, ' ') FROM (SELECT call_id FROM ops ORDER BY op_id)")" \
   "$(printf 'toolu_demo_%02d ' $(seq 1 12) | sed 's/ $//')" "the calls in the script's order"
st() { op "$1" status; }
eq "$(st 01) $(st 02) $(st 03)" "persisted persisted persisted" "turn 1: list_dir and two reads"
eq "$(st 04)" persisted "turn 2: write_file"
eq "$(st 05)" persisted "turn 3: the patch that lands"
eq "$(st 06)" failed "turn 4: the patch that does not match"
eq "$(op 06 error_kind)" tool_error "as a tool error"
eq "$(st 07)" denied "turn 5: deploy to prod"
eq "$(stage 07 decide rule)" "deny: deploy_service(env=prod)" "denied by the deny rule"
eq "$(op 07 principal)" ci-bot "as ci-bot"
eq "$(st 08)" invalid "turn 6: invalid arguments"
eq "$(op 08 "json_extract(envelope, '\$.error.kind')")" invalid_input "invalid input"
eq "$(stage 08 validate ok)" 0 "stopped at validate"
eq "$(st 09)" persisted "turn 7: the staging deploy runs"
eq "$(st 10)" replayed "turn 8: the same deploy is replayed"
eq "$(stage 10 execute replayed_from)" "$(op 09 op_id)" "replayed from the first deploy"
eq "$(st 11)" persisted "turn 9: git status runs"
contains "$(stage 11 decide rule)" "execpolicy allow: git status" "allowed by execpolicy"
eq "$(st 12)" denied "turn 10: curl | sh"
contains "$(stage 12 decide rule)" "floor: downloaded content piped into an interpreter" "the floor"
eq "$(q "SELECT count(DISTINCT principal) FROM ops WHERE principal IS NOT NULL")" 1 \
   "every identified call made as one principal"

# ---- the conversation: the three reads in one assistant turn, answered together
eq "$(q "SELECT count(*) FROM messages WHERE session = 'demo'")" 22 \
   "22 entries: the prompt, 11 replies, 10 result messages"
eq "$(q "SELECT json_extract(entry, '\$.role') || ' ' || (SELECT count(*) FROM json_each(json_extract(entry, '\$.content')) c
         WHERE json_extract(c.value, '\$.type') = 'tool_use') FROM messages WHERE session = 'demo' AND seq =
         (SELECT min(seq) + 1 FROM messages WHERE session = 'demo')")" "assistant 3" \
   "the first reply holds three calls"
eq "$(q "SELECT (SELECT count(*) FROM json_each(json_extract(entry, '\$.content'))) FROM messages
         WHERE session = 'demo' AND seq = (SELECT min(seq) + 2 FROM messages WHERE session = 'demo')")" 3 \
   "and one message answers all three"

# ---- the files
eq "$(cat "$D/app.py")" '"""A tiny service for the toolgate agent demo."""

GREETING = "hello"
PORT = 9090


def greet(name):
    return GREETING + ", " + name' "app.py: the port patched, the rejected hunk not applied"
eq "$(cat "$D/CHANGELOG.md")" "# Changelog

## v2
- The service listens on port 9090." "CHANGELOG.md written"
[ -e "$D/docs/DEPLOY.md" ] && fail "the rejected patch's new file exists"
[ -e "$D/docs" ] && fail "the rejected patch made a directory"
eq "$(wc -l < "$D/deploys.log" | tr -d ' ')" 1 "one deploy line only"
contains "$(cat "$D/deploys.log")" "deployed v2 to staging (op $(op 09 op_id))" "by the first deploy"
if command -v git > /dev/null; then
	# what the model got back (the conversation); the ledger keeps a read-only
	# call's output as its size and sha256 (ledger.keep_output)
	eq "$(q "SELECT json_extract(json_extract(c.value, '\$.content'), '\$.stdout')
	         FROM (SELECT entry FROM messages WHERE session = 'demo'
	               AND json_type(entry, '\$.content') = 'array') m, json_each(m.entry, '\$.content') c
	         WHERE json_extract(c.value, '\$.tool_use_id') = 'toolu_demo_11'")" \
	   " M app.py
?? CHANGELOG.md" "git status saw the patch and the new file"
	eq "$(op 11 "json_type(envelope, '\$.output') || ' ' || (json_extract(envelope, '\$.output_digest.bytes') > 0)")" \
	   "null 1" "the ledger keeps git status's output as its digest"
else
	contains "$(cat "$R/out")" "git is not installed" "the demo says git is missing"
fi

# ---- what the demo prints: the transcript, the log, the stats
out=$(cat "$R/out")
contains "$out" "-- turn 11" "the transcript has eleven turns"
contains "$out" "Done: app.py now listens on port 9090" "the final answer"
contains "$out" "deploy_service  denied  [decide]" "a denial shows its stage"
contains "$out" "deploy_service  invalid  [validate]" "an invalid call shows its stage"
contains "$out" "\$ toolgate log --session demo" "the log"
eq "$(grep -cE '^  [0-9TZ:.-]+  (persisted|failed|denied|invalid|replayed) ' "$R/out")" 12 \
   "the log shows the twelve calls"
contains "$out" "\$ toolgate stats" "the stats"
contains "$out" "deny: deploy_service(env=prod)" "stats: the deny rule"
contains "$out" "floor: downloaded content piped into an interpreter" "stats: the floor"
finish
