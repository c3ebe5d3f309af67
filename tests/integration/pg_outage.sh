# The PostgreSQL server lost mid-run and back (issue 9): while a loop of
# fresh `toolgate call` processes and a long-lived `toolgate serve` make
# side-effecting calls with unique keys (a tool that appends one line per
# run) and read-only calls, the server is stopped with `pg_ctl stop -m
# immediate` and restarted.  During the outage nothing side-effecting runs:
# the long-lived gate answers `failed`, `transient`, `retry_after_s`,
# `applied: no`, a fresh one exits non-zero with a sentence (it cannot open
# its ledger); a read-only call that runs says `committed`, never
# `persisted`, when its row could not be written.  Throughout: no key's side
# effect twice, no `persisted` without its committed row, and both kinds of
# gate resume once the server is back.  A server unreachable at start: a
# clear error naming the host (never a password), exit non-zero.  Then, on
# the long-lived gate: a server restarted while it is idle costs its next
# call nothing (persisted at the first try); and a call whose tool ran but
# whose record the outage took says `committed`, and its key, retried once
# the server is back, is an unknown outcome (never `pending` as if the call
# still ran) that `ops resolve` settles.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
CL=$(mktemp -d "${TMPDIR:-/tmp}/tg-pg.XXXXXX")
pg_own_cluster URL "$CL" || { fail "no server of this case's own"; finish; exit 1; }
PORT=$(cat "$CL/port")
pgq "$URL" "CREATE DATABASE outage" || { fail "CREATE DATABASE"; finish; exit 1; }
DB=${URL%/*}/outage
export TOOLGATE_STORE=$DB

mkdir -p "$WS/w" "$WS/out"
printf 'some text\n' > "$WS/w/notes.txt"
cat > "$WS/w/toolgate.yaml" <<'YAML'
default_principal: local
principals:
  local: {roles: [owner]}
roles:
  owner: {allow: ["*"]}
loop_detection: {enabled: false}   # the same read, again and again, on purpose
tools:
  mark:
    description: Record that a key was handled (one line per run).
    input_schema:
      type: object
      properties:
        key: {type: string, pattern: "^[a-z]+[0-9]+$"}
      required: [key]
      additionalProperties: false
    command: [./mark.sh]
    category: runtime
    requires_idempotency_key: true
  slowmark:
    description: Record that a key was handled, after a while (one line per run).
    input_schema:
      type: object
      properties:
        key: {type: string, pattern: "^[a-z]+[0-9]+$"}
      required: [key]
      additionalProperties: false
    command: [./slowmark.sh]
    category: runtime
    requires_idempotency_key: true
YAML
cat > "$WS/w/mark.sh" <<'SH'
#!/bin/sh
# one line per run, appended with O_APPEND (one write each): "KEY OP_ID"
key=$(sed -n 's/.*"key":"\([a-z]*[0-9]*\)".*/\1/p')
printf '%s %s\n' "$key" "$TOOLGATE_OP_ID" >> marks.log
printf '{"key":"%s","op":"%s"}\n' "$key" "$TOOLGATE_OP_ID"
SH
cat > "$WS/w/slowmark.sh" <<'SH'
#!/bin/sh
key=$(sed -n 's/.*"key":"\([a-z]*[0-9]*\)".*/\1/p')
touch "$key.started"
sleep 1.5
printf '%s %s\n' "$key" "$TOOLGATE_OP_ID" >> marks.log
printf '{"key":"%s","op":"%s"}\n' "$key" "$TOOLGATE_OP_ID"
SH
chmod +x "$WS/w/mark.sh" "$WS/w/slowmark.sh"
export TOOLGATE_CONFIG=$WS/w/toolgate.yaml
ns() { date +%s%N; }

# ---- an unreachable server at start: a clear error, non-zero, nothing run ----
DEAD="postgresql://toolgate:s3cret-pw@127.0.0.1:1/outage"
(cd "$WS/w" && TOOLGATE_STORE=$DEAD "$TG" call --json --key dead1 mark '{"key":"dead1"}' \
	> "$WS/dead.json" 2> "$WS/dead.err" < /dev/null)
st=$?
[ $st -ne 0 ] || fail "a call with an unreachable store exits 0"
contains "$(cat "$WS/dead.err")" "127.0.0.1" "the error names the host it could not reach"
case "$(cat "$WS/dead.err" "$WS/dead.json")" in *s3cret-pw*) fail "the error shows the password" ;; esac
grep -q dead1 "$WS/w/marks.log" 2>/dev/null && fail "a call with an unreachable store ran its tool"
[ "$(jq -r .status "$WS/dead.json" 2>/dev/null)" = persisted ] && fail "a call with an unreachable store said persisted"
[ -e "$WS/w/.toolgate/ledger.db" ] && fail "an unreachable PostgreSQL store fell back to SQLite"
t0=$(ns)
(cd "$WS/w" && TOOLGATE_STORE=$DEAD timeout 20 "$TG" serve < /dev/null > "$WS/dead-serve.out" 2> "$WS/dead-serve.err")
st=$?
[ $st -ne 0 ] && [ $st -ne 124 ] || fail "serve with an unreachable store: exit $st (non-zero, at once)"
[ $(( ($(ns) - t0) / 1000000 )) -lt 10000 ] || fail "serve with an unreachable store took 10 s or more to give up"
contains "$(cat "$WS/dead-serve.err")" "127.0.0.1" "serve: the error names the host"
(cd "$WS/w" && TOOLGATE_STORE=$DEAD "$TG" log > /dev/null 2> "$WS/dead-log.err")
[ $? -ne 0 ] || fail "log with an unreachable store exits 0"
sanitizers "$WS/dead.err" "unreachable call"
sanitizers "$WS/dead-serve.err" "unreachable serve"

# ---- the long-lived gate: toolgate serve on stdio ----
coproc SRV { cd "$WS/w" && exec "$TG" serve 2> "$WS/serve.err"; }
send() { printf '%s\n' "$1" >&"${SRV[1]}"; }
# reply ID: the response to request ID (notifications and requests skipped)
reply() {
	local line
	while IFS= read -r -t 30 line <&"${SRV[0]}"; do
		if [ "$(jq -r 'select(.method == null) | .id' <<< "$line" 2>/dev/null)" == "$1" ]; then
			printf '%s\n' "$line"
			return 0
		fi
	done
	return 1
}
send '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}'
reply i > /dev/null || fail "serve answers initialize"
send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
# scall ID TOOL ARGS: one call through serve; the envelope (with start/end ns) to out/ID.json
scall() {
	local t=$(ns) r
	send "{\"jsonrpc\":\"2.0\",\"id\":\"$1\",\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}"
	r=$(reply "$1") || { fail "serve did not answer call $1"; return 1; }
	jq -c --arg t0 "$t" --arg t1 "$(ns)" --arg via serve \
		'.result._meta["toolgate/envelope"] + {t0: ($t0 | tonumber), t1: ($t1 | tonumber), via: $via}' \
		<<< "$r" > "$WS/out/$1.json"
}

# ---- the loop of fresh processes, in the background until told to stop ----
# fcall NAME TOOL ARGS [OPTIONS]: one fresh toolgate call; its envelope (or,
# when it printed none, its exit and stderr) with start/end ns to out/NAME.json
fcall() {
	local name=$1 tool=$2 args=$3 t=$(ns) st; shift 3
	(cd "$WS/w" && "$TG" call --json "$@" "$tool" "$args" > "$WS/out/$name.raw" 2> "$WS/out/$name.err" < /dev/null)
	st=$?
	if [ "$(jq -r .op_id "$WS/out/$name.raw" 2>/dev/null)" != "" ] &&
	   [ "$(jq -r .op_id "$WS/out/$name.raw" 2>/dev/null)" != null ]; then
		jq -c --arg t0 "$t" --arg t1 "$(ns)" --argjson exit $st \
			'. + {t0: ($t0 | tonumber), t1: ($t1 | tonumber), via: "fresh", exit: $exit}' \
			"$WS/out/$name.raw" > "$WS/out/$name.json"
	else
		jq -n -c --arg t0 "$t" --arg t1 "$(ns)" --argjson exit $st --rawfile err "$WS/out/$name.err" \
			--arg tool "$tool" --arg key "$([ "$tool" = mark ] && echo "$name")" \
			'{status: null, tool: $tool, idempotency_key: (if $key == "" then null else $key end),
			  t0: ($t0 | tonumber), t1: ($t1 | tonumber), via: "fresh", exit: $exit, stderr: $err}' \
			> "$WS/out/$name.json"
	fi
	rm -f "$WS/out/$name.raw"
}
(
	i=0
	while [ ! -e "$WS/stop" ] && [ $i -lt 400 ]; do
		i=$((i + 1))
		fcall "fk$i" mark "{\"key\":\"fk$i\"}" --key "fk$i"
		fcall "fr$i" read_file '{"path":"notes.txt"}'
	done
) &
LOOP=$!

# ---- the timeline, driven by the serve calls: ~1.5 s up, >= 2.5 s down, up again ----
i=0 phase=up1 T_STOP=0 T_START=0 T_UP=0 resumed=0 downcalls=0
T0=$(ns)
while :; do
	i=$((i + 1))
	scall "sk$i" mark "{\"key\":\"sk$i\",\"idempotency_key\":\"sk$i\"}"
	scall "sr$i" read_file '{"path":"notes.txt"}'
	ms=$(( ($(ns) - T0) / 1000000 ))
	case $phase in
	up1) if [ $ms -ge 1500 ]; then
		"$PG_CLUSTER" stop "$CL" immediate || fail "pg_ctl stop -m immediate"
		T_STOP=$(ns); phase=down
	fi ;;
	down) # long enough for a few serve calls wholly inside it, however loaded the machine
		downcalls=$((downcalls + 1))
		if { [ $ms -ge 4000 ] && [ $downcalls -ge 5 ]; } || [ $ms -ge 15000 ]; then
		T_START=$(ns)
		"$PG_CLUSTER" restart "$CL" || fail "the server did not come back"
		T_UP=$(ns); phase=up2
	fi ;;
	up2) # both kinds of serve call persisted again, and a few more after that
		if [ "$(jq -r .status "$WS/out/sk$i.json")/$(jq -r .status "$WS/out/sr$i.json")" = persisted/persisted ]; then
			resumed=$((resumed + 1))
			[ $resumed -ge 5 ] && break
		fi
		[ $ms -ge 20000 ] && break ;;
	esac
	sleep 0.05
done
# the fresh loop too: a few more calls after the restart
sleep 1.5
touch "$WS/stop"
wait "$LOOP"
for f in "$WS"/out/f*.err; do sanitizers "$f" "fresh call $(basename "$f" .err)"; done
eq "$resumed" 5 "the long-lived serve resumed after the server came back"

# ---- the checks ----
jq -s -c '.[]' "$WS"/out/*.json > "$WS/all.jsonl"
jq -s . "$WS/all.jsonl" > "$WS/all.json"
echo "$(jq length "$WS/all.json") calls: $(jq -r 'group_by(.via + ":" + (.status // "no envelope")) | map("\(.[0].via):\(.[0].status // "no envelope") \(length)") | join(", ")' "$WS/all.json")"
# during: calls made wholly inside the outage
during() { jq -c --argjson a "$T_STOP" --argjson b "$T_START" "[.[] | select(.t0 >= \$a and .t1 <= \$b) | $1]" "$WS/all.json"; }
[ "$(during 'select(.via == "serve" and .tool == "mark")' | jq length)" -ge 3 ] ||
	fail "too few serve calls fell in the outage to judge"
eq "$(during 'select(.via == "serve" and .tool == "mark") | select(.status != "failed" or .error.kind != "transient"
		or .error.applied != "no" or (.error.retry_after_s // 0) <= 0) | {idempotency_key, status, error}' | jq -c '.[:2]')" "[]" \
	"serve, side-effecting, during the outage: failed, transient, applied no, retry_after_s"
eq "$(during 'select(.via == "serve" and .tool == "read_file") | select(.status != "committed") | {status, error}' | jq -c '.[:2]')" "[]" \
	"serve, read-only, during the outage: committed (ran; its row could not be written)"
eq "$(during 'select(.via == "serve" and .tool == "read_file") | select(.output == null)' | jq length)" 0 \
	"a committed read still returns its output"
eq "$(during 'select(.via == "fresh" and .status == "persisted")' | jq length)" 0 \
	"a fresh process during the outage never says persisted"
eq "$(during 'select(.via == "fresh" and .exit == 0)' | jq length)" 0 \
	"a fresh process during the outage exits non-zero"
eq "$(during 'select(.via == "fresh" and .status == null and ((.stderr // "") | length) == 0)' | jq length)" 0 \
	"a fresh process that cannot open its ledger says why on stderr"
# every side-effecting call refused (applied no), wherever it fell, ran nothing
cut -d' ' -f1 "$WS/w/marks.log" | sort > "$WS/ran"
jq -r '.[] | select(.tool == "mark") | select(.status == "failed" and .error.applied == "no")
	| .idempotency_key' "$WS/all.json" | sort > "$WS/refused"
eq "$(comm -12 "$WS/ran" "$WS/refused" | head -n 3 | tr '\n' ' ')" "" "a call said applied no, yet its tool ran"
jq -r '.[] | select(.via == "fresh" and .status == null) | .idempotency_key // empty' "$WS/all.json" | sort > "$WS/noopen"
eq "$(comm -12 "$WS/ran" "$WS/noopen" | head -n 3 | tr '\n' ' ')" "" "a process that could not open its ledger ran a tool"
# no duplicate side effects
eq "$(uniq -d "$WS/ran" | head -n 3 | tr '\n' ' ')" "" "a key's side effect happened twice"
# every key that ran was reported as having run (persisted, or committed when its row was lost)
jq -r '.[] | select(.status == "persisted" or .status == "committed") | .idempotency_key // empty' \
	"$WS/all.json" | sort > "$WS/said-ran"
eq "$(comm -23 "$WS/ran" "$WS/said-ran" | head -n 3 | tr '\n' ' ')" "" "a tool ran but its call did not say so"
# no persisted without its committed row
jq -r '.[] | select(.status == "persisted") | .op_id' "$WS/all.json" | sort > "$WS/persisted"
pgq "$DB" "select op_id from ops where status = 'persisted'" | sort > "$WS/rows"
eq "$(comm -23 "$WS/persisted" "$WS/rows" | head -n 3 | tr '\n' ' ')" "" "a call said persisted without its committed row"
# resumed: the fresh loop's last calls after the restart persisted too
eq "$(jq -r --argjson u "$T_UP" '[.[] | select(.via == "fresh" and .t0 > $u + 1000000000)] | sort_by(.t0) | .[-2:]
	| map(.status) | join(",")' "$WS/all.json")" persisted,persisted "fresh processes resume after the restart"

# ---- the refused keys may simply be retried now: each runs once ----
n=0
for key in $(jq -r '.[] | select(.via == "serve" and .tool == "mark" and .status == "failed") | .idempotency_key' "$WS/all.json"); do
	n=$((n + 1))
	[ $n -le 5 ] || break
	scall "retry-$key" mark "{\"key\":\"$key\",\"idempotency_key\":\"$key\"}"
	eq "$(jq -r .status "$WS/out/retry-$key.json")" persisted "a refused key ($key) runs when retried"
done
[ $n -gt 0 ] || fail "no serve call was refused during the outage"
eq "$(cut -d' ' -f1 "$WS/w/marks.log" | sort | uniq -d | head -n 3 | tr '\n' ' ')" "" \
	"no side effect twice after the retries"

# ---- the server restarted while the long-lived gate is idle ----
# (a fast shutdown: the server tells its sessions and closes them; the gate
# finds its connection gone before its next call, not through it)
scall idle0 mark '{"key":"idle0","idempotency_key":"idle0"}'
eq "$(jqv "$WS/out/idle0.json" .status)" persisted "serve works before the idle restart"
"$PG_CLUSTER" stop "$CL" || fail "pg_ctl stop (fast)"
"$PG_CLUSTER" restart "$CL" || fail "the server did not come back after the idle stop"
scall idle1 mark '{"key":"idle1","idempotency_key":"idle1"}'
eq "$(jqv "$WS/out/idle1.json" .status)" persisted \
	"after a restart while idle, the next call persists at the first try"
scall idle2 read_file '{"path":"notes.txt"}'
eq "$(jqv "$WS/out/idle2.json" .status)" persisted "and so does the one after it"

# ---- a call whose record the outage took ----
send '{"jsonrpc":"2.0","id":"slow1","method":"tools/call","params":{"name":"slowmark","arguments":{"key":"slow1","idempotency_key":"slow1"}}}'
for _ in $(seq 200); do [ -e "$WS/w/slow1.started" ] && break; sleep 0.05; done
[ -e "$WS/w/slow1.started" ] || fail "the slow tool did not start"
"$PG_CLUSTER" stop "$CL" immediate || fail "pg_ctl stop -m immediate (slow call)"
if r=$(reply slow1); then
	jq -c '.result._meta["toolgate/envelope"]' <<< "$r" > "$WS/out/slow1.json"
else
	fail "serve did not answer the slow call"
	echo '{}' > "$WS/out/slow1.json"
fi
eq "$(jqv "$WS/out/slow1.json" .status)" committed "the slow call ran, and its row could not be written: committed"
eq "$(grep -c '^slow1 ' "$WS/w/marks.log")" 1 "the slow tool ran once"
"$PG_CLUSTER" restart "$CL" || fail "the server did not come back after the slow call"
# retried through the same gate (whose process still lives), and through a fresh one
scall slow1-again slowmark '{"key":"slow1","idempotency_key":"slow1"}'
eq "$(jqv "$WS/out/slow1-again.json" .status)/$(jqv "$WS/out/slow1-again.json" .error.kind)" \
	pending/unknown_outcome "the key of a call whose record was lost is an unknown outcome, not still running"
(cd "$WS/w" && "$TG" call --json --key slow1 slowmark '{"key":"slow1"}' > "$WS/slow1-fresh.json" 2> "$WS/slow1-fresh.err" < /dev/null)
eq "$(jqv "$WS/slow1-fresh.json" .status)/$(jqv "$WS/slow1-fresh.json" .error.kind)" \
	pending/unknown_outcome "and so it is to another gate"
sanitizers "$WS/slow1-fresh.err" "fresh retry of the slow key"
# the operator settles it (it ran): the key replays from then on, nothing runs again
op=$(jqv "$WS/out/slow1.json" .op_id)
(cd "$WS/w" && "$TG" ops resolve "$op" --applied yes > "$WS/resolve.out" 2> "$WS/resolve.err") ||
	fail "ops resolve of the slow call: $(cat "$WS/resolve.err")"
scall slow1-after slowmark '{"key":"slow1","idempotency_key":"slow1"}'
eq "$(jqv "$WS/out/slow1-after.json" .status)" replayed "once resolved, the key replays"
eq "$(grep -c '^slow1 ' "$WS/w/marks.log")" 1 "the slow tool still ran once"
exec {SRV[1]}>&-
wait "$SRV_PID" 2> /dev/null
sanitizers "$WS/serve.err" serve
finish
