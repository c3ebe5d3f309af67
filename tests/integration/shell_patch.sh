# Codex's apply_patch through the shell (issue 21): a shell call that is
# {"command": ["apply_patch", PATCH]}, or a script that is only
# `[cd DIR &&] apply_patch <<'EOF'` and the patch (a string, or bash -lc),
# runs as the apply_patch tool: decided, recorded and run as apply_patch,
# never as a command.  A program the sandbox cannot start is told in the
# gate's own words, never bubblewrap's.
. "$(dirname "$0")/lib.sh"
mkdir -p "$WS/ws/sub" "$WS/bin"
cd "$WS/ws"
printf 'old\n' > sub/old.txt
P=$'*** Begin Patch\n*** Add File: hello.txt\n+hi there\n*** End Patch'
export TOOLGATE_CONFIG=$WS/ws/toolgate.yaml
printf 'mode: acceptEdits\n' > toolgate.yaml
argv() { jq -nc --arg p "$1" '{command: ["apply_patch", $p]}'; }
script() { jq -nc --arg s "$1" '{command: $s}'; }
tg() { local n=$1; shift; (cd "$WS/ws" && "$TG" call --json "$@" > "$WS/$n.json" 2> "$WS/$n.err" < /dev/null); sanitizers "$WS/$n.err" "$n"; }
J() { jqv "$WS/$1.json" "$2"; }
sql() { sqlite3 "$WS/ws/.toolgate/ledger.db" "$1"; }

# ---- the argv form: run as apply_patch (acceptEdits allows it; a command it would ask)
tg a1 shell "$(argv "$P")"
eq "$(J a1 .status)/$(J a1 .tool)" persisted/apply_patch "argv form: persisted, as apply_patch"
eq "$(cat hello.txt)" "hi there" "argv form: the file is written"
eq "$(J a1 '.output.added | join(",")')" hello.txt "argv form: apply_patch's output"
eq "$(J a1 '.stages[] | select(.stage == "shell_patch") | .from')" shell "the trace says it came as shell"
eq "$(sql "select tool from ops where op_id = '$(J a1 .op_id)'")" apply_patch "the ledger records apply_patch"

# ---- the here-doc, after cd, as a string; and bash -lc with the shell's workdir
tg a2 shell "$(script "cd sub && apply_patch <<'EOF'
${P/hello/second}
EOF
")"
eq "$(J a2 .status)/$(J a2 .tool)" persisted/apply_patch "here-doc after cd: persisted"
eq "$(cat sub/second.txt 2> /dev/null)" "hi there" "here-doc after cd: written where cd went"
contains "$(sql "select args_redacted from ops where op_id = '$(J a2 .op_id)'")" "sub/second.txt" \
	"the ledger records the patch as it ran: the cd's directory in its path"
tg a3 shell "$(jq -nc --arg s "apply_patch <<PATCH
${P/hello/third}
PATCH" '{command: ["bash", "-lc", $s], workdir: "sub"}')"
eq "$(J a3 .status)" persisted "bash -lc with a workdir: persisted"
eq "$(cat sub/third.txt 2> /dev/null)" "hi there" "bash -lc: written in the workdir"
tg a4 shell "$(argv $'*** Begin Patch\n*** Update File: sub/old.txt\n@@\n-old\n+new\n*** End Patch')"
eq "$(cat sub/old.txt)" new "an update through the shell"

# ---- apply_patch's policy, not shell's
printf 'mode: default\npermissions:\n  allow: ["shell", "apply_patch"]\n  deny: ["apply_patch(./sub/**)"]\n' > toolgate.yaml
tg p1 shell "$(argv "${P/hello.txt/sub\/no.txt}")"
eq "$(J p1 .status)/$(J p1 .tool)" denied/apply_patch "an apply_patch deny rule holds for the shell form"
contains "$(J p1 .error.rule)" "apply_patch(./sub/**)" "the apply_patch rule decided"
CHECKS=$((CHECKS + 1))
[ ! -e sub/no.txt ] || fail "the denied patch wrote sub/no.txt"
printf 'mode: default\npermissions:\n  allow: ["apply_patch"]\n  deny: ["shell"]\n' > toolgate.yaml
tg p2 shell "$(argv "${P/hello/fourth}")"
eq "$(J p2 .status)" persisted "allowed as apply_patch although shell is denied"
printf 'mode: default\n' > toolgate.yaml
tg p3 shell "$(argv "${P/hello/fifth}")"
eq "$(J p3 .status)/$(J p3 .error.kind)" pending/needs_approval "default mode: it asks, as apply_patch does"
eq "$("$TG" approvals list --json | jq -r '.[0].tool')" apply_patch "the approval is apply_patch's"
tg p4 shell "$(argv $'*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+x\n*** End Patch')" --mode bypassPermissions
eq "$(J p4 .status)" denied "the floor judges the patch's paths"
tg p5 shell "$(argv 'not a patch')" --mode bypassPermissions
eq "$(J p5 .status)/$(J p5 .tool)" invalid/apply_patch "a patch that does not parse: invalid, as apply_patch"

# ---- a profile without apply_patch: refused, nothing runs
printf 'mode: bypassPermissions\nprofiles:\n  cmds: {categories: [runtime]}\n' > toolgate.yaml
tg p6 shell "$(argv "${P/hello/sixth}")" --profile cmds
eq "$(J p6 .status)" invalid "no apply_patch in the profile: invalid"
contains "$(J p6 .error.message)" "apply_patch" "and says so"
CHECKS=$((CHECKS + 1))
[ ! -e sixth.txt ] || fail "p6 wrote sixth.txt"

# ---- anything else stays a shell command
printf 'mode: bypassPermissions\n' > toolgate.yaml
tg s1 shell "$(script "echo before; apply_patch <<'EOF'
$P
EOF")"
eq "$(J s1 .tool)" shell "a command before it: a shell call"

# ---- a program the sandbox cannot start: the gate's sentence
tg n1 shell '{"command":["no_such_program_21"]}'
eq "$(J n1 .status)/$(J n1 .error.applied)" failed/no "a missing program: failed, nothing applied"
contains "$(J n1 .error.message)" 'no program "no_such_program_21"' "the gate names the program"
printf '#!/bin/sh\necho ran\n' > "$WS/bin/hidden_prog_21"
chmod +x "$WS/bin/hidden_prog_21"
printf 'mode: bypassPermissions\nshell: {path: "%s/bin:/usr/bin:/bin"}\n' "$WS" > toolgate.yaml
tg n2 shell '{"command":["hidden_prog_21"]}'
eq "$(J n2 .status)/$(J n2 .error.applied)" failed/unknown "a program the sandbox hides: failed, applied unknown"
# a command that prints the sandbox's words itself after acting: never "applied no"
tg n3 shell '{"command":"echo x > acted.txt; echo \"bwrap: execvp x: No such file or directory\" >&2; exit 1"}'
CHECKS=$((CHECKS + 1))
[ "$(J n3 .error.applied)" != no ] || fail "a spoofed sandbox message made a command that acted 'applied no'"
contains "$(J n2 .error.message)" 'could not run "hidden_prog_21" inside the sandbox' "the gate says so"
for n in n1 n2 p5 s1; do
	CHECKS=$((CHECKS + 1))
	case "$(jq -c . "$WS/$n.json")" in *bwrap*) fail "$n: bubblewrap's text reached the envelope" ;; esac
done
finish
