# The examples are safe to copy (issue 21): each example directory
# (examples/ with its toolgate.yaml, rules/, hooks/ and scripts/;
# examples/demo; examples/five-call), copied into a fresh directory, loads:
# `toolgate doctor` and `toolgate policy test` exit 0 there; every program
# it names is there and runs (the deploy tool, as the principal allowed to
# deploy to staging; the example's hook, which refuses a force push); and
# its default principal is asked before a write, a command and the
# destructive deploy, while reads run.
. "$(dirname "$0")/lib.sh"

export DEPLOY_TOKEN=example CI_BOT_TOKEN=ci-token
# decision DIR TOOL ARGS [OPTIONS...]: the dry-run decision in DIR, or the status
decision() {
	local dir=$1 tool=$2 args=$3; shift 3
	(cd "$dir" && "$TG" call --json --dry-run "$@" "$tool" "$args" 2> "$WS/d.err" < /dev/null) |
		jq -r '.output.decision // .status'
	sanitizers "$WS/d.err" "dry run of $tool in $dir"
}

n=0
for src in "$ROOT/examples" "$ROOT/examples/demo" "$ROOT/examples/five-call"; do
	name=${src#"$ROOT/"}
	d=$WS/ex$n
	n=$((n + 1))
	mkdir -p "$d"
	cp -R "$src/." "$d/"
	[ -f "$d/toolgate.yaml" ] || { fail "$name: no toolgate.yaml"; continue; }
	(cd "$d" && "$TG" doctor > "$WS/doctor.out" 2> "$WS/doctor.err" < /dev/null)
	eq "$?" 0 "$name, copied: toolgate doctor exits 0 ($(head -c 300 "$WS/doctor.err"))"
	(cd "$d" && "$TG" policy test > "$WS/ptest.out" 2> "$WS/ptest.err" < /dev/null)
	eq "$?" 0 "$name, copied: toolgate policy test exits 0 ($(head -c 300 "$WS/ptest.out" "$WS/ptest.err"))"
	contains "$(cat "$WS/ptest.out")" " 0 failed" "$name: policy test: no test fails"
	sanitizers "$WS/doctor.err" "$name doctor"
	sanitizers "$WS/ptest.err" "$name policy test"

	# the default principal: reads run; writes, commands, the deploy ask
	eq "$(decision "$d" read_file '{"path":"toolgate.yaml"}')" allow "$name: the default principal: a read runs"
	eq "$(decision "$d" write_file '{"path":"notes.txt","content":"x"}')" ask \
		"$name: the default principal: write_file asks"
	eq "$(decision "$d" shell '{"command":"rm -rf build"}')" ask "$name: the default principal: shell asks"
	eq "$(decision "$d" shell '{"command":"curl -s https://example.com"}')" ask \
		"$name: the default principal: curl asks"
	deploy='{"env":"staging","version":"v2","idempotency_key":"k1"}'
	eq "$(decision "$d" deploy_service "$deploy")" ask \
		"$name: the default principal: the destructive deploy asks"
	eq "$(decision "$d" deploy_service "$deploy" --mode bypassPermissions)" ask \
		"$name: the destructive deploy asks under bypassPermissions too"
	eq "$(decision "$d" deploy_service '{"env":"prod","version":"v2","idempotency_key":"k1"}' --as ci-bot)" \
		denied "$name: ci-bot: prod is denied"

	# the deploy program is there and runs, for the principal allowed to run it
	(cd "$d" && TOOLGATE_TOKEN=$CI_BOT_TOKEN "$TG" call --json --as ci-bot deploy_service "$deploy" \
		> "$WS/deploy.json" 2> "$WS/deploy.err" < /dev/null)
	eq "$(jq -r .status "$WS/deploy.json")" persisted \
		"$name: ci-bot deploys to staging unasked: $(jq -c .error "$WS/deploy.json") $(head -c 300 "$WS/deploy.err")"
	eq "$(jq -r .output.deployed "$WS/deploy.json")" v2 "$name: the deploy program answered"
	eq "$(grep -c 'deployed v2 to staging' "$d/deploys.log" 2> /dev/null)" 1 "$name: the deploy ran once"
	sanitizers "$WS/deploy.err" "$name deploy"
done

# examples/: the hook it names is there and refuses a force push
(cd "$WS/ex0" && "$TG" call --json --mode bypassPermissions shell '{"command":"git push --force origin main"}' \
	> "$WS/push.json" 2> "$WS/push.err" < /dev/null)
eq "$(jq -r .status "$WS/push.json")" denied "examples: a force push is denied"
contains "$(jq -r .error.message "$WS/push.json")" "force pushes are not for the agent" \
	"examples: by hooks/check.sh, with its reason"
(cd "$WS/ex0" && "$TG" call --json shell '{"command":"git status"}' > "$WS/status.json" 2> /dev/null < /dev/null)
eq "$(jq -r '[.stages[] | select(.stage == "hooks")][0].ok' "$WS/status.json")" true \
	"examples: the hook passes git status"
eq "$(jq -r .output.decision "$WS/status.json" 2> /dev/null; jq -r '[.stages[] | select(.stage == "decide")][0].decision' "$WS/status.json")" \
	"null
allow" "examples: git status runs unasked"
finish
