# docs/MODES.md's table of mode x approval policy (issue 21) is what the
# program does: each row's four cells (a read, a write, a sandboxed
# command, a configured destructive tool, no rule naming any of them) are
# checked against `toolgate call --dry-run` with that --mode and
# --approval.  The approval policies' former names (on-request, never)
# give the same cells as ask and deny; an unknown name is refused saying
# the names.
. "$(dirname "$0")/lib.sh"

DOC=$ROOT/docs/MODES.md
cd "$WS" || exit 1
echo hi > notes.txt
cat > toolgate.yaml <<'YAML'
sandbox: workspace-write
tools:
  deploy:
    description: Deploy (a stand-in that runs nothing).
    input_schema: {type: object, properties: {env: {type: string}}, required: [env]}
    command: [echo, "{}"]
    destructive: true
YAML

# cell MODE APPROVAL TOOL ARGS: runs / asks / denied, as the doc words it
cell() {
	"$TG" call --json --dry-run --mode "$1" --approval "$2" "$3" "$4" 2> "$WS/cell.err" < /dev/null |
		jq -r 'if .status == "dry_run" then ({"allow": "runs", "ask": "asks"}[.output.decision]
		       // .output.decision) elif .status == "denied" then "denied" else .status end'
	sanitizers "$WS/cell.err" "cell $1 $2 $3"
}
row() { # MODE APPROVAL: the four cells, "|"-separated
	printf '%s|%s|%s|%s' \
		"$(cell "$1" "$2" read_file '{"path":"notes.txt"}')" \
		"$(cell "$1" "$2" write_file '{"path":"notes.txt","content":"x"}')" \
		"$(cell "$1" "$2" shell '{"command":"touch made.txt"}')" \
		"$(cell "$1" "$2" deploy '{"env":"staging"}')"
}

# the table: rows "| `mode` | `approval` | c | c | c | c |" under the header
# "| mode | approval | read | write | sandboxed command | destructive tool |"
header=$(grep -c '^| mode | approval | read | write | sandboxed command | destructive tool |$' "$DOC")
eq "$header" 1 "docs/MODES.md has the table's header once"
rows=$(awk -F'|' '/^\| `[A-Za-z]+` \| `[a-z-]+` \|/ {
	for (i = 2; i <= 7; i++) { gsub(/^ +| +$|`/, "", $i) }
	print $2, $3, $4 "|" $5 "|" $6 "|" $7 }' "$DOC")
seen=
while read -r mode approval cells; do
	[ -n "$mode" ] || continue
	eq "$(row "$mode" "$approval")" "$cells" "docs/MODES.md: $mode x $approval (read|write|command|destructive)"
	seen="$seen $mode/$approval"
done <<< "$rows"
for m in default acceptEdits plan bypassPermissions dryRun; do
	for a in ask deny untrusted; do
		contains "$seen " " $m/$a " "docs/MODES.md has a row for $m x $a"
	done
done
eq "$(wc -w <<< "$seen" | tr -d ' ')" 15 "docs/MODES.md: 15 rows, one per combination"

# the former names read as the new ones
eq "$(row default on-request)" "$(row default ask)" "approval on-request: as ask"
eq "$(row bypassPermissions never)" "$(row bypassPermissions deny)" "approval never: as deny"
printf 'approval: never\n' > old.yaml
eq "$("$TG" call --json --dry-run --config old.yaml write_file '{"path":"n.txt","content":"x"}' 2> /dev/null |
	jq -r .error.message)" \
	"write_file needs approval and the approval policy is deny (nobody is asked); do not retry; ask the owner" \
	"approval: never in a file: denied, the policy named deny"
"$TG" call --json --approval sometimes read_file '{"path":"notes.txt"}' > /dev/null 2> bad.err
eq "$?" 1 "--approval sometimes: exit 1"
contains "$(cat bad.err)" "expected ask, deny or untrusted" "--approval sometimes: says the names"

# a destructive tool: an allow rule naming it lifts the asking, `*` does not
cat >> toolgate.yaml <<'YAML'
principals:
  local: {roles: [everything]}
  deployer: {roles: [staging]}
roles:
  everything: {allow: ["*"]}
  staging: {allow: ["deploy(env=staging)"]}
YAML
d() { "$TG" call --json --dry-run "$@" 2> /dev/null | jq -r '.output.decision // .status'; }
eq "$(d --mode bypassPermissions deploy '{"env":"staging"}')" ask 'allow "*": a destructive tool still asks'
eq "$(d --mode bypassPermissions write_file '{"path":"a.txt","content":"x"}')" allow 'allow "*": a write runs'
eq "$(d --as deployer deploy '{"env":"staging"}')" allow 'allow "deploy(env=staging)": runs unasked'
eq "$(d --as deployer deploy '{"env":"prod"}')" ask 'allow "deploy(env=staging)": prod still asks'
eq "$(d --as deployer --mode plan deploy '{"env":"staging"}')" allow 'a rule naming it: plan mode too'
finish
