# The events socket (issue 22 §3): under the most permissive umask (000),
# the socket is never, not for an instant, a name another user could
# connect to: an LD_PRELOAD shim (support/bind_watch.c) looks at every
# socket name the gate makes (bind, link, rename) right after the call
# returns, and says whether its mode and its directory's let group or
# others in.  The end state, while a gate serves it: mode 0600, owned by
# the gate's user, nothing left beside it; another user's connect is
# refused, the owner's accepted.  Run as root and as an unprivileged user
# (the other user is `nobody` for root, a user made here for the
# unprivileged one).
. "$(dirname "$0")/lib.sh"

SHIM_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$WS/bind_watch.so" \
	"$ROOT/tests/integration/support/bind_watch.c" -ldl || { echo "cannot build the shim" >&2; exit 1; }
chmod 755 "$WS" "$WS/bind_watch.so"

USER_MADE=
cleanup_user() { [ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null; }
trap 'cleanup_user; chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS"' EXIT

# as USER COMMAND...: COMMAND as USER (empty: this user) under umask 000
as() {
	local u=$1; shift
	if [ -n "$u" ]; then
		runuser -u "$u" -- sh -c 'umask 000; exec "$@"' sh "$@"
	else
		sh -c 'umask 000; exec "$@"' sh "$@"
	fi
}

# connects USER PATH: "ok" or the error of USER's connect to the socket
connects() {
	local u=$1 path=$2
	local run=(python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1]); print("ok")
except OSError as e:
    print(type(e).__name__)' "$path")
	if [ -n "$u" ]; then runuser -u "$u" -- "${run[@]}"; else "${run[@]}"; fi
}

half() { # AS OTHER LABEL
	local u=$1 other=$2 l=$3
	local D=$WS/$l
	mkdir -p "$D/ws" "$D/home"
	reach_as "$u" "$D"
	cat > "$D/ws/toolgate.yaml" <<-'YAML'
	mode: bypassPermissions
	events:
	  socket: events.sock
	YAML
	[ -z "$u" ] || chown -R "$u:" "$D"
	chmod 755 "$D" "$D/ws"
	local env=(env HOME="$D/home" LSAN_OPTIONS="$RUN_LSAN" TOOLGATE_CONFIG="$D/ws/toolgate.yaml")

	# ---- every name the socket ever had, the instant it had it
	(cd "$D/ws" && as "$u" "${env[@]}" BIND_LOG="$D/bind.log" LD_PRELOAD="$WS/bind_watch.so" \
		ASAN_OPTIONS="$SHIM_ASAN" "$RUN_TG" call --json list_dir '{}' > "$D/call.json" 2> "$D/call.err" < /dev/null)
	sanitizers "$D/call.err" "$l: call"
	eq "$(jq -r .status "$D/call.json" 2> /dev/null)" persisted "$l: the call runs ($(head -c 300 "$D/call.err"))"
	CHECKS=$((CHECKS + 1))
	grep -q '^bind ' "$D/bind.log" 2> /dev/null || fail "$l: the gate bound its socket (shim log: $(cat "$D/bind.log" 2> /dev/null))"
	CHECKS=$((CHECKS + 1))
	! grep -q ' open$' "$D/bind.log" 2> /dev/null ||
		fail "$l: under umask 000 the socket was a name another user could connect to: $(grep ' open$' "$D/bind.log" | head -n 3 | tr '\n' ';')"
	eq "$(ls -A "$D/ws" | grep -v -e '^toolgate.yaml$' -e '^.toolgate$' | tr '\n' ' ')" "" \
		"$l: a gate that stopped leaves nothing beside the workspace's files"

	# ---- the end state, while a gate serves it
	rm -f "$D/in"; mkfifo "$D/in"; chmod 666 "$D/in"
	(cd "$D/ws" && as "$u" "${env[@]}" "$RUN_TG" serve --stdio < "$D/in" > /dev/null 2> "$D/serve.err") &
	local serve=$!
	exec 3> "$D/in"
	for _ in $(seq 250); do [ -S "$D/ws/events.sock" ] && break; sleep 0.02; done
	eq "$(stat -c '%a %U' "$D/ws/events.sock" 2>&1)" "600 ${u:-$(id -un)}" "$l: the served socket's mode and owner"
	eq "$(ls -A "$D/ws" | grep -v -e '^toolgate.yaml$' -e '^.toolgate$' -e '^events.sock$' | tr '\n' ' ')" "" \
		"$l: nothing left beside the socket"
	eq "$(connects "$u" "$D/ws/events.sock")" ok "$l: the gate's user subscribes"
	eq "$(connects "$other" "$D/ws/events.sock")" PermissionError "$l: another user ($other) cannot connect"
	exec 3>&-
	wait "$serve"
	sanitizers "$D/serve.err" "$l: serve"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/ws/events.sock" ] || fail "$l: serve left its socket when it stopped"
}

if [ "$(id -u)" = 0 ]; then
	id nobody > /dev/null 2>&1 || { echo "FAIL: the user nobody is needed" >&2; exit 1; }
	half "" nobody root
	U=tgsockev
	if ! id "$U" > /dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit; }
		USER_MADE=$U
	fi
	half nobody "$U" user
else
	echo "not root: this user's half only, with nobody as the other user"
	half "" nobody user
fi
finish
