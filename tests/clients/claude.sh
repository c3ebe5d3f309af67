# Claude Code (@anthropic-ai/claude-code, tests/clients/package.json) against
# toolgate serve over stdio and HTTP, configured with the README's commands
# (`claude mcp add ...`) in a fresh HOME, run headless (`claude -p`) with the
# scripted model as its Anthropic API (ANTHROPIC_BASE_URL).  The gate's tools
# are allowed in Claude Code's own permission settings, so that toolgate
# decides (as root Claude Code refuses --dangerously-skip-permissions).
# The scenario and its checks: tests/clients/lib.sh.
. "$(dirname "$0")/lib.sh"
need claude
start_model

# nothing leaves the machine: no telemetry, error reports, update checks or
# other non-essential traffic; the API is the scripted model
export ANTHROPIC_BASE_URL=$MODEL_URL ANTHROPIC_API_KEY=sk-ant-client-test
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
export DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1
unset ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_USE_BEDROCK CLAUDE_CODE_USE_VERTEX

# settings: the mcp__toolgate tools allowed, so that Claude Code asks nobody
# and toolgate's policy decides each call
settings() {
	mkdir -p "$SH/.claude"
	cat > "$SH/.claude/settings.json" <<'JSON'
{"permissions": {"allow": ["mcp__toolgate"]}}
JSON
}

claude_p() { # NAME: one headless session through the scenario
	run_client "$1" "$BIN/claude" -p "Run the client test scenario." --output-format json \
		--model claude-sonnet-4-5
	jq -r '.result // empty' "$S/$1.out" > "$S/$1.answer" 2>/dev/null
}

# ---- stdio: claude mcp add toolgate -- toolgate serve --workspace DIR
new_session stdio
settings
(cd "$SW" && HOME=$SH PATH="$S/bin:$PATH" "$BIN/claude" mcp add toolgate -- toolgate serve --workspace "$SW" \
	> "$S/add.out" 2>&1 < /dev/null) || fail "stdio: claude mcp add: $(cat "$S/add.out")"
claude_p claude
check_session stdio local

# ---- HTTP: claude mcp add --transport http toolgate URL, with the bearer token
new_session http
settings
serve_http
(cd "$SW" && HOME=$SH "$BIN/claude" mcp add --transport http toolgate "$MCP_URL" \
	--header "Authorization: Bearer $TOKEN" > "$S/add.out" 2>&1 < /dev/null) ||
	fail "http: claude mcp add --transport http: $(cat "$S/add.out")"
claude_p claude
check_session http agent

finish
