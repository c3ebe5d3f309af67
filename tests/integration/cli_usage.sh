# What the CLI says is what happens (issue 21): policy check --explain
# honours --rules; agent refuses without a provider; log shows the MCP
# session; apply-patch --help lists its options; the five-call example's
# README runs as written; a principal's token is documented and the denial
# says how to present it; approvals take a unique id prefix and the agent
# transcript shows the id whole; errors list the valid values and name the
# limit's key; a configuration error points at the key.
. "$(dirname "$0")/lib.sh"
cd "$WS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
printf 'hello\n' > a.txt

# run NAME ARGS...: toolgate ARGS in $WS, stdout NAME.out, stderr NAME.err, exit NAME.exit
run() {
	local name=$1; shift
	"$TG" "$@" > "$name.out" 2> "$name.err" < /dev/null
	echo $? > "$name.exit"
	sanitizers "$name.err" "$name"
}

# ---- policy check --explain --rules: the files' rules, as plain check uses them
printf 'prefix_rule(pattern=["git", "push"], decision="forbidden")\n' > push.rules
run check policy check --rules push.rules -- git push origin main
eq "$(jq -r .decision check.out)" forbidden "check --rules: forbidden"
run explain policy check --explain --rules push.rules -- git push origin main
eq "$(jq -r .execpolicy.decision explain.out)" forbidden "explain --rules: execpolicy is the files'"
eq "$(jq -r .decision explain.out)" deny "explain --rules: the gate denies it"
contains "$(jq -r .rule explain.out)" "push.rules:1" "explain --rules: the rule names the file"
run explain_none policy check --explain -- git push origin main
eq "$(jq -r .decision explain_none.out)" ask "explain without --rules: the configuration's (none)"
printf 'prefix_rule(pattern=' > bad.rules
run explain_bad policy check --explain --rules bad.rules -- git status
eq "$(cat explain_bad.exit)" 1 "explain --rules FILE that does not load: exit 1"
contains "$(cat explain_bad.err)" "bad.rules" "explain --rules FILE that does not load: names it"

# ---- agent: no provider, no run
mkdir np && (cd np && "$TG" agent "Move the service to port 9090" > ../noprov.out 2> ../noprov.err < /dev/null
             echo $? > ../noprov.exit)
eq "$(cat noprov.exit)" 2 "agent without a provider: exit 2"
contains "$(cat noprov.err)" "--provider scripted --script FILE" "agent without a provider: names a replay"
contains "$(cat noprov.err)" "make demo" "agent without a provider: names the demo"
eq "$(cat noprov.out)" "" "agent without a provider: no transcript"
[ -e np/.toolgate ] && fail "agent without a provider: a ledger was made (the demo ran)"
run noscript agent --provider scripted "x"
eq "$(cat noscript.exit)" 2 "agent --provider scripted without --script: exit 2"
contains "$(cat noscript.err)" "--script FILE" "agent --provider scripted without --script: says so"
mkdir demo && (cd demo && "$TG" agent --provider demo --max-turns 1 "x" > ../demo.out 2> ../demo.err < /dev/null
               echo $? > ../demo.exit)
eq "$(cat demo.exit)" 2 "agent --provider demo: the built-in script runs (stopped by --max-turns 1)"
contains "$(cat demo.out)" "I'll look at the workspace" "agent --provider demo: the demo script's first turn"
grep -q 'provider demo' "$ROOT/scripts/demo" || fail "scripts/demo names --provider demo"
CHECKS=$((CHECKS + 1))

# ---- log: the MCP session of each call
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}' |
	"$TG" serve > serve.out 2> serve.err
sanitizers serve.err serve
sid=$("$TG" log --json --tool read_file | jq -r 'select(.session != null) | .session' | tail -n 1)
[ -n "$sid" ] || fail "the MCP call has a session in the ledger"
CHECKS=$((CHECKS + 1))
line=$("$TG" log --tool read_file | grep ' op ' | tail -n 1)
contains "$line" "session $sid" "toolgate log shows the call's MCP session"

# ---- apply-patch --help: every way it is called
run aphelp apply-patch --help
contains "$(cat aphelp.out)" "--preserve-crlf" "apply-patch --help: --preserve-crlf"
grep -qE '^ +- +' aphelp.out || fail "apply-patch --help: - (the patch on stdin) is described"
CHECKS=$((CHECKS + 1))

# ---- examples/five-call: its README's calls, as written, give the statuses it says
grep -q 'make demo' "$ROOT/scripts/five-call" && fail "scripts/five-call says make demo uses it"
CHECKS=$((CHECKS + 1))
cp -r "$ROOT/examples/five-call" five && (
	cd five
	printf 'SECRET=hunter2\n' > .env
	export CI_BOT_TOKEN=ci-secret-token TOOLGATE_TOKEN=ci-secret-token
	n=0
	while IFS= read -r l; do
		want=${l##*# }
		cmd=${l%%  #*}
		got=$(eval "${cmd//toolgate /\"\$TG\" }" < /dev/null 2> err |
		      jq -r 'if type == "array" then .[].status else .status end' | sort -u | tr '\n' ' ')
		[ "$got" = "$want " ] || echo "FAIL: five-call README: $cmd: expected $want, got $got" >&2
		n=$((n + 1))
	done < <(grep -E '^(echo .*\| )?toolgate call .*  # [a-z_]+$' README.md)
	[ "$n" -ge 7 ] || echo "FAIL: five-call README: only $n calls found" >&2
	eq "$(grep -c 'deployed v42 to staging' deploys.log)" 1 "five-call README: one deploy"
) 2> five.err
grep FAIL five.err >&2 && fail "five-call README as written"
CHECKS=$((CHECKS + 1))

# ---- a principal's token: documented, and the denial says how to present it
grep -q 'TOOLGATE_TOKEN=' "$ROOT/README.md" || fail "README shows TOOLGATE_TOKEN at the CLI"
CHECKS=$((CHECKS + 1))
cat > tok.yaml <<'YAML'
default_principal: ci
principals:
  ci: {roles: [r], token_env: TG_TEST_CI_TOKEN}
roles:
  r: {allow: ["*"]}
YAML
TG_TEST_CI_TOKEN=s3cret "$TG" call --config tok.yaml read_file '{"path":"a.txt"}' > tok.json 2> tok.err < /dev/null
eq "$(jq -r .status tok.json)" denied "a token-needing principal without TOOLGATE_TOKEN: denied"
contains "$(jq -r .error.message tok.json)" "sets TOOLGATE_TOKEN" "the denial says to set TOOLGATE_TOKEN"
TG_TEST_CI_TOKEN=s3cret TOOLGATE_TOKEN=s3cret "$TG" call --config tok.yaml read_file '{"path":"a.txt"}' \
	> tok2.json 2> /dev/null < /dev/null
eq "$(jq -r .status tok2.json)" persisted "with TOOLGATE_TOKEN: it runs"

# ---- approvals: a unique prefix, an ambiguous one; the agent transcript's ids
"$TG" call write_file '{"path":"p1.txt","content":"1"}' > p1.json < /dev/null 2> /dev/null
"$TG" call write_file '{"path":"p2.txt","content":"2"}' > p2.json < /dev/null 2> /dev/null
id1=$(jq -r .error.approval_id p1.json) id2=$(jq -r .error.approval_id p2.json)
i=0
while [ "${id1:i:1}" = "${id2:i:1}" ]; do i=$((i + 1)); done
[ "$i" -ge 4 ] || i=4
run ambiguous approvals approve "${id1:0:i}"
eq "$(cat ambiguous.exit)" 1 "an ambiguous prefix: exit 1"
contains "$(cat ambiguous.err)" "ambiguous" "an ambiguous prefix: says so"
contains "$(cat ambiguous.err)" "$id1" "an ambiguous prefix: lists the first candidate"
contains "$(cat ambiguous.err)" "$id2" "an ambiguous prefix: lists the second candidate"
run unique approvals approve "${id1:0:i+1}"
eq "$(cat unique.exit)" 0 "a unique prefix approves"
eq "$(cat unique.out)" "approved $id1" "a unique prefix: the whole id is said"
run short approvals deny "${id2:0:3}"
eq "$(cat short.exit)" 1 "a prefix under 4 characters is no prefix"
run deny approvals deny "$id2" --reason "not now"
eq "$(cat deny.out)" "denied $id2" "the whole id still works"
run agentw agent --script "$ROOT/tests/data/agent/scripts/gemini_writes.json" --max-turns 1 "Write w.txt"
aid=$("$TG" approvals list --json | jq -r '.[] | select(.tool == "write_file" and .state == "pending") | .id' | head -n 1)
[ -n "$aid" ] || fail "the agent's write is queued for approval"
contains "$(cat agentw.out)" "toolgate approvals approve $aid" "the agent transcript shows the approval id whole"

# ---- errors for people list the valid values
"$TG" call raed_file '{}' > ut.json 2> /dev/null < /dev/null
contains "$(jq -r .error.message ut.json)" "read_file, list_dir" "an unknown tool: the tools there are"
"$TG" call --as nobody read_file '{"path":"a.txt"}' > up.json 2> /dev/null < /dev/null
contains "$(jq -r .error.message up.json)" '(the configuration has local)' "an unknown principal: the principals"
run uprof tools --profile nope
contains "$(cat uprof.err)" "the profiles are minimal, coding, messaging, full" "an unknown profile: the profiles"
run ustat log --status done
contains "$(cat ustat.err)" "the statuses are invalid, denied, pending, failed" "an unknown status: the statuses"
printf 'limits: {max_args_bytes: 64}\n' > small.yaml
"$TG" call --config small.yaml write_file "{\"path\":\"big.txt\",\"content\":\"$(printf 'x%.0s' $(seq 100))\"}" \
	> big.json 2> /dev/null < /dev/null
contains "$(jq -r .error.message big.json)" "(limits.max_args_bytes)" "over the limit: the limit's key"

# ---- a configuration error points at the key
printf 'principals:\n  default:\n    bogus: 1\n' > badkey.yaml
run badkey doctor --config badkey.yaml
contains "$(cat badkey.err)" "badkey.yaml:3:5: principals.default: unknown key \"bogus\"" \
	"an unknown key: file:line:col of the key"
printf 'tools:\n  x:\n    description: y\n' > nocmd.yaml
run nocmd doctor --config nocmd.yaml
contains "$(cat nocmd.err)" "nocmd.yaml:2:3: tools.x: missing required key" \
	"a missing key: at the key of the mapping that lacks it"
finish
