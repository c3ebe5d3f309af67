# toolgate console over plain HTTP (curl), every endpoint: signing in by
# the printed one-use URL (a second use refused), by the token (a wrong
# one refused, a cross-origin one refused); each page 200 with a session
# and 303 (pages) or 401 (the event stream, a fragment, an action)
# without; the security headers on every answer; an approval that a POST
# without a CSRF token, with a forged one, from another origin or without
# any origin cannot decide (it stays pending), and a good POST decides,
# recorded as decided by the console, releasing a call that waits on it;
# a bad Host (421) or none (400); the event stream delivering a new call's
# row within a second, resumable by Last-Event-ID, filtered; HEAD; the
# 400, 404, 405, 413 and 415 pages.  Then, for the process: a taken port,
# a ledger that cannot be opened, a non-loopback address, console.listen
# and console.token_env (a session outlives a restart with the same token,
# not with another), a clean stop on SIGTERM.  The HTTP part runs on
# SQLite, and again on PostgreSQL when $TOOLGATE_TEST_PG is set.
. "$(dirname "$0")/lib.sh"
cd "$WS"
if ! command -v curl > /dev/null; then
	fail "curl is not installed (scripts/install-deps test installs it)"
	finish; exit
fi

printf 'one\ntwo\n' > notes.txt
cat > toolgate.yaml <<'YAML'
approvals: {ttl_s: 300}
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

PIDS=()
stop_all() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap 'stop_all; chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS"' EXIT

# console NAME ARGS...: start `toolgate console` in the background, stderr to
# NAME.err; sets CPID, PORT, LOGIN (the one-use URL), TOKEN, BASE (empty
# when it never said where it listens).
console() {
	local name=$1; shift
	"$TG" console --workspace "$WS" "$@" < /dev/null > "$WS/$name.out" 2> "$WS/$name.err" &
	CPID=$!
	PIDS+=("$CPID")
	PORT= LOGIN= TOKEN= BASE=
	for _ in $(seq 200); do
		TOKEN=$(sed -n 's/^token: //p' "$WS/$name.err")
		[ -n "$TOKEN" ] && break
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.05
	done
	LOGIN=$(sed -n 's/^console: //p' "$WS/$name.err")
	PORT=$(sed -n 's|^console: http://tg-[0-9a-f]*\.localhost:\([0-9]*\)/login?code=[0-9a-f]*$|\1|p' "$WS/$name.err")
	[ -n "$PORT" ] && BASE=http://127.0.0.1:$PORT
}

# ended PID: ST = its exit status once it ended (killed after 10 s: 137)
ended() {
	for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$1" 2>/dev/null
	wait "$1"
	ST=$?
}

# req NAME METHOD PATH [CURL ARGS...]: one request to $BASE; the status to
# NAME.code, the headers to NAME.h, the body to NAME.b
req() {
	local name=$1 method=$2 path=$3; shift 3
	local how=(-X "$method")
	[ "$method" = HEAD ] && how=(--head)
	curl -sS "${how[@]}" -o "$WS/$name.b" -D "$WS/$name.h" -w '%{http_code}' --max-time 10 \
		"$@" "$BASE$path" > "$WS/$name.code" 2> "$WS/$name.curl"
}
code() { cat "$WS/$1.code"; }
body() { cat "$WS/$1.b"; }
# hdr NAME HEADER: the header's value (the last one), without the CR
hdr() { grep -i "^$2:" "$WS/$1.h" | tail -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'; }

CSP="default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
# secured NAME WHAT: the security headers are on the answer
secured() {
	eq "$(hdr "$1" Content-Security-Policy)" "$CSP" "$2: Content-Security-Policy"
	eq "$(hdr "$1" X-Content-Type-Options)" nosniff "$2: X-Content-Type-Options"
	eq "$(hdr "$1" X-Frame-Options)" DENY "$2: X-Frame-Options"
	eq "$(hdr "$1" Cache-Control)" no-store "$2: Cache-Control"
	eq "$(hdr "$1" Referrer-Policy)" same-origin "$2: Referrer-Policy"
}

# pending_ids: the ids of the pending approvals, one a line
pending_ids() { "$TG" approvals list --json 2>/dev/null | jq -r '.[] | select(.state == "pending") | .id'; }
# approval ID FIELD: a field of one approval (every one listed)
approval() { "$TG" approvals list --all --json 2>/dev/null | jq -r --arg id "$1" ".[] | select(.id == \$id) | .$2"; }

# queue NAME FILE: a write_file call queued for approval (it answers
# pending); its approval id in QID
queue() {
	tgcall "$1" write_file "{\"path\":\"$2\",\"content\":\"from $1\\n\"}"
	eq "$(jqv "$WS/$1.json" .status)" pending "$1: a write_file call is queued for approval"
	QID=$(jqv "$WS/$1.json" .error.message | grep -oE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' | head -n 1)
	[ -n "$QID" ] || fail "$1: no approval id in '$(jqv "$WS/$1.json" .error.message)'"
}

# ---------------------------------------------------------------------------
# suite KIND: every endpoint, on the ledger the environment names
suite() {
	local k=$1
	console "$k"
	[ -n "$BASE" ] || { fail "$k: no 'console:' line with a port: $(cat "$WS/$k.err")"; return; }
	local MAIN=$CPID
	contains "$LOGIN" "http://tg-" "$k: the sign-in URL names the console's own host name"
	contains "$LOGIN" ".localhost:$PORT/login?code=" "$k: the sign-in URL is printed on stderr"
	# its host name is the console's alone, so the cookie goes to no other server on
	# 127.0.0.1; that name is accepted as Host, another *.localhost is not
	OWN=${LOGIN#http://}; OWN=${OWN%%/*}
	req ownhost GET /login -H "Host: $OWN"
	eq "$(code ownhost)" 200 "$k: the console's own host name is accepted"
	req otherhost GET /login -H "Host: tg-00000000.localhost:$PORT"
	[ "$(code otherhost)" != 200 ] || fail "$k: another *.localhost name is accepted as Host"
	eq "${#TOKEN}" 64 "$k: a random token of 32 bytes in hex is printed"
	eq "$(wc -c < "$WS/$k.out")" 0 "$k: nothing on stdout"

	# ---- signing in ----
	req nosess GET /live
	eq "$(code nosess)" 303 "$k: a page without a session"
	eq "$(hdr nosess Location)" /login "$k: ... sends the browser to /login"
	secured nosess "$k: a 303"
	req login_form GET /login
	eq "$(code login_form)" 200 "$k: the login form"
	contains "$(body login_form)" 'id="login"' "$k: the login form is form#login"
	secured login_form "$k: the login form"

	curl -sS --head -o /dev/null -w '%{http_code}' --max-time 10 "$LOGIN" > "$WS/code0.code"
	eq "$(code code0)" 200 "$k: HEAD of the one-use URL (it does not spend the code)"
	curl -sS -o /dev/null -D "$WS/code1.h" -w '%{http_code}' --max-time 10 "$LOGIN" > "$WS/code1.code"
	eq "$(code code1)" 303 "$k: the one-use URL signs in"
	eq "$(hdr code1 Location)" /live "$k: ... and sends the browser on to /live"
	local sc
	sc=$(hdr code1 Set-Cookie)
	contains "$sc" "tgc_session=" "$k: the session cookie is set"
	contains "$sc" "HttpOnly" "$k: the cookie is HttpOnly"
	contains "$sc" "SameSite=Strict" "$k: the cookie is SameSite=Strict"
	contains "$sc" "Path=/" "$k: the cookie's Path is /"
	COOKIE="Cookie: $(echo "$sc" | sed 's/;.*//')"
	curl -sS -o "$WS/code2.b" -w '%{http_code}' --max-time 10 "$LOGIN" > "$WS/code2.code"
	eq "$(code code2)" 401 "$k: the one-use URL a second time is refused"
	contains "$(body code2)" 'class="error"' "$k: ... with the login form saying why"
	req badcode GET "/login?code=00ff"
	eq "$(code badcode)" 401 "$k: a made-up code is refused"

	req tok POST /login -H "Origin: $BASE" --data-urlencode "token=$TOKEN"
	eq "$(code tok)" 303 "$k: the token signs in"
	contains "$(hdr tok Set-Cookie)" "tgc_session=" "$k: ... and sets the cookie"
	req badtok POST /login -H "Origin: $BASE" --data-urlencode "token=${TOKEN}x"
	eq "$(code badtok)" 401 "$k: a wrong token is refused"
	contains "$(body badtok)" 'class="error"' "$k: ... with the login form saying why"
	[ -z "$(hdr badtok Set-Cookie)" ] || fail "$k: a wrong token set a cookie"
	req xtok POST /login -H "Origin: http://evil.example" --data-urlencode "token=$TOKEN"
	eq "$(code xtok)" 403 "$k: the token from another origin is refused"
	[ -z "$(hdr xtok Set-Cookie)" ] || fail "$k: a cross-origin login set a cookie"
	req notok POST /login --data-urlencode "token=$TOKEN"
	eq "$(code notok)" 403 "$k: the token without Origin or Referer is refused"
	req reftok POST /login -H "Referer: $BASE/login" --data-urlencode "token=$TOKEN"
	eq "$(code reftok)" 303 "$k: the token with a Referer of ours (no Origin) signs in"
	req forged GET /live -H "Cookie: tgc_session=$(printf '%064d' 0)"
	eq "$(code forged)" 303 "$k: a made-up session cookie is no session"

	# ---- calls to show ----
	tgcall "$k-read" --session "s-$k" read_file '{"path":"notes.txt"}'
	eq "$(jqv "$WS/$k-read.json" .status)" persisted "$k: a read_file call"
	local OP
	OP=$(jqv "$WS/$k-read.json" .op_id)

	# ---- every page with a session ----
	local p
	for p in /live "/live?tool=read_file&status=persisted" /approvals "/approvals?fragment=1" \
	         "/calls/$OP" /stats "/stats?window=hour" "/stats?window=all" /sessions \
	         "/sessions/s-$k"; do
		req page GET "$p" -H "$COOKIE"
		eq "$(code page)" 200 "$k: GET $p"
		secured page "$k: GET $p"
		contains "$(hdr page Content-Type)" "text/html" "$k: GET $p is HTML"
	done
	req live GET /live -H "$COOKIE"
	contains "$(body live)" 'data-page="live"' "$k: /live is the Live page"
	contains "$(body live)" "data-op-id=\"$OP\"" "$k: /live shows the call"
	local CSRF
	CSRF=$(body live | sed -n 's/.*<meta name="csrf-token" content="\([0-9a-f]*\)".*/\1/p' | head -n 1)
	eq "${#CSRF}" 64 "$k: the page carries the session's CSRF token"
	req call GET "/calls/$OP" -H "$COOKIE"
	contains "$(body call)" 'data-page="call"' "$k: /calls/<op> is the Call page"
	req root GET / -H "$COOKIE"
	eq "$(code root)" 303 "$k: / with a session"
	eq "$(hdr root Location)" /live "$k: ... goes to /live"
	req signedin GET /login -H "$COOKIE"
	eq "$(code signedin)" 303 "$k: /login when signed in goes to /live"
	for p in console.css console.js; do
		req asset GET "/static/$p"
		eq "$(code asset)" 200 "$k: /static/$p is open"
		secured asset "$k: /static/$p"
	done
	contains "$(hdr asset Content-Type)" javascript "$k: console.js is JavaScript"

	# ---- without a session ----
	for p in /approvals /stats /sessions "/calls/$OP" / /nope; do
		req out GET "$p"
		eq "$(code out)" 303 "$k: GET $p without a session"
		eq "$(hdr out Location)" /login "$k: GET $p without a session goes to /login"
	done
	for p in /events "/approvals?fragment=1"; do
		req out GET "$p"
		eq "$(code out)" 401 "$k: GET $p without a session"
		secured out "$k: 401 for $p"
	done

	# ---- HEAD, and the error pages ----
	req head HEAD /live -H "$COOKIE"
	eq "$(code head)" 200 "$k: HEAD /live"
	[ -z "$(grep -i '<html' "$WS/head.b")" ] || fail "$k: HEAD sent the page"
	req head HEAD /events -H "$COOKIE"
	eq "$(code head)" 200 "$k: HEAD /events"
	eq "$(hdr head Content-Type)" text/event-stream "$k: HEAD /events is an event stream"
	req nf GET /nope -H "$COOKIE"
	eq "$(code nf)" 404 "$k: an unknown page"
	contains "$(body nf)" 'data-page="error"' "$k: ... is the error page"
	secured nf "$k: the 404 page"
	req nf GET /static/other.js -H "$COOKIE"
	eq "$(code nf)" 404 "$k: an unknown asset"
	req op404 GET /calls/01a22d50-ec7e-7476-b51b-62450d5758e3 -H "$COOKIE"
	eq "$(code op404)" 404 "$k: an op the ledger does not have"
	req bad GET /calls/not-an-op -H "$COOKIE"
	eq "$(code bad)" 400 "$k: an op id that is not a UUID"
	contains "$(body bad)" "UUID" "$k: ... says what an op id is"
	req bad GET "/live?tool=%zz" -H "$COOKIE"
	eq "$(code bad)" 400 "$k: a bad percent-escape"
	req bad GET "/live?tool=%C0%AF" -H "$COOKIE"
	eq "$(code bad)" 400 "$k: a query that is not UTF-8"
	req na PUT /live -H "$COOKIE"
	eq "$(code na)" 405 "$k: PUT /live"
	eq "$(hdr na Allow)" "GET, HEAD" "$k: ... with Allow"
	req na POST /live -H "$COOKIE" -H "Origin: $BASE" -d "csrf=$CSRF"
	eq "$(code na)" 405 "$k: POST /live"
	req na GET "/approvals/01a22d50-ec7e-7476-b51b-62450d5758e3/approve" -H "$COOKIE"
	eq "$(code na)" 405 "$k: GET of an action"
	eq "$(hdr na Allow)" POST "$k: ... says POST"

	# ---- Host ----
	req host GET /live -H "$COOKIE" -H "Host: evil.example:$PORT"
	eq "$(code host)" 421 "$k: another Host"
	req host GET /live -H "$COOKIE" -H "Host: 127.0.0.1:1"
	eq "$(code host)" 421 "$k: another port in Host"
	req host GET /live -H "$COOKIE" -H "Host:"
	eq "$(code host)" 400 "$k: no Host"
	req host GET /live -H "$COOKIE" -H "Host: a b"
	eq "$(code host)" 400 "$k: a Host that is not one"
	req host GET /live -H "$COOKIE" -H "Host: localhost:$PORT"
	eq "$(code host)" 200 "$k: Host localhost with the port (bound to loopback)"

	# ---- approvals: refused without the session's CSRF token or from elsewhere ----
	queue "$k-q1" "$k-one.txt"
	local A=$QID
	req appr GET /approvals -H "$COOKIE"
	contains "$(body appr)" "data-id=\"$A\"" "$k: the Approvals page lists the pending approval"
	local act="/approvals/$A/approve"
	req no_csrf POST "$act" -H "$COOKIE" -H "Origin: $BASE"
	eq "$(code no_csrf)" 403 "$k: an approve without a CSRF token"
	contains "$(body no_csrf)" "CSRF" "$k: ... says why"
	req forged_csrf POST "$act" -H "$COOKIE" -H "Origin: $BASE" -d "csrf=$(printf '%064d' 1)"
	eq "$(code forged_csrf)" 403 "$k: an approve with a forged CSRF token"
	req xorigin POST "$act" -H "$COOKIE" -H "Origin: http://evil.example" -d "csrf=$CSRF"
	eq "$(code xorigin)" 403 "$k: an approve from another origin (with the right token)"
	req xport POST "$act" -H "$COOKIE" -H "Origin: http://127.0.0.1:1" -d "csrf=$CSRF"
	eq "$(code xport)" 403 "$k: an approve from another port"
	req norigin POST "$act" -H "$COOKIE" -d "csrf=$CSRF"
	eq "$(code norigin)" 403 "$k: an approve with neither Origin nor Referer"
	req xref POST "$act" -H "$COOKIE" -H "Referer: http://evil.example/approvals" -d "csrf=$CSRF"
	eq "$(code xref)" 403 "$k: an approve whose Referer is another origin"
	req nullo POST "$act" -H "$COOKIE" -H "Origin: null" -d "csrf=$CSRF"
	eq "$(code nullo)" 403 "$k: an approve from Origin null"
	req nosess_post POST "$act" -H "Origin: $BASE" -d "csrf=$CSRF"
	eq "$(code nosess_post)" 401 "$k: an approve without a session"
	req other_csrf POST "$act" -H "$COOKIE" -H "Origin: $BASE" \
		-d "csrf=$(body live | sed -n 's/.*csrf-token" content="\([0-9a-f]*\)".*/\1/p' | tr 0-9a-f a-f0-9 | head -n 1)"
	eq "$(code other_csrf)" 403 "$k: an approve with another token's digits"
	req mp POST "$act" -H "$COOKIE" -H "Origin: $BASE" -F "csrf=$CSRF"
	eq "$(code mp)" 415 "$k: a multipart form"
	head -c 70000 /dev/zero | tr '\0' a > "$WS/big.form"
	req big POST "$act" -H "$COOKIE" -H "Origin: $BASE" --data-binary "@$WS/big.form"
	eq "$(code big)" 413 "$k: a form over 64 KiB"
	eq "$(approval "$A" state)" pending "$k: after every refused POST the approval is still pending"

	# ---- a good approve decides it, recorded as the console's ----
	req good POST "$act" -H "$COOKIE" -H "Origin: $BASE" -d "csrf=$CSRF"
	eq "$(code good)" 303 "$k: an approve with the session's CSRF token from our origin"
	contains "$(hdr good Location)" /approvals "$k: ... goes back to /approvals"
	eq "$(approval "$A" state)" approved "$k: the approval is approved"
	eq "$(approval "$A" decided_by)" console "$k: ... decided by the console"
	req again POST "$act" -H "$COOKIE" -H "Origin: $BASE" -d "csrf=$CSRF"
	eq "$(code again)" 409 "$k: deciding it again"
	tgcall "$k-q1-retry" write_file "{\"path\":\"$k-one.txt\",\"content\":\"from $k-q1\\n\"}"
	eq "$(jqv "$WS/$k-q1-retry.json" .status)" persisted "$k: the approved call, retried, runs"

	# ---- deny, with a reason, through the X-CSRF-Token header and a Referer ----
	queue "$k-q2" "$k-two.txt"
	local D=$QID
	req deny POST "/approvals/$D/deny" -H "$COOKIE" -H "Referer: $BASE/approvals" \
		-H "X-CSRF-Token: $CSRF" --data-urlencode "reason=not this file"
	eq "$(code deny)" 303 "$k: a deny with the header token and a Referer of ours"
	eq "$(approval "$D" state)" denied "$k: the approval is denied"
	eq "$(approval "$D" decided_by)" console "$k: ... by the console"
	tgcall "$k-q2-retry" write_file "{\"path\":\"$k-two.txt\",\"content\":\"from $k-q2\\n\"}"
	eq "$(jqv "$WS/$k-q2-retry.json" .status)" denied "$k: the denied call, retried, is denied"

	# ---- a decision releases a call that waits for it ----
	(cd "$WS" && "$TG" call --json --wait-approval 30 write_file \
		"{\"path\":\"$k-three.txt\",\"content\":\"waited\\n\"}" > "$WS/$k-wait.json" \
		2> "$WS/$k-wait.err" < /dev/null; echo $? > "$WS/$k-wait.exit") &
	local WPID=$!
	local W=
	for _ in $(seq 100); do
		W=$(pending_ids | head -n 1)
		[ -n "$W" ] && break
		sleep 0.05
	done
	[ -n "$W" ] || fail "$k: the waiting call's approval was not queued"
	req wgood POST "/approvals/$W/approve" -H "$COOKIE" -H "Origin: $BASE" -d "csrf=$CSRF"
	eq "$(code wgood)" 303 "$k: approving the waiting call"
	ended "$WPID"
	eq "$(jqv "$WS/$k-wait.json" .status)" persisted "$k: the waiting call finishes persisted"
	eq "$(cat "$WS/$k-three.txt" 2>/dev/null)" waited "$k: ... and wrote its file"
	sanitizers "$WS/$k-wait.err" "$k: the waiting call"

	# ---- the event stream ----
	curl -sS -N --max-time 30 -H "$COOKIE" "$BASE/events" > "$WS/$k-sse.out" 2> "$WS/$k-sse.err" &
	local SSE=$!
	curl -sS -N --max-time 30 -H "$COOKIE" "$BASE/events?tool=write_file" > "$WS/$k-sse-w.out" 2>/dev/null &
	local SSEW=$!
	curl -sS -N --max-time 30 -H "$COOKIE" -H "Last-Event-ID: 0" "$BASE/events" > "$WS/$k-sse-0.out" 2>/dev/null &
	local SSE0=$!
	for _ in $(seq 100); do grep -q '^retry: ' "$WS/$k-sse.out" 2>/dev/null && break; sleep 0.05; done
	contains "$(cat "$WS/$k-sse.out")" "retry: 1000" "$k: the stream opens at once, with its retry"
	sleep 0.3
	tgcall "$k-live" --session "live-$k" read_file '{"path":"notes.txt"}'
	local t0 NEW seen=0
	t0=$(date +%s%N)
	NEW=$(jqv "$WS/$k-live.json" .op_id)
	for _ in $(seq 100); do
		grep -q "$NEW" "$WS/$k-sse.out" && { seen=1; break; }
		sleep 0.01
	done
	local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	eq "$seen" 1 "$k: the new call's row reaches the stream"
	[ "$ms" -lt 1000 ] || fail "$k: the row took $ms ms to reach the stream (1 s at most)"
	echo "$k: a call's row reached the event stream $ms ms after the call returned"
	local row
	row=$(grep -A1 '^event: call' "$WS/$k-sse.out" | grep "^data: .*$NEW" | head -n 1 | sed 's/^data: //')
	eq "$(jq -r .status <<< "$row")" persisted "$k: the row's status"
	eq "$(jq -r .tool <<< "$row")" read_file "$k: the row's tool"
	eq "$(jq -r .session <<< "$row")" "live-$k" "$k: the row's session"
	eq "$(jq -r .principal <<< "$row")" local "$k: the row's principal"
	contains "$(jq -r .summary <<< "$row")" notes.txt "$k: the row's argument summary"
	eq "$(jq -r '.duration_ms | type' <<< "$row")" number "$k: the row's duration"
	contains "$(grep -B2 "^data: .*$NEW" "$WS/$k-sse.out" | head -n 1)" "id: $(jq -r .seq <<< "$row")" \
		"$k: the event's id is its seq"
	[ -z "$(grep "$OP" "$WS/$k-sse.out")" ] || fail "$k: a stream from now sent an earlier call"
	sleep 0.3
	kill "$SSE" "$SSEW" "$SSE0" 2>/dev/null
	wait "$SSE" "$SSEW" "$SSE0" 2>/dev/null
	contains "$(cat "$WS/$k-sse-0.out")" "$OP" "$k: Last-Event-ID 0 resumes from the start"
	contains "$(cat "$WS/$k-sse-0.out")" "event: approval" "$k: ... with the approvals' events"
	[ -z "$(grep "$NEW" "$WS/$k-sse-w.out")" ] || fail "$k: the write_file stream sent a read_file call"
	req badid GET /events -H "$COOKIE" -H "Last-Event-ID: x1"
	eq "$(code badid)" 400 "$k: a Last-Event-ID that is not a seq"
	# the Live page carries the seq it was rendered at; a stream opened
	# with ?after= that seq sends a call that ended in between
	req lv GET /live -H "$COOKIE"
	local at
	at=$(body lv | sed -n 's/.*<table id="calls" data-seq="\([0-9]*\)".*/\1/p')
	[ -n "$at" ] || fail "$k: the Live page carries its seq"
	tgcall "$k-gap" read_file '{"path":"notes.txt"}'
	local GAP
	GAP=$(jqv "$WS/$k-gap.json" .op_id)
	curl -sS -N --max-time 2 -H "$COOKIE" "$BASE/events?after=$at" > "$WS/$k-sse-a.out" 2>/dev/null
	contains "$(cat "$WS/$k-sse-a.out")" "$GAP" "$k: ?after= sends the call that ended after the page"
	req badafter GET "/events?after=x" -H "$COOKIE"
	eq "$(code badafter)" 400 "$k: an after that is not a seq"

	# ---- SIGTERM: a clean stop, even with a stream open ----
	curl -sS -N --max-time 30 -H "$COOKIE" "$BASE/events" > /dev/null 2>&1 &
	SSE=$!
	sleep 0.3
	kill -TERM "$MAIN"
	ended "$MAIN"
	eq "$ST" 0 "$k: the console stops cleanly on SIGTERM, a stream open"
	wait "$SSE" 2>/dev/null
	sanitizers "$WS/$k.err" "$k: the console"
}

suite sqlite

# ---------------------------------------------------------------------------
# the process: startup refusals, console.listen, console.token_env

# a taken port
console taken --http 127.0.0.1:0
TPID=$CPID
TPORT=$PORT
"$TG" console --workspace "$WS" --http "127.0.0.1:$TPORT" < /dev/null > /dev/null 2> "$WS/taken2.err"
eq "$?" 1 "a taken port: exit 1"
eq "$(cat "$WS/taken2.err")" "toolgate: 127.0.0.1:$TPORT is already in use; choose another with --http" \
	"a taken port: the sentence"
kill "$TPID"; ended "$TPID"

# a ledger that cannot be opened: the gate's sentence
TOOLGATE_STORE=/nonexistent/dir/ledger.db "$TG" console --workspace "$WS" --http 127.0.0.1:0 \
	< /dev/null > /dev/null 2> "$WS/noledger.err"
eq "$?" 1 "a missing ledger directory: exit 1"
contains "$(cat "$WS/noledger.err")" "/nonexistent/dir" "a missing ledger: the sentence names it"
mkdir -p "$WS/dir.db"
TOOLGATE_STORE=$WS/dir.db "$TG" console --workspace "$WS" --http 127.0.0.1:0 \
	< /dev/null > /dev/null 2> "$WS/dirledger.err"
eq "$?" 1 "a ledger that is a directory: exit 1"
contains "$(cat "$WS/dirledger.err")" "not a regular file" "a ledger that is a directory: the sentence"
head -c 4096 /dev/urandom > "$WS/junk.db"
TOOLGATE_STORE=$WS/junk.db "$TG" console --workspace "$WS" --http 127.0.0.1:0 \
	< /dev/null > /dev/null 2> "$WS/junkledger.err"
eq "$?" 1 "a ledger that is not a database: exit 1"
contains "$(cat "$WS/junkledger.err")" "not a valid database" "an unreadable ledger: the sentence"

# addresses
"$TG" console --workspace "$WS" --http 0.0.0.0:0 < /dev/null > /dev/null 2> "$WS/remote.err"
eq "$?" 1 "a non-loopback address without --allow-remote: exit 1"
contains "$(cat "$WS/remote.err")" "not a loopback address" "a non-loopback address: the sentence"
"$TG" console --workspace "$WS" --http nonsense < /dev/null > /dev/null 2> "$WS/nonsense.err"
eq "$?" 1 "an address that is not HOST:PORT: exit 1"
contains "$(cat "$WS/nonsense.err")" "is not HOST:PORT" "an address that is not HOST:PORT: the sentence"
"$TG" console --workspace "$WS" --bogus < /dev/null > /dev/null 2> "$WS/usage.err"
eq "$?" 1 "an unknown option: exit 1"
contains "$(cat "$WS/usage.err")" "usage: toolgate console" "an unknown option: the usage"

# console.token_env and console.listen from the config
FREE=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$WS/tok.yaml" <<YAML
approvals: {ttl_s: 300}
console: {token_env: TG_CONSOLE_TEST_TOKEN, listen: "127.0.0.1:$FREE"}
YAML
TG_CONSOLE_TEST_TOKEN= "$TG" console --workspace "$WS" --config "$WS/tok.yaml" < /dev/null \
	> /dev/null 2> "$WS/notoken.err"
eq "$?" 1 "console.token_env naming an unset variable: exit 1"
contains "$(cat "$WS/notoken.err")" "TG_CONSOLE_TEST_TOKEN" "... the sentence names the variable"
TG_CONSOLE_TEST_TOKEN=short "$TG" console --workspace "$WS" --config "$WS/tok.yaml" < /dev/null \
	> /dev/null 2> "$WS/shorttoken.err"
eq "$?" 1 "a token shorter than 16 characters: exit 1"
printf 'console: {port: 1}\n' > "$WS/badkey.yaml"
"$TG" console --workspace "$WS" --config "$WS/badkey.yaml" < /dev/null > /dev/null 2> "$WS/badkey.err"
eq "$?" 1 "an unknown key in console: exit 1"
contains "$(cat "$WS/badkey.err")" 'unknown key "port"' "an unknown key in console: the sentence"

export TG_CONSOLE_TEST_TOKEN=this-is-the-console-token-42
console tok1 --config "$WS/tok.yaml"
eq "$PORT" "$FREE" "console.listen is where it listens"
eq "$TOKEN" "(from console.token_env)" "a configured token is not printed"
req t1 POST /login -H "Origin: $BASE" --data-urlencode "token=$TG_CONSOLE_TEST_TOKEN"
eq "$(code t1)" 303 "console.token_env's token signs in"
KEEP="Cookie: $(hdr t1 Set-Cookie | sed 's/;.*//')"
kill "$CPID"; ended "$CPID"
eq "$ST" 0 "stopped on SIGTERM"
# the same token after a restart: the session still holds
console tok2 --config "$WS/tok.yaml"
req t2 GET /live -H "$KEEP"
eq "$(code t2)" 200 "a session outlives a restart with the same token"
kill "$CPID"; ended "$CPID"
# another token: it does not
TG_CONSOLE_TEST_TOKEN=another-token-for-the-console console tok3 --config "$WS/tok.yaml"
req t3 GET /live -H "$KEEP"
eq "$(code t3)" 303 "a session does not outlive a restart with another token"
kill "$CPID"; ended "$CPID"
# --http wins over console.listen
console tok4 --config "$WS/tok.yaml" --http 127.0.0.1:0
[ -n "$PORT" ] && [ "$PORT" != "$FREE" ] || fail "--http did not win over console.listen (port '$PORT')"
kill "$CPID"; ended "$CPID"
unset TG_CONSOLE_TEST_TOKEN
for f in taken tok1 tok2 tok3 tok4; do sanitizers "$WS/$f.err" "console $f"; done

# ---------------------------------------------------------------------------
# the same over PostgreSQL
if [ -n "${TOOLGATE_TEST_PG:-}" ]; then
	. "$ROOT/tests/integration/support/pg/lib.sh"
	pg_newdb PGDB console
	export TOOLGATE_STORE=$PGDB
	suite postgres
	unset TOOLGATE_STORE
fi
finish
