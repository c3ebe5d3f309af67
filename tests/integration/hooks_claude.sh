# Hooks written for Claude Code (format: claude-code, the default): the file
# guard from Claude Code's hooks guide, copied as it is (it reads
# tool_input.file_path), denies through toolgate what it denies in Claude
# Code: write_file .env, apply_patch adding or updating .env (every file of
# a patch is asked about), read_file .env once it guards Read; a guard of
# Bash commands denies `cat .env`, as a string or as an argv; the
# reference's block-rm.sh and the guide's exit-2 example deny through their
# JSON answer and exit 2; updatedInput in Claude Code's words is mapped back
# (file_path into a workspace path); and through `toolgate serve --stdio`
# the client's own tool-use id (Claude Code's _meta "claudecode/toolUseId",
# Codex's "callId") reaches the hook as tool_use_id and the ledger's
# envelope as client_call_id.
. "$(dirname "$0")/lib.sh"
cd "$WS"
REAL=$(pwd -P)   # the workspace as the gate names it (a real path)
mkdir -p .claude/hooks
for f in protect-files.sh protect-commands.sh block-rm.sh block-drop-table.sh \
         redirect-logs.py record-ids.sh; do
	cp "$ROOT/tests/data/hooks/$f" .claude/hooks/
done

# status|error_kind of an op's ledger row
row() { sql "select status || '|' || coalesce(error_kind, '') from ops where op_id = '$(jqv "$1.json" .op_id)'"; }
# denied NAME WHAT: the call was denied by a hook, in the envelope and in the ledger
denied() {
	eq "$(jqv "$1.json" .status)" denied "$2: denied"
	eq "$(cat "$1.exit")" 3 "$2: exit 3"
	eq "$(row "$1")" "denied|not_permitted" "$2: the ledger row"
	eq "$(sql "select count(*) from events where op_id = '$(jqv "$1.json" .op_id)' and type = 'tool.hook.denied'")" \
		1 "$2: the ledger has the hook's denial"
}
persisted() {
	eq "$(jqv "$1.json" .status)" persisted "$2: persisted"
	eq "$(row "$1")" "persisted|" "$2: the ledger row"
}

# ---- the file guard, registered as Claude Code's guide registers it: Edit|Write
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
sandbox: danger-full-access
hooks:
  before_tool_call:
    - {command: [./.claude/hooks/protect-files.sh], tools: [Edit, Write]}
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

tgcall w_env write_file '{"path":".env","content":"API_KEY=x"}'
denied w_env "write_file .env"
eq "$(jqv w_env.json .error.message)" \
	"hook before_tool_call[0] (./.claude/hooks/protect-files.sh) denied the call: Blocked: $REAL/.env matches protected pattern '.env'" \
	"the guard's own reason, with the absolute file_path it was given"
[ ! -e .env ] || fail "no .env was written"
tgcall w_env2 write_file '{"path":"config/.env.local","content":"x"}'
denied w_env2 "write_file config/.env.local"
tgcall w_lock write_file '{"path":"sub/../package-lock.json","content":"{}"}'
denied w_lock "write_file package-lock.json through sub/.."
tgcall w_ok write_file '{"path":"notes.txt","content":"one\n"}'
persisted w_ok "write_file notes.txt"

# apply_patch: every file it touches is asked about, as Write (added) or Edit
printf 'API_KEY=1\n' > .env
tgcall p_add apply_patch '{"patch":"*** Begin Patch\n*** Add File: app/.env\n+API_KEY=2\n*** End Patch"}'
denied p_add "apply_patch adding app/.env"
[ ! -e app/.env ] || fail "app/.env was not added"
tgcall p_upd apply_patch '{"patch":"*** Begin Patch\n*** Update File: .env\n@@\n-API_KEY=1\n+API_KEY=3\n*** End Patch"}'
denied p_upd "apply_patch updating .env"
tgcall p_mix apply_patch '{"patch":"*** Begin Patch\n*** Update File: notes.txt\n@@\n-one\n+uno\n*** Add File: deploy/.env\n+X=1\n*** End Patch"}'
denied p_mix "apply_patch updating notes.txt and adding deploy/.env"
contains "$(jqv p_mix.json .error.message)" "Blocked: $REAL/deploy/.env" "the file that was refused"
eq "$(cat .env)" "API_KEY=1" ".env is as it was"
eq "$(cat notes.txt)" "one" "nothing of the refused patch was applied"
tgcall p_ok apply_patch '{"patch":"*** Begin Patch\n*** Update File: notes.txt\n@@\n-one\n+uno\n*** Add File: two.txt\n+2\n*** End Patch"}'
persisted p_ok "apply_patch of two allowed files"
eq "$(jqv p_ok.json '.stages[] | select(.stage == "hooks") | .hooks[0].runs')" 2 \
	"the guard was asked once per file"

# not registered for Read or Bash: in Claude Code these pass too
tgcall r_env read_file '{"path":".env"}'
persisted r_env "read_file .env, Read not guarded"
eq "$(jqv r_env.json '[.stages[] | select(.stage == "hooks")] | length')" 0 "the guard did not run"
tgcall s_env shell '{"command":"cat .env"}'
persisted s_env "cat .env, Bash not guarded"

# ---- the same guard on Read too, and a guard of Bash commands
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
sandbox: danger-full-access
hooks:
  before_tool_call:
    - {command: [./.claude/hooks/protect-files.sh], tools: [Read, Edit, Write]}
    - {command: [./.claude/hooks/protect-commands.sh], tools: [Bash]}
    - {command: [./.claude/hooks/block-rm.sh], tools: [Bash]}
    - {command: [./.claude/hooks/block-drop-table.sh], tools: [Bash]}
YAML
tgcall r_env2 read_file '{"path":".env"}'
denied r_env2 "read_file .env, Read guarded"
ln -s .env innocent.txt
tgcall r_link read_file '{"path":"innocent.txt"}'
denied r_link "read_file of a symlink to .env (asked under both names)"
contains "$(jqv r_link.json .error.message)" "Blocked: $REAL/.env" "the name it resolves to"
tgcall r_ok read_file '{"path":"notes.txt"}'
persisted r_ok "read_file notes.txt"
tgcall s_cat shell '{"command":"cat .env"}'
denied s_cat "shell cat .env"
eq "$(jqv s_cat.json .error.rule)" "hook: before_tool_call[1] (./.claude/hooks/protect-commands.sh)" \
	"the Bash guard denied it"
tgcall s_argv shell '{"command":["cat",".env"]}'
denied s_argv "shell [cat, .env]"
tgcall s_rm shell '{"command":"rm -rf build"}'
denied s_rm "shell rm -rf (block-rm.sh's JSON answer)"
contains "$(jqv s_rm.json .error.message)" "Destructive command blocked by hook" "block-rm.sh's reason"
tgcall s_sql shell '{"command":["psql","-c","drop table users"]}'
denied s_sql "an argv holding drop table (exit 2)"
contains "$(jqv s_sql.json .error.message)" "Blocked: dropping tables is not allowed" "the exit-2 reason"
tgcall s_ok shell '{"command":["echo","fine"]}'
persisted s_ok "shell echo fine"
eq "$(jqv s_ok.json .output.stdout)" "fine" "it ran"

# ---- a rewrite in Claude Code's words: file_path back into a workspace path
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
hooks:
  before_tool_call:
    - {command: [python3, .claude/hooks/redirect-logs.py], tools: [Write]}
YAML
tgcall w_log write_file '{"path":"build.log","content":"ok\n"}'
persisted w_log "write_file build.log, rewritten"
[ -f logs/build.log ] || fail "the write went to logs/build.log"
[ ! -e build.log ] || fail "build.log itself was not written"
op=$(jqv w_log.json .op_id)
eq "$(sql "select json_extract(args_redacted, '$.path') from ops where op_id = '$op'")" "logs/build.log" \
	"the ledger keeps the rewritten args, as a workspace path"
eq "$(sql "select count(*) from events where op_id = '$op' and type = 'tool.hook.rewrote'")" 1 \
	"the ledger has the rewrite"

# ---- the client's tool-use id, through toolgate serve --stdio
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
hooks:
  before_tool_call:
    - {command: [./.claude/hooks/record-ids.sh]}
YAML
mcp=$({
	printf '%s\n' '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}'
	printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"},"_meta":{"claudecode/toolUseId":"toolu_01ABC","progressToken":1}}}'
	sleep 1
	printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"},"_meta":{"callId":"call_xyz\u0007"}}}'
	sleep 1
	printf '%s\n' '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"},"_meta":{"callId":42}}}'
	sleep 2
} | timeout 30 "$TG" serve --stdio 2> serve.err)
sanitizers serve.err "serve"
r1=$(printf '%s\n' "$mcp" | jq -c 'select(.id == 1) | .result._meta["toolgate/envelope"]')
r2=$(printf '%s\n' "$mcp" | jq -c 'select(.id == 2) | .result._meta["toolgate/envelope"]')
r3=$(printf '%s\n' "$mcp" | jq -c 'select(.id == 3) | .result._meta["toolgate/envelope"]')
eq "$(printf '%s' "$r1" | jq -r .client_call_id)" toolu_01ABC "Claude Code's id in the envelope"
eq "$(printf '%s' "$r1" | jq -r .call_id)" mcp-1 "the call id stays the gate's"
eq "$(printf '%s' "$r2" | jq -r .client_call_id)" call_xyz "Codex's id, control characters stripped"
eq "$(printf '%s' "$r3" | jq -r '.client_call_id // "none"')" none "an id that is not a string is ignored"
eq "$(sed -n 1p tool_use_ids.txt)" toolu_01ABC "the hook got Claude Code's id as tool_use_id"
eq "$(sed -n 2p tool_use_ids.txt)" call_xyz "the hook got Codex's id as tool_use_id"
eq "$(sed -n 3p tool_use_ids.txt)" mcp-3 "without one, the hook gets the call id"
eq "$(sql "select json_extract(envelope, '$.client_call_id') from ops where op_id = '$(printf '%s' "$r1" | jq -r .op_id)'")" \
	toolu_01ABC "the ledger row's envelope keeps the client's id"
finish
