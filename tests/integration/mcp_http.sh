# toolgate serve --http: the Streamable HTTP transport of the MCP server,
# checked with raw requests (curl): the session lifecycle (initialize gives
# an Mcp-Session-Id, DELETE ends it), JSON replies and the event stream of
# tools/call, every refusal with its status (403 foreign Host or Origin,
# 404 unknown session or path, 400 missing session, bad protocol version or
# unparseable JSON, 405, 406, 409 second GET stream, 413, 415, 401 unknown
# bearer token, 503 past 256 sessions), bearer tokens mapped to principals
# (the token's owner, never the serving process's $TOOLGATE_PRINCIPAL), a
# non-loopback address serving token holders only, the refusals at startup
# (a non-loopback address, a taken port, a bad number, a libmicrohttpd that
# cannot be loaded) and a clean stop.
#
# Not here: the end of idle sessions (30 minutes, or 60 s when the table is
# full), which no test can wait for quickly; fresh sessions are never
# evicted, which the 503 check below holds to.
. "$(dirname "$0")/lib.sh"
cd "$WS"
if ! command -v curl > /dev/null; then
	fail "curl is not installed (scripts/install-deps test installs it)"
	finish; exit
fi

printf 'alpha\nbeta\n' > a.txt
cat > toolgate.yaml <<'YAML'
principals:
  local: {roles: [owner]}
  ci:    {roles: [owner], token_env: CI_TOKEN}
roles:
  owner: {allow: ["*"]}
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
export CI_TOKEN=ci-secret-token-1234

PIDS=()
stop_servers() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap 'stop_servers; chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS"' EXIT

# ended PID: ST = its exit status once it ended (killed after 10 s: 137)
ended() {
	for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$1" 2>/dev/null
	wait "$1"
	ST=$?
}

# serve NAME ARGS...: start `toolgate serve` in the background, stderr to
# NAME.err; sets PID and PORT (empty when it never said where it listens).
serve() {
	local name=$1; shift
	"$TG" serve --workspace "$WS" "$@" < /dev/null > "$WS/$name.out" 2> "$WS/$name.err" &
	PID=$!
	PIDS+=("$PID")
	PORT=
	for _ in $(seq 200); do
		PORT=$(sed -n 's|^toolgate: serving MCP on http://[^ ]*:\([0-9][0-9]*\)/mcp$|\1|p' "$WS/$name.err")
		[ -n "$PORT" ] && break
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
}

serve main --http 127.0.0.1:0
[ -n "$PORT" ] || { fail "serve: no 'serving MCP on' line: $(cat main.err)"; finish; exit 1; }
MAIN_PID=$PID
URL=http://127.0.0.1:$PORT/mcp
contains "$(cat main.err)" "toolgate: serving MCP on http://127.0.0.1:$PORT/mcp" "serve: prints where it listens"
eq "$(wc -c < main.out)" 0 "serve: nothing on stdout"

JSON='Content-Type: application/json'
ACCEPT='Accept: application/json, text/event-stream'

# req NAME METHOD [CURL ARGS...]: one request to $URL; the status to NAME.code,
# the headers to NAME.h, the body to NAME.b
req() {
	local name=$1 method=$2; shift 2
	curl -sS -X "$method" -o "$WS/$name.b" -D "$WS/$name.h" -w '%{http_code}' --max-time 30 \
		"$@" "$URL" > "$WS/$name.code" 2> "$WS/$name.curl"
}
# post NAME BODY [CURL ARGS...]: a well-formed POST of BODY
post() {
	local name=$1 body=$2; shift 2
	req "$name" POST -H "$JSON" -H "$ACCEPT" --data-binary "$body" "$@"
}
code() { cat "$WS/$1.code"; }
# hdr NAME HEADER: a response header's value
hdr() { sed -n "s/^$2: *//Ip" "$WS/$1.h" | tr -d '\r' | head -n 1; }
# sse NAME: the data of each event of an event-stream body, one per line
sse() { sed -n 's/^data: //p' "$WS/$1.b"; }
# error NAME: the JSON-RPC error message of a refusal
error() { jq -r '.error.message' "$WS/$1.b" 2>/dev/null; }

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
INITIALIZED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
LIST='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
CALL='{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}'
PING='{"jsonrpc":"2.0","id":4,"method":"ping"}'
WRITE='{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"w.txt","content":"x"}}}'

# open_session NAME [CURL ARGS...]: initialize and initialized at $URL; the session
# id into OSID (empty when initialize failed)
open_session() {
	local name=$1; shift
	OSID=
	post "$name" "$INIT" "$@"
	[ "$(code "$name")" = 200 ] || return
	OSID=$(hdr "$name" Mcp-Session-Id)
	post "$name.initialized" "$INITIALIZED" -H "Mcp-Session-Id: $OSID" "$@"
}
# result NAME: the response (last event) of a tools/call into NAME.json
result() { sse "$1" | tail -n 1 > "$WS/$1.json"; }

# ---- a session: initialize, initialized, tools/list, tools/call
post init "$INIT"
eq "$(code init)" 200 "initialize: 200"
SID=$(hdr init Mcp-Session-Id)
[ -n "$SID" ] || fail "initialize: no Mcp-Session-Id header"
contains "$(hdr init Content-Type)" "application/json" "initialize: a JSON reply"
eq "$(jq -r '.id' init.b)" 1 "initialize: answers its id"
eq "$(jq -r '.result.protocolVersion' init.b)" 2025-11-25 "initialize: the revision asked for"
S=(-H "Mcp-Session-Id: $SID" -H "MCP-Protocol-Version: 2025-11-25")

post initialized "$INITIALIZED" "${S[@]}"
eq "$(code initialized)" 202 "notifications/initialized: 202"
eq "$(wc -c < initialized.b)" 0 "notifications/initialized: no body"

post list "$LIST" "${S[@]}"
eq "$(code list)" 200 "tools/list: 200"
contains "$(hdr list Content-Type)" "application/json" "tools/list: a JSON reply"
eq "$(jq -r '.id' list.b)" 2 "tools/list: answers its id"
eq "$(jq -r '[.result.tools[].name] | index("read_file") != null' list.b)" true "tools/list: read_file is offered"

post call "$CALL" "${S[@]}"
eq "$(code call)" 200 "tools/call: 200"
contains "$(hdr call Content-Type)" "text/event-stream" "tools/call: answered as an event stream"
contains "$(cat call.b)" "event: message" "tools/call: SSE events"
sse call | tail -n 1 > call.json
eq "$(jq -r '.id' call.json)" 3 "tools/call: the last event is the response"
contains "$(jq -r '.result.content[0].text' call.json)" "alpha" "tools/call: the file's content"
eq "$(jq -r '.result.isError' call.json)" false "tools/call: not an error"
eq "$(jq -r '.result._meta["toolgate/envelope"].status' call.json)" persisted "tools/call: the envelope, in _meta"
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' call.json)" local "tools/call: no token: the default principal"
eq "$(jq -r '.result.structuredContent.total_lines' call.json)" 2 "tools/call: structuredContent is the tool's output"
eq "$(jq -r '.result.structuredContent.op_id' call.json)" null "tools/call: ... and not the envelope"

# ---- the priming event (an id, retry, empty data: SEP-1699) only to a
# session whose negotiated revision has it, 2025-11-25, as the official SDKs
# send it: a client of an older revision parses every event's data as JSON,
# and an empty one ends it (Gemini CLI: "Unexpected end of JSON input",
# Codex: "EOF while parsing").
# events NAME: the events of an event-stream body, one a line, "ID<TAB>DATA"
# (ID "-" when it has none, DATA its data lines joined)
events() {
	tr -d '\r' < "$WS/$1.b" | awk '
		function flush() { if (seen) print id "\t" data; id = "-"; data = ""; seen = 0; nd = 0 }
		BEGIN { id = "-" }
		/^$/ { flush(); next }
		/^:/ { next }
		/^id:/ { id = substr($0, 4); sub(/^ /, "", id); seen = 1; next }
		/^data:/ { v = substr($0, 6); sub(/^ /, "", v); data = nd++ ? data "\n" v : v; seen = 1; next }
		{ seen = 1 }
		END { flush() }'
}
# all_json NAME: "yes" when every event's data is one JSON value (empty
# data is none: JSON.parse("") throws)
all_json() {
	local ok=yes id data
	while IFS=$'\t' read -r id data; do
		[ -n "$data" ] && printf '%s' "$data" | jq . > /dev/null 2>&1 || ok=no
	done < <(events "$1")
	echo "$ok"
}
for rev in 2025-11-25 2025-06-18 2025-03-26; do
	post "init_$rev" "${INIT/2025-11-25/$rev}"
	rsid=$(hdr "init_$rev" Mcp-Session-Id)
	eq "$(jq -r '.result.protocolVersion' "$WS/init_$rev.b")" "$rev" "$rev: negotiated"
	R=(-H "Mcp-Session-Id: $rsid" -H "MCP-Protocol-Version: $rev")
	post "initialized_$rev" "$INITIALIZED" "${R[@]}"
	post "call_$rev" "$CALL" "${R[@]}"
	contains "$(hdr "call_$rev" Content-Type)" "text/event-stream" "$rev: tools/call is an event stream"
	eq "$(events "call_$rev" | tail -n 1 | cut -f2 | jq -r '.result._meta["toolgate/envelope"].status')" \
		persisted "$rev: the call's response"
	if [ "$rev" = 2025-11-25 ]; then
		first=$(events "call_$rev" | head -n 1)
		[[ "$first" =~ ^[0-9]+$'\t'$ ]] || fail "$rev: the stream opens with a priming event (an id, empty data): got '$first'"
		contains "$(cat "$WS/call_$rev.b")" "retry: 1000" "$rev: ... with the retry delay"
		eq "$(events "call_$rev" | wc -l)" 2 "$rev: the priming event and the response"
	else
		eq "$(all_json "call_$rev")" yes "$rev: every event's data is JSON (no priming event)"
		eq "$(events "call_$rev" | wc -l)" 1 "$rev: the response alone"
		eq "$(grep -c '^retry:' "$WS/call_$rev.b")" 0 "$rev: no retry field either"
	fi
	# the session's own stream (GET) follows the same rule
	: > "$WS/get_$rev.b"
	curl -sS -N --max-time 1 -o "$WS/get_$rev.b" -H "Accept: text/event-stream" "${R[@]}" "$URL" \
		2> /dev/null
	if [ "$rev" = 2025-11-25 ]; then
		contains "$(cat "$WS/get_$rev.b")" "retry: 1000" "$rev: GET: the priming event"
	else
		eq "$(all_json "get_$rev")" yes "$rev: GET: no priming event"
	fi
	req "del_$rev" DELETE "${R[@]}"
	eq "$(code "del_$rev")" 200 "$rev: the session ends"
done
# the session's revision decides, not a request's header: a 2025-11-25
# session's call without MCP-Protocol-Version is primed too
eq "$(jq -r '.result.protocolVersion' init.b)" 2025-11-25 "the first session negotiated 2025-11-25"
post call_noversion "$CALL" -H "Mcp-Session-Id: $SID"
[[ "$(events call_noversion | head -n 1)" =~ ^[0-9]+$'\t'$ ]] ||
	fail "a 2025-11-25 session's call without the header opens with the priming event"
eq "$(events call_noversion | wc -l)" 2 "no MCP-Protocol-Version: the priming event and the response"

post ping "$PING" "${S[@]}" -H "Origin: http://localhost:$PORT"
eq "$(code ping)" 200 "a loopback Origin is accepted"
eq "$(jq -c '.result' ping.b)" "{}" "ping: an empty result"

# ---- DNS rebinding: foreign Host or Origin
post origin "$PING" "${S[@]}" -H "Origin: http://evil.example"
eq "$(code origin)" 403 "foreign Origin: 403"
contains "$(error origin)" 'origin "http://evil.example" is not allowed' "foreign Origin: says why"
post host "$INIT" -H "Host: evil.example"
eq "$(code host)" 403 "foreign Host: 403"
contains "$(error host)" 'host "evil.example" is not allowed' "foreign Host: says why"
eq "$(jq -r '.jsonrpc' host.b)" "2.0" "foreign Host: a JSON-RPC error body"
post host_port "$INIT" -H "Host: evil.example:$PORT"
eq "$(code host_port)" 403 "foreign Host with our port: 403"
post host_ok "$PING" "${S[@]}" -H "Host: localhost:$PORT"
eq "$(code host_ok)" 200 "Host localhost:PORT is accepted"

# ---- sessions: unknown, missing, wrong protocol version
post unknown "$LIST" -H "Mcp-Session-Id: 0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77"
eq "$(code unknown)" 404 "unknown session: 404"
contains "$(error unknown)" "is not known" "unknown session: says why"
post missing "$LIST"
eq "$(code missing)" 400 "missing session: 400"
contains "$(error missing)" "Mcp-Session-Id" "missing session: says which header"
post version "$LIST" -H "Mcp-Session-Id: $SID" -H "MCP-Protocol-Version: 1999-01-01"
eq "$(code version)" 400 "unknown MCP-Protocol-Version: 400"
contains "$(error version)" 'protocol version "1999-01-01" is not supported' "unknown MCP-Protocol-Version: says why"
post old_version "$PING" -H "Mcp-Session-Id: $SID" -H "MCP-Protocol-Version: 2025-03-26"
eq "$(code old_version)" 200 "an older known MCP-Protocol-Version is accepted"

# ---- what a POST must be
req ctype POST -H "Content-Type: text/plain" -H "$ACCEPT" "${S[@]}" --data-binary "$PING"
eq "$(code ctype)" 415 "wrong Content-Type: 415"
contains "$(error ctype)" 'content type "text/plain"' "wrong Content-Type: says which"
req accept POST -H "$JSON" -H "Accept: application/json" "${S[@]}" --data-binary "$PING"
eq "$(code accept)" 406 "Accept without text/event-stream: 406"
head -c $((17 * 1024 * 1024)) /dev/zero | tr '\0' ' ' > big.json
post big @big.json "${S[@]}"
eq "$(code big)" 413 "a 17 MiB body: 413"
contains "$(error big)" "over the limit of 16777216 bytes" "a 17 MiB body: says the limit"
post badjson '{"jsonrpc":"2.0","id":5,"method":' "${S[@]}"
eq "$(code badjson)" 400 "unparseable JSON: 400"
eq "$(jq -r '.error.code' badjson.b)" -32700 "unparseable JSON: -32700"
eq "$(jq -r '.id' badjson.b)" null "unparseable JSON: id null"
post batch '[{"jsonrpc":"2.0","id":6,"method":"ping"}]' "${S[@]}"
eq "$(code batch)" 400 "a batch: 400"
eq "$(jq -r '.error.code' batch.b)" -32600 "a batch: -32600"
post unknown_method '{"jsonrpc":"2.0","id":7,"method":"server/discover"}' "${S[@]}"
eq "$(code unknown_method)" 200 "unknown method: answered"
eq "$(jq -r '.error.code' unknown_method.b)" -32601 "unknown method: -32601"
req put PUT -H "$JSON" "${S[@]}" --data-binary "$PING"
eq "$(code put)" 405 "PUT: 405"
contains "$(hdr put Allow)" "POST" "PUT: Allow lists the methods"
URL=http://127.0.0.1:$PORT/other post path "$PING" "${S[@]}"
eq "$(code path)" 404 "another path: 404"

# ---- GET: the session's event stream, one at a time
req get_plain GET "${S[@]}"
eq "$(code get_plain)" 405 "GET without Accept text/event-stream: 405"
curl -sS -N --max-time 30 -D get1.h -o get1.b -H "Accept: text/event-stream" "${S[@]}" "$URL" \
	2> /dev/null &
GET1=$!
for _ in $(seq 100); do grep -q '^HTTP/1.1 200' get1.h 2>/dev/null && break; sleep 0.05; done
contains "$(hdr get1 Content-Type)" "text/event-stream" "GET: an event stream"
req get2 GET -H "Accept: text/event-stream" "${S[@]}"
eq "$(code get2)" 409 "a second GET stream: 409"
contains "$(error get2)" "already has an open event stream" "a second GET stream: says why"
kill "$GET1" 2>/dev/null
wait "$GET1" 2>/dev/null
for _ in $(seq 10); do   # the server notices a client that left within a second or so
	req get3 GET -H "Accept: text/event-stream" "${S[@]}" --max-time 1
	[ "$(code get3)" = 409 ] || break
	sleep 0.5
done
eq "$(code get3)" 200 "GET again after the first stream's client left"
post after_get "$PING" "${S[@]}"
eq "$(code after_get)" 200 "the session outlives its streams"

# ---- bearer tokens
post tok_init "$INIT" -H "Authorization: Bearer $CI_TOKEN"
eq "$(code tok_init)" 200 "initialize with a bearer token: 200"
TSID=$(hdr tok_init Mcp-Session-Id)
T=(-H "Mcp-Session-Id: $TSID" -H "Authorization: Bearer $CI_TOKEN")
post tok_initialized "$INITIALIZED" "${T[@]}"
eq "$(code tok_initialized)" 202 "token session: initialized"
post tok_call "$CALL" "${T[@]}"
eq "$(code tok_call)" 200 "token session: tools/call"
sse tok_call | tail -n 1 > tok_call.json
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' tok_call.json)" ci "the token's principal makes the call"
eq "$(sql "SELECT principal FROM ops WHERE session = '$TSID'")" ci "the ledger row of the session's call names the token's principal"
post tok_wrong "$PING" -H "Mcp-Session-Id: $TSID" -H "Authorization: Bearer not-the-token"
eq "$(code tok_wrong)" 401 "an unknown bearer token: 401"
contains "$(hdr tok_wrong WWW-Authenticate)" "Bearer" "an unknown bearer token: WWW-Authenticate"
post tok_none "$PING" -H "Mcp-Session-Id: $TSID"
eq "$(code tok_none)" 403 "the token session without its token: 403"
post tok_other "$PING" -H "Mcp-Session-Id: $SID" -H "Authorization: Bearer $CI_TOKEN"
eq "$(code tok_other)" 403 "another session with a token it was not opened with: 403"
post tok_basic "$INIT" -H "Authorization: Basic dXNlcjpwYXNz"
eq "$(code tok_basic)" 401 "a non-bearer Authorization: 401"

# ---- a token's session is its owner's, whatever principal the server runs as
cat > ident.yaml <<'YAML'
approval: never
principals:
  local: {roles: [owner]}
  ci:    {roles: [reader], token_env: CI_TOKEN}
roles:
  owner:  {allow: ["*"]}
  reader: {allow: ["read_file"]}
YAML
MAIN_URL=$URL MAIN_PORT=$PORT
TOOLGATE_PRINCIPAL=local TOOLGATE_CONFIG=$WS/ident.yaml serve ident --http 127.0.0.1:0
IDENT_PID=$PID
URL=http://127.0.0.1:$PORT/mcp
CI=(-H "Authorization: Bearer $CI_TOKEN")
open_session id_ci "${CI[@]}"
[ -n "$OSID" ] || fail "TOOLGATE_PRINCIPAL=local: a token session: no session ($(code id_ci))"
post id_ci_read "$CALL" -H "Mcp-Session-Id: $OSID" "${CI[@]}"
result id_ci_read
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' id_ci_read.json)" ci "TOOLGATE_PRINCIPAL=local: the token's owner makes the call"
eq "$(jq -r '.result._meta["toolgate/envelope"].status' id_ci_read.json)" persisted "TOOLGATE_PRINCIPAL=local: the token's owner may read"
post id_ci_write "$WRITE" -H "Mcp-Session-Id: $OSID" "${CI[@]}"
result id_ci_write
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' id_ci_write.json)" ci "TOOLGATE_PRINCIPAL=local: a write is the token owner's"
eq "$(jq -r '.result._meta["toolgate/envelope"].status' id_ci_write.json)" denied "TOOLGATE_PRINCIPAL=local: a reader may not write_file"
eq "$(jq -r '.result.isError' id_ci_write.json)" true "TOOLGATE_PRINCIPAL=local: the denial is an error"
[ ! -e w.txt ] || fail "TOOLGATE_PRINCIPAL=local: the reader's write_file wrote w.txt"
open_session id_local
post id_local_write "$WRITE" -H "Mcp-Session-Id: $OSID"
result id_local_write
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' id_local_write.json)" local "TOOLGATE_PRINCIPAL=local: no token: the default principal"
eq "$(jq -r '.result._meta["toolgate/envelope"].status' id_local_write.json)" persisted "TOOLGATE_PRINCIPAL=local: the owner may write_file"
rm -f w.txt

# ---- a non-loopback address serves token holders only; loopback, anyone
serve any_net --http-any --http 0.0.0.0:0
ANY_PID=$PID
[ -n "$PORT" ] || fail "--http-any 0.0.0.0:0: no 'serving MCP on' line: $(cat any_net.err)"
URL=http://127.0.0.1:$PORT/mcp
post net_none "$INIT"
eq "$(code net_none)" 401 "--http-any 0.0.0.0: no token: 401"
contains "$(hdr net_none WWW-Authenticate)" "Bearer" "--http-any 0.0.0.0: no token: WWW-Authenticate"
contains "$(error net_none)" "only token holders are served" "--http-any 0.0.0.0: no token: says why"
req net_get GET -H "Accept: text/event-stream" -H "Mcp-Session-Id: 0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77"
eq "$(code net_get)" 401 "--http-any 0.0.0.0: GET without a token: 401"
open_session net_ci "${CI[@]}"
eq "$(code net_ci)" 200 "--http-any 0.0.0.0: a token: initialize"
post net_call "$CALL" -H "Mcp-Session-Id: $OSID" "${CI[@]}"
result net_call
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' net_call.json)" ci "--http-any 0.0.0.0: a token: the token's owner calls"
contains "$(jq -r '.result.content[0].text' net_call.json)" "alpha" "--http-any 0.0.0.0: a token: the call works"
serve any_lo --http-any --http 127.0.0.1:0
ANY_LO_PID=$PID
URL=http://127.0.0.1:$PORT/mcp
open_session lo_none
eq "$(code lo_none)" 200 "--http-any on loopback: no token is still served"
post lo_call "$CALL" -H "Mcp-Session-Id: $OSID"
result lo_call
eq "$(jq -r '.result._meta["toolgate/envelope"].principal' lo_call.json)" local "--http-any on loopback: no token: the default principal"
for p in "$IDENT_PID" "$ANY_PID" "$ANY_LO_PID"; do kill -TERM "$p"; ended "$p"; done
sanitizers ident.err "serve --http (TOOLGATE_PRINCIPAL=local)"
sanitizers any_net.err "serve --http-any 0.0.0.0"
sanitizers any_lo.err "serve --http-any 127.0.0.1"
URL=$MAIN_URL PORT=$MAIN_PORT

# ---- DELETE ends the session
req del DELETE "${S[@]}"
eq "$(code del)" 200 "DELETE: 200"
post after_del "$PING" "${S[@]}"
eq "$(code after_del)" 404 "after DELETE: 404"
req del_again DELETE "${S[@]}"
eq "$(code del_again)" 404 "DELETE twice: 404"
req del_none DELETE
eq "$(code del_none)" 400 "DELETE without a session: 400"

# ---- at most 256 sessions at once
urls=()
for _ in $(seq 260); do urls+=(-o /dev/null "$URL"); done
curl -sS -w '%{http_code}\n' --max-time 60 -H "$JSON" -H "$ACCEPT" --data-binary "$INIT" "${urls[@]}" \
	> many.codes 2> many.curl
eq "$(tail -n 1 many.codes)" 503 "the 257th session: 503"
eq "$(grep -c '^200$' many.codes)" 255 "sessions up to 256 (one was open): 200"
post many_more "$INIT"
contains "$(error many_more)" "too many sessions (256)" "the 257th session: says why"
req tok_del DELETE "${T[@]}"
eq "$(code tok_del)" 200 "DELETE makes room"
post one_more "$INIT"
eq "$(code one_more)" 200 "a session again once one ended"

# ---- startup refusals
"$TG" serve --workspace "$WS" --http 0.0.0.0:0 < /dev/null > any.out 2> any.err &
ANY=$!
PIDS+=("$ANY")
ended "$ANY"
eq "$ST" 1 "0.0.0.0 without --http-any: exit 1"
contains "$(cat any.err)" "not a loopback address" "0.0.0.0 without --http-any: says why"
"$TG" serve --workspace "$WS" --http "127.0.0.1:$PORT" < /dev/null > taken.out 2> taken.err &
TAKEN=$!
PIDS+=("$TAKEN")
ended "$TAKEN"
eq "$ST" 1 "a taken port: exit 1"
contains "$(cat taken.err)" "cannot listen on 127.0.0.1:$PORT: Address already in use" "a taken port: says why"
"$TG" serve --workspace "$WS" --http "localhost" < /dev/null > noport.out 2> noport.err
eq "$?" 1 "an address without a port: exit 1"
contains "$(cat noport.err)" "is not HOST:PORT" "an address without a port: says why"
# a libmicrohttpd that cannot be loaded: one sentence naming the library and its package
mkdir -p fakelib
: > fakelib/libmicrohttpd.so.12
LD_LIBRARY_PATH=$WS/fakelib "$TG" serve --workspace "$WS" --http 127.0.0.1:0 < /dev/null \
	> nomhd.out 2> nomhd.err
eq "$?" 1 "no usable libmicrohttpd: exit 1"
contains "$(cat nomhd.err)" "Streamable HTTP needs libmicrohttpd (Debian package libmicrohttpd12): " \
	"no usable libmicrohttpd: says which library and package"
contains "$(cat nomhd.err)" "file too short" "no usable libmicrohttpd: says what the loader said"
eq "$(cat nomhd.out)" "" "no usable libmicrohttpd: nothing on stdout"
rm -rf fakelib
for bad in "--page-size 0" "--max-line 1x" "--progress-ms -5" "--elicitation-timeout 86401"; do
	# shellcheck disable=SC2086 # the option and its value are two words
	"$TG" serve --workspace "$WS" $bad < /dev/null > badnum.out 2> badnum.err
	eq "$?" 1 "serve $bad: exit 1"
	contains "$(cat badnum.err)" "${bad%% *} takes a whole number from 1 to" "serve $bad: names the option"
	eq "$(cat badnum.out)" "" "serve $bad: nothing on stdout"
done
"$TG" serve --workspace "$WS" --approvals-via ask < /dev/null > badvia.out 2> badvia.err
eq "$?" 1 "serve --approvals-via ask: exit 1"
contains "$(cat badvia.err)" '--approvals-via takes elicitation, queue or both, not "ask"' \
	"serve --approvals-via ask: says what it takes"
printf 'approvals: {via: sometimes}\n' > badvia.yaml
"$TG" serve --workspace "$WS" --config badvia.yaml < /dev/null > badvia.out 2> badvia.err
eq "$?" 1 "approvals.via: sometimes: exit 1"
contains "$(cat badvia.err)" "badvia.yaml:1:18: approvals.via: expected one of both, elicitation, queue" \
	"approvals.via: sometimes: file:line and what it takes"

# ---- a clean stop
kill -TERM "$MAIN_PID"
ended "$MAIN_PID"
eq "$ST" 0 "SIGTERM: a clean stop"
sanitizers main.err "serve --http"
finish
