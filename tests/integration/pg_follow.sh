# `toolgate log --follow` across processes on PostgreSQL (issue 9): one
# follower sees the calls two other processes make at the same time, each
# within a second of its commit, woken by LISTEN/NOTIFY rather than a poll
# (it LISTENs, and most events reach it in a fraction of a poll's second),
# every event once, in seq order, without gaps.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
pg_newdb DB follow
export TOOLGATE_STORE=$DB
cd "$WS" || exit 1
printf 'one\ntwo\n' > notes.txt
: > toolgate.yaml
export TOOLGATE_CONFIG=$WS/toolgate.yaml
"$TG" migrate > /dev/null 2> migrate.err || fail "migrate: $(cat migrate.err)"

# the follower: each line it prints, with the time it arrived (ns)
( "$TG" log --follow --json 2> follow.err < /dev/null | while IFS= read -r line; do
	printf '%s %s\n' "$(date +%s%N)" "$line"
  done > follow.out ) &
FPID=$!
pg_atexit "pkill -P $FPID 2>/dev/null; kill $FPID 2>/dev/null"
# ready once its own connection LISTENs
ready=0
for _ in $(seq 100); do
	n=$(pgq "$DB" "select count(*) from pg_stat_activity where datname = current_database()
	               and query ilike 'listen%'")
	[ "${n:-0}" -ge 1 ] && { ready=1; break; }
	sleep 0.05
done
eq "$ready" 1 "the follower LISTENs on its own connection"
sleep 0.2

# two writers at once, each its own session: single calls, then a parallel batch
writer() {
	local s=$1 i
	for i in $(seq 1 12); do
		"$TG" call --json --session "$s" read_file '{"path":"notes.txt"}' > "$s-$i.json" 2> "$s-$i.err" < /dev/null
		sleep 0.0$((RANDOM % 9))
	done
	jq -n -c '[range(6) | {tool: "read_file", args: {path: "notes.txt"}, call_id: "b\(.)"}]' > "$s-batch.in"
	"$TG" call --json --session "$s" --batch "$s-batch.in" > "$s-batch.json" 2> "$s-batch.err" < /dev/null
}
writer A & wa=$!
writer B & wb=$!
wait $wa $wb
# the follower has a second to see the last ones
for _ in $(seq 40); do
	[ "$(pgq "$DB" "select max(seq) from events")" = "$(tail -n 1 follow.out | cut -d' ' -f2- | jq -r .seq 2>/dev/null)" ] && break
	sleep 0.05
done
sleep 0.3
kill "$FPID" 2> /dev/null; pkill -P "$FPID" 2> /dev/null
wait "$FPID" 2> /dev/null
sanitizers follow.err follower
for f in A-*.err B-*.err; do sanitizers "$f" "writer $f"; done

# every event once, in seq order, without gaps: what the ledger holds
cut -d' ' -f2- follow.out > follow.jsonl
jq -e . follow.jsonl > /dev/null 2>&1 || fail "the follower printed a line that is not JSON: $(head -c 300 follow.jsonl)"
seen=$(jq -r .seq follow.jsonl | tr '\n' ',')
all=$(pgq "$DB" "select string_agg(seq::text, ',' order by seq) from events")
eq "$seen" "$all," "the follower printed every event of the ledger once, in seq order"
eq "$all" "$(seq -s, 1 "$(pgq "$DB" "select count(*) from events")")" "the ledger's seqs have no gaps"
eq "$(pgq "$DB" "select count(distinct session) from ops")" 2 "the two writers' calls are in the ledger"
eq "$(jq -r 'select(.type == "tool.call.received") | .session' follow.jsonl | sort -u | tr '\n' ' ')" "A B " \
	"the follower saw both writers' calls"
eq "$(jq -r 'select(.type == "tool.call.received") | .op_id' follow.jsonl | sort | uniq | wc -l)" \
	"$(pgq "$DB" "select count(*) from ops")" "every call is followed"

# how long after its commit each call's last event arrived (the event's time is
# its writer's clock, taken before the commit: an upper bound)
lat=$(awk '{ print $1 }' follow.out | paste -d' ' - follow.jsonl | while read -r at line; do
	ts=$(jq -r .ts <<< "$line")
	ms=$(( at / 1000000 - $(date -d "$ts" +%s%3N) ))
	echo "$(jq -r .op_id <<< "$line") $ms"
done | awk '{ last[$1] = $2 } END { for (k in last) print last[k] }' | sort -n)
n=$(echo "$lat" | wc -l)
max=$(echo "$lat" | tail -n 1)
med=$(echo "$lat" | sed -n "$(( (n + 1) / 2 ))p")
echo "follow latency over $n calls: median $med ms, max $max ms"
[ "$max" -lt 1000 ] || fail "a call reached the follower $max ms after it was written (1 s at most)"
[ "$med" -lt 250 ] || fail "the median call reached the follower after $med ms: a poll, not a NOTIFY"
finish
