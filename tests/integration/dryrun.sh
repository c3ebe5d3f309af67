# Dry runs (issue 7 "Dry run"): `--dry-run`, `mode: dryRun` and MCP
# `_meta.dry_run` run every stage up to execute and return `dry_run` with
# the tool's plan, and nothing runs.  write_file shows a unified diff
# (which `patch` applies to give the new content) and leaves the file and
# the idempotency table alone; apply_patch shows each file's diff, and a
# patch that does not fit says would_fail; shell shows argv, workdir,
# sandbox, env and timeout, and a command that would make a file makes
# none; a configured command tool shows argv, stdin and env names and is
# not started; a bridged tool names its server and nothing reaches it; the
# read-only tools show what they would read.  A denied call is still
# denied; a file the call may write but not read never shows its content
# (in the plan or in the ledger).
. "$(dirname "$0")/lib.sh"
cd "$WS" || exit 1
mkdir -p src docs
printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n' > src/a.txt
printf 'int b = 3;\n' > src/b.c
printf 'stale\n' > docs/stale.md
printf 'SECRET_LINE=hunter2-do-not-show\n' > secret.txt
printf 'locked\n' > locked.txt
printf '#!/bin/sh\ntouch "$(dirname "$0")/tool-ran"\necho {}\n' > mk.sh
chmod +x mk.sh
cat > toolgate.yaml <<'YAML'
permissions:
  allow: ["write_file(./**)", "apply_patch(./src/**)", "shell", "mk"]
  deny:  ["read_file(./secret.txt)", "write_file(./locked.txt)"]
shell:
  env_allow: ["GREETING"]
tools:
  mk:
    description: makes a file
    command: [./mk.sh, --flag]
    input_schema: {type: object, properties: {n: {type: integer}}}
    requires_env: [MK_TOKEN]
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
st() { jqv "$WS/$1.json" .status; }
plan() { jq -r ".output.plan${2:-}" "$WS/$1.json"; }
# the files the calls could touch (the envelopes tgcall writes beside them are not)
snapshot() {
	find src docs down adir new secret.txt locked.txt link.txt ran*.txt made.txt -name .toolgate \
		-prune -o -printf '%y %p -> %l\n' 2> /dev/null | LC_ALL=C sort
	find src docs secret.txt locked.txt -type f -print0 2> /dev/null | LC_ALL=C sort -z | xargs -0 sha256sum
}
BEFORE=$(snapshot)
unchanged() {
	CHECKS=$((CHECKS + 1))
	[ "$(snapshot)" == "$BEFORE" ] || fail "$1: the workspace changed"
}

# ---- write_file: the diff, which patch applies; nothing written, nothing claimed
new=$'one\ntwo\n3\nfour\nfive\nsix\nseven\nEIGHT\nnine'
tgcall w --dry-run --key k1 --call-id c1 write_file "$(jq -n --arg c "$new" '{path:"src/a.txt",content:$c}')"
eq "$(st w)" dry_run "write_file: dry_run"
eq "$(cat w.exit)" 0 "a dry run exits 0"
eq "$(plan w .path)/$(plan w .exists)/$(plan w .bytes)" "src/a.txt/true/${#new}" "path, exists, bytes"
eq "$(jqv w.json .output.decided_by)" "allow: write_file(./**)" "decided_by"
eq "$(plan w .diff | head -n 3)" $'--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,8 +1,9 @@' "the diff's headers"
contains "$(plan w .diff)" $'-three\n+3\n' "the changed line"
contains "$(plan w .diff)" $'+nine\n\\ No newline at end of file' "no newline at the end"
eq "$(plan w .added_lines)/$(plan w .removed_lines)" "3/2" "counts"
cp src/a.txt patched.txt
plan w .diff > w.patch
patch -s -o patched.out patched.txt < w.patch > patch.log 2>&1 || fail "patch applies the plan's diff: $(cat patch.log)"
eq "$(cat patched.out; printf x)" "${new}x" "patch gives the new content"
rm -f patched.txt patched.out w.patch patch.log
# the same diff as diff -u
printf '%s' "$new" > expect.txt
diff -u --label a/src/a.txt --label b/src/a.txt src/a.txt expect.txt > expect.diff
eq "$(plan w .diff)" "$(cat expect.diff)" "the diff is diff -u's"
rm -f expect.txt expect.diff
unchanged "write_file dry run"
eq "$(sql "select count(*) from idem")" 0 "no idempotency claim"
eq "$(sql "select status from ops where op_id = '$(jqv w.json .op_id)'")" dry_run "the ledger row says dry_run"

# a new file: from /dev/null
tgcall wn --dry-run write_file '{"path":"new/n.txt","content":"x\n"}'
eq "$(plan wn .diff)" $'--- /dev/null\n+++ b/new/n.txt\n@@ -0,0 +1 @@\n+x' "a new file diffs from /dev/null"
eq "$(plan wn .exists)" false "and does not exist"
[ ! -e new ] || fail "no directory was made"

# may write, may not read: the old content is not shown, nor kept in the ledger
tgcall ws --dry-run write_file '{"path":"secret.txt","content":"replaced\n"}'
eq "$(st ws)" dry_run "write allowed, read denied: still a dry run"
eq "$(plan ws .diff)" "(current content not shown: reading it is not permitted)" "the old content is not shown"
eq "$(plan ws '.added_lines // "none"')" none "nor counted"
if grep -q hunter2 ws.json .toolgate/ledger.db* 2> /dev/null; then fail "the secret leaked"; fi
CHECKS=$((CHECKS + 1))
# through a symlink to it, too
ln -s secret.txt link.txt
BEFORE=$(snapshot)
tgcall wl --dry-run write_file '{"path":"link.txt","content":"x\n"}'
contains "$(plan wl .diff)" "(current content not shown:" "a symlink's target is not shown"
if grep -q hunter2 wl.json; then fail "the secret leaked through a symlink"; fi
CHECKS=$((CHECKS + 1))

# a denied call is still denied
tgcall wd --dry-run write_file '{"path":"locked.txt","content":"x"}'
eq "$(st wd)" denied "a denied call is denied in a dry run"
eq "$(jqv wd.json .output)" null "and has no plan"
eq "$(cat wd.exit)" 3 "exit 3"
# a call the handler would refuse: would_fail
tgcall wg --dry-run --mode bypassPermissions write_file '{"path":".git/config","content":"x"}'
eq "$(st wg)" denied "a protected path is denied before the plan"
mkdir adir
BEFORE=$(snapshot)
tgcall wdir --dry-run write_file '{"path":"adir","content":"x"}'
eq "$(st wdir)" dry_run "a directory: still a dry run"
contains "$(plan wdir .would_fail)" "is a directory" "would_fail says why"
eq "$(plan wdir .error_kind)" invalid_input "with the kind the call would get"
unchanged "write_file plans"

# ---- apply_patch: per-file diffs; a patch that does not fit
# pcall NAME [OPTIONS...] PATCH
pcall() {
	local name=$1
	shift
	tgcall "$name" "${@:1:$#-1}" apply_patch "$(jq -n --arg p "${!#}" '{patch: $p}')"
}
pcall p --dry-run $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b = 3;\n+int b = 4;\n*** Add File: src/new.c\n+int n;\n*** Update File: src/a.txt\n*** Move to: src/moved.txt\n@@\n one\n-two\n+TWO\n*** End Patch'
eq "$(st p)" dry_run "apply_patch: dry_run"
eq "$(plan p '.files | length')" 3 "one entry per file"
eq "$(plan p '.files[] | select(.path == "src/b.c") | .operation')" update "an update"
eq "$(plan p '.files[] | select(.path == "src/b.c") | .diff')" \
	$'--- a/src/b.c\n+++ b/src/b.c\n@@ -1 +1 @@\n-int b = 3;\n+int b = 4;' "its diff"
eq "$(plan p '.files[] | select(.path == "src/new.c") | .operation')" add "an add"
contains "$(plan p '.files[] | select(.path == "src/new.c") | .diff')" $'--- /dev/null\n+++ b/src/new.c' "from /dev/null"
eq "$(plan p '.files[] | select(.path == "src/moved.txt") | [.operation, .from] | join(" ")')" \
	"move src/a.txt" "a move names where from"
contains "$(plan p '.files[] | select(.path == "src/moved.txt") | .diff')" \
	$'--- a/src/a.txt\n+++ b/src/moved.txt\n@@ -1,5 +1,5 @@\n one\n-two\n+TWO\n three' "its diff across the names"
contains "$(plan p .summary)" "M src/b.c" "Codex's summary"
pcall pbad --dry-run $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b = 99;\n+int b = 4;\n*** End Patch'
eq "$(st pbad)" dry_run "a patch that does not fit: still a dry run"
contains "$(plan pbad .would_fail)" "Failed to find expected lines in src/b.c" "would_fail: the real call's message"
eq "$(plan pbad .error_kind)" tool_error "and its kind"
pcall pbadreal $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b = 99;\n+int b = 4;\n*** End Patch'
eq "$(st pbadreal)" failed "(the real call fails)"
eq "$(jqv pbadreal.json .error.message)" "$(plan pbad .would_fail)" "with the same message"
pcall pdel --dry-run --mode bypassPermissions $'*** Begin Patch\n*** Delete File: docs/stale.md\n*** Delete File: secret.txt\n*** End Patch'
eq "$(plan pdel '.files[] | select(.path == "docs/stale.md") | .diff')" \
	$'--- a/docs/stale.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-stale' "a delete diffs to /dev/null"
eq "$(plan pdel '.files[] | select(.path == "secret.txt") | .diff')" \
	"(current content not shown: reading it is not permitted)" "an unreadable file's delete hides it"
if grep -q hunter2 pdel.json; then fail "the secret leaked through a delete"; fi
CHECKS=$((CHECKS + 1))
# an update of a file the call may not read is not matched: no oracle for its content
pcall pguess1 --dry-run --mode bypassPermissions $'*** Begin Patch\n*** Update File: secret.txt\n@@\n-SECRET_LINE=hunter2-do-not-show\n+x\n*** End Patch'
pcall pguess2 --dry-run --mode bypassPermissions $'*** Begin Patch\n*** Update File: secret.txt\n@@\n-SECRET_LINE=wrong-guess\n+x\n*** End Patch'
eq "$(st pguess1)/$(st pguess2)" "dry_run/dry_run" "patches of an unreadable file: dry runs"
eq "$(plan pguess1)" "$(plan pguess2)" "a right and a wrong guess get the same plan"
contains "$(plan pguess2 .unchecked)" "may not read" "which says it was not matched"
eq "$(plan pguess2 '.files[0] | [.operation, .path] | join(" ")')" "update secret.txt" "and lists the operation"
eq "$(plan pguess2 '.would_fail // "none"')" none "no would_fail"
unchanged "apply_patch plans"

# ---- shell: argv, workdir, sandbox, env; nothing ran
tgcall sh --dry-run shell '{"command":"touch ran.txt","workdir":"src","env":{"GREETING":"hi"},"timeout_s":7}'
eq "$(st sh)" dry_run "shell: dry_run"
eq "$(plan sh '.argv | join("|")')" "/bin/sh|-c|touch ran.txt" "argv: the wrapper and the script"
eq "$(plan sh .workdir)" src "workdir"
eq "$(plan sh .sandbox.mode)/$(plan sh .sandbox.network)" "workspace-write/false" "sandbox mode and network"
case "$(plan sh .sandbox.backend)" in bubblewrap | landlock | none) ;; *) fail "sandbox backend: $(plan sh .sandbox.backend)" ;; esac
CHECKS=$((CHECKS + 1))
eq "$(plan sh .env.GREETING)" hi "the env the call sets"
eq "$(plan sh .env.TERM)" dumb "and the base env"
eq "$(plan sh .env.TOOLGATE_OP_ID)" "$(jqv sh.json .op_id)" "with the op id"
eq "$(plan sh .timeout_s)" 7 "timeout"
tgcall sh2 --dry-run shell '{"command":["touch","ran2.txt"]}'
eq "$(plan sh2 '.argv | join("|")')" "touch|ran2.txt" "an argv list runs as given"
[ ! -e src/ran.txt ] && [ ! -e ran2.txt ] || fail "the command ran"
CHECKS=$((CHECKS + 1))
tgcall shenv --dry-run shell '{"command":"true","env":{"LD_PRELOAD":"x"}}'
eq "$(st shenv)" dry_run "a refused env name: a dry run"
contains "$(plan shenv .would_fail)" "may not be set by a call" "that would fail"
unchanged "shell plans"

# ---- a configured command tool: argv, stdin, env names; not started
MK_TOKEN=tok-should-not-show tgcall mk --dry-run mk '{"n":3}'
eq "$(st mk)" dry_run "command tool: dry_run"
eq "$(plan mk '.argv | length')" 2 "argv"
eq "$(plan mk '.argv[1]')" --flag "argv as configured"
eq "$(plan mk .stdin.args.n)" 3 "the stdin JSON holds the args"
eq "$(plan mk .stdin.op_id)" "$(jqv mk.json .op_id)" "and the op id"
contains "$(plan mk '.env | join(" ")')" "MK_TOKEN" "env names"
if grep -q tok-should-not-show mk.json; then fail "an env value is shown"; fi
CHECKS=$((CHECKS + 1))
[ ! -e tool-ran ] || fail "the command tool ran"
CHECKS=$((CHECKS + 1))

# ---- read-only tools: what they would read
tgcall r --dry-run read_file '{"path":"src/../src/b.c"}'
eq "$(plan r '.reads[0] | [.path, .resolved, .type] | join(" ")')" "src/../src/b.c src/b.c file" \
	"read_file: the path it reads, as written and as resolved"
tgcall l --dry-run list_dir '{}'
eq "$(plan l '.reads[0].type')" directory "list_dir: the directory"
tgcall rs --dry-run read_file '{"path":"secret.txt"}'
eq "$(st rs)" denied "a denied read is denied"

# ---- no rate token, no claim: after dry runs the real call runs
cp toolgate.yaml rate.yaml
printf 'rate_limits:\n  write_file: "1/hour"\n' >> rate.yaml
TOOLGATE_CONFIG=$WS/rate.yaml tgcall rl1 --dry-run --key kr write_file '{"path":"src/r.txt","content":"r\n"}'
TOOLGATE_CONFIG=$WS/rate.yaml tgcall rl2 --dry-run --key kr write_file '{"path":"src/r.txt","content":"r\n"}'
eq "$(st rl1)/$(st rl2)" "dry_run/dry_run" "dry runs under a rate limit"
TOOLGATE_CONFIG=$WS/rate.yaml tgcall rl3 --key kr write_file '{"path":"src/r.txt","content":"r\n"}'
eq "$(st rl3)" persisted "the real call still has its token, and its key was never claimed"
eq "$(cat src/r.txt)" r "and it ran"
TOOLGATE_CONFIG=$WS/rate.yaml tgcall rl4 --dry-run write_file '{"path":"src/r.txt","content":"s\n"}'
eq "$(st rl4)" denied "a dry run over the limit says so"
eq "$(jqv rl4.json .error.kind)" rate_limited "(rate_limited)"
rm src/r.txt
BEFORE=$(snapshot)

# ---- mode: dryRun in the configuration
cp toolgate.yaml dry.yaml
printf 'mode: dryRun\n' >> dry.yaml
TOOLGATE_CONFIG=$WS/dry.yaml tgcall md write_file '{"path":"src/b.c","content":"changed\n"}'
eq "$(st md)" dry_run "mode dryRun: every call is a dry run"
contains "$(plan md .diff)" $'-int b = 3;\n+changed' "with its plan"
TOOLGATE_CONFIG=$WS/dry.yaml tgcall md2 shell '{"command":"touch ran3.txt"}'
eq "$(st md2)" dry_run "a command too"
[ ! -e ran3.txt ] || fail "mode dryRun ran a command"
CHECKS=$((CHECKS + 1))
printf 'mode: dryRun\n' > plain.yaml
TOOLGATE_CONFIG=$WS/plain.yaml tgcall md3 write_file '{"path":"src/b.c","content":"x"}'
eq "$(jqv md3.json .output.decision)/$(jqv md3.json .output.decided_by)" "ask/mode dryRun" \
	"decided as in default mode (an edit asks)"
TOOLGATE_CONFIG=$WS/plain.yaml tgcall md4 read_file '{"path":"src/b.c"}'
eq "$(jqv md4.json .output.decision)" allow "a read is allowed"
tgcall mcli --mode dryRun write_file '{"path":"src/b.c","content":"x"}'
eq "$(st mcli)" dry_run "--mode dryRun on the command line"
"$TG" call --mode dryrun read_file '{"path":"x"}' > /dev/null 2> badmode.err
contains "$(cat badmode.err)" "dryRun" "an unknown mode lists dryRun"
unchanged "mode dryRun"

# ---- --dry-run with --batch: every call of the batch is a dry run
printf '%s' '[{"tool":"write_file","args":{"path":"src/b.c","content":"batch\n"}},{"tool":"shell","args":{"command":"touch ran4.txt"}}]' > batch.json
tgcall bt --dry-run --batch batch.json
eq "$(jq -r '[.[].status] | join(",")' bt.json)" "dry_run,dry_run" "a batch: every call a dry run"
contains "$(jq -r '.[0].output.plan.diff' bt.json)" $'-int b = 3;\n+batch' "each with its plan"
[ ! -e ran4.txt ] || fail "a dry-run batch ran a command"
CHECKS=$((CHECKS + 1))
rm -f batch.json
unchanged "dry-run batch"

# ---- MCP: _meta.dry_run through toolgate serve --stdio
mcp=$({
	printf '%s\n' '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}'
	printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	printf '%s\n' '{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"write_file","arguments":{"path":"src/b.c","content":"mcp\n"},"_meta":{"dry_run":true}}}'
	printf '%s\n' '{"jsonrpc":"2.0","id":"bad","method":"tools/call","params":{"name":"write_file","arguments":{"path":"src/b.c","content":"mcp\n"},"_meta":{"dry_run":"yes"}}}'
	sleep 2
} | timeout 30 "$TG" serve --stdio 2> serve.err)
sanitizers serve.err "serve"
reply=$(printf '%s\n' "$mcp" | jq -c 'select(.id == "d")')
eq "$(printf '%s' "$reply" | jq -r '.result._meta["toolgate/envelope"].status')" dry_run "MCP: _meta.dry_run gives a dry run"
eq "$(printf '%s' "$reply" | jq -r .result.isError)" false "which is not an error"
contains "$(printf '%s' "$reply" | jq -r '.result.content[0].text')" '+mcp' "its content is the plan"
reply=$(printf '%s\n' "$mcp" | jq -c 'select(.id == "bad")')
eq "$(printf '%s' "$reply" | jq -r .error.code)" -32602 "MCP: a dry_run that is not a boolean is refused"
unchanged "MCP dry run"

# ---- a bridged tool: its server, its name there, the arguments; nothing sent
mkdir down
printf 'principals:\n  local: {roles: [owner]}\nroles:\n  owner: {allow: ["*"]}\n' > down/toolgate.yaml
cat > bridge.yaml <<YAML
mcp_servers:
  down:
    command: [$TG, serve, --stdio]
    cwd: down
    sandbox: danger-full-access   # a gate of its own, with its own sandbox
YAML
BEFORE=$(snapshot)
TOOLGATE_CONFIG=$WS/bridge.yaml tgcall b --dry-run down__write_file '{"path":"made.txt","content":"x"}'
eq "$(st b)" dry_run "bridged: dry_run"
eq "$(plan b .server)/$(plan b .tool)/$(plan b .arguments.path)" "down/write_file/made.txt" \
	"server, tool and arguments"
[ ! -e down/made.txt ] || fail "the bridged call ran"
CHECKS=$((CHECKS + 1))
n=$(sqlite3 down/.toolgate/ledger.db "select count(*) from ops where tool = 'write_file'" 2> /dev/null || echo 0)
eq "$n" 0 "the server got no call"
sanitizers .toolgate/logs/down.log "the bridged gate (its stderr is its log)"
unchanged "bridged dry run"
finish
