# The five-call experiment with every part of the middleware configured
# (hooks, loop detection, a rate limit, redaction, two event sinks): the
# same statuses, files and ledger rows, and each part did its work.
export FIVE_CALL_MIDDLEWARE=1
. "$(dirname "$0")/five_call.sh"

# the before-hook saw every call that got past identify, the after-hook every call
before=$(grep -c '^before ' "$WS/hooks.log")
after=$(grep -c '^after ' "$WS/hooks.log")
[ "$before" -ge 6 ] || fail "the before-hook ran for the calls past identify ($before)"
eq "$after" 8 "the after-hook ran once per call"
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
# the sinks and the programs the gate runs are off limits to the tools
(cd "$WS" && "$TG" call --json write_file '{"path":"events.jsonl","content":"{}"}' > "$WS/t.json" < /dev/null)
eq "$(jqv "$WS/t.json" .status)" denied "the event log cannot be rewritten by a tool"
(cd "$WS" && "$TG" call --json write_file '{"path":"observe.sh","content":"exit 0"}' > "$WS/w.json" < /dev/null)
eq "$(jqv "$WS/w.json" .status)" denied "a hook program cannot be rewritten by a tool"
finish
