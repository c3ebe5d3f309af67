# Network by host through the gate (issue 20): the shell tool under a
# profile with `network: [api.allowed.test:P]` reaches that host through the
# gate's filtering proxy and nothing else; a refused host is a
# tool.network.denied event naming it and a warning the model reads.  Run as
# root and as an unprivileged user made here (runuser), each half in a tree
# of its own.
#
# The gate resolves names (the proxy runs in it): it runs in a mount
# namespace of its own whose /etc/hosts maps api.allowed.test and evil.test
# to 127.0.0.1, where one python http.server answers on port P.  Inside the
# sandbox (its own network namespace, whose only way out is the proxy):
#   - curl to the allowed host succeeds, as plain HTTP and through a CONNECT
#     tunnel (curl -p), and with python's urllib, through the proxy variables
#     the sandbox set (control);
#   - evil.test gets 403 for both, the call keeps status persisted (the
#     command ran), its events name evil.test (why host_denied, the port,
#     the op id, a count for the repeat), in the ledger and the event stream
#     (events.jsonl), its warnings too; an allowed host on another port:
#     403, port_denied;
#   - a dry run shows the list and the proxy variables, and would run;
#   - without the proxy nothing leaves: TCP to 127.0.0.1:P (the sandbox's
#     own loopback) and to this machine's address fails, UDP to the
#     resolver is unreachable, a unix socket outside the workspace is not
#     there; a socket family other than unix/inet/inet6 is refused;
#   - a call may not set the proxy variables itself.
# `network: true` still reaches 127.0.0.1:P directly (no proxy variables);
# `network: false` reaches nothing (socket(AF_INET) refused).  Landlock with
# a list of hosts is refused with a sentence, even when the profile accepts
# Landlock; doctor says what each backend enforces for each network mode.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "FAIL: $PY is needed" >&2; exit 1; }
for p in bwrap curl unshare runuser setpriv jq sqlite3; do
	command -v $p > /dev/null || { echo "FAIL: $p is needed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a mount namespace for the test names, and a user made here)"; exit 0; }
SUPPORT=$ROOT/tests/integration/support

BASE=$(mktemp -d /var/lib/tg-netsb.XXXXXX)
chmod 755 "$BASE"
USER_MADE=
BG=()
cleanup() {
	for p in "${BG[@]}"; do kill -9 "$p" 2> /dev/null; done
	wait 2> /dev/null
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$BASE"
	rm -rf "$WS"
}
trap cleanup EXIT

mkdir -p "$BASE/www"
echo "hello from the origin" > "$BASE/www/hello.txt"
printf '127.0.0.1 localhost\n::1 localhost\n127.0.0.1 api.allowed.test evil.test\n' > "$BASE/hosts"
chmod -R a+rX "$BASE"
HOSTIP=$(hostname -I 2> /dev/null | awk '{print $1}')
case $HOSTIP in *.*.*.*) ;; *) HOSTIP= ;; esac
RESOLVER=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)
read -r P Q < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("0.0.0.0", 0))
print(*[x.getsockname()[1] for x in s])')
# one server for both names, on every address (the host's own too); a
# second port the list does not name
"$PY" -m http.server --bind 0.0.0.0 --directory "$BASE/www" "$P" > /dev/null 2> "$BASE/p.log" &
BG+=($!)
"$PY" -m http.server --bind 127.0.0.1 --directory "$BASE/www" "$Q" > /dev/null 2> /dev/null &
BG+=($!)
for _ in $(seq 100); do
	curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$P/" &&
		curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$Q/" && break
	sleep 0.1
done

setup() { # DIR OWNER
	local d=$1 owner=$2
	mkdir -p "$d/ws" "$d/sock" "$d/out" "$d/home"
	cp "$SUPPORT/contain.py" "$d/ws/contain.py"
	cat > "$d/ws/probe.py" <<-'PY'
	import socket, sys, errno
	def tcp(host, port):
	    try:
	        socket.create_connection((host, int(port)), timeout=3).close(); return "connected"
	    except OSError as e:
	        return errno.errorcode.get(e.errno, "timeout") if e.errno else "timeout"
	def udp(host):
	    try:
	        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", (host, 53)); return "sent"
	    except OSError as e:
	        return errno.errorcode.get(e.errno, "other")
	def family(f):
	    try:
	        socket.socket(f, socket.SOCK_RAW if f == socket.AF_PACKET else socket.SOCK_DGRAM).close(); return "made"
	    except OSError as e:
	        return errno.errorcode.get(e.errno, "other")
	what = sys.argv[1]
	if what == "tcp": print("tcp " + " ".join(tcp(h, sys.argv[2]) for h in sys.argv[3:] if h))
	elif what == "udp": print("udp " + udp(sys.argv[2] or "1.1.1.1"))
	elif what == "fetch":
	    import urllib.request
	    print(urllib.request.urlopen(sys.argv[2], timeout=10).read().decode().strip())
	elif what == "family":
	    print("inet " + family(socket.AF_INET) + " netlink " + family(socket.AF_NETLINK) + " packet " + family(socket.AF_PACKET))
	PY
	# a command tool and a bridged server (a small MCP server) under the
	# same list of hosts: each runs the command it is given
	cat > "$d/ws/run.py" <<-'PY'
	import json, subprocess, sys
	call = json.load(sys.stdin)
	r = subprocess.run(["/bin/sh", "-c", call["args"]["cmd"]], capture_output=True, text=True)
	print(json.dumps({"out": r.stdout + r.stderr}))
	PY
	cat > "$d/ws/srv.py" <<-'PY'
	import json, subprocess, sys
	TOOL = {"name": "run", "description": "Runs a command.",
	        "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
	def reply(i, result):
	    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": result}) + "\n"); sys.stdout.flush()
	for line in sys.stdin:
	    m = json.loads(line); meth, i = m.get("method"), m.get("id")
	    if i is None: continue
	    if meth == "initialize":
	        reply(i, {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
	                  "serverInfo": {"name": "srv", "version": "1"}})
	    elif meth == "tools/list": reply(i, {"tools": [TOOL]})
	    elif meth == "tools/call":
	        r = subprocess.run(["/bin/sh", "-c", m["params"]["arguments"]["cmd"]], capture_output=True,
	                           text=True, stdin=subprocess.DEVNULL)
	        reply(i, {"content": [{"type": "text", "text": r.stdout + r.stderr}]})
	    else: reply(i, {})
	PY
	local common="workspace: $d/ws
mode: bypassPermissions
approval: never"
	printf '%s\nsandbox: {mode: workspace-write, network: [api.allowed.test:%s]}\nshell: {env_allow: [HTTPS_PROXY, FOO]}\nevents: {jsonl: .toolgate/events.jsonl}\n' "$common" "$P" > "$d/hosts.yaml"
	cat >> "$d/hosts.yaml" <<-YAML
	tools:
	  fetch:
	    description: Runs a command.
	    command: [$PY, run.py]
	    input_schema: {type: object, properties: {cmd: {type: string}}, required: [cmd]}
	mcp_servers:
	  srv: {command: [$PY, srv.py], sandbox: {network: [api.allowed.test:$P]}, timeout_s: 30}
	YAML
	printf '%s\nsandbox: {mode: workspace-write, network: true}\n' "$common" > "$d/on.yaml"
	printf '%s\nsandbox: {mode: workspace-write, network: false}\n' "$common" > "$d/off.yaml"
	printf '%s\nsandbox: {mode: workspace-write, network: [api.allowed.test:%s], accept: [landlock]}\n' "$common" "$P" > "$d/landlock.yaml"
	chown -R "$owner" "$d"
	chmod 755 "$d"
}

AS= D= OUT= RUN_TG= RUN_LSAN=
# tg NAME CONFIG ARGS...: toolgate ARGS as the half's user, in a mount
# namespace whose /etc/hosts has the test names; stdout to $OUT/NAME.json
tg() {
	local name=$1 cfg=$2; shift 2
	local run=(env HOME="$D/home" LSAN_OPTIONS="$RUN_LSAN" ${TG_ENV:-} "$RUN_TG" "$@" --config "$D/$cfg.yaml")
	[ -z "$AS" ] || run=(runuser -u "$AS" -- "${run[@]}")
	(cd "$D/ws" && unshare -m --propagation private -- sh -c \
		'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh "$BASE/hosts" "${run[@]}" \
		> "$OUT/$name.json" 2> "$OUT/$name.err" < /dev/null)
	sanitizers "$OUT/$name.err" "$name"
}
sh_call() { # NAME CONFIG COMMAND [EXTRA ARGS JSON]
	local name=$1 cfg=$2 cmd=$3 extra=${4:-'{}'}
	tg "$name" "$cfg" call --json shell "$(jq -cn --arg c "$cmd" --argjson e "$extra" '{command: $c} + $e')"
}
st() { jq -r .status "$OUT/$1.json" 2> /dev/null; }
so() { jq -r '.output.stdout // ""' "$OUT/$1.json" 2> /dev/null; }
why() { echo "status $(st "$1"), $(jq -c '.error // .output | tostring | .[0:400]' "$OUT/$1.json" 2> /dev/null) $(head -c 300 "$OUT/$1.err")"; }
ran() { # NAME WHAT
	CHECKS=$((CHECKS + 1))
	[ "$(st "$1")" = persisted ] || fail "$2: did not run: $(why "$1")"
}
events() { # NAME: the call's tool.network.denied events, one JSON per line
	local op
	op=$(jq -r .op_id "$OUT/$1.json")
	sqlite3 "$D/ws/.toolgate/ledger.db" "SELECT data FROM events WHERE op_id = '$op' AND type = 'tool.network.denied' ORDER BY seq"
}

half() { # AS DIR LABEL
	AS=$1 D=$2
	local l=$3 c
	OUT=$D/out
	reach_as "$AS" "$BASE"

	# ---- control: the allowed host, plain and through a tunnel
	c='curl -s --max-time 10'
	sh_call "$l-ok" hosts "$c http://api.allowed.test:$P/hello.txt; $c -p http://api.allowed.test:$P/hello.txt; $PY probe.py fetch http://api.allowed.test:$P/hello.txt; echo \"proxy=\$HTTPS_PROXY\""
	ran "$l-ok" "$l: the allowed host"
	eq "$(so "$l-ok")" "$(printf 'hello from the origin\nhello from the origin\nhello from the origin\nproxy=http://127.0.0.1:3128')" "$l: the allowed host's body: curl plain and tunnelled, python's urllib"
	eq "$(events "$l-ok")" "" "$l: no denial for the allowed host"
	eq "$(jq -r '.warnings // [] | length' "$OUT/$l-ok.json")" 0 "$l: no warning for the allowed host"

	# ---- a host not on the list, and a port not on it
	sh_call "$l-evil" hosts "$c -o /dev/null -w '%{http_code}\\n' http://evil.test:$P/hello.txt; $c -o /dev/null http://evil.test:$P/again.txt; $c -p -o /dev/null -w '%{http_connect}\\n' http://evil.test:$P/hello.txt; $c -o /dev/null -w '%{http_code}\\n' http://api.allowed.test:$Q/hello.txt"
	ran "$l-evil" "$l: the command that asks for evil.test ran"
	eq "$(so "$l-evil")" "$(printf '403\n403\n403')" "$l: evil.test refused (HTTP, CONNECT) and the other port"
	local ev
	ev=$(events "$l-evil")
	local op
	op=$(jq -r .op_id "$OUT/$l-evil.json")
	eq "$(echo "$ev" | jq -rc 'select(.method == "GET" and .host == "evil.test") | [.why, .port, .op_id, .count] | @tsv')" "$(printf 'host_denied\t%s\t%s\t2' "$P" "$op")" "$l: one event names evil.test (GET, twice)"
	eq "$(echo "$ev" | jq -rc 'select(.method == "CONNECT") | [.host, .why, .port] | @tsv')" "$(printf 'evil.test\thost_denied\t%s' "$P")" "$l: the event names evil.test (CONNECT)"
	eq "$(echo "$ev" | jq -rc 'select(.host == "api.allowed.test") | [.why, .port] | @tsv')" "$(printf 'port_denied\t%s' "$Q")" "$l: the event names the port"
	contains "$(jq -r '.warnings | join("\n")' "$OUT/$l-evil.json")" "refused evil.test:$P (GET, 2 times)" "$l: the warning names evil.test"
	eq "$(echo "$ev" | grep -c .)" 3 "$l: one event per refused destination"
	eq "$(jq -rc --arg op "$op" 'select(.type == "tool.network.denied" and .op_id == $op) | .data.host' "$D/ws/.toolgate/events.jsonl" 2> /dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')" " 1 api.allowed.test; 2 evil.test;" "$l: the event stream has them too"

	# ---- nothing leaves without the proxy (the unix socket answers outside)
	CHECKS=$((CHECKS + 1))
	[[ $(setpriv --reuid="${AS:-root}" --regid="$(id -g "${AS:-root}")" --clear-groups -- "$PY" "$SUPPORT/contain.py" connect "$D/sock/s") == *": ok"* ]] || fail "$l: the unix socket does not answer outside"
	sh_call "$l-direct" hosts "$c --noproxy '*' -o /dev/null http://127.0.0.1:$P/hello.txt; echo curl=\$?; $PY probe.py tcp $P 127.0.0.1 $HOSTIP; $PY probe.py udp '$RESOLVER'; $PY probe.py family; $PY contain.py connect $D/sock/s"
	ran "$l-direct" "$l: the direct attempts ran"
	contains "$(so "$l-direct")" "curl=7" "$l: curl to 127.0.0.1:$P without the proxy cannot connect"
	local tcp
	tcp=$(so "$l-direct" | sed -n 's/^tcp //p')
	CHECKS=$((CHECKS + 1))
	case " $tcp " in *connected* | *timeout* | "  ") fail "$l: direct TCP: '$tcp'" ;; esac
	contains "$(so "$l-direct")" "udp ENETUNREACH" "$l: UDP to the resolver"
	contains "$(so "$l-direct")" "inet made netlink EPERM packet EPERM" "$l: inet sockets made, netlink and packet refused"
	CHECKS=$((CHECKS + 1))
	so "$l-direct" | grep -q "^connect $D/sock/s: ok" && fail "$l: the unix socket outside answered"
	contains "$(so "$l-direct")" "connect $D/sock/s: " "$l: the unix socket outside was tried"

	# ---- a command tool and a bridged server: the same list, the same proxy
	c2="curl -s --max-time 10 -o /dev/null -w '%{http_code} '"
	tg "$l-tool" hosts call --json fetch "$(jq -cn --arg c "$c2 http://api.allowed.test:$P/hello.txt; $c2 http://evil.test:$P/x" '{cmd: $c}')"
	ran "$l-tool" "$l: the command tool ran"
	eq "$(jq -r '.output.out // .output' "$OUT/$l-tool.json")" "200 403 " "$l: the command tool reaches the allowed host only"
	eq "$(events "$l-tool" | jq -r '[.host, .why] | @tsv')" "$(printf 'evil.test\thost_denied')" "$l: the command tool's refusal is its call's event"
	tg "$l-srv" hosts call --json srv__run "$(jq -cn --arg c "$c2 http://api.allowed.test:$P/hello.txt; $c2 http://evil.test:$P/x; $c2 --noproxy '*' http://127.0.0.1:$P/x" '{cmd: $c}')"
	ran "$l-srv" "$l: the bridged server's tool ran"
	contains "$(jq -r '.output | tostring' "$OUT/$l-srv.json")" "200 403 000" "$l: the bridged server reaches the allowed host only, through the proxy"
	eq "$(events "$l-srv" | jq -r '[.host, .why] | @tsv')" "$(printf 'evil.test\thost_denied')" "$l: the bridged server's refusal is the call's event"

	# ---- a dry run shows the list and the proxy variables, and would run
	tg "$l-plan" hosts call --json --dry-run shell '{"command": "curl http://api.allowed.test/"}'
	eq "$(st "$l-plan")" dry_run "$l: the dry run"
	eq "$(jq -rc '[.output.plan.sandbox.network, .output.plan.env.HTTPS_PROXY, (.output.plan.would_fail // "none")] | tostring' "$OUT/$l-plan.json")" "[[\"api.allowed.test:$P\"],\"http://127.0.0.1:3128\",\"none\"]" "$l: the plan's network, proxy and no would_fail"

	# ---- a call may not point the proxy variables elsewhere
	sh_call "$l-env" hosts "echo x" '{"env": {"HTTPS_PROXY": "http://10.0.0.1:1"}}'
	eq "$(st "$l-env")" failed "$l: setting HTTPS_PROXY refused"
	contains "$(jq -r .error.message "$OUT/$l-env.json")" "set by the sandbox" "$l: the sentence says why"

	# ---- network: true and false as before
	sh_call "$l-on" on "$c --noproxy '*' http://127.0.0.1:$P/hello.txt; echo \"proxy=[\$HTTPS_PROXY]\""
	eq "$(so "$l-on")" "$(printf 'hello from the origin\nproxy=[]')" "$l: network: true reaches loopback directly"
	sh_call "$l-off" off "$c http://127.0.0.1:$P/hello.txt; echo curl=\$?; $PY probe.py family; echo \"proxy=[\$HTTPS_PROXY]\""
	ran "$l-off" "$l: network: false"
	contains "$(so "$l-off")" "curl=7" "$l: network: false reaches nothing"
	contains "$(so "$l-off")" "inet EPERM" "$l: network: false refuses inet sockets"
	contains "$(so "$l-off")" "proxy=[]" "$l: network: false sets no proxy"

	# ---- Landlock cannot keep a command to the proxy: refused
	TG_ENV=TOOLGATE_SANDBOX_BACKEND=landlock sh_call "$l-landlock" landlock "echo ran"
	CHECKS=$((CHECKS + 1))
	[ "$(st "$l-landlock")" != persisted ] || fail "$l: Landlock ran a command with a list of hosts"
	if [ -n "$LANDLOCK" ]; then
		contains "$(jq -r .error.message "$OUT/$l-landlock.json")" "network by host" "$l: Landlock's refusal names network by host"
	else
		contains "$(jq -r .error.message "$OUT/$l-landlock.json")" "refusing to run" "$l: no Landlock here: refused too"
	fi

	# ---- doctor
	tg "$l-doctor" hosts doctor --json
	eq "$(jq -r '.network.bubblewrap.hosts.enforceable' "$OUT/$l-doctor.json")" true "$l: doctor: bubblewrap enforces hosts"
	eq "$(jq -r '.network.landlock.hosts.enforceable' "$OUT/$l-doctor.json")" false "$l: doctor: Landlock does not"
	eq "$(jq -r '.shell.network | join(",")' "$OUT/$l-doctor.json")" "api.allowed.test:$P" "$l: doctor: the shell's hosts"
}

# is Landlock there (the refusal's sentence differs without it)?
LANDLOCK=
[ "$(cd "$BASE" && "$TG" doctor --json 2> /dev/null | jq -r '.landlock_abi // 0')" -gt 0 ] 2> /dev/null && LANDLOCK=1

# a unix socket listener outside every workspace
"$PY" "$SUPPORT/contain.py" listen "$BASE/sock" "$BASE/sock.ready" > /dev/null 2>&1 &
BG+=($!)
disown $!
for _ in $(seq 250); do [ -s "$BASE/sock.ready" ] && break; sleep 0.02; done

setup "$BASE/root" root
ln -s "$BASE/sock" "$BASE/root/sock/s"
half "" "$BASE/root" root

U=tgnetsb
if ! id "$U" > /dev/null 2>&1; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit; }
	USER_MADE=$U
fi
setup "$BASE/user" "$U"
ln -s "$BASE/sock" "$BASE/user/sock/s"
half "$U" "$BASE/user" user
finish
