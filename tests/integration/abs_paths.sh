# Absolute paths inside the workspace (DESIGN §2): models trained on other
# harnesses send them (Claude Code's file tools take only absolute paths).
# One that lies inside the workspace, spelled through the workspace as
# configured (here through a symlink) or through its real path, is turned
# into the relative one in validate, before policy: rules, protected paths,
# the hooks and the ledger see only the relative form, results echo it, and
# the call gets what the relative call gets.  One outside is denied with the
# workspace root named; `..` climbing out of an inside one is denied by the
# kernel's confinement; `~` and `$HOME` are not expanded.
. "$(dirname "$0")/lib.sh"
REAL=$WS/real
mkdir -p "$REAL/src" "$REAL/.git" "$WS/real2" "$WS/outside"
REAL=$(cd "$REAL" && pwd -P)
LINK=$WS/link
ln -s real "$LINK"
printf 'hello\nworld\n' > "$REAL/README.md"
printf 'SECRET=1\n' > "$REAL/.env"
printf 'int a;\nint b;\n' > "$REAL/src/a.c"
printf 'int gone;\n' > "$REAL/src/gone.c"
printf '[core]\n' > "$REAL/.git/config"
printf 'secret\n' > "$WS/outside/secret.txt"
printf 'sibling\n' > "$WS/real2/x.txt"
cat > "$REAL/hook.sh" <<HOOK
#!/bin/sh
cat > "$WS/hook.in"
HOOK
chmod +x "$REAL/hook.sh"
cat > "$REAL/toolgate.yaml" <<YAML
workspace: $LINK
sandbox: danger-full-access
permissions:
  allow: ["write_file(./src/**)"]
  deny: ["read_file(./.env)", "write_file(./locked/**)"]
hooks:
  before_tool_call:
    - {command: [./hook.sh], tools: [list_dir], format: toolgate}
YAML

# c NAME TOOL ARGS [OPTIONS...]: a call from inside the workspace (reached
# through the symlink), envelope to $WS/NAME.json, exit code to NAME.exit
c() {
	local name=$1 tool=$2 args=$3; shift 3
	(cd "$LINK" && "$TG" call --json --config "$REAL/toolgate.yaml" "$@" "$tool" "$args" \
		> "$WS/$name.json" 2> "$WS/$name.err" < /dev/null)
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "$name"
}
j() { jq -r "$2" "$WS/$1.json"; }
st() { echo "$(j "$1" .status)/$(j "$1" '.error.kind // "-"')"; }
lsql() { sqlite3 "$REAL/.toolgate/ledger.db" "$1"; }
# the ledger row of a call: its args, rule and envelope hold no absolute path
row_relative() { # NAME WHAT
	local op; op=$(j "$1" .op_id)
	eq "$(lsql "select count(*) from ops where op_id = '$op'")" 1 "$2: one ledger row"
	eq "$(lsql "select count(*) from ops where op_id = '$op' and (instr(args_redacted, '$WS') > 0
		or instr(envelope, '$WS') > 0)")" 0 "$2: the ledger keeps only the relative form"
	eq "$(lsql "select count(*) from events where op_id = '$op' and instr(data, '$WS') > 0")" 0 \
		"$2: so do the events"
}
same_output() { # NAME1 NAME2 WHAT
	eq "$(jq -cS .output "$WS/$2.json")" "$(jq -cS .output "$WS/$1.json")" "$3: the same result"
}
# denied, outside: exit 3, the confinement rule, the root named, the path echoed
denied_outside() { # NAME PATH WHAT
	eq "$(st "$1")" "denied/not_permitted" "$3: denied"
	eq "$(cat "$WS/$1.exit")" 3 "$3: exits 3"
	eq "$(j "$1" .error.rule)" "confinement: outside the workspace" "$3: the confinement rule"
	contains "$(j "$1" .error.message)" "$2" "$3: the message echoes the path"
	contains "$(j "$1" .error.message)" "workspace root $LINK" "$3: and names the workspace root"
}

# ---- read_file: through the configured spelling and the real path
c r_rel read_file '{"path":"README.md"}'
c r_link read_file "{\"path\":\"$LINK/README.md\"}"
c r_real read_file "{\"path\":\"$REAL/README.md\"}"
c r_dots read_file "{\"path\":\"$LINK//./README.md\"}"
for n in r_rel r_link r_real r_dots; do
	eq "$(st $n)" "persisted/-" "$n: read_file persisted"
	same_output r_rel $n "$n"
done
eq "$(j r_link .output.path)" README.md "read_file echoes the relative path"
c r_in_rel read_file '{"path":"src/../README.md"}'
c r_in_abs read_file "{\"path\":\"$REAL/src/../README.md\"}"
eq "$(st r_in_abs)" "persisted/-" ".. that stays inside"
same_output r_in_rel r_in_abs ".. that stays inside"
row_relative r_link "read_file through the symlink"
row_relative r_real "read_file through the real path"

# outside: an absolute path elsewhere, a sibling sharing the root's prefix,
# the root's parent; `..` climbing out of an inside path
c r_etc read_file '{"path":"/etc/passwd"}'
denied_outside r_etc /etc/passwd "/etc/passwd"
c r_sib read_file "{\"path\":\"$WS/real2/x.txt\"}"
denied_outside r_sib "$WS/real2/x.txt" "a sibling whose name starts with the root's"
c r_linksib read_file "{\"path\":\"${LINK}2/x.txt\"}"
denied_outside r_linksib "${LINK}2/x.txt" "a sibling of the configured spelling"
c r_up read_file "{\"path\":\"$WS/outside/secret.txt\"}"
denied_outside r_up "$WS/outside/secret.txt" "a file beside the workspace"
c r_climb read_file "{\"path\":\"$LINK/../outside/secret.txt\"}"
eq "$(st r_climb)" "denied/not_permitted" ".. out of an absolute inside path is denied"
eq "$(j r_climb .error.rule)" "confinement: outside the workspace" ".. out: by confinement"
contains "$(j r_climb .error.message)" "leaves the workspace" ".. out: says it leaves"
c r_climb2 read_file "{\"path\":\"$REAL/src/../../outside/secret.txt\"}"
eq "$(st r_climb2)" "denied/not_permitted" ".. out through the real path is denied"
c r_root read_file "{\"path\":\"$LINK/..\"}"
eq "$(st r_root)" "denied/not_permitted" "the root's parent is denied"
for n in r_etc r_sib r_linksib r_up r_climb r_climb2 r_root; do
	[ "$(j $n .output)" = null ] || fail "$n: something was read"
done
# ~ and $HOME are not expanded: they name nothing here, as before
c r_tilde read_file '{"path":"~/README.md"}'
eq "$(st r_tilde)" "failed/tool_error" "~ is not expanded"
c r_home read_file '{"path":"$HOME/README.md"}'
eq "$(st r_home)" "failed/tool_error" "\$HOME is not expanded"

# a deny rule matched through an absolute path
c r_env read_file "{\"path\":\"$REAL/.env\"}"
eq "$(st r_env)/$(j r_env .error.rule)" "denied/not_permitted/deny: read_file(./.env)" \
	"read_file(./.env) holds for the absolute path"
c r_env2 read_file "{\"path\":\"$LINK/src/../.env\"}"
eq "$(st r_env2)/$(j r_env2 .error.rule)" "denied/not_permitted/deny: read_file(./.env)" \
	"and for one with .. inside"

# ---- write_file: the allow rule write_file(./src/**) through an absolute path
c w_link write_file "{\"path\":\"$LINK/src/new.c\",\"content\":\"int n;\\n\"}"
eq "$(st w_link)" "persisted/-" "write_file through the symlink"
eq "$(j w_link '.stages[] | select(.stage == "decide") | .rule')" "allow: write_file(./src/**)" \
	"write_file(./src/**) matched the absolute path"
eq "$(cat "$REAL/src/new.c")" "int n;" "the file is written in the workspace"
eq "$(j w_link .output.path)" src/new.c "write_file echoes the relative path"
row_relative w_link "write_file"
c w_real write_file "{\"path\":\"$REAL/src/new2.c\",\"content\":\"int m;\\n\"}"
eq "$(st w_real)/$(j w_real '.stages[] | select(.stage == "decide") | .rule')" \
	"persisted/-/allow: write_file(./src/**)" "write_file through the real path"
c w_top write_file "{\"path\":\"$LINK/top.txt\",\"content\":\"x\"}"
eq "$(st w_top)" "pending/needs_approval" "outside src/ the rule does not allow: mode default asks"
c w_lock write_file "{\"path\":\"$REAL/locked/a.txt\",\"content\":\"x\"}" --mode bypassPermissions
eq "$(j w_lock .error.rule)" "deny: write_file(./locked/**)" "a deny rule holds for the absolute path"
c w_git write_file "{\"path\":\"$LINK/.git/config\",\"content\":\"x\"}" --mode bypassPermissions
eq "$(st w_git)/$(j w_git .error.rule)" "denied/not_permitted/protected path" \
	".git/ is protected through an absolute path"
eq "$(cat "$REAL/.git/config")" "[core]" ".git/config is unchanged"
c w_out write_file "{\"path\":\"$WS/outside/new.txt\",\"content\":\"x\"}" --mode bypassPermissions
denied_outside w_out "$WS/outside/new.txt" "write_file outside"
[ -e "$WS/outside/new.txt" ] && fail "write_file outside: the file was written"
c w_climb write_file "{\"path\":\"$LINK/../outside/new2.txt\",\"content\":\"x\"}" --mode bypassPermissions
eq "$(st w_climb)" "denied/not_permitted" "write_file: .. out of an absolute inside path"
[ -e "$WS/outside/new2.txt" ] && fail "write_file ..: the file was written"

# ---- list_dir: the root itself, a directory; the hook sees the relative form
c l_rel list_dir '{"path":"src"}'
c l_abs list_dir "{\"path\":\"$LINK/src/\"}"
eq "$(st l_abs)" "persisted/-" "list_dir with an absolute path"
same_output l_rel l_abs "list_dir src"
eq "$(jq -r .tool_input.path "$WS/hook.in")" src "the before-hook sees the relative path"
c l_dot list_dir '{}'
c l_root list_dir "{\"path\":\"$REAL\"}"
eq "$(st l_root)" "persisted/-" "list_dir of the root by its real path"
same_output l_dot l_root "list_dir of the root"
eq "$(jq -r .tool_input.path "$WS/hook.in")" . "the root is \".\" to the hook"
row_relative l_root "list_dir"
c l_out list_dir '{"path":"/etc"}'
denied_outside l_out /etc "list_dir outside"
c l_climb list_dir "{\"path\":\"$LINK/..\"}"
eq "$(st l_climb)" "denied/not_permitted" "list_dir of the root's parent"

# ---- search_files
c s_rel search_files '{"pattern":"int","path":"src"}'
c s_abs search_files "{\"pattern\":\"int\",\"path\":\"$LINK/src\"}"
eq "$(st s_abs)" "persisted/-" "search_files with an absolute path"
same_output s_rel s_abs "search_files"
row_relative s_abs "search_files"
c s_out search_files '{"pattern":"root","path":"/etc"}'
denied_outside s_out /etc "search_files outside"
c s_climb search_files "{\"pattern\":\"secret\",\"path\":\"$REAL/../outside\"}"
eq "$(st s_climb)" "denied/not_permitted" "search_files: .. out of an absolute inside path"

# ---- apply_patch: Add, Update with Move to, Delete, each absolute
P=$'*** Begin Patch\n*** Add File: '"$LINK"$'/src/p1.c\n+int p1;\n'
P+=$'*** Update File: '"$REAL"$'/src/a.c\n*** Move to: '"$LINK"$'/src/b.c\n@@\n int a;\n-int b;\n+int c;\n'
P+=$'*** Delete File: '"$LINK"$'/src/gone.c\n*** End Patch'
c p_abs apply_patch "$(jq -n --arg p "$P" '{patch: $p}')" --mode bypassPermissions
eq "$(st p_abs)" "persisted/-" "apply_patch with absolute paths"
eq "$(j p_abs '.output.added | join(",")')/$(j p_abs '.output.deleted | join(",")')" \
	"src/p1.c/src/gone.c" "the result names the relative paths"
eq "$(j p_abs '.output.moved[0].from + ">" + .output.moved[0].to')" "src/a.c>src/b.c" \
	"the move too"
contains "$(j p_abs .output.summary)" "A src/p1.c" "the summary too"
eq "$(cat "$REAL/src/p1.c")" "int p1;" "added"
eq "$(cat "$REAL/src/b.c")" $'int a;\nint c;' "updated and moved"
[ -e "$REAL/src/a.c" ] || [ -e "$REAL/src/gone.c" ] && fail "a.c or gone.c is still there"
row_relative p_abs "apply_patch"
eq "$(lsql "select count(*) from ops where op_id = '$(j p_abs .op_id)'
	and instr(args_redacted, '*** Add File: src/p1.c') > 0")" 1 "the patch text is kept relative"

P=$'*** Begin Patch\n*** Add File: '"$LINK"$'/src/ok.c\n+ok\n*** Add File: '"$WS"$'/outside/p.txt\n+x\n*** End Patch'
c p_out apply_patch "$(jq -n --arg p "$P" '{patch: $p}')" --mode bypassPermissions
denied_outside p_out "$WS/outside/p.txt" "apply_patch with a path outside"
[ -e "$WS/outside/p.txt" ] || [ -e "$REAL/src/ok.c" ] && fail "apply_patch outside: something was written"
P=$'*** Begin Patch\n*** Update File: '"$LINK"$'/src/b.c\n*** Move to: /tmp/b.c\n@@\n-int c;\n+int d;\n*** End Patch'
c p_move apply_patch "$(jq -n --arg p "$P" '{patch: $p}')" --mode bypassPermissions
denied_outside p_move /tmp/b.c "a Move target outside"
P=$'*** Begin Patch\n*** Add File: '"$REAL"$'/../outside/q.txt\n+x\n*** End Patch'
c p_climb apply_patch "$(jq -n --arg p "$P" '{patch: $p}')" --mode bypassPermissions
eq "$(st p_climb)" "denied/not_permitted" "apply_patch: .. out of an absolute inside path"
[ -e "$WS/outside/q.txt" ] && fail "apply_patch ..: the file was written"
P=$'*** Begin Patch\n*** Add File: '"$LINK"$'/locked/x.txt\n+x\n*** End Patch'
c p_lock apply_patch "$(jq -n --arg p "$P" '{patch: $p}')" --mode bypassPermissions
eq "$(j p_lock .error.rule)" "deny: write_file(./locked/**)" "write_file's deny rule holds for a patch path"
P=$'*** Begin Patch\n*** Update File: '"$REAL"$'/.git/config\n@@\n-[core]\n+[x]\n*** End Patch'
c p_git apply_patch "$(jq -n --arg p "$P" '{patch: $p}')" --mode bypassPermissions
eq "$(st p_git)/$(j p_git .error.rule)" "denied/not_permitted/protected path" ".git/ is protected in a patch"

# ---- shell: workdir
c sh_rel shell '{"command":"ls","workdir":"src"}' --mode bypassPermissions
c sh_abs shell "{\"command\":\"ls\",\"workdir\":\"$LINK/src\"}" --mode bypassPermissions
eq "$(st sh_abs)" "persisted/-" "shell with an absolute workdir"
contains "$(j sh_abs .output.stdout)" "p1.c" "runs in that directory"
eq "$(j sh_abs .output.stdout)" "$(j sh_rel .output.stdout)" "runs where the relative workdir runs"
row_relative sh_abs "shell"
c sh_plan shell "{\"command\":\"pwd\",\"workdir\":\"$REAL/src\"}" --dry-run
eq "$(j sh_plan .output.args.workdir)/$(j sh_plan .output.plan.workdir)" src/src \
	"a dry run shows the relative workdir"
c sh_out shell '{"command":"pwd","workdir":"/etc"}' --mode bypassPermissions
denied_outside sh_out /etc "a workdir outside"

# ---- the default workspace (the current directory, reached through the
# symlink) and --workspace given through the symlink
(cd "$LINK" && "$TG" call --json read_file "{\"path\":\"$LINK/README.md\"}" > "$WS/d_link.json" 2> "$WS/d_link.err")
eq "$(st d_link)" "persisted/-" "no config: the current directory as the shell names it"
(cd "$LINK" && "$TG" call --json read_file "{\"path\":\"$REAL/README.md\"}" > "$WS/d_real.json" 2> "$WS/d_real.err")
eq "$(st d_real)" "persisted/-" "no config: the current directory's real path"
(cd "$WS" && "$TG" call --json --workspace link read_file "{\"path\":\"$LINK/README.md\"}" > "$WS/o_link.json" 2> "$WS/o_link.err")
eq "$(st o_link)" "persisted/-" "--workspace through the symlink"
(cd "$WS" && "$TG" call --json --workspace link read_file '{"path":"/etc/hostname"}' > "$WS/o_out.json" 2> "$WS/o_out.err")
contains "$(j o_out .error.message)" "workspace root $LINK" "--workspace: the root as given is named"
for n in d_link d_real o_link o_out; do sanitizers "$WS/$n.err" $n; done

# ---- through MCP (toolgate serve on stdio)
{
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
	printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"arguments\":{\"path\":\"$LINK/README.md\"}}}"
	printf '%s\n' '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/passwd"}}}'
} | (cd "$LINK" && timeout 30 "$TG" serve --config "$REAL/toolgate.yaml" > "$WS/mcp.out" 2> "$WS/mcp.err")
sanitizers "$WS/mcp.err" mcp
eq "$(jq -r 'select(.id == 2) | .result.isError' "$WS/mcp.out")" false "MCP: an absolute inside path works"
eq "$(jq -r 'select(.id == 2) | .result.structuredContent.total_lines' "$WS/mcp.out")" 2 \
	"MCP: the file is read"
eq "$(jq -r 'select(.id == 3) | .result._meta["toolgate/envelope"].status' "$WS/mcp.out")" denied \
	"MCP: an outside path is denied"
# ---- toolgate apply-patch (Codex's apply_patch program): the same paths,
# inside the current directory, through the symlink or the real path
P=$WS/cli
mkdir -p "$P/real"
ln -s real "$P/link"
printf 'a\nb\n' > "$P/real/f.txt"
(cd "$P/link" && "$TG" apply-patch "*** Begin Patch
*** Update File: $P/link/f.txt
@@
 a
-b
+c
*** Add File: $(cd "$P/real" && pwd -P)/new.txt
+hi
*** End Patch" > "$WS/cli.out" 2> "$WS/cli.err")
eq "$?" 0 "apply-patch: absolute paths inside the directory"
sanitizers "$WS/cli.err" apply-patch
eq "$(cat "$WS/cli.out")" $'Success. Updated the following files:\nA new.txt\nM f.txt' \
	"apply-patch: the summary names the relative paths"
eq "$(cat "$P/real/f.txt")" $'a\nc' "apply-patch: f.txt updated"
eq "$(cat "$P/real/new.txt")" hi "apply-patch: new.txt added"
(cd "$P/link" && "$TG" apply-patch "*** Begin Patch
*** Add File: $P/outside.txt
+x
*** End Patch" > "$WS/cli2.out" 2> "$WS/cli2.err")
eq "$?" 1 "apply-patch: an absolute path outside the directory is refused"
contains "$(cat "$WS/cli2.err" "$WS/cli2.out")" "outside.txt" "apply-patch: the refusal names the path"
CHECKS=$((CHECKS + 1))
[ ! -e "$P/outside.txt" ] || fail "apply-patch wrote outside the directory"

finish
