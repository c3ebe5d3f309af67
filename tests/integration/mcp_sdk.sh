# toolgate serve under the official MCP TypeScript SDK Client, over stdio
# and over Streamable HTTP (tests/mcp/sdk-client.mjs says what it checks):
# handshake, tools/list, each built-in tool, denied / invalid / unknown /
# malformed calls, approvals queued or elicited, progress, cancellation.
. "$(dirname "$0")/lib.sh"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "SKIPPED: mcp_sdk needs node and npm, which this machine lacks" >&2
	exit 0
fi
"$ROOT/scripts/install-node-deps" || exit 1

cd "$ROOT/tests/mcp" || exit 1
TMPDIR=$WS node sdk-client.mjs
