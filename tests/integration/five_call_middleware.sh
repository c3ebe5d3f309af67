# The five-call experiment with every part of the middleware configured
# (hooks, loop detection, a rate limit, redaction, two event sinks): the
# same statuses, files and ledger rows, and each part did its work.
export FIVE_CALL_MIDDLEWARE=1
. "$(dirname "$0")/five_call.sh"

# the before-hook saw every call that got past identify (all but the invalid
# call 1: hooks run before decide and before the idempotency claim), the
# after-hook every call
eq "$(grep -c '^before ' "$WS/hooks.log")" 7 "the before-hook ran for the 7 calls past identify"
eq "$(sed -n 's/^before //p' "$WS/hooks.log" | jq -r .tool | sort | tr '\n' ' ')" \
	"deploy_service deploy_service deploy_service deploy_service list_dir read_file read_file " \
	"the before-hook saw each of those calls' tools"
eq "$(grep -c '^after ' "$WS/hooks.log")" 8 "the after-hook ran once per call"
contains "$(grep '^before ' "$WS/hooks.log" | head -n 1)" '"tool_name"' "hooks get Claude Code's fields too"
# every event of every call is in the JSONL sink, in seq order, with its op
eq "$(wc -l < "$WS/events.jsonl")" "$(sql 'select count(*) from events')" "one JSONL line per ledger event"
eq "$(jq -rs '[.[].seq] | sort | join(",")' "$WS/events.jsonl")" \
	"$(sql 'select group_concat(seq) from (select seq from events order by seq)')" "every ledger seq is in the JSONL file once"
# one call's lines are written together, in order (calls of concurrent processes may interleave)
eq "$(jq -s 'group_by(.op_id) | map([.[].seq] == ([.[].seq] | sort)) | all' "$WS/events.jsonl")" true \
	"each call's lines in seq order"
eq "$(jq -r 'select(.type=="tool.call.denied") | .tool' "$WS/events.jsonl" | sort -u | tr '\n' ' ')" \
	"deploy_service " "the denial is streamed with its tool"
# the rate limit's buckets are in the ledger
[ "$(sql 'select count(*) from rate_buckets')" -ge 1 ] || fail "rate-limit buckets are saved"
# loop detection works beside the other parts: the same read in one session
# gets the hint at the 3rd call and is denied loop_detected at the 5th
for i in 1 2 3 4 5; do
	(cd "$WS" && "$TG" call --json --session L read_file '{"path":"README.md"}' \
		> "$WS/loop$i.json" 2> "$WS/loop$i.err" < /dev/null)
	sanitizers "$WS/loop$i.err" "loop $i"
done
eq "$(jqv "$WS/loop2.json" .hint)" null "the 2nd read has no hint"
contains "$(jqv "$WS/loop3.json" .hint)" "with these arguments 3 times" "the 3rd read has the hint"
eq "$(jqv "$WS/loop4.json" .status)" persisted "the 4th read still runs"
eq "$(jqv "$WS/loop5.json" .status)/$(jqv "$WS/loop5.json" .error.kind)" denied/loop_detected \
	"the 5th read is blocked"
eq "$(sql "select count(*) from ops where session = 'L' and loop like 'v1 %'")" 5 \
	"each of the session's calls has its window entry in the ledger"
# the sinks and the programs the gate runs are off limits to the tools
(cd "$WS" && "$TG" call --json write_file '{"path":"events.jsonl","content":"{}"}' > "$WS/t.json" < /dev/null)
eq "$(jqv "$WS/t.json" .status)" denied "the event log cannot be rewritten by a tool"
(cd "$WS" && "$TG" call --json write_file '{"path":"observe.sh","content":"exit 0"}' > "$WS/w.json" < /dev/null)
eq "$(jqv "$WS/w.json" .status)" denied "a hook program cannot be rewritten by a tool"
finish
