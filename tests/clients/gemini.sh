# Gemini CLI (@google/gemini-cli, tests/clients/package.json) against
# toolgate serve over stdio and HTTP, configured with the README's
# mcpServers entry in ~/.gemini/settings.json and its policy file, run
# headless (`gemini -p`) with the
# scripted model as the Gemini API (GOOGLE_GEMINI_BASE_URL).
# "trust": true on the server: toolgate decides each call.  Without it
# Gemini CLI's headless policy turns every "ask" into "deny" and hides the
# gate's write_file (its built-in rule for its own write_file matches an MCP
# tool of that name too).
# The scenario and its checks: tests/clients/lib.sh.
. "$(dirname "$0")/lib.sh"
need gemini
start_model
export GEMINI_API_KEY=client-test-key GOOGLE_GEMINI_BASE_URL=$MODEL_URL
unset GOOGLE_API_KEY GOOGLE_GENAI_USE_VERTEXAI GOOGLE_GENAI_USE_GCA GOOGLE_CLOUD_PROJECT
# nothing leaves the machine (and none of it is waited for)
export GEMINI_TELEMETRY_ENABLED=false GEMINI_CLI_NO_RELAUNCH=true

# settings.json: the API key auth, no update checks or usage statistics, and
# the toolgate server ($1: its mcpServers entry)
settings() {
	mkdir -p "$SH/.gemini"
	cat > "$SH/.gemini/settings.json" <<JSON
{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "mcpServers": {"toolgate": $1}
}
JSON
	# the workspace trusted, as once in the CLI's trust dialog (headless, an
	# untrusted folder stops it: "not running in a trusted directory")
	printf '{"%s": "TRUST_FOLDER"}\n' "$SW" > "$SH/.gemini/trustedFolders.json"
	# Gemini CLI hides, headless, every tool whose short name is that of a
	# built-in it excludes: its own write_file is excluded (asking is
	# impossible headless), so toolgate's write_file is hidden with it.  These
	# rules keep Gemini's write_file denied when called, without excluding the
	# name (a rule with argsPattern never excludes a tool)
	mkdir -p "$SH/.gemini/policies"
	cat > "$SH/.gemini/policies/toolgate.toml" <<'TOML'
# Gemini CLI's own write_file: refused whenever it is called ...
[[rule]]
toolName = "write_file"
argsPattern = "."
decision = "deny"
priority = 200
denyMessage = "write files with toolgate's write_file (mcp_toolgate_write_file)"

# ... but not excluded by name, which would hide toolgate's write_file too
[[rule]]
toolName = "write_file"
decision = "allow"
priority = 100
TOML
}

gemini_p() { # NAME: one headless session through the scenario
	run_client "$1" "$BIN/gemini" -m gemini-2.5-flash -p "Run the client test scenario." --output-format json
}

# ---- stdio
new_session stdio
settings "{\"command\": \"toolgate\", \"args\": [\"serve\", \"--workspace\", \"$SW\"], \"trust\": true}"
gemini_p gemini
check_session stdio local

# ---- HTTP: httpUrl with the bearer token from the environment
new_session http
serve_http
settings "{\"httpUrl\": \"$MCP_URL\", \"headers\": {\"Authorization\": \"Bearer \$TOOLGATE_TOKEN\"}, \"trust\": true}"
TOOLGATE_TOKEN=$TOKEN gemini_p gemini
check_session http agent

finish
