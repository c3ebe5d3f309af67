# `toolgate log --follow` across processes on PostgreSQL (issue 9): one
# follower sees the calls two other processes make at the same time, each
# within a second of its commit, woken by LISTEN/NOTIFY rather than a poll
# (it LISTENs, and most events reach it in a fraction of a poll's second),
# every event once, in seq order, without gaps.  Then, on a server of this
# case's own, the server is stopped (`pg_ctl stop -m immediate`, a crash)
# and started again while the follower runs: it keeps running, LISTENs again
# once the server is back, and the calls made after the restart reach it,
# soon, with no seq missed or repeated.  Meanwhile the gate's sentences (the
# follower's, a call and `toolgate migrate` that cannot reach the server, a
# wrong password, a missing database) never show the URL's password.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
# a server of this case's own: it is stopped and started again below
CL=$(mktemp -d "${TMPDIR:-/tmp}/tg-pg.XXXXXX")
pg_own_cluster URL "$CL" || { fail "no server of this case's own"; finish; exit 1; }
pgq "$URL" "CREATE DATABASE follow" || { fail "CREATE DATABASE"; finish; exit 1; }
DB=${URL%/*}/follow
PW=$(pg_password "$DB")
[ ${#PW} -ge 16 ] || fail "the test server's URL carries no password: '$DB' (scripts/pg-cluster)"
export TOOLGATE_STORE=$DB
cd "$WS" || exit 1
printf 'one\ntwo\n' > notes.txt
: > toolgate.yaml
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# no_password FILE WHAT: the gate's output never shows the URL's password
no_password() {
	CHECKS=$((CHECKS + 1))
	! grep -qF -- "$PW" "$1" || fail "$2 shows the store's password: $(grep -F -- "$PW" "$1" | head -c 300)"
}
"$TG" migrate > migrate.out 2>&1 || fail "migrate: $(cat migrate.out)"
no_password migrate.out "toolgate migrate"
# the follower's LISTEN sessions, idle on their socket
listeners() {
	pgq "$DB" "select count(*) from pg_stat_activity where datname = current_database()
	           and application_name = 'toolgate' and query = 'LISTEN toolgate_events'
	           and state = 'idle' and wait_event = 'ClientRead'" 2> /dev/null
}
# await_listener WHAT SECONDS: one LISTEN session within SECONDS
await_listener() {
	local i n
	for i in $(seq $(($2 * 20))); do
		n=$(listeners)
		[ "${n:-0}" = 1 ] && break
		sleep 0.05
	done
	eq "${n:-0}" 1 "$1"
	[ "${n:-0}" = 1 ]
}
# caught_up SECONDS: wait until the follower printed the ledger's last seq
caught_up() {
	local i
	for i in $(seq $(($1 * 20))); do
		[ "$(pgq "$DB" "select max(seq) from events")" = \
		  "$(tail -n 1 follow.out | cut -d' ' -f2- | jq -r .seq 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}

# the follower (FPID is its own pid): each line it prints, with the time it arrived (ns)
"$TG" log --follow --json 2> follow.err < /dev/null > >(while IFS= read -r line; do
	printf '%s %s\n' "$(date +%s%N)" "$line"
done > follow.out) &
FPID=$!
pg_atexit "kill $FPID 2>/dev/null"
# ready once its own connection LISTENs
await_listener "the follower LISTENs on its own connection" 5
sleep 0.2

# two writers at once, each its own session: single calls, then a parallel batch
writer() {
	local s=$1 n=$2 i
	for i in $(seq 1 "$n"); do
		"$TG" call --json --session "$s" read_file '{"path":"notes.txt"}' > "$s-$i.json" 2> "$s-$i.err" < /dev/null
		sleep 0.0$((RANDOM % 9))
	done
	jq -n -c '[range(6) | {tool: "read_file", args: {path: "notes.txt"}, call_id: "b\(.)"}]' > "$s-batch.in"
	"$TG" call --json --session "$s" --batch "$s-batch.in" > "$s-batch.json" 2> "$s-batch.err" < /dev/null
}
writer A 12 & wa=$!
writer B 12 & wb=$!
wait $wa $wb
# the follower has a second to see the last ones
caught_up 2 || fail "the follower did not print the last event within 2 s"
sleep 0.3
N1=$(wc -l < follow.out)   # the lines before the outage
for f in A-*.err B-*.err; do sanitizers "$f" "writer $f"; done

# latency FROM TO: how long after its commit each call (of lines FROM..TO of
# follow.out) had its last event arrive, sorted, in ms (the event's time is
# its writer's clock, taken before the commit: an upper bound)
latency() {
	sed -n "$1,$2p" follow.out | while read -r at line; do
		ts=$(jq -r .ts <<< "$line")
		echo "$(jq -r .op_id <<< "$line") $(( at / 1000000 - $(date -d "$ts" +%s%3N) ))"
	done | awk '{ last[$1] = $2 } END { for (k in last) print last[k] }' | sort -n
}
# check_latency WHAT FROM TO: each call within 1 s, the median a fraction of the poll's second
check_latency() {
	local lat n max med
	lat=$(latency "$2" "$3")
	n=$(echo "$lat" | wc -l)
	max=$(echo "$lat" | tail -n 1)
	med=$(echo "$lat" | sed -n "$(( (n + 1) / 2 ))p")
	echo "$1: follow latency over $n calls: median $med ms, max $max ms"
	[ "${max:-99999}" -lt 1000 ] || fail "$1: a call reached the follower $max ms after it was written (1 s at most)"
	[ "${med:-99999}" -lt 250 ] || fail "$1: the median call reached the follower after $med ms: a poll, not a NOTIFY"
}
check_latency "before the outage" 1 "$N1"

# ---- the server crashes and comes back while the follower runs ----
"$PG_CLUSTER" stop "$CL" immediate || fail "pg-cluster stop immediate"
sleep 1.5
kill -0 "$FPID" 2> /dev/null || fail "the follower ended when the server went away: $(head -c 300 follow.err)"
# meanwhile a call and a migrate cannot reach the server: they say so, without the password
"$TG" call --json read_file '{"path":"notes.txt"}' > down.json 2> down.err < /dev/null
st=$?
[ $st -ne 0 ] || fail "a call with the server down exits 0"
contains "$(cat down.err down.json)" 127.0.0.1 "the call's error names the server it could not reach"
no_password down.err "a call's error with the server down"
no_password down.json "a call's result with the server down"
sanitizers down.err "the call with the server down"
"$TG" migrate > down-migrate.out 2>&1 && fail "migrate with the server down exits 0"
contains "$(cat down-migrate.out)" 127.0.0.1 "migrate's error names the server"
no_password down-migrate.out "toolgate migrate with the server down"
"$PG_CLUSTER" restart "$CL" || fail "pg-cluster restart"
t_up=$(date +%s%N)
kill -0 "$FPID" 2> /dev/null || fail "the follower ended while the server was down: $(head -c 300 follow.err)"
# back: it LISTENs again (its backoff is 5 s at most)
await_listener "the follower LISTENs again once the server is back" 10 &&
	echo "the follower LISTENs again $(( ($(date +%s%N) - t_up) / 1000000 )) ms after the restart"
sleep 0.2
N2=$(wc -l < follow.out)
eq "$N2" "$N1" "the follower printed nothing while no call was made"
writer A 6 & wa=$!
writer B 6 & wb=$!
wait $wa $wb
caught_up 2 || fail "the follower did not print the calls made after the restart within 2 s"
sleep 0.3
N3=$(wc -l < follow.out)
if [ "$N3" -gt "$N2" ]; then
	check_latency "after the restart" $((N2 + 1)) "$N3"
else
	fail "no event of the calls made after the restart reached the follower"
fi
for f in A-*.err B-*.err; do sanitizers "$f" "writer $f"; done

# a wrong password, a missing database: refused, neither password shown
bad=postgresql://$(pg_userinfo "$DB" | sed 's/:.*//'):not-the-${PW:0:6}-password@${DB#*@}
TOOLGATE_STORE=$bad "$TG" migrate > bad-pw.out 2>&1 && fail "migrate with a wrong password exits 0"
contains "$(cat bad-pw.out)" "password authentication failed" "a wrong password: the server's reason"
CHECKS=$((CHECKS + 1))
! grep -qF "not-the-${PW:0:6}-password" bad-pw.out || fail "migrate shows the wrong password: $(head -c 300 bad-pw.out)"
no_password bad-pw.out "migrate with a wrong password"
TOOLGATE_STORE=${DB%/*}/no_such_db "$TG" call --json read_file '{"path":"notes.txt"}' \
	> nodb.json 2> nodb.err < /dev/null && fail "a call on a missing database exits 0"
contains "$(cat nodb.err nodb.json)" no_such_db "a missing database is named"
no_password nodb.err "a call's error on a missing database"
no_password nodb.json "a call's result on a missing database"

kill "$FPID" 2> /dev/null
wait "$FPID" 2> /dev/null
sanitizers follow.err follower
no_password follow.err "the follower's messages (across the outage)"

# every event once, in seq order, without gaps: what the ledger holds
cut -d' ' -f2- follow.out > follow.jsonl
jq -e . follow.jsonl > /dev/null 2>&1 || fail "the follower printed a line that is not JSON: $(head -c 300 follow.jsonl)"
seen=$(jq -r .seq follow.jsonl | tr '\n' ',')
all=$(pgq "$DB" "select string_agg(seq::text, ',' order by seq) from events")
eq "$seen" "$all," "the follower printed every event of the ledger once, in seq order, across the outage"
eq "$all" "$(seq -s, 1 "$(pgq "$DB" "select count(*) from events")")" "the ledger's seqs have no gaps"
eq "$(pgq "$DB" "select count(distinct session) from ops")" 2 "the two writers' calls are in the ledger"
eq "$(jq -r 'select(.type == "tool.call.received") | .session' follow.jsonl | sort -u | tr '\n' ' ')" "A B " \
	"the follower saw both writers' calls"
eq "$(jq -r 'select(.type == "tool.call.received") | .op_id' follow.jsonl | sort | uniq | wc -l)" \
	"$(pgq "$DB" "select count(*) from ops")" "every call is followed"
eq "$(pgq "$DB" "select count(*) from ops")" $(( 2 * (12 + 6) + 2 * (6 + 6) )) \
	"the calls before and after the outage are in the ledger (and none made while it was down)"
finish
