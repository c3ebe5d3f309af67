# toolgate serve bridging the official @modelcontextprotocol/server-filesystem
# and server-everything, under the official SDK Client (tests/mcp/bridge-
# sdk.mjs says what it checks): prefixed tools, trust, one policy and one
# ledger for bridged calls, content passed through, a killed child restarted.
. "$(dirname "$0")/lib.sh"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "SKIPPED: mcp_bridge_sdk needs node and npm, which this machine lacks" >&2
	exit 0
fi
"$ROOT/scripts/install-node-deps" || exit 1

cd "$ROOT/tests/mcp" || exit 1
TMPDIR=$WS node bridge-sdk.mjs
