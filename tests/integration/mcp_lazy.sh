# Bridged MCP servers start when one of their tools is first needed (issue
# 21): not for a built-in call (no start, fast), but for a call naming one
# of their tools, `toolgate tools`, and MCP tools/list from `toolgate
# serve`; what a server writes on stderr goes to .toolgate/logs/<server>.log,
# never to the terminal, bounded in size; a server that cannot start
# leaves its tools unavailable, quoting its last line.
. "$(dirname "$0")/lib.sh"
cd "$WS"

# a python3 of the system's: the server's sandbox shows the system, not $HOME
PY=
for p in /usr/bin/python3 /usr/local/bin/python3; do [ -x "$p" ] && PY=$p && break; done
[ -n "$PY" ] || { fail "python3 is not installed in /usr (scripts/install-deps installs it)"; finish; exit; }
# the server: a line in ./started when it starts, one on stderr, then a
# second's start-up before it answers (what a real server's npx costs)
cat > srv.py <<'PY'
import json, os, sys, time
open("started", "a").write("started\n")
sys.stderr.write("srv: hello from the server's stderr\n"); sys.stderr.flush()
if os.environ.get("CHATTY"):
    for i in range(24000):
        sys.stderr.write("chatty line %06d %s\n" % (i, "x" * 50))
    sys.stderr.flush()
time.sleep(float(os.environ.get("SLOW", "0")))
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    meth = m.get("method")
    if meth == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "srv", "version": "1"}}
    elif meth == "tools/list":
        r = {"tools": [{"name": "echo", "inputSchema": {"type": "object",
             "properties": {"text": {"type": "string"}}}}]}
    elif meth == "tools/call":
        sys.stderr.write("srv: called\n"); sys.stderr.flush()
        r = {"content": [{"type": "text", "text": "echo: %s" % m["params"]["arguments"].get("text")}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
PY
printf 'hello\n' > a.txt
cat > toolgate.yaml <<EOF
profile: full
mode: bypassPermissions
mcp_servers:
  srv:
    command: [$PY, srv.py]
    env: {SLOW: "1"}
    sandbox: workspace-write
EOF
starts() { grep -c started started 2> /dev/null || echo 0; }
LOG=.toolgate/logs/srv.log

# ---- a built-in call: no server started, no second waited ----
t0=$(date +%s%N)
tgcall read read_file '{"path":"a.txt"}'
ms=$((($(date +%s%N) - t0) / 1000000))
eq "$(jqv read.json .status)" persisted "a built-in call with a server configured runs"
eq "$(starts)" 0 "a built-in call starts no bridged server"
[ "$ms" -lt 1000 ] || fail "a built-in call waits for no server: it took $ms ms (the server takes 1 s to start)"
CHECKS=$((CHECKS + 1))
echo "read_file with a (slow) bridged server configured: $ms ms"
[ ! -e "$LOG" ] || fail "a built-in call makes no server log"
CHECKS=$((CHECKS + 1))

# ---- a call naming the server's tool starts it; its stderr goes to its log ----
tgcall echo srv__echo '{"text":"hi"}'
eq "$(jqv echo.json .status)" persisted "a call of a bridged tool starts its server and runs"
eq "$(jqv echo.json '.output.content[0].text')" "echo: hi" "with the server's answer"
eq "$(starts)" 1 "the server started once"
contains "$(cat "$LOG")" "srv: hello from the server's stderr" "the server's stderr is in its log"
contains "$(cat "$LOG")" "srv: called" "all of it, the call's too"
contains "$(cat "$LOG")" "toolgate: it offers 1 tool: srv__echo" "the log says what it offers"
if grep -q "srv:" echo.err; then fail "the server's stderr reached the terminal: $(cat echo.err)"; fi
CHECKS=$((CHECKS + 1))
eq "$(stat -c %a .toolgate/logs)" 700 "the logs directory is the user's alone"

# ---- a listing starts it: toolgate tools ----
(cd "$WS" && "$TG" tools > tools.json 2> tools.err)
sanitizers tools.err tools
eq "$(jq -r '[.[].name] | index("srv__echo") != null' tools.json)" true "toolgate tools lists the bridged tool"
eq "$(starts)" 2 "toolgate tools starts the server"
if grep -q "srv:" tools.err; then fail "toolgate tools put the server's stderr on the terminal"; fi
CHECKS=$((CHECKS + 1))

# ---- toolgate serve: a built-in call starts nothing, tools/list starts it ----
init='{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}'
coproc SRV { exec "$TG" serve 2> "$WS/serve.err"; }
send() { printf '%s\n' "$1" >&"${SRV[1]}"; }
reply() { # reply ID: the response to request ID
	local line
	while IFS= read -r -t 30 line <&"${SRV[0]}"; do
		if [ "$(jq -r 'select(.method == null) | .id' <<< "$line")" == "$1" ]; then
			printf '%s\n' "$line"
			return 0
		fi
	done
	return 1
}
send "$init"
reply i > /dev/null || fail "serve answers initialize"
send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
send '{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}'
r=$(reply r)
eq "$(jq -r '.result._meta["toolgate/envelope"].status' <<< "$r")" persisted "serve: a built-in call runs"
eq "$(starts)" 2 "serve: a built-in call starts no bridged server"
send '{"jsonrpc":"2.0","id":"l","method":"tools/list"}'
r=$(reply l)
eq "$(jq -r '[.result.tools[].name] | index("srv__echo") != null' <<< "$r")" true "serve: tools/list lists the bridged tool"
eq "$(starts)" 3 "serve: tools/list starts the server"
exec {SRV[1]}>&-
wait "$SRV_PID" 2> /dev/null
sanitizers serve.err serve
if grep -q "srv:" serve.err; then fail "serve put the server's stderr on its stderr"; fi
CHECKS=$((CHECKS + 1))

# ---- a server that cannot start: unavailable, its last line quoted ----
cat > toolgate.yaml <<EOF
profile: full
mode: bypassPermissions
mcp_servers:
  broken:
    command: [sh, -c, "echo 'Traceback (most recent call last):' >&2; echo 'ModuleNotFoundError: No module named mcp' >&2; exit 1"]
EOF
tgcall broken broken__echo '{}'
eq "$(jqv broken.json .status)" invalid "a server that cannot start: its tools are not offered"
contains "$(jqv broken.json .error.message)" "the MCP server \"broken\" could not be started" "the reason names the server"
contains "$(jqv broken.json .error.message)" "its last line on stderr: \"ModuleNotFoundError: No module named mcp\" (all of it is in .toolgate/logs/broken.log)" \
	"and quotes its last line, saying where the rest is"
contains "$(cat .toolgate/logs/broken.log)" "Traceback (most recent call last):" "its whole stderr is in its log"
if grep -q "^Traceback" broken.err; then fail "the server's stderr reached the terminal"; fi
CHECKS=$((CHECKS + 1))

# ---- the log is bounded: past 1 MiB it is moved to .log.1 and begun again ----
cat > toolgate.yaml <<EOF
profile: full
mode: bypassPermissions
mcp_servers:
  chatty:
    command: [$PY, srv.py]
    env: {CHATTY: "1"}
    sandbox: workspace-write
EOF
tgcall chatty chatty__echo '{"text":"x"}'
eq "$(jqv chatty.json .status)" persisted "a server writing 1.6 MB on stderr runs"
size=$(stat -c %s .toolgate/logs/chatty.log 2> /dev/null)
[ -n "$size" ] && [ "$size" -le 1048576 ] || fail "the log is at most 1 MiB (it is $size bytes)"
CHECKS=$((CHECKS + 1))
[ -f .toolgate/logs/chatty.log.1 ] && [ "$(stat -c %s .toolgate/logs/chatty.log.1)" -le 1048576 ] \
	|| fail "the older part is in chatty.log.1, at most 1 MiB"
CHECKS=$((CHECKS + 1))
contains "$(tail -c 2000 .toolgate/logs/chatty.log)" "srv: called" "the newest lines are kept"

finish
