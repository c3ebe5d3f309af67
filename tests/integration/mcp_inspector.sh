# The official MCP Inspector (v2, --cli mode, on Node 22) against toolgate
# serve over stdio: tools/list shows the built-in tools, tools/call read_file
# gives the file's text and the envelope.
. "$(dirname "$0")/lib.sh"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "SKIPPED: mcp_inspector needs node and npm, which this machine lacks" >&2
	exit 0
fi
"$ROOT/scripts/install-node-deps" || exit 1
NODE22=$("$ROOT/scripts/install-node-deps" --node22) || exit 1
INSPECTOR=$(readlink -f "$ROOT/tests/mcp/node_modules/.bin/mcp-inspector")

cd "$WS"
printf 'hello from the inspector\nline two\n' > hello.txt

# inspector NAME ARGS...: the inspector's stdout to NAME.out, its stderr
# (and the server's) to NAME.err, exit code to NAME.exit
inspector() {
	local name=$1; shift
	MCP_CATALOG_PATH=$WS/catalog.json timeout 120 "$NODE22" "$INSPECTOR" --cli "$@" \
		-- "$TG" serve --workspace "$WS" > "$WS/$name.out" 2> "$WS/$name.err" < /dev/null
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "inspector $name"
}

inspector list --method tools/list
eq "$(cat list.exit)" 0 "tools/list: the inspector exits 0"
eq "$(jq -r '[.tools[].name] | join(",")' list.out)" \
	"read_file,list_dir,search_files,write_file,apply_patch,shell" "tools/list: the built-in tools"
eq "$(jq -r '.tools[] | select(.name == "read_file") | .annotations.readOnlyHint' list.out)" true \
	"tools/list: read_file is read-only"
eq "$(jq -r '[.tools[] | select(.title == null or .title == "")] | length' list.out)" 0 \
	"tools/list: every tool has a title"

inspector call --method tools/call --tool-name read_file --tool-arg path=hello.txt
eq "$(cat call.exit)" 0 "tools/call: the inspector exits 0"
contains "$(jq -r '[.content[] | select(.type == "text") | .text] | join("\n")' call.out)" \
	"hello from the inspector" "tools/call read_file: the content has the file's text"
eq "$(jq -r '.isError // false' call.out)" false "tools/call read_file: not an error"
eq "$(jq -r '._meta["toolgate/envelope"].status' call.out)" persisted "tools/call read_file: the envelope (in _meta), persisted"
eq "$(jq -r '.structuredContent.total_lines' call.out)" 2 "tools/call read_file: structuredContent is its output"
eq "$("$TG" log --json --workspace "$WS" | jq -r 'select(.tool == "read_file") | .status')" persisted \
	"tools/call read_file: in the ledger"

inspector denied --method tools/call --tool-name read_file --tool-arg path=../outside.txt
eq "$(jq -r '.isError' denied.out)" true "tools/call outside the workspace: isError"
finish
