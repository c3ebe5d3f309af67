# Versioned migrations, numbered alike for SQLite and PostgreSQL, and moving
# history between them (issue 9): `toolgate migrate --dry-run` on an empty
# ledger lists migrations 1..N and changes nothing; `toolgate migrate`
# applies them; `--to 3` then a normal start upgrades 3 -> N; a schema ahead
# of the program is refused with a clear message.  Then a SQLite ledger with
# varied history (calls of every status the gate records, approvals, events
# of no call) exported and imported into PostgreSQL gives the same
# `toolgate log --json` (event seqs are each ledger's own) and `toolgate stats`;
# a key done there replays, and stays bound to its call (the same key with
# other arguments is refused as ambiguous, never answered with the first
# call's result); an unknown outcome stays unknown; a run of toolgate eval
# comes too (`toolgate eval --history --format json` the same on both sides).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
N=$(sed -n 's/^#define TGI_STORE_SCHEMA_VERSION \([0-9][0-9]*\).*/\1/p' "$ROOT/src/store/store.h")
[ -n "$N" ] && [ "$N" -ge 3 ] || { fail "cannot read TGI_STORE_SCHEMA_VERSION"; finish; exit 1; }
mkdir -p "$WS/m"
cd "$WS/m" || exit 1
printf 'hello\n' > hello.txt
printf 'hello\n' > "$WS/hello.txt"
: > toolgate.yaml
export TOOLGATE_CONFIG=$WS/m/toolgate.yaml

# mig NAME ARGS...: toolgate migrate --json ARGS; the JSON to NAME.json, exit to NAME.exit
mig() {
	local name=$1; shift
	"$TG" migrate --json "$@" > "$WS/$name.json" 2> "$WS/$name.err" < /dev/null
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "migrate $*"
}
list() { jq -r '[.migrations[].n] | map(tostring) | join(",")' "$WS/$1.json"; }
upto() { seq -s, "$1" "$2"; }

# tables STORE: the ledger's tables, sorted, one line
pg_tables() { pgq "$1" "select string_agg(tablename, ',' order by tablename) from pg_tables where schemaname = current_schema()"; }
# tables and views (SQLite's events is a view of every event since version 8)
sq_tables() { sqlite3 "$1" "select group_concat(name, ',') from (select name from sqlite_master where type in ('table', 'view') order by name)"; }

# ---- migrate: the same steps for both stores ----
# migrate_checks KIND FRESH FRESH2 AHEAD: the checks on two empty ledgers of
# one kind (PostgreSQL URLs or SQLite file paths, as $TOOLGATE_STORE); AHEAD V
# sets FRESH2's version by hand; tables LEDGER lists a ledger's tables
migrate_checks() {
	local kind=$1 fresh=$2 fresh2=$3 ahead=$4
	export TOOLGATE_STORE=$fresh
	# --dry-run on an empty ledger: 1..N listed, nothing changed
	mig "$kind-dry" --dry-run
	eq "$(cat "$WS/$kind-dry.exit")" 0 "$kind: migrate --dry-run exits 0"
	eq "$(list "$kind-dry")" "$(upto 1 "$N")" "$kind: --dry-run on an empty ledger lists migrations 1..$N"
	eq "$(jqv "$WS/$kind-dry.json" .from)/$(jqv "$WS/$kind-dry.json" .dry_run)" 0/true "$kind: from 0, a dry run"
	eq "$(jqv "$WS/$kind-dry.json" '[.migrations[].title | select(length > 0)] | length')" "$N" \
		"$kind: every migration has a title"
	eq "$(tables "$fresh")" "" "$kind: --dry-run created no table"
	# a text run says the same in words
	out=$("$TG" migrate --dry-run 2>&1)
	contains "$out" "migration 1: " "$kind: --dry-run in words: migration 1"
	contains "$out" "migration $N: " "$kind: --dry-run in words: migration $N"
	contains "$out" "nothing was changed" "$kind: --dry-run says nothing was changed"
	eq "$(tables "$fresh")" "" "$kind: still no table"
	# migrate applies them
	mig "$kind-up"
	eq "$(cat "$WS/$kind-up.exit")" 0 "$kind: migrate exits 0"
	eq "$(list "$kind-up")" "$(upto 1 "$N")" "$kind: migrate applies 1..$N"
	eq "$(jqv "$WS/$kind-up.json" .to)" "$N" "$kind: now at version $N"
	for t in ops idem events approvals sessions eval_runs; do
		contains ",$(tables "$fresh")," ",$t," "$kind: table $t exists"
	done
	# migration 5: an approval keeps the call's plan and the decision's reason
	eq "$(approval_cols "$fresh")" decided_reason,plan "$kind: approvals have plan and decided_reason"
	mig "$kind-again"
	eq "$(list "$kind-again")/$(jqv "$WS/$kind-again.json" .from)" "/$N" "$kind: a second migrate has nothing to do"
	# the gate works on it
	tgcall "$kind-call" read_file '{"path":"hello.txt"}'
	eq "$(jqv "$WS/$kind-call.json" .status)" persisted "$kind: a call on the migrated ledger"

	# --to 3 on a fresh ledger, then a normal start upgrades 3 -> N
	export TOOLGATE_STORE=$fresh2
	mig "$kind-to3" --to 3
	eq "$(list "$kind-to3")" "1,2,3" "$kind: --to 3 applies 1..3"
	eq "$(jqv "$WS/$kind-to3.json" .to)" 3 "$kind: at version 3"
	mig "$kind-to3-dry" --dry-run
	eq "$(list "$kind-to3-dry")" "$(upto 4 "$N")" "$kind: --dry-run from 3 lists 4..$N"
	mig "$kind-down" --to 2
	[ "$(cat "$WS/$kind-down.exit")" != 0 ] || fail "$kind: --to 2 below version 3 is refused"
	contains "$(jqv "$WS/$kind-down.json" .error)" "forward" "$kind: migrations only go forward"
	tgcall "$kind-start" read_file '{"path":"hello.txt"}'
	eq "$(jqv "$WS/$kind-start.json" .status)" persisted "$kind: a start on version 3 upgrades and runs"
	mig "$kind-after" --dry-run
	eq "$(jqv "$WS/$kind-after.json" .from)/$(list "$kind-after")" "$N/" "$kind: the start upgraded 3 -> $N"
	eq "$(approval_cols "$fresh2")" decided_reason,plan "$kind: the upgrade added plan and decided_reason"
	contains ",$(tables "$fresh2")," ",eval_runs," "$kind: the upgrade added eval_runs (migration 6)"

	# a schema ahead of this program is refused, by the gate and by migrate
	$ahead $((N + 1))
	tgcall "$kind-ahead" read_file '{"path":"hello.txt"}'
	[ "$(cat "$WS/$kind-ahead.exit")" != 0 ] || fail "$kind: a ledger ahead of the program is used"
	contains "$(cat "$WS/$kind-ahead.err")" "$((N + 1))" "$kind: the refusal names the ledger's version"
	contains "$(cat "$WS/$kind-ahead.err")" "newer" "$kind: the refusal says the ledger is newer"
	mig "$kind-ahead-m"
	[ "$(cat "$WS/$kind-ahead-m.exit")" != 0 ] || fail "$kind: migrate on a ledger ahead exits 0"
	contains "$(jqv "$WS/$kind-ahead-m.json" .error)" "newer" "$kind: migrate says the ledger is newer"
	unset TOOLGATE_STORE
}

pg_newdb P1 mig1
pg_newdb P2 mig2
tables() { pg_tables "$1"; }
approval_cols() { pgq "$1" "select string_agg(column_name, ',' order by column_name) from information_schema.columns
                            where table_name = 'approvals' and column_name in ('plan', 'decided_reason')"; }
# the version row the PostgreSQL store keeps (see src/store/postgres.c)
PG_SET_VERSION_TMPL="INSERT INTO toolgate_schema(version) VALUES (%d)"
pg_ahead() { pgq "$P2" "$(printf "$PG_SET_VERSION_TMPL" "$1")" > /dev/null || fail "postgres: cannot set the version by hand"; }
migrate_checks postgres "$P1" "$P2" pg_ahead

S1=$WS/m/.toolgate/one.db S2=$WS/m/.toolgate/two.db
mkdir -p -m 0700 "$WS/m/.toolgate"
tables() { [ -e "$1" ] && sq_tables "$1"; }
approval_cols() { sqlite3 "$1" "select group_concat(name, ',') from (select name from pragma_table_info('approvals')
                                where name in ('plan', 'decided_reason') order by name)"; }
sq_ahead() { sqlite3 "$S2" "PRAGMA user_version = $1" || fail "sqlite: cannot set the version by hand"; }
migrate_checks sqlite "$S1" "$S2" sq_ahead

# ---- export from SQLite, import into PostgreSQL ----
mkdir -p "$WS/h" "$WS/down"
cd "$WS/h" || exit 1
printf 'hello\n' > hello.txt
printf 'SECRET=1\n' > .env
printf '{}\n' > "$WS/down/toolgate.yaml"
cat > toolgate.yaml <<YAML
approvals: {ttl_s: 600}
permissions:
  allow: [mark, fail, slow, down__read_file]
  deny: ["read_file(./.env)"]
tools:
  mark:
    description: Record a key (one line per run).
    input_schema: {type: object, properties: {key: {type: string}}, required: [key], additionalProperties: false}
    command: [./mark.sh]
    category: runtime
    requires_idempotency_key: true
  fail:
    description: Always fails.
    input_schema: {type: object}
    command: [./fail.sh]
    category: runtime
  slow:
    description: Takes a while.
    input_schema: {type: object}
    command: [./slow.sh]
    category: runtime
    requires_idempotency_key: true
mcp_servers:
  down:
    command: [$TG, serve, --config, $WS/down/toolgate.yaml, --workspace, $WS/down]
    trusted: true
    sandbox: danger-full-access   # a gate of its own, with its own sandbox
YAML
printf '#!/bin/sh\ncat > /dev/null\necho "{\\"ok\\":true}"\n' > mark.sh
printf '#!/bin/sh\ncat > /dev/null\necho "it broke" >&2\nexit 3\n' > fail.sh
printf '#!/bin/sh\ncat > /dev/null\ntouch slow.started\nsleep "$(cat slow.delay)"\necho "{\\"slow\\":true}"\n' > slow.sh
chmod +x mark.sh fail.sh slow.sh
export TOOLGATE_CONFIG=$WS/h/toolgate.yaml
H=$WS/h
# hcall NAME ARGS...: toolgate call --json in $H; envelope to $H/NAME.json
hcall() {
	local name=$1; shift
	(cd "$H" && "$TG" call --json "$@" > "$H/$name.json" 2> "$H/$name.err" < /dev/null)
	sanitizers "$H/$name.err" "$name"
}
hcall h-read read_file '{"path":"hello.txt"}'                  # persisted
hcall h-invalid read_file '{}'                                 # invalid
hcall h-denied read_file '{"path":".env"}'                     # denied
hcall h-mark --key k1 mark '{"key":"k1"}'                      # persisted, idem done
hcall h-replay --key k1 mark '{"key":"k1"}'                    # replayed
hcall h-failed fail '{}'                                       # failed
hcall h-ask1 write_file '{"path":"a.txt","content":"a"}'       # pending (approval)
"$TG" approvals approve "$(jqv "$H/h-ask1.json" .error.approval_id)" > /dev/null || fail "approve"
hcall h-ask1-run write_file '{"path":"a.txt","content":"a"}'   # persisted, approval used
hcall h-ask2 write_file '{"path":"b.txt","content":"b"}'       # pending
"$TG" approvals deny "$(jqv "$H/h-ask2.json" .error.approval_id)" > /dev/null || fail "deny"
hcall h-ask2-run write_file '{"path":"b.txt","content":"b"}'   # denied (approval denied)
hcall h-ask3 write_file '{"path":"c.txt","content":"c"}'       # pending, left pending
hcall h-down down__read_file '{"path":"toolgate.yaml"}'         # mcp.server.* events of no call
sanitizers "$H/.toolgate/logs/down.log" "the bridged gate (its stderr is its log)"
# an unknown outcome: a gate killed while its tool runs; the repeat is pending, never re-run
echo 5 > slow.delay
(cd "$H" && exec "$TG" call --json --key u1 slow '{}' > /dev/null 2>&1 < /dev/null) &
kpid=$!
for _ in $(seq 100); do [ -e slow.started ] && break; sleep 0.05; done
kill -9 "$kpid"; wait "$kpid" 2> /dev/null
hcall h-unknown --key u1 slow '{}'                             # pending, unknown_outcome
statuses=$(cd "$WS/h" && "$TG" log --json | jq -r .status | sort -u | tr '\n' ' ')
# (committed and dry_run calls leave no row: nothing to move)
for s in persisted invalid denied replayed failed pending; do
	contains " $statuses" " $s " "the SQLite history has a $s call"
done
eq "$(jqv "$WS/h/h-unknown.json" .error.kind)" unknown_outcome "the history has an unknown outcome"
eq "$(sqlite3 "$WS/h/.toolgate/ledger.db" "select count(*) from events where op_id is null")" \
	"$(sqlite3 "$WS/h/.toolgate/ledger.db" "select count(*) from events where op_id is null and type like 'mcp.server.%'")" \
	"events of no call are the bridge's"
[ "$(sqlite3 "$WS/h/.toolgate/ledger.db" "select count(*) from events where op_id is null")" -ge 1 ] ||
	fail "the history has events of no call"

# a run of toolgate eval (the built-in suite, scripted answers) kept in the SQLite ledger
(cd "$WS/h" && "$TG" eval --provider scripted --script "$ROOT/tests/data/eval/builtin-answers.json" \
	> "$WS/eval.out" 2> "$WS/eval.err" < /dev/null)
eq "$?" 0 "toolgate eval with the scripted answers runs: $(head -c 300 "$WS/eval.err")"
sanitizers "$WS/eval.err" "toolgate eval"

# export from SQLite (the config's default ledger), import into PostgreSQL
(cd "$WS/h" && "$TG" ledger export > "$WS/export.jsonl" 2> "$WS/export.err") || fail "ledger export: $(cat "$WS/export.err")"
sanitizers "$WS/export.err" "ledger export"
eq "$(head -n 1 "$WS/export.jsonl" | jq -r .toolgate_ledger)" 2 "the export starts with its header"
eq "$(grep -c '^{"eval_run":' "$WS/export.jsonl")" 1 "the export holds the eval run"
contains "$(cat "$WS/export.err")" ", 1 eval run" "ledger export counts the eval run"
pg_newdb P3 import
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" ledger import "$WS/export.jsonl" > "$WS/import.out" 2> "$WS/import.err") ||
	fail "ledger import: $(cat "$WS/import.err")"
sanitizers "$WS/import.err" "ledger import"
# the same log, the same stats; seqs are each ledger's own
norm() { jq -c 'del(.events[].seq)'; }
(cd "$WS/h" && "$TG" log --json) | norm > "$WS/log-sqlite"
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" log --json) | norm > "$WS/log-pg"
[ -s "$WS/log-sqlite" ] || fail "the SQLite log is empty"
eq "$(wc -l < "$WS/log-pg")" "$(wc -l < "$WS/log-sqlite")" "as many calls in PostgreSQL as in SQLite"
cmp -s "$WS/log-sqlite" "$WS/log-pg" ||
	fail "toolgate log --json differs after the import: $(diff "$WS/log-sqlite" "$WS/log-pg" | head -c 600)"
CHECKS=$((CHECKS + 1))
eq "$(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" stats --json | jq -cS .)" \
	"$(cd "$WS/h" && "$TG" stats --json | jq -cS .)" "toolgate stats --json is the same"
# the eval history came too, run for run
(cd "$WS/h" && "$TG" eval --history --format json) > "$WS/evals-sqlite"
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" eval --history --format json) > "$WS/evals-pg"
eq "$(jq length "$WS/evals-sqlite")/$(jq length "$WS/evals-pg")" 1/1 "one eval run on each side"
cmp -s "$WS/evals-sqlite" "$WS/evals-pg" ||
	fail "toolgate eval --history --format json differs after the import: $(diff "$WS/evals-sqlite" "$WS/evals-pg" | head -c 600)"
CHECKS=$((CHECKS + 1))
contains "$(cat "$WS/import.out")" ", 1 eval run;" "ledger import counts the eval run"
# the events of no call came too, in order
eq "$(pgq "$P3" "select string_agg(type, ',' order by seq) from events where op_id is null")" \
	"$(sqlite3 "$WS/h/.toolgate/ledger.db" "select group_concat(type, ',') from (select type from events where op_id is null order by seq)")" \
	"the events of no call are imported"
# what the calls were holds in the new ledger: a repeat replays, the unknown stays unknown
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" call --json --key k1 mark '{"key":"k1"}' > "$WS/p-replay.json" 2>/dev/null < /dev/null)
eq "$(jqv "$WS/p-replay.json" .status)" replayed "k1 replays from the imported ledger"
eq "$(jqv "$WS/p-replay.json" '.stages[] | select(.replayed_from) | .replayed_from')" \
	"$(jqv "$WS/h/h-mark.json" .op_id)" "the replay names the original op"
grep -q '"idem_binding":"[0-9a-f]\{64\}"' "$WS/export.jsonl" || fail "the export carries the keys' bindings"
CHECKS=$((CHECKS + 1))
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" call --json --key k1 mark '{"key":"other"}' > "$WS/p-other.json" 2>/dev/null < /dev/null)
eq "$(jqv "$WS/p-other.json" .status)/$(jqv "$WS/p-other.json" .error.kind)" invalid/ambiguous \
	"k1 with other arguments is ambiguous in the imported ledger, not a replay"
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" call --json --key u1 slow '{}' > "$WS/p-unknown.json" 2>/dev/null < /dev/null)
eq "$(jqv "$WS/p-unknown.json" .status)/$(jqv "$WS/p-unknown.json" .error.kind)" pending/unknown_outcome \
	"the unknown outcome stays unknown in the imported ledger"
# an import run twice adds nothing
(cd "$WS/h" && TOOLGATE_STORE=$P3 "$TG" ledger import "$WS/export.jsonl" > /dev/null 2>&1) || fail "a second import"
eq "$(pgq "$P3" "select count(*) from ops")" "$(( $(wc -l < "$WS/log-sqlite") + 3 ))" \
	"a second import adds no op (the three calls just made are the only new rows)"
eq "$(pgq "$P3" "select count(*) from eval_runs")" 1 "a second import adds no eval run"
finish
