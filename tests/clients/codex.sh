# Codex (@openai/codex, tests/clients/package.json) against toolgate serve
# over stdio and HTTP, configured with the README's ~/.codex/config.toml block
# (CODEX_HOME), run headless (`codex exec`) with the scripted model as a
# custom model provider (base_url, wire_api = "responses").
# `default_tools_approval_mode = "approve"` on the server: toolgate decides
# each call; without it `codex exec` (approval policy "never") refuses the
# gate's non-read-only tools ("MCP tool call requires approval").
# The scenario and its checks: tests/clients/lib.sh.
. "$(dirname "$0")/lib.sh"
need codex
start_model
export CODEX_CLIENT_TEST_KEY=sk-client-test
unset OPENAI_API_KEY OPENAI_BASE_URL CODEX_API_KEY

# config.toml: the scripted model as the provider, nothing that leaves the
# machine (update checks, analytics, feedback, telemetry), and then the
# README's block for toolgate ($1)
config() {
	mkdir -p "$SH/.codex"
	cat > "$SH/.codex/config.toml" <<TOML
model = "gpt-5"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted model"
base_url = "${MODEL_URL}/v1"
wire_api = "responses"
env_key = "CODEX_CLIENT_TEST_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

$1
TOML
}

codex_exec() { # NAME: one headless session through the scenario
	run_client "$1" env CODEX_HOME="$SH/.codex" "$BIN/codex" exec --skip-git-repo-check \
		"Run the client test scenario."
}

# ---- stdio: the README's block for codex exec (it declines every question
# itself, so asks are queued for the owner), and toolgate decides
new_session stdio
config "[mcp_servers.toolgate]
command = \"toolgate\"
args = [\"serve\", \"--workspace\", \"$SW\", \"--approvals-via\", \"queue\"]
default_tools_approval_mode = \"approve\"
env = { XDG_STATE_HOME = \"${XDG_STATE_HOME:-$HOME/.local/state}\" }"
codex_exec codex
check_session stdio local

# ---- HTTP: url + bearer_token_env_var, the token mapped to principal "agent"
new_session http
serve_http
config "[mcp_servers.toolgate]
url = \"$MCP_URL\"
bearer_token_env_var = \"TOOLGATE_TOKEN\"
default_tools_approval_mode = \"approve\""
TOOLGATE_TOKEN=$TOKEN codex_exec codex
check_session http agent

finish
