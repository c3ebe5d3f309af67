# A PostgreSQL ledger's identity (issue 22 §1): a fleet's gates share one
# key (ledger.key_env); the first gives an empty database its identity, a
# second gate (another directory, as another host would be) opens it with
# the same key; a gate with another key is refused with the foreign
# sentence (log reads it with a warning, adopt is the way to take it on);
# a database whose identity was removed while it holds records is foreign
# too, and `ledger adopt` under the fleet's key says what it left without
# authority.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
pg_newdb DB identity
export TOOLGATE_STORE=$DB
K1=$(printf '%064d' 1) K2=$(printf '%064d' 2)
mkdir -p "$WS/a" "$WS/b"
printf 'ledger: {key_env: TG_FLEET_KEY}\npermissions: {ask: [write_file]}\n' > "$WS/a/toolgate.yaml"
cp "$WS/a/toolgate.yaml" "$WS/b/toolgate.yaml"
run() { # DIR NAME KEY ARGS...
	local dir=$1 name=$2 key=$3; shift 3
	(cd "$WS/$dir" && TG_FLEET_KEY=$key "$TG" "$@" > "$WS/$name.out" 2> "$WS/$name.err" < /dev/null)
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "$name"
}

run a a1 "$K1" call --json read_file '{"path":"toolgate.yaml"}'
eq "$(jq -r .status "$WS/a1.out")" persisted "gate a, key K1: opens and runs"
eq "$(pgq "$DB" "SELECT bound FROM ledger")" "postgresql database $(pgq "$DB" "SELECT current_database()")" "bound to the database's name"
run b b1 "$K1" call --json read_file '{"path":"toolgate.yaml"}'
eq "$(jq -r .status "$WS/b1.out")" persisted "gate b, the same key: opens"
run b b2 "$K2" call --json read_file '{"path":"toolgate.yaml"}'
eq "$(cat "$WS/b2.exit")" 1 "gate b, another key: refused"
contains "$(cat "$WS/b2.err")" "was not made by this machine's key (its identity is bound to postgresql database" "the foreign sentence"
contains "$(cat "$WS/b2.err")" "\`toolgate ledger adopt\`" "... says what to do"
run b log "$K2" log
eq "$(cat "$WS/log.exit")" 0 "log reads it under another key"
contains "$(cat "$WS/log.err")" "warning:" "... with a warning"
run b nokey "" call --json read_file '{"path":"toolgate.yaml"}'
eq "$(cat "$WS/nokey.exit")" 1 "no key: refused"
contains "$(cat "$WS/nokey.err")" "names \$TG_FLEET_KEY, which is not set" "... saying so"

# an approval asked, then the identity removed by someone with the database
run a a2 "$K1" call --json write_file '{"path":"x","content":"y"}'
eq "$(jq -r .status "$WS/a2.out")" pending "an approval asked"
pgq "$DB" "DELETE FROM ledger" > /dev/null
run a a3 "$K1" call --json read_file '{"path":"toolgate.yaml"}'
eq "$(cat "$WS/a3.exit")" 1 "records without an identity: refused"
contains "$(cat "$WS/a3.err")" "holds records but has no identity" "... as foreign"
run a adopt "$K1" ledger adopt
eq "$(cat "$WS/adopt.exit")" 0 "adopt under the fleet's key"
contains "$(cat "$WS/adopt.out")" "1 approval," "adopt counts what lost its authority"
run b b3 "$K1" call --json read_file '{"path":"toolgate.yaml"}'
eq "$(jq -r .status "$WS/b3.out")" persisted "after adopt the fleet opens it"
finish
