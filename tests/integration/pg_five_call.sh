# The spine's five-call experiment against PostgreSQL (issue 9): five_call.sh
# and five_call_middleware.sh run unchanged with TOOLGATE_STORE naming a
# fresh database; their ledger queries go to it (support/pg/sqlite3 stands in
# for sqlite3).  Then the store is chosen by the config's `store:` too, and
# TOOLGATE_STORE overrides it.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
export PG_BIN PG_SHIM_ERRORS=$WS/shim.errors
: > "$PG_SHIM_ERRORS"

# run_case NAME SCRIPT: one of the spine's cases, against a database of its own
run_case() {
	local db
	pg_newdb db "$1" || { fail "$1: no database"; return; }
	CHECKS=$((CHECKS + 1))
	if ! PATH="$ROOT/tests/integration/support/pg:$PATH" TOOLGATE_STORE=$db \
		bash "$ROOT/tests/integration/$2" > "$WS/$1.out" 2>&1; then
		fail "$2 against PostgreSQL:"
		tail -n 40 "$WS/$1.out" >&2
	fi
	# the case's rows are in PostgreSQL (the count five_call.sh checks, seen here too)
	eq "$(pgq "$db" "select count(*) from ops where tool = 'deploy_service'")" 5 \
		"$1: the five deploy calls' rows (1, 2, 4a-4c) are in the PostgreSQL database"
}
run_case five_call five_call.sh
run_case five_call_mw five_call_middleware.sh
eq "$(cat "$PG_SHIM_ERRORS")" "" "every ledger query of the cases went to PostgreSQL"

# the config's store: selects PostgreSQL (postgresql:// and postgres://);
# no SQLite ledger is made
pg_newdb A conf_a
pg_newdb B conf_b
printf 'Hello\n' > "$WS/hello.txt"
printf 'store: %s\n' "$A" > "$WS/toolgate.yaml"
tgcall c1 read_file '{"path":"hello.txt"}'
eq "$(jqv "$WS/c1.json" .status)" persisted "store: postgresql://: the call is persisted"
eq "$(pgq "$A" "select status from ops where op_id = '$(jqv "$WS/c1.json" .op_id)'")" persisted \
	"store: postgresql://: its row is in the configured database"
[ -e "$WS/.toolgate/ledger.db" ] && fail "a SQLite ledger was made although store: names PostgreSQL"
printf 'store: postgres://%s\n' "${A#postgresql://}" > "$WS/toolgate.yaml"
tgcall c2 read_file '{"path":"hello.txt"}'
eq "$(jqv "$WS/c2.json" .status)" persisted "store: postgres://: the call is persisted"
eq "$(pgq "$A" "select count(*) from ops where op_id = '$(jqv "$WS/c2.json" .op_id)'")" 1 \
	"store: postgres:// is the same database"
# TOOLGATE_STORE overrides the config's store
TOOLGATE_STORE=$B tgcall c3 read_file '{"path":"hello.txt"}'
id=$(jqv "$WS/c3.json" .op_id)
eq "$(jqv "$WS/c3.json" .status)" persisted "TOOLGATE_STORE: the call is persisted"
eq "$(pgq "$B" "select count(*) from ops where op_id = '$id'")" 1 "TOOLGATE_STORE's database has the row"
eq "$(pgq "$A" "select count(*) from ops where op_id = '$id'")" 0 "the config's database does not"
# and toolgate log reads the same store
log=$(cd "$WS" && TOOLGATE_STORE=$B "$TG" log --json 2> "$WS/log.err")
sanitizers "$WS/log.err" "log"
eq "$(echo "$log" | jq -r .op_id)" "$id" "toolgate log reads TOOLGATE_STORE's database"
[ -e "$WS/.toolgate/ledger.db" ] && fail "a SQLite ledger was made although the store is PostgreSQL"
finish
