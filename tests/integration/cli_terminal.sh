# Output for people (issue 21).  With stdout a terminal (a pty from
# script(1)): call prints a short result (status, reason, the output as text,
# where the envelope is), a dry run its plan, doctor a summary, approvals
# list each approval with its plan, policy check --explain a few lines; log,
# stats and the agent transcript colour the statuses; NO_COLOR and --color
# turn colour off or on.  Piped, or with --json, each prints the JSON it
# always printed.  The approval prompt shows the plan (a diff, a command's
# argv and sandbox), not JSON arguments; serve on a terminal says what it is.
. "$(dirname "$0")/lib.sh"
cd "$WS"
command -v script > /dev/null || { fail "script(1) is needed to give the program a terminal"; finish; exit; }
ESC=$(printf '\033')

# term NAME KEYS ARGS...: toolgate ARGS with a terminal for stdin, stdout and
# stderr; KEYS typed after a moment (a line is sent with \r); what the
# terminal showed into NAME.out
term() {
	local name=$1 keys=$2; shift 2
	local cmd=$(printf '%q ' "$TG" "$@")
	if [ -n "$keys" ]; then
		(sleep 0.5; printf "$keys") | timeout 60 script -qec "$cmd" /dev/null
	else
		timeout 60 script -qec "$cmd" /dev/null < /dev/null
	fi | tr -d '\r' > "$name.out"
	sanitizers "$name.out" "$name (terminal)"
}
# plain FILE: without colour sequences
plain() { sed "s/$ESC\[[0-9;]*m//g" "$1"; }

printf 'hello\n' > a.txt

# ---- call: a short result on a terminal, JSON to a pipe
term read "" call read_file '{"path":"a.txt"}'
out=$(plain read.out)
contains "$out" "persisted  read_file" "call on a terminal: status and tool"
contains "$out" "1	hello" "call on a terminal: the output as text"
contains "$out" "the whole envelope: toolgate log --op " "call on a terminal: where the envelope is"
case $out in *'"op_id"'*) fail "call on a terminal: no JSON envelope" ;; esac
contains "$(cat read.out)" "$ESC[32mpersisted" "call on a terminal: the status in colour"
op=$(sed -n 's/.*toolgate log --op \([0-9a-f-]*\) --json.*/\1/p' read.out)
eq "$("$TG" log --op "$op" --json | jq -r .envelope.status)" persisted "the envelope is where it says"
NO_COLOR=1 term nocolor "" call read_file '{"path":"a.txt"}'
case $(cat nocolor.out) in *"$ESC["*) fail "NO_COLOR: no colour" ;; esac
CHECKS=$((CHECKS + 1))
term never "" call --color never read_file '{"path":"a.txt"}'
case $(cat never.out) in *"$ESC["*) fail "--color never: no colour" ;; esac
CHECKS=$((CHECKS + 1))
"$TG" call read_file '{"path":"a.txt"}' < /dev/null > piped.out 2> /dev/null
eq "$(head -n 2 piped.out | tr '\n' '|' | cut -c 1-14)" '{|  "op_id": "' "call to a pipe: the indented envelope, as before"
eq "$(jq -r .status piped.out)" persisted "call to a pipe: JSON"
term json "" call --json read_file '{"path":"a.txt"}'
eq "$(jq -r .status json.out)" persisted "call --json on a terminal: compact JSON"
eq "$(wc -l < json.out | tr -d ' ')" 1 "call --json on a terminal: one line"

# ---- a dry run on a terminal: the plan, the diff
term dry "" call --dry-run write_file '{"path":"a.txt","content":"bye\n"}'
out=$(plain dry.out)
contains "$out" "dry_run  write_file" "dry run on a terminal: status"
contains "$out" "replace a.txt" "dry run on a terminal: what it would do"
contains "$out" "-hello" "dry run on a terminal: the diff's old line"
contains "$out" "+bye" "dry run on a terminal: the diff's new line"
contains "$(cat dry.out)" "$ESC[32m+bye" "dry run on a terminal: the diff in colour"
eq "$(cat a.txt)" hello "dry run: nothing was written"

# ---- the approval prompt shows the plan, not escaped JSON
term ask_write "n\r" call write_file '{"path":"a.txt","content":"bye\n"}'
out=$(plain ask_write.out)
contains "$out" "allow once? [y/N]" "the prompt"
contains "$out" "+bye" "the prompt shows the diff"
case $out in *'{"content"'*|*'\"content\"'*) fail "the prompt shows JSON arguments" ;; esac
CHECKS=$((CHECKS + 1))
term ask_shell "n\r" call shell '{"command":["touch","x y"]}'
out=$(plain ask_shell.out)
contains "$out" "\$ touch 'x y'" "the prompt shows a command's argv, quoted"
contains "$out" "sandbox workspace-write" "the prompt shows the command's sandbox"
contains "$out" "allow once? [y/N] n" "the prompt for a command"
[ -e "x y" ] && fail "n: the command ran"
grep -q 'allow once? \[y/N\]' "$ROOT/README.md" || fail "the prompt is documented in README.md"
CHECKS=$((CHECKS + 1))

# ---- approvals list: each with its plan on a terminal, the same lines as before to a pipe
"$TG" call write_file '{"path":"q.txt","content":"z\n"}' < /dev/null > q.json 2> /dev/null
id=$(jq -r .error.approval_id q.json)
term approvals "" approvals list
out=$(plain approvals.out)
contains "$out" "$id  pending  write_file" "approvals list on a terminal: the approval"
contains "$out" "create q.txt" "approvals list on a terminal: its plan"
contains "$out" "+z" "approvals list on a terminal: the diff"
contains "$(cat approvals.out)" "$ESC[32m+z" "approvals list on a terminal: the diff in colour"
contains "$out" "toolgate approvals approve|deny $id" "approvals list on a terminal: how to decide"
"$TG" approvals list > approvals.pipe 2> /dev/null < /dev/null
contains "$(head -n 1 approvals.pipe)" "$id  pending  write_file {\"content\":\"z\\n\",\"path\":\"q.txt\"}  (by local; expires" \
	"approvals list to a pipe: the line it always printed"

# ---- doctor and policy check --explain
term doctor "" doctor
out=$(plain doctor.out)
contains "$out" "sandbox" "doctor on a terminal: the sandbox"
contains "$out" "(the whole report: toolgate doctor --json)" "doctor on a terminal: where the rest is"
[ "$(head -c 1 doctor.out)" = "{" ] && fail "doctor on a terminal: not JSON"
CHECKS=$((CHECKS + 1))
eq "$("$TG" doctor < /dev/null 2> /dev/null | jq -r 'has("backend")')" true "doctor to a pipe: the JSON report"
printf 'prefix_rule(pattern=["git", "push"], decision="forbidden")\n' > push.rules
term explain "" policy check --explain --rules push.rules -- git push
out=$(plain explain.out)
contains "$out" "decision   deny" "explain on a terminal: the decision"
contains "$out" "git push: forbidden" "explain on a terminal: the rule that matched"
contains "$(cat explain.out)" "$ESC[31mdeny" "explain on a terminal: the decision in colour"
eq "$("$TG" policy check --explain --rules push.rules -- git push < /dev/null | jq -r .decision)" deny \
	"explain to a pipe: JSON"

# ---- log, stats: statuses in colour on a terminal, never in a pipe (unless asked)
term log "" log
contains "$(cat log.out)" "$ESC[32mpersisted" "log on a terminal: statuses in colour"
"$TG" log < /dev/null > log.pipe 2> /dev/null
case $(cat log.pipe) in *"$ESC["*) fail "log to a pipe: no colour" ;; esac
CHECKS=$((CHECKS + 1))
contains "$("$TG" log --color always < /dev/null)" "$ESC[32mpersisted" "log --color always: colour in a pipe too"
term stats "" stats
contains "$(cat stats.out)" "$ESC[32mpersisted" "stats on a terminal: statuses in colour"
case $("$TG" stats < /dev/null) in *"$ESC["*) fail "stats to a pipe: no colour" ;; esac
CHECKS=$((CHECKS + 1))
term badcolor "" log --color sometimes
contains "$(cat badcolor.out)" "--color takes auto, always or never" "--color with another word: says what it takes"

# ---- the agent transcript: statuses in colour
term agent "n\r" agent --script "$ROOT/tests/data/agent/scripts/gemini_writes.json" --max-turns 1 "Write w.txt"
contains "$(cat agent.out)" "$ESC[31mdenied" "agent transcript on a terminal: the status in colour"
contains "$(plain agent.out)" "allow once? [y/N]" "agent on a terminal: asked at the terminal"

# ---- serve: one line on stderr when stdin is a terminal
term serve '\004' serve
contains "$(cat serve.out)" "toolgate serve: an MCP server on stdin/stdout" "serve on a terminal: says what it is"
contains "$(cat serve.out)" "Ctrl-D" "serve on a terminal: how to quit"
printf '' | "$TG" serve > serve.pipe 2> serve.err
eq "$(cat serve.err)" "" "serve from a client (a pipe): nothing on stderr"
finish
