# The official MCP conformance suite (@modelcontextprotocol/conformance,
# every server scenario: --suite all) against `toolgate serve --http`, with
# tests/mcp/fixture-server.mjs bridged in front of it so the scenarios' test
# tools exist (tests/mcp/conformance.yaml).  Every scenario must pass but
# those listed, with their reasons, in tests/mcp/conformance-expected-
# failures.yaml (resources, prompts, completion: toolgate serves tools only;
# server-sse-polling, whose request of revision 2025-03-26 gets no priming
# event, as from the official SDKs).
. "$(dirname "$0")/lib.sh"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "SKIPPED: mcp_conformance needs node and npm, which this machine lacks" >&2
	exit 0
fi
"$ROOT/scripts/install-node-deps" || exit 1
NODE22=$("$ROOT/scripts/install-node-deps" --node22) || exit 1
MCP=$ROOT/tests/mcp
mkdir "$WS/ws"

# serve's stdin is a FIFO held open by us, so nothing ends it but SIGTERM
mkfifo "$WS/stdin"
# the bridged fixture runs in its sandbox (read-only, no network): it must
# see its directory, where node finds the SDK
sed "s|^    cwd: \..*|    cwd: $MCP\n    sandbox: {read: [$MCP]}|" "$MCP/conformance.yaml" > "$WS/conformance.yaml"
grep -q "sandbox: {read: \[$MCP\]}" "$WS/conformance.yaml" || fail "the fixture's sandbox.read was not added"
"$TG" serve --http 127.0.0.1:0 --config "$WS/conformance.yaml" --workspace "$WS/ws" \
	< "$WS/stdin" > "$WS/serve.out" 2> "$WS/serve.err" &
pid=$!
exec 3> "$WS/stdin"
stop_serve() {
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	exec 3>&-
}
trap 'stop_serve; chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS"' EXIT

url=
for _ in $(seq 1 120); do
	url=$(sed -n 's|.*serving MCP on \(http://[^ ]*\).*|\1|p' "$WS/serve.err" | head -n 1)
	[ -n "$url" ] || ! kill -0 "$pid" 2>/dev/null && break
	sleep 0.25
done
if [ -z "$url" ]; then
	fail "toolgate serve --http did not say where it serves:"
	cat "$WS/serve.err" >&2
	finish
	exit 1
fi
contains "$url" "http://127.0.0.1:" "serve binds loopback"

(cd "$MCP" && timeout 600 "$NODE22" node_modules/@modelcontextprotocol/conformance/dist/index.js \
	server --url "$url" --suite all \
	--expected-failures "$MCP/conformance-expected-failures.yaml" -o "$WS/results") \
	> "$WS/conformance.out" 2>&1
rc=$?
eq "$rc" 0 "every applicable conformance scenario passes, every listed one fails"
eq "$(grep -c '^=== Running scenario:' "$WS/conformance.out")" \
	"$(cd "$MCP" && "$NODE22" node_modules/@modelcontextprotocol/conformance/dist/index.js list --server | grep -c '^  - ')" \
	"every server scenario ran"
if [ "$rc" != 0 ]; then
	echo "---- conformance summary" >&2
	sed -n '/^Total:/,$p' "$WS/conformance.out" | sed 's/\x1b\[[0-9;]*m//g' >&2
	echo "---- checks that did not pass (scenario: check: status: message)" >&2
	for f in "$WS"/results/*/checks.json; do
		s=$(basename "$(dirname "$f")" | sed 's/^server-//; s/-[0-9T-]*Z$//')
		jq -r --arg s "$s" '.[] | select(.status == "FAILURE" or .status == "WARNING")
			| "\($s): \(.id): \(.status): \(.errorMessage // "")"' "$f" >&2
	done
fi

# a clean stop: SIGTERM, exit 0, the bridged fixture gone, no sanitizer report
fixture=$(pgrep -P "$pid" -f fixture-server.mjs)
[ -n "$fixture" ] || fail "the bridged fixture server runs as a child of serve"
kill -TERM "$pid"
for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
if kill -0 "$pid" 2>/dev/null; then
	fail "serve did not stop within 15 s of SIGTERM"
else
	wait "$pid"
	eq "$?" 0 "serve exits 0 on SIGTERM"
fi
for p in $fixture; do
	kill -0 "$p" 2>/dev/null && fail "the bridged fixture server ($p) outlived serve"
done
sanitizers "$WS/serve.err" "toolgate serve"
finish
