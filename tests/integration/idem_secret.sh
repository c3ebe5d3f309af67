# Idempotency keys are the model's text and may hold a secret it was shown
# (issue 22 §3): the ledger keeps a digest of the scope, never the key.  A
# call with the key sk-SECRET-123 (by --key, and in its args), its replay,
# a conflict, an unknown outcome listed by `ops list --unknown` and settled
# by `ops resolve`, then replayed: afterwards the key's text is nowhere in
# the ledger's files (SQLite: the database, its WAL and a .dump;
# PostgreSQL: a pg_dump), nor in `ledger export`; the export, imported
# into a fresh ledger, still replays.  A ledger written before (plain
# scopes, schema 6) is upgraded: its scopes become digests and its calls
# become unknown outcomes (they carry no MAC); an old export's plain scopes,
# imported, replay.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
cd "$WS"
K1=sk-SECRET-123
K2=sk-SECRET-456
cat > slow.sh <<'SH'
#!/bin/sh
cat > /dev/null
echo "$TOOLGATE_OP_ID" >> slow.log
sleep 3
echo '{"ok":true}'
SH
chmod +x slow.sh
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
tools:
  deploy:
    description: Deploy.
    input_schema:
      type: object
      properties: {env: {type: string}, idempotency_key: {type: string}}
      required: [env]
    command: [/bin/sh, -c, "cat > /dev/null; echo run >> deploy.log; echo '{\"ok\":1}'"]
    requires_idempotency_key: true
  slow:
    description: A slow side effect.
    input_schema: {type: object, properties: {n: {type: integer}}}
    command: [./slow.sh]
    requires_idempotency_key: true
    timeout_s: 30
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
PGDUMP=$PG_BIN/pg_dump

# no_key LABEL FILE...: neither key's text in the files
no_key() {
	local l=$1; shift
	CHECKS=$((CHECKS + 1))
	local hits
	hits=$(grep -a -l -e SECRET-123 -e SECRET-456 "$@" 2> /dev/null | tr '\n' ' ')
	[ -z "$hits" ] || fail "$l: the idempotency key's text is in $hits: $(grep -a -o -h -m 2 '.\{0,40\}SECRET-[0-9]*.\{0,20\}' "$@" | head -n 3 | tr '\n' ';')"
}

# dump LABEL: the whole ledger as text, in $WS/LABEL.dump (and the SQLite files beside)
dump() {
	if [ -n "${TOOLGATE_STORE:-}" ]; then
		local pw; pw=$(pg_password "$TOOLGATE_STORE")
		PGPASSWORD=$pw "$PGDUMP" --no-password -d "${TOOLGATE_STORE/:$pw@/@}" > "$1.dump" 2> "$1.dump.err" ||
			fail "$1: pg_dump: $(head -n 2 "$1.dump.err")"
	else
		sqlite3 .toolgate/ledger.db .dump > "$1.dump"
	fi
}
ledger_files() { if [ -n "${TOOLGATE_STORE:-}" ]; then echo "$1.dump"; else echo "$1.dump" .toolgate/ledger.db*; fi; }

round() { # LABEL
	local l=$1
	rm -f deploy.log slow.log
	tgcall "$l-a" deploy '{"env":"prod"}' --key "$K1"
	eq "$(jqv "$l-a.json" .status)" persisted "$l: a call with a secret for a key runs ($(head -c 200 "$l-a.err"))"
	eq "$(jqv "$l-a.json" .idempotency_key)" "$K1" "$l: the caller's envelope still shows its key"
	tgcall "$l-b" deploy '{"env":"prod"}' --key "$K1"
	eq "$(jqv "$l-b.json" .status)" replayed "$l: the same call again replays"
	tgcall "$l-c" deploy "{\"env\":\"prod\",\"idempotency_key\":\"$K1\"}"
	eq "$(jqv "$l-c.json" .status)" replayed "$l: the key in the args: the same scope, replayed"
	tgcall "$l-d" deploy '{"env":"staging"}' --key "$K1"
	eq "$(jqv "$l-d.json" .status)/$(jqv "$l-d.json" .error.kind)" invalid/ambiguous \
		"$l: the key for another call is a conflict"
	eq "$(wc -l < deploy.log)" 1 "$l: it ran once"

	# an unknown outcome, listed and settled by its op
	(exec "$TG" call --json slow '{"n":1}' --key "$K2" > "$l-crash.json" 2>&1 < /dev/null) &
	local pid=$!
	for _ in $(seq 100); do [ -s slow.log ] && break; sleep 0.05; done
	kill -9 $pid; wait $pid 2> /dev/null
	tgcall "$l-after" slow '{"n":1}' --key "$K2"
	eq "$(jqv "$l-after.json" .error.kind)" unknown_outcome "$l: after a crash, unknown outcome"
	"$TG" ops list --unknown --json > "$l-unknown.json" 2> "$l-unknown.err"
	sanitizers "$l-unknown.err" "$l: ops list"
	local op; op=$(jq -r '.[] | select(.claim != null) | .op_id' "$l-unknown.json" | head -n 1)
	[ -n "$op" ] || fail "$l: ops list --unknown lists the claim: $(cat "$l-unknown.json" "$l-unknown.err")"
	jq -e '.[0].scope | test("^sha256:[0-9a-f]{64}$")' "$l-unknown.json" > /dev/null ||
		fail "$l: ops list shows the scope's digest: $(jq -c '.[0].scope' "$l-unknown.json")"
	no_key "$l: ops list --unknown" "$l-unknown.json"
	"$TG" ops resolve "$op" --applied yes > /dev/null 2> "$l-resolve.err" || fail "$l: ops resolve: $(cat "$l-resolve.err")"
	tgcall "$l-replay" slow '{"n":1}' --key "$K2"
	eq "$(jqv "$l-replay.json" .status)" replayed "$l: settled as applied, a repeat replays"
	sleep 3.2   # the orphaned tool ends

	dump "$l"
	no_key "$l: the ledger" $(ledger_files "$l")
	"$TG" ledger export --output "$l-export.jsonl" 2> "$l-export.err" || fail "$l: export: $(cat "$l-export.err")"
	no_key "$l: the export" "$l-export.jsonl"
}

# ---- SQLite
round sq
# the export imported into a fresh ledger: its calls replay there
mkdir fresh && cp toolgate.yaml slow.sh fresh/
(cd fresh && TOOLGATE_CONFIG=$WS/fresh/toolgate.yaml "$TG" ledger import "$WS/sq-export.jsonl" > imp.out 2>&1) ||
	fail "import: $(cat fresh/imp.out)"
(cd fresh && TOOLGATE_CONFIG=$WS/fresh/toolgate.yaml "$TG" call --json deploy '{"env":"prod"}' --key "$K1" > ../fr.json 2> ../fr.err < /dev/null)
eq "$(jqv fr.json .status)" replayed "imported: the call replays in the new ledger"
(cd fresh && sqlite3 .toolgate/ledger.db .dump > ../fresh.dump)
no_key "the imported ledger" fresh.dump fresh/.toolgate/ledger.db*

# ---- a ledger from before: plain scopes, schema 6
mkdir old && cp toolgate.yaml old/ && cp .toolgate/ledger.db old/ledger.db
# the scopes as they were written then (execute.c make_scope before issue 22)
P1="key:5:local:6:deploy:$K1" P2="key:5:local:4:slow:$K2"
eq "$(jqv sq-a.json .principal)" local "the principal the old scopes name"
sqlite3 old/ledger.db < "$ROOT/tests/integration/support/ledger_v7.sql" || fail "the old ledger in version 7's shape"
sqlite3 old/ledger.db "PRAGMA user_version = 6; DROP TABLE ledger;
ALTER TABLE approvals DROP COLUMN mac; ALTER TABLE idem DROP COLUMN mac;
ALTER TABLE rate_buckets DROP COLUMN mac; ALTER TABLE pins DROP COLUMN mac;
UPDATE idem SET scope = CASE op_id WHEN '$(jqv sq-a.json .op_id)' THEN '$P1' ELSE '$P2' END;
UPDATE ops SET idem_scope = (SELECT scope FROM idem WHERE idem.op_id = ops.op_id)
	WHERE idem_scope IS NOT NULL;
UPDATE ops SET envelope = json_set(envelope, '\$.idempotency_key', '$K1'),
	args_redacted = json_set(args_redacted, '\$.idempotency_key', '$K1') WHERE tool = 'deploy';" ||
	fail "making the old ledger"
eq "$(sqlite3 old/ledger.db "SELECT count(*) FROM idem WHERE scope LIKE '%SECRET-123'")" 1 "the old ledger holds a plain scope"
mkdir -p old/w/.toolgate && mv old/ledger.db old/w/.toolgate/ && cp toolgate.yaml slow.sh old/w/ && chmod 700 old/w/.toolgate
# upgraded at open; a ledger from before has no identity, so it is foreign
# until adopted, and its claims, with no MAC, carry no authority then: an
# unknown outcome for the operator, never a replay of what it says
(cd old/w && TOOLGATE_CONFIG=$WS/old/w/toolgate.yaml "$TG" call --json deploy '{"env":"prod"}' --key "$K1" > ../../old.json 2> ../../old.err < /dev/null)
contains "$(cat old.err)" "toolgate ledger adopt" "an old ledger is foreign until adopted"
(cd old/w && TOOLGATE_CONFIG=$WS/old/w/toolgate.yaml "$TG" ledger adopt > ../../adopt.out 2>&1) ||
	fail "adopting the old ledger: $(cat adopt.out)"
(cd old/w && TOOLGATE_CONFIG=$WS/old/w/toolgate.yaml "$TG" call --json deploy '{"env":"prod"}' --key "$K1" > ../../old.json 2> ../../old.err < /dev/null)
eq "$(jqv old.json .error.kind)" unknown_outcome "an old ledger's done claim, adopted, is the operator's to settle ($(head -c 200 old.err))"
sqlite3 old/w/.toolgate/ledger.db "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
sqlite3 old/w/.toolgate/ledger.db .dump > old.dump
no_key "the upgraded ledger" old.dump

# an export written before: plain scopes in it
jq -c --arg p1 "$P1" --arg p2 "$P2" 'if .idem_scope and .tool == "deploy" then .idem_scope = $p1
	elif .idem_scope then .idem_scope = $p2 elif .claim then .claim.scope = $p2 else . end' sq-export.jsonl > old-export.jsonl
eq "$(grep -c SECRET-123 old-export.jsonl)" 1 "the old export holds a plain scope"
mkdir fresh2 && cp toolgate.yaml slow.sh fresh2/
(cd fresh2 && TOOLGATE_CONFIG=$WS/fresh2/toolgate.yaml "$TG" ledger import "$WS/old-export.jsonl" > imp.out 2>&1) ||
	fail "import of an old export: $(cat fresh2/imp.out)"
(cd fresh2 && TOOLGATE_CONFIG=$WS/fresh2/toolgate.yaml "$TG" call --json deploy '{"env":"prod"}' --key "$K1" > ../fr2.json 2> /dev/null < /dev/null)
eq "$(jqv fr2.json .status)" replayed "an old export's call replays once imported"
(cd fresh2 && sqlite3 .toolgate/ledger.db .dump > ../fresh2.dump)
no_key "a ledger an old export was imported into" fresh2.dump

# ---- PostgreSQL
pg_newdb PGDB idem_secret || { finish; exit; }
export TOOLGATE_STORE=$PGDB
round pg
# a PostgreSQL ledger from before: plain scopes, keys in envelopes and args, schema 6
pgq "$PGDB" "DELETE FROM toolgate_schema WHERE version >= 7; DROP TABLE ledger;
ALTER TABLE approvals DROP COLUMN mac; ALTER TABLE idem DROP COLUMN mac;
ALTER TABLE rate_buckets DROP COLUMN mac; ALTER TABLE pins DROP COLUMN mac;
UPDATE idem SET scope = CASE op_id WHEN '$(jqv pg-a.json .op_id)' THEN '$P1' ELSE '$P2' END;
UPDATE ops SET idem_scope = (SELECT scope FROM idem WHERE idem.op_id = ops.op_id)
	WHERE idem_scope IS NOT NULL;
UPDATE ops SET envelope = jsonb_set(envelope::jsonb, '{idempotency_key}', '\"$K1\"')::text,
	args_redacted = jsonb_set(args_redacted::jsonb, '{idempotency_key}', '\"$K1\"')::text
	WHERE tool = 'deploy';" > /dev/null || fail "making the old PostgreSQL ledger"
dump pg-old
eq "$(grep -c SECRET-123 pg-old.dump)" 5 "the old PostgreSQL ledger holds the key (a scope in two rows, two envelopes, args)"
tgcall pg-old1 deploy '{"env":"prod"}' --key "$K1"
contains "$(cat "$WS/pg-old1.err")" "toolgate ledger adopt" "an old PostgreSQL ledger is foreign until adopted"
"$TG" ledger adopt > pg-adopt.out 2>&1 || fail "adopting the old PostgreSQL ledger: $(cat pg-adopt.out)"
tgcall pg-old1 deploy '{"env":"prod"}' --key "$K1"
eq "$(jqv pg-old1.json .error.kind)" unknown_outcome "an old PostgreSQL ledger's done claim, adopted, is the operator's to settle ($(head -c 200 pg-old1.err))"
dump pg-up
no_key "the upgraded PostgreSQL ledger" pg-up.dump
unset TOOLGATE_STORE
finish
