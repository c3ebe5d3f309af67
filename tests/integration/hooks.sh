# Hooks (issue 7, DESIGN §4): a Claude Code PreToolUse script, unchanged,
# denies `toolgate call shell` with its reason, and the same through MCP
# (`toolgate serve --stdio`); an after-hook sees every call's envelope; a
# bad hooks section is refused at load with file:line.
. "$(dirname "$0")/lib.sh"
cd "$WS"
mkdir hooks
cp "$ROOT/tests/data/hooks/claude_guard.py" "$ROOT/tests/data/hooks/audit.sh" hooks/
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
sandbox: danger-full-access
hooks:
  before_tool_call:
    - {command: [python3, hooks/claude_guard.py], tools: [shell], timeout_s: 10}
  after_tool_call:
    - {command: [./hooks/audit.sh]}
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

tgcall rm shell '{"command":"rm -rf build"}'
eq "$(jqv rm.json .status)" denied "the Claude Code hook denies rm -rf"
eq "$(cat rm.exit)" 3 "denied exits 3"
eq "$(jqv rm.json .error.kind)" not_permitted "a hook's deny is not_permitted"
eq "$(jqv rm.json .error.message)" \
	"hook before_tool_call[0] (python3) denied the call: rm -rf is blocked by the project's hook" \
	"the hook's reason reaches the model"
eq "$(jqv rm.json .error.rule)" "hook: before_tool_call[0] (python3)" "the rule names the hook"
eq "$(jqv rm.json '.stages[] | select(.stage == "hooks") | .hooks[0].decision')" deny \
	"the trace records the hook's decision"
op=$(jqv rm.json .op_id)
eq "$(sql "select count(*) from events where op_id = '$op' and type = 'tool.hook.denied'")" 1 \
	"the ledger has the hook's denial"
eq "$(sql "select status from ops where op_id = '$op'")" denied "the ledger row says denied"

tgcall ok shell '{"command":"echo fine"}'
eq "$(jqv ok.json .status)" persisted "other commands run"
eq "$(jqv ok.json .output.stdout)" "fine" "the command ran"

tgcall rd read_file '{"path":"toolgate.yaml"}'
eq "$(jqv rd.json '[.stages[] | select(.stage == "hooks")] | length')" 0 \
	"a hook for shell does not run for read_file"

# the after-hook saw the three calls, each with its envelope
eq "$(grep -c . audit.jsonl)" 3 "the after-hook ran once per call"
eq "$(sed -n 1p audit.jsonl | jq -r .hook_event_name)" PostToolUse "after-hooks get PostToolUse"
eq "$(sed -n 1p audit.jsonl | jq -r .envelope.status)" denied "the envelope of the denied call"
eq "$(sed -n 1p audit.jsonl | jq -r .envelope.op_id)" "$op" "the envelope's op_id"
eq "$(sed -n 2p audit.jsonl | jq -r .tool_response.exit_code)" 0 "tool_response is the output"
eq "$(sed -n 2p audit.jsonl | jq -r .tool_input.command)" "echo fine" "tool_input is the args"

# a tool may not rewrite the hooks
tgcall w write_file '{"path":"hooks/claude_guard.py","content":"import sys"}'
eq "$(jqv w.json .status)" denied "the hook script is read-only to tools"
tgcall w2 write_file '{"path":"hooks/audit.sh","content":"exit 0"}'
eq "$(jqv w2.json .status)" denied "the after-hook is read-only to tools"

# the same hook through MCP
mcp=$({
	printf '%s\n' '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}'
	printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	printf '%s\n' '{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"shell","arguments":{"command":"rm -rf build"}}}'
	sleep 3
} | timeout 30 "$TG" serve --stdio 2> serve.err)
sanitizers serve.err "serve"
reply=$(printf '%s\n' "$mcp" | jq -c 'select(.id == "c")')
eq "$(printf '%s' "$reply" | jq -r .result.isError)" true "MCP: the call is an error"
eq "$(printf '%s' "$reply" | jq -r '.result._meta["toolgate/envelope"].status')" denied "MCP: denied"
contains "$(printf '%s' "$reply" | jq -r '.result._meta["toolgate/envelope"].error.message')" \
	"rm -rf is blocked by the project's hook" "MCP: the hook's reason"

# a bad hooks section is refused at load, with file:line
printf 'hooks:\n  before_tool_call:\n    - {command: [./x.sh], timeout_s: 0}\n' > bad.yaml
TOOLGATE_CONFIG=$WS/bad.yaml "$TG" call --json read_file '{"path":"bad.yaml"}' > bad.out 2> bad.err
[ $? -ne 0 ] || fail "a bad hooks section stops the gate"
sanitizers bad.err "bad config"
contains "$(cat bad.err)" "bad.yaml:3:" "the error says file:line"
contains "$(cat bad.err)" "hooks.before_tool_call[0].timeout_s" "the error names the key"
finish
