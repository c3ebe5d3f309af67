# Sourced by the client tests (claude.sh, codex.sh, gemini.sh): each runs
# one real agent client, as installed by scripts/install-node-deps into
# build/clients, against `toolgate serve` over stdio and over HTTP, with the
# scripted model (model.mjs) in place of the provider.
#
# One client session per transport runs the whole scenario below, one step a
# model turn, and then every check reads the disk, the ledger and what the
# model received (model.mjs's log):
#   0  read_file a.txt                            a real call
#   1  write_file out/real.txt                    a real call: the file, `persisted`
#   2  write_file denied/no.txt                   a deny rule: `denied`, no file, the sentence
#   3  write_file ask/yes.txt                     an ask rule: queued (`pending`) ...
#   4  (the operator approves) the same call      ... and the retry runs
#   5  write_file .env                            a before_tool_call hook (a Claude
#                                                 Code .env guard) denies it
#   6  read_file b.txt, read_file c.txt,          four calls in one turn (with
#      list_dir ., write_file out/four.txt        wait_for_previous where the client's
#                                                 schema offers it, as Gemini CLI's does)
#
# Gives: $TG, $WS (from tests/integration/lib.sh), $BIN (the clients),
# $HERE, need CLIENT, start_model, new_session NAME, serve_http, run_client
# NAME CMD..., check_session TRANSPORT PRINCIPAL, and the checks' helpers.
# CLIENTS_KEEP=1 keeps the test's directory (its path is printed);
# CLIENTS_TRACE=1 puts tap.mjs between client and toolgate (mcp.jsonl in each
# session's directory: every MCP message); CLIENTS_OUT=DIR gets each
# session's part of the model's log as DIR/CLIENT-TRANSPORT.jsonl (sizes.sh).
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
HERE=$ROOT/tests/clients
BIN=${CLIENTS_BIN:-$ROOT/build/clients/node_modules/.bin}
export TOOLGATE=$TG
# the HTTP sessions' bearer token: principal "agent" (token_env: TOOLGATE_TOKEN)
TOKEN=tg-client-test-4f2a9c1e7b
unset TOOLGATE_TOKEN
PIDS=()
stop_all() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
if [ -n "${CLIENTS_KEEP:-}" ]; then
	trap 'stop_all; echo "kept: $WS" >&2' EXIT
else
	trap 'stop_all; chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS"' EXIT
fi

# need CLIENT: the client is installed and runs; without npm (nothing could
# install it) the test is skipped, loudly; with npm it is a failure
need() {
	local b=$BIN/$1
	CLIENT=$1
	if [ -x "$b" ] && { [ "$1" = gemini ] || "$b" --version > /dev/null 2>&1; }; then
		return 0
	fi
	if ! command -v npm > /dev/null 2>&1 || ! command -v node > /dev/null 2>&1; then
		echo "SKIPPED: $1 is not installed and this machine has no npm to install it" \
			"(scripts/install-node-deps); the $1 client tests did not run" >&2
		exit 0
	fi
	echo "FAIL: $1 is missing or does not run ($b); scripts/install-node-deps installs it" >&2
	exit 1
}

# the scenario (see the top), as model.mjs reads it
write_scenario() {
	cat > "$WS/scenario.json" <<'JSON'
{"steps": [
  {"calls": [{"tool": "read_file", "args": {"path": "a.txt"}}]},
  {"calls": [{"tool": "write_file", "args": {"path": "out/real.txt", "content": "real\n"}}]},
  {"calls": [{"tool": "write_file", "args": {"path": "denied/no.txt", "content": "no\n"}}]},
  {"calls": [{"tool": "write_file", "args": {"path": "ask/yes.txt", "content": "approved\n"}}]},
  {"approve": true,
   "calls": [{"tool": "write_file", "args": {"path": "ask/yes.txt", "content": "approved\n"}}]},
  {"calls": [{"tool": "write_file", "args": {"path": ".env", "content": "SECRET=1\n"}}]},
  {"calls": [{"tool": "read_file", "args": {"path": "b.txt"}, "if_offered": {"wait_for_previous": false}},
             {"tool": "read_file", "args": {"path": "c.txt"}, "if_offered": {"wait_for_previous": false}},
             {"tool": "list_dir", "args": {"path": "."}, "if_offered": {"wait_for_previous": false}},
             {"tool": "write_file", "args": {"path": "out/four.txt", "content": "four\n"},
              "if_offered": {"wait_for_previous": true}}]}
 ],
 "final": "All done: CLIENT-TEST-FINISHED"}
JSON
}

# start_model: the scripted model on a free port: $MODEL_URL, its log $WS/model.jsonl
start_model() {
	write_scenario
	mkdir -p "$WS/dump"
	: > "$WS/model.jsonl"
	node "$HERE/model.mjs" --scenario "$WS/scenario.json" --log "$WS/model.jsonl" --dump "$WS/dump" \
		--approve "sh '$HERE/approve' \"\$(cat '$WS/current-ws')\"" \
		> "$WS/model.out" 2> "$WS/model.err" < /dev/null &
	PIDS+=($!)
	MODEL_URL=
	for _ in $(seq 200); do
		MODEL_URL=$(sed -n 's|^model: listening on \(http://[^ ]*\)$|\1|p' "$WS/model.out")
		[ -n "$MODEL_URL" ] && return 0
		sleep 0.05
	done
	fail "model.mjs did not start: $(cat "$WS/model.err")"
	finish
	exit 1
}

# new_session NAME: a fresh workspace $SW (files, toolgate.yaml, the hook) and
# home $SH under $S=$WS/NAME; the operator (approve) acts on this one
new_session() {
	S=$WS/$1
	SW=$S/ws SH=$S/home
	mkdir -p "$SW/hooks" "$SH"
	printf 'alpha\nbeta\n' > "$SW/a.txt"
	printf 'gamma\n' > "$SW/b.txt"
	printf 'delta\n' > "$SW/c.txt"
	# a Claude Code PreToolUse guard as people write them: exit 2 denies,
	# stderr is the reason; configured as in Claude Code (hooks get Claude
	# Code's view of a call by default: Write with file_path)
	cat > "$SW/hooks/env-guard.sh" <<'SH'
#!/bin/sh
path=$(jq -r '.tool_input.file_path // empty')
case "$path" in
.env | */.env | .env.* | */.env.*)
	echo "env-guard: $path holds secrets; it is not written" >&2
	exit 2 ;;
esac
exit 0
SH
	chmod +x "$SW/hooks/env-guard.sh"
	cat > "$SW/toolgate.yaml" <<YAML
default_principal: local
principals:
  local: {roles: [owner]}
  agent: {roles: [owner], token_env: TOOLGATE_TOKEN}
roles:
  owner: {allow: ["*"]}
permissions:
  ask:  ["write_file(./ask/**)"]
  deny: ["write_file(./denied/**)"]
hooks:
  before_tool_call:
    - {command: [./hooks/env-guard.sh], tools: [Edit, Write]}   # Claude Code's matcher "Edit|Write"
YAML
	echo "$SW" > "$WS/current-ws"
	# the toolgate a client starts for the README's `toolgate serve ...`: the
	# build under test, with the sanitizers' settings (a client may pass a
	# server only part of its environment) and its stderr kept
	mkdir -p "$S/bin"
	{
		echo '#!/bin/sh'
		echo "export ASAN_OPTIONS='$ASAN_OPTIONS' LSAN_OPTIONS='${LSAN_OPTIONS:-}' UBSAN_OPTIONS='${UBSAN_OPTIONS:-}'"
		if [ -n "${CLIENTS_TRACE:-}" ]; then
			echo "exec node '$HERE/tap.mjs' --log '$S/mcp.jsonl' -- '$TG' \"\$@\" 2>> '$S/toolgate.err'"
		else
			echo "exec '$TG' \"\$@\" 2>> '$S/toolgate.err'"
		fi
	} > "$S/bin/toolgate"
	chmod +x "$S/bin/toolgate"
	touch "$S/toolgate.err"
	MARK=$(wc -l < "$WS/model.jsonl" 2>/dev/null || echo 0)
}

# serve_http: `toolgate serve --workspace $SW --http 127.0.0.1:0` for the
# session, the token's principal "agent"; sets MCP_URL (the tap's, traced)
serve_http() {
	(cd "$SW" && exec env TOOLGATE_TOKEN=$TOKEN "$S/bin/toolgate" serve --workspace "$SW" \
		--http 127.0.0.1:0 < /dev/null > "$S/serve.out") &
	SERVE_PID=$!
	PIDS+=($SERVE_PID)
	local port=
	for _ in $(seq 200); do
		port=$(sed -n 's|^toolgate: serving MCP on http://[^ ]*:\([0-9][0-9]*\)/mcp$|\1|p' "$S/toolgate.err")
		[ -n "$port" ] && break
		sleep 0.05
	done
	if [ -z "$port" ]; then
		fail "toolgate serve --http did not start: $(tail -n 5 "$S/toolgate.err")"
		return 1
	fi
	MCP_URL=http://127.0.0.1:$port/mcp
	if [ -n "${CLIENTS_TRACE:-}" ]; then
		node "$HERE/tap.mjs" --log "$S/mcp.jsonl" --target "$MCP_URL" > "$S/tap.out" 2>&1 < /dev/null &
		PIDS+=($!)
		for _ in $(seq 100); do
			grep -q listening "$S/tap.out" 2>/dev/null && break
			sleep 0.05
		done
		MCP_URL=$(sed -n 's|^tap: listening on \(.*\)$|\1/mcp|p' "$S/tap.out")
	fi
}

# run_client NAME CMD...: the client in $SW with home $SH, at most
# $CLIENT_TIMEOUT s; stdout to $S/NAME.out, stderr to $S/NAME.err, the exit
# status to $S/NAME.rc; says how long it took
run_client() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s.%N)
	(cd "$SW" && HOME=$SH PATH="$S/bin:$PATH" timeout -k 5 "${CLIENT_TIMEOUT:-90}" "$@" \
		> "$S/$name.out" 2> "$S/$name.err" < /dev/null)
	rc=$?
	echo $rc > "$S/$name.rc"
	echo "$name: exit $rc in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >&2
	[ $rc -ne 124 ] || fail "$name: timed out after ${CLIENT_TIMEOUT:-90} s: $(tail -n 5 "$S/$name.err")"
}

# ---- what happened, for the checks
# mlog: this session's lines of the model's log
mlog() { tail -n +$((MARK + 1)) "$WS/model.jsonl"; }
# ledger QUERY: against the session's ledger
ledger() { sqlite3 -separator '|' "$SW/.toolgate/ledger.db" "$1" 2>/dev/null; }
# statuses PATH [TOOL]: the statuses of the session's calls on PATH, in order
statuses() {
	ledger "SELECT status FROM ops WHERE tool = '${2:-write_file}'
		AND json_extract(args_redacted, '\$.path') = '$1' ORDER BY started_ms, op_id" | paste -sd ' '
}
# field PATH EXPR: an SQL expression over the newest call on PATH
field() {
	ledger "SELECT $2 FROM ops WHERE json_extract(args_redacted, '\$.path') = '$1'
		ORDER BY started_ms DESC, op_id DESC LIMIT 1"
}
# received STEP TOOL PATH: the text the model got for that call (the newest
# such result of this session)
received() {
	node "$HERE/report.mjs" results <(mlog) |
		jq -rs --argjson s "$1" --arg t "$2" --arg p "$3" \
			'[.[] | select(.step == $s and .tool == $t and (.args.path // "") == $p)] | last | .text // empty'
}
# got TEXT NEEDLE WHAT: the model's text holds NEEDLE, as written or as it
# reads inside a JSON string (a client may give the model the envelope)
got() {
	local esc
	esc=$(jq -Rn --arg s "$2" '$s | tojson | .[1:-1]')
	CHECKS=$((CHECKS + 1))
	case "$1" in
	*"$2"* | *"$esc"*) ;;
	*) fail "$3: the model did not get '$2'; it got: ${1:0:300}" ;;
	esac
}
# notgot TEXT NEEDLE WHAT: the model's text does not hold NEEDLE
notgot() {
	CHECKS=$((CHECKS + 1))
	case "$1" in
	*"$2"*) fail "$3: the model got '$2': ${1:0:300}" ;;
	esac
}

# check_session TRANSPORT PRINCIPAL: every check of the scenario, for the
# session just run
check_session() {
	local t=$1 p=$2 txt msg n sessions
	mlog > "$S/model.jsonl"
	[ -z "${CLIENTS_OUT:-}" ] || cp "$S/model.jsonl" "$CLIENTS_OUT/$CLIENT-$t.jsonl"
	# the client finished its turn
	contains "$(cat "$S"/*.out 2>/dev/null)" "CLIENT-TEST-FINISHED" "$t: the client ended with the model's last answer"
	# the HTTP server stops cleanly (the client stopped its stdio one), and
	# neither said anything the sanitizers found
	if [ -n "${SERVE_PID:-}" ]; then
		kill "$SERVE_PID" 2>/dev/null
		wait "$SERVE_PID" 2>/dev/null
		SERVE_PID=
	fi
	sanitizers "$S/toolgate.err" "$t: toolgate serve"

	# (1) a real call: read_file, and write_file on disk and in the ledger
	eq "$(statuses a.txt read_file)" "persisted" "$t (1) read_file a.txt in the ledger"
	got "$(received 0 read_file a.txt)" "alpha" "$t (1) read_file a.txt: the model got the file"
	notgot "$(received 0 read_file a.txt)" "op_id" "$t (1) read_file a.txt: the model got no envelope"
	eq "$(cat "$SW/out/real.txt" 2>&1)" "real" "$t (1) write_file out/real.txt on disk"
	eq "$(statuses out/real.txt)" "persisted" "$t (1) write_file out/real.txt in the ledger"

	# (2) a denial: denied, nothing written, the sentence to the model
	eq "$(statuses denied/no.txt)" "denied" "$t (2) write_file denied/no.txt in the ledger"
	[ ! -e "$SW/denied/no.txt" ] || fail "$t (2) denied/no.txt was written"
	msg=$(field denied/no.txt "json_extract(envelope, '\$.error.message')")
	got "$(received 2 write_file denied/no.txt)" "${msg:-<no message in the ledger>}" "$t (2) the deny sentence"
	# terse outward: the rule that decided and the trace stay in the ledger
	notgot "$(received 2 write_file denied/no.txt)" "deny: write_file" "$t (2) the model got no rule"
	notgot "$(received 2 write_file denied/no.txt)" "op_id" "$t (2) the model got no envelope"

	# (3) an approval: queued, approved by the operator, the retry runs
	eq "$(statuses ask/yes.txt)" "pending persisted" "$t (3) write_file ask/yes.txt: queued, then run"
	got "$(received 3 write_file ask/yes.txt)" "toolgate approvals approve" "$t (3) the model was told how it is approved"
	eq "$(cat "$SW/ask/yes.txt" 2>&1)" "approved" "$t (3) ask/yes.txt on disk after the approval"
	eq "$(ledger "SELECT state FROM approvals WHERE tool = 'write_file' ORDER BY created_ms" | paste -sd ' ')" \
		"used" "$t (3) the approval: one, approved and used by the retry"
	contains "$(mlog | jq -rs '[.[] | select(.approved)] | last | .approved.stdout // empty')" \
		"(from the result)" "$t (3) the operator approved the id the model was given"

	# (4) a hook: the .env guard denies the write
	eq "$(statuses .env)" "denied" "$t (4) write_file .env in the ledger"
	[ ! -e "$SW/.env" ] || fail "$t (4) .env was written"
	contains "$(field .env "json_extract(envelope, '\$.error.rule')")" "hook: before_tool_call[0]" "$t (4) the hook's rule"
	got "$(received 5 write_file .env)" "holds secrets" "$t (4) the hook's reason"

	# (5) four calls in one turn: four rows, four results to the model
	eq "$(statuses b.txt read_file) $(statuses c.txt read_file) $(statuses . list_dir) $(statuses out/four.txt)" \
		"persisted persisted persisted persisted" "$t (5) the four calls in the ledger"
	eq "$(cat "$SW/out/four.txt" 2>&1)" "four" "$t (5) out/four.txt on disk"
	got "$(received 6 read_file b.txt)" "gamma" "$t (5) the model got b.txt"
	got "$(received 6 read_file c.txt)" "delta" "$t (5) the model got c.txt"
	got "$(received 6 list_dir .)" "a.txt" "$t (5) the model got the listing"
	got "$(received 6 write_file out/four.txt)" "created" "$t (5) the model got the write's result"
	n=$(mlog | jq -s '[.[] | select(.step == 7)] | first | .results | length')
	eq "$n" 4 "$t (5) the four results came back in one request"

	# every call of the session: one MCP session, the transport's principal
	sessions=$(ledger "SELECT count(DISTINCT session) || ' ' || group_concat(DISTINCT principal) FROM ops")
	eq "$sessions" "1 $p" "$t: one MCP session, principal $p"
}
