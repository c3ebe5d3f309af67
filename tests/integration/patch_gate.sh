# apply_patch through the gate (`toolgate call`): the result envelope, how each
# kind of failure is reported, and policy judging every path a patch names --
# each operation's path, every Move target and every delete -- with rules
# written for apply_patch and for write_file, the modes (a delete is
# destructive), the gate's own configuration, protected paths, confinement
# (a symlink out of the workspace) and dry runs.  Every call that does not
# apply must leave the workspace exactly as it was.
. "$(dirname "$0")/lib.sh"
W=$WS/ws
mkdir -p "$W" "$WS/outside"
cd "$W" || exit 1
mkdir -p src docs secret .git
printf 'one\ntwo\nthree\n' > src/a.c
printf 'int b;\n' > src/b.c
printf 'int moved;\n' > src/m.c
printf '# Guide\n\nRead me.\n' > docs/guide.md
printf 'stale\n' > docs/stale.md
printf 'key\n' > secret/key.txt
printf 'gone\n' > old.txt
printf '[core]\n\tbare = false\n' > .git/config
printf 'outside\n' > "$WS/outside/existing.txt"
ln -s ../outside out
ln -s ../secret src/sec    # inside the workspace: policy judges where it leads
ln -s ../docs src/dl
cat > toolgate.yaml <<'YAML'
permissions:
  allow: ["apply_patch(./src/**)"]
  deny:  ["write_file(./secret/**)"]
YAML
export TOOLGATE_CONFIG=$W/toolgate.yaml

# pcall NAME [OPTIONS...] PATCH: apply_patch through `toolgate call` in the
# workspace; envelope to $WS/NAME.json, exit code to $WS/NAME.exit
pcall() {
	local name=$1 args
	shift
	args=$(jq -n --arg p "${!#}" '{patch: $p}')
	(cd "$W" && "$TG" call --json "${@:1:$#-1}" apply_patch "$args" > "$WS/$name.json" 2> "$WS/$name.err" < /dev/null)
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "$name"
}
# verdict NAME: status/error kind/applied
verdict() { jq -r '[.status, (.error.kind // "-"), (.error.applied // "-")] | join("/")' "$WS/$1.json"; }
wsql() { sqlite3 "$W/.toolgate/ledger.db" "$1"; }
decided() { jq -r '.stages[] | select(.stage == "decide") | .rule' "$WS/$1.json"; }

# the workspace (and the directory beside it) as a list of entries with their bytes
snapshot() {
	(cd "$WS" && find ws outside -path ws/.toolgate -prune -o -printf '%y %m %p -> %l\n' | LC_ALL=C sort &&
		find ws outside -path ws/.toolgate -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
BEFORE=
# unchanged WHAT: nothing changed since the last `mark`
mark() { BEFORE=$(snapshot); }
unchanged() {
	local now
	now=$(snapshot)
	CHECKS=$((CHECKS + 1))
	if [ "$now" != "$BEFORE" ]; then
		fail "$1: the workspace changed (< before, > after):"
		diff <(printf '%s\n' "$BEFORE") <(printf '%s\n' "$now") | grep '^[<>]' | head -n 10 >&2
	fi
}

# ---- tools: listed in the coding profile with its one argument
"$TG" tools --profile coding > "$WS/tools.json"
eq "$(jq -r '[.[].name] | index("apply_patch") != null' "$WS/tools.json")" true "coding lists apply_patch"
eq "$(jq -c '.[] | select(.name == "apply_patch") | [.category, (.input_schema.properties | keys), .input_schema.required]' "$WS/tools.json")" \
	'["fs",["patch"],["patch"]]' "apply_patch: category fs, one required argument 'patch'"
eq "$(jq -r '.[] | select(.name == "apply_patch") | .input_schema.properties.patch.type' "$WS/tools.json")" string \
	"the patch is a string"
eq "$(jq -r '.[] | select(.name == "apply_patch") | .annotations.readOnlyHint' "$WS/tools.json")" false "it writes"
eq "$("$TG" tools --profile minimal | jq -r '[.[].name] | index("apply_patch")')" null "minimal (read-only) leaves it out"

# ---- the envelope: added, modified, deleted, moved, summary
pcall all --mode bypassPermissions $'*** Begin Patch
*** Add File: new/x.txt
+fresh
*** Update File: src/a.c
@@
 one
-two
+TWO
*** Delete File: old.txt
*** Update File: src/m.c
*** Move to: lib/m.c
@@
-int moved;
+int moved = 1;
*** End Patch'
eq "$(verdict all)" "persisted/-/-" "a patch with every kind of operation"
eq "$(cat "$WS/all.exit")" 0 "exit 0"
eq "$(jq -c '.output | keys' "$WS/all.json")" '["added","deleted","modified","moved","summary"]' "the output's fields"
eq "$(jq -c .output.added "$WS/all.json")" '["new/x.txt"]' "added"
eq "$(jq -r '.output.modified | index("src/a.c") != null' "$WS/all.json")" true "modified"
eq "$(jq -c .output.deleted "$WS/all.json")" '["old.txt"]' "deleted"
eq "$(jq -c .output.moved "$WS/all.json")" '[{"from":"src/m.c","to":"lib/m.c"}]' "moved"
eq "$(jq -r .output.summary "$WS/all.json")" $'Success. Updated the following files:\nA new/x.txt\nM src/a.c\nM lib/m.c\nD old.txt' \
	"Codex's summary text"
eq "$(cat new/x.txt)" fresh "the add happened"
eq "$(cat src/a.c)" $'one\nTWO\nthree' "the update happened"
[ -e old.txt ] && fail "the delete did not happen"
[ -e src/m.c ] && fail "the move left its source"
eq "$(cat lib/m.c)" "int moved = 1;" "the move happened, with its change"
eq "$(find . -name '.tgpatch-*' | wc -l)" 0 "no temp files left"
eq "$(ls -A .toolgate/journal)" "" "no journal left"
eq "$(wsql "select status from ops where op_id = '$(jqv "$WS/all.json" .op_id)'")" persisted "the ledger has the call"

# ---- a patch that does not parse: invalid, nothing applied
mark
pcall bad --mode bypassPermissions $'*** Begin Patch\n*** Frobnicate File: src/a.c\n*** End Patch'
eq "$(verdict bad)" "invalid/invalid_input/no" "a patch that does not parse"
eq "$(cat "$WS/bad.exit")" 2 "invalid exits 2"
contains "$(jqv "$WS/bad.json" .error.message)" "Invalid patch hunk on line 2: '*** Frobnicate File: src/a.c' is not a valid hunk header" \
	"Codex's message, with the line"
pcall noend --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/z.c\n+z'
eq "$(verdict noend)" "invalid/invalid_input/no" "a patch without its end marker"
contains "$(jqv "$WS/noend.json" .error.message)" "The last line of the patch must be '*** End Patch'" "says what is missing"
pcall empty --mode bypassPermissions $'*** Begin Patch\n*** End Patch'
eq "$(jqv "$WS/empty.json" .status)/$(jqv "$WS/empty.json" .error.applied)" "failed/no" "a patch with no operations"
contains "$(jqv "$WS/empty.json" .error.message)" "No files were modified." "says so"
unchanged "patches that do not parse or do nothing"

# ---- a patch that does not fit the files: failed, tool_error, nothing applied
mark
pcall nofit --mode bypassPermissions $'*** Begin Patch
*** Add File: src/first.c
+first
*** Update File: src/b.c
@@
 int b;
+int c;
*** Update File: src/a.c
@@
 one
-nothere
-either
+x
*** End Patch'
eq "$(verdict nofit)" "failed/tool_error/no" "context not found"
eq "$(cat "$WS/nofit.exit")" 4 "failed exits 4"
msg=$(jqv "$WS/nofit.json" .error.message)
contains "$msg" "Failed to find expected lines in src/a.c" "the message names the file"
contains "$msg" "nothere" "and the lines it looked for"
contains "$msg" "either" "all of them"
[ -e src/first.c ] && fail "an earlier operation of a failed patch was applied"
pcall noctx --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/b.c\n@@ int nosuch;\n-int b;\n+int c;\n*** End Patch'
eq "$(verdict noctx)" "failed/tool_error/no" "an @@ context not found"
contains "$(jqv "$WS/noctx.json" .error.message)" "Failed to find context 'int nosuch;' in src/b.c" "names the context and the file"
pcall nofile --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/none.c\n@@\n-a\n+b\n*** End Patch'
eq "$(verdict nofile)" "failed/tool_error/no" "an update of a missing file"
contains "$(jqv "$WS/nofile.json" .error.message)" "Failed to read file to update src/none.c" "names the file"
unchanged "patches that do not fit"

# ---- refused paths: denied by decide, before anything runs
mark
pcall up --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/ok.c\n+ok\n*** Add File: ../x\n+x\n*** End Patch'
eq "$(verdict up)" "denied/not_permitted/no" "../x is refused"
eq "$(cat "$WS/up.exit")" 3 "denied exits 3"
eq "$(decided up)" "confinement: outside the workspace" "decide names the confinement rule"
contains "$(jqv "$WS/up.json" .error.message)" "../x" "the message names the path"
[ -e "$WS/x" ] && fail "../x was written"
pcall upmove --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/b.c\n*** Move to: ../b.c\n@@\n-int b;\n+int c;\n*** End Patch'
eq "$(verdict upmove)/$(decided upmove)" "denied/not_permitted/no/confinement: outside the workspace" \
	"a Move target out of the workspace is refused"
pcall abs --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/ok.c\n+ok\n*** Add File: '"$W"$'-abs.txt\n+x\n*** End Patch'
eq "$(verdict abs)/$(decided abs)" "denied/not_permitted/no/confinement: outside the workspace" \
	"an absolute path outside the workspace is refused (as for write_file)"
contains "$(jqv "$WS/abs.json" .error.message)" "workspace root $W" "names the workspace root"
[ -e "$W-abs.txt" ] && fail "the absolute path was written"
pcall git --mode bypassPermissions $'*** Begin Patch\n*** Update File: .git/config\n@@\n-\tbare = false\n+\tbare = true\n*** End Patch'
eq "$(verdict git)" "denied/not_permitted/no" ".git/config is refused"
eq "$(decided git)" "protected path" "as a protected path"
pcall gitadd --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/ok.c\n+ok\n*** Add File: sub/.git/hooks/pre-commit\n+id\n*** End Patch'
eq "$(verdict gitadd)/$(decided gitadd)" "denied/not_permitted/no/protected path" "a nested .git is protected too"
pcall state --mode bypassPermissions $'*** Begin Patch\n*** Add File: .toolgate/journal/x.commit\n+{}\n*** End Patch'
eq "$(verdict state)/$(decided state)" "denied/not_permitted/no/protected path" "the gate's state is protected"
unchanged "refused paths"

# ---- a symlink out of the workspace, used as a directory
mark
pcall linkdir --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/first.c\n+first\n*** Add File: out/evil.txt\n+evil\n*** End Patch'
eq "$(verdict linkdir)" "denied/not_permitted/no" "a write through a symlink out of the workspace"
eq "$(decided linkdir)" "confinement: outside the workspace" "is outside the workspace"
pcall linkupd --mode bypassPermissions $'*** Begin Patch\n*** Update File: out/existing.txt\n@@\n-outside\n+pwned\n*** End Patch'
eq "$(verdict linkupd)" "denied/not_permitted/no" "an update through the symlink"
pcall linkmove --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/b.c\n*** Move to: out/b.c\n@@\n-int b;\n+int c;\n*** End Patch'
eq "$(verdict linkmove)" "denied/not_permitted/no" "a Move target through the symlink"
pcall linkdel --mode bypassPermissions $'*** Begin Patch\n*** Delete File: out/existing.txt\n*** End Patch'
eq "$(verdict linkdel)" "denied/not_permitted/no" "a delete through the symlink"
eq "$(ls "$WS/outside")" existing.txt "nothing was created outside"
eq "$(cat "$WS/outside/existing.txt")" outside "nothing outside was changed"
unchanged "writes through a symlink out of the workspace"

# ---- a deny rule for write_file holds for every path of a patch
mark
pcall sec2 --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b;\n+int c;\n*** Add File: secret/new.txt\n+x\n*** End Patch'
eq "$(verdict sec2)" "denied/not_permitted/no" "secret/ in the second operation"
eq "$(decided sec2)" "deny: write_file(./secret/**)" "the write_file deny rule decides"
pcall secmove --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/b.c\n*** Move to: secret/b.c\n@@\n-int b;\n+int c;\n*** End Patch'
eq "$(verdict secmove)/$(decided secmove)" "denied/not_permitted/no/deny: write_file(./secret/**)" \
	"secret/ only as a Move target"
pcall secdel --mode bypassPermissions $'*** Begin Patch\n*** Delete File: secret/key.txt\n*** End Patch'
eq "$(verdict secdel)/$(decided secdel)" "denied/not_permitted/no/deny: write_file(./secret/**)" "a delete in secret/"
pcall secdot --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/../secret/dot.txt\n+x\n*** End Patch'
eq "$(verdict secdot)" "denied/not_permitted/no" "src/../secret/ is secret/"
pcall seclink --mode bypassPermissions $'*** Begin Patch\n*** Add File: src/sec/x.txt\n+x\n*** End Patch'
eq "$(verdict seclink)/$(decided seclink)" "denied/not_permitted/no/deny: write_file(./secret/**)" \
	"src/sec/x.txt, through a symlink to secret/, is judged as secret/x.txt"
unchanged "patches touching secret/"

# ---- an allow rule for apply_patch(./src/**), mode default
mark
pcall srconly $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b;\n+int b = 2;\n*** Add File: src/sub/n.c\n+n\n*** End Patch'
eq "$(verdict srconly)" "persisted/-/-" "a patch entirely under src/ is allowed"
eq "$(decided srconly)" "allow: apply_patch(./src/**)" "by the allow rule"
eq "$(cat src/b.c)/$(cat src/sub/n.c)" "int b = 2;/n" "and applied"
pcall srcuntrusted --approval untrusted $'*** Begin Patch\n*** Add File: src/u.c\n+u\n*** End Patch'
eq "$(verdict srcuntrusted)/$(decided srcuntrusted)" "persisted/-/-/allow: apply_patch(./src/**)" \
	"approval untrusted: the explicit allow rule runs"
mark
pcall srcdocs $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b = 2;\n+int b = 3;\n*** Update File: docs/guide.md\n@@\n-Read me.\n+Read me twice.\n*** End Patch'
eq "$(verdict srcdocs)" "pending/needs_approval/no" "a patch that also touches docs/ asks"
eq "$(cat "$WS/srcdocs.exit")" 5 "pending exits 5"
eq "$(decided srcdocs)" "mode default" "the allow rule does not hold for docs/"
pcall srcmove $'*** Begin Patch\n*** Update File: src/b.c\n*** Move to: docs/b.c\n@@\n-int b = 2;\n+int b = 3;\n*** End Patch'
eq "$(verdict srcmove)" "pending/needs_approval/no" "a Move target outside src/ asks"
pcall srcdot $'*** Begin Patch\n*** Update File: src/../docs/guide.md\n@@\n-Read me.\n+Read me twice.\n*** End Patch'
eq "$(verdict srcdot)" "pending/needs_approval/no" "src/../docs is not under src/"
pcall srclink $'*** Begin Patch\n*** Add File: src/dl/x.md\n+x\n*** End Patch'
eq "$(verdict srclink)/$(decided srclink)" "pending/needs_approval/no/mode default" \
	"src/dl/x.md, through a symlink to docs/, is not under src/"
pcall untrusted --mode bypassPermissions --approval untrusted $'*** Begin Patch\n*** Update File: docs/guide.md\n@@\n-Read me.\n+Read.\n*** End Patch'
eq "$(verdict untrusted)" "pending/needs_approval/no" "approval untrusted: a mode-default allow asks"
unchanged "patches that ask"
# approved, the same patch runs once
"$TG" approvals approve "$(jqv "$WS/srcdocs.json" .error.approval_id)" > /dev/null 2> "$WS/approve.err" ||
	fail "approve: $(cat "$WS/approve.err")"
pcall srcdocs2 $'*** Begin Patch\n*** Update File: src/b.c\n@@\n-int b = 2;\n+int b = 3;\n*** Update File: docs/guide.md\n@@\n-Read me.\n+Read me twice.\n*** End Patch'
eq "$(verdict srcdocs2)" "persisted/-/-" "approved: the patch runs"
eq "$(cat src/b.c)/$(tail -n 1 docs/guide.md)" "int b = 3;/Read me twice." "and is applied"

# ---- modes: acceptEdits allows edits but asks for a delete; plan denies
mark
pcall ae --mode acceptEdits $'*** Begin Patch\n*** Update File: docs/guide.md\n@@\n-Read me twice.\n+Read me.\n*** Add File: notes/n.md\n+n\n*** End Patch'
eq "$(verdict ae)" "persisted/-/-" "acceptEdits: a patch without a delete runs"
eq "$(decided ae)" "mode acceptEdits" "by the mode"
eq "$(cat notes/n.md)" n "applied"
mark
pcall aedel --mode acceptEdits $'*** Begin Patch\n*** Update File: docs/guide.md\n@@\n-Read me.\n+Read.\n*** Delete File: docs/stale.md\n*** End Patch'
eq "$(verdict aedel)" "pending/needs_approval/no" "acceptEdits: a patch with a Delete File asks (destructive)"
pcall plan --mode plan $'*** Begin Patch\n*** Update File: docs/guide.md\n@@\n-Read me.\n+Read.\n*** End Patch'
eq "$(verdict plan)" "denied/not_permitted/no" "plan: a patch is denied"
eq "$(decided plan)" "mode plan" "by the mode"
pcall plandel --mode plan $'*** Begin Patch\n*** Delete File: docs/stale.md\n*** End Patch'
eq "$(verdict plandel)" "denied/not_permitted/no" "plan: a delete is denied"
pcall never --approval never $'*** Begin Patch\n*** Add File: notes/m.md\n+m\n*** End Patch'
eq "$(verdict never)" "denied/not_permitted/no" "approval never: what would ask is denied"
unchanged "patches held by the mode"

# ---- the gate's own configuration cannot be patched
mark
pcall cfg --mode bypassPermissions $'*** Begin Patch\n*** Update File: toolgate.yaml\n@@\n permissions:\n+  ask: []\n*** End Patch'
eq "$(verdict cfg)" "denied/not_permitted/no" "toolgate.yaml is read-only to tools"
contains "$(jqv "$WS/cfg.json" .error.message)" "configuration" "says why"
pcall cfgmove --mode bypassPermissions $'*** Begin Patch\n*** Update File: src/b.c\n*** Move to: toolgate.yaml\n@@\n-int b = 3;\n+mode: bypassPermissions\n*** End Patch'
eq "$(verdict cfgmove)" "denied/not_permitted/no" "nor replaced by a Move"
pcall cfgdel --mode bypassPermissions $'*** Begin Patch\n*** Delete File: toolgate.yaml\n*** End Patch'
eq "$(verdict cfgdel)" "denied/not_permitted/no" "nor deleted"
pcall cfgadd --mode bypassPermissions $'*** Begin Patch\n*** Add File: toolgate.yml\n+mode: bypassPermissions\n*** End Patch'
eq "$(verdict cfgadd)" "denied/not_permitted/no" "nor shadowed by another config name"
unchanged "patches of the gate's configuration"

# ---- dry run: decided, nothing written
mark
pcall dry --dry-run --mode acceptEdits $'*** Begin Patch\n*** Add File: dry.txt\n+x\n*** Update File: src/b.c\n@@\n-int b = 3;\n+int b = 4;\n*** End Patch'
eq "$(verdict dry)" "dry_run/-/-" "dry run status"
eq "$(cat "$WS/dry.exit")" 0 "dry run exits 0"
pcall drydel --dry-run --mode bypassPermissions $'*** Begin Patch\n*** Delete File: docs/stale.md\n*** End Patch'
eq "$(verdict drydel)" "dry_run/-/-" "a dry run of a delete"
unchanged "dry runs"

eq "$(wsql "select count(*) from ops where tool = 'apply_patch'")" "$(ls "$WS"/*.exit | wc -l)" "one ledger row per call"
finish
