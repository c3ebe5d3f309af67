# toolgate eval: every score computed by hand from the fixtures of
# tests/data/eval/ (each case's comment there says what its answer is and
# what it must score), with the scripted provider and with the fake HTTP
# provider (tests/fake_provider.c: openai-chat and anthropic, one request at
# a time and four at once), --runs, --compare with --fail-under/--max-drop,
# JUnit read by a real consumer (python3-junitparser) and xmllint, --history,
# that nothing runs and nothing is recorded as a call, the bad inputs, the
# built-in suite and the definitions' size.  No network.
. "$(dirname "$0")/lib.sh"
cd "$WS"
D=$ROOT/tests/data/eval
SUITE=("$D/suite.yaml" "$D/more.yaml")
# the scratch workspaces are made here: each must be gone when its run ends
mkdir -p "$WS/tmp" "$WS/out"
export TMPDIR=$WS/tmp
export TOOLGATE_CONFIG=$WS/toolgate.yaml
# one ledger by its absolute path, so that the judges' gates (over their
# scratch workspaces) would write any call they made into the ledger checked
# below, not into one that goes with the scratch directory
export TOOLGATE_STORE=$WS/.toolgate/ledger.db
cat > toolgate.yaml <<'YAML'
mode: default
approval: on-request
YAML
# the user's own files, with the names the suite's setup files have and other
# content: a judge that read these would score patch-ok and patch-bad-context
# the other way round
printf 'def greet(person):\n    print("hi", person)\n' > app.py
printf 'def add(x, y):\n    return x + y\n' > lib.py
printf '# The user'"'"'s own README\n' > README.md
USER_FILES=$(sha256sum app.py lib.py README.md)

# ev NAME ARGS...: toolgate eval, stdout to out/NAME, stderr to out/NAME.err,
# exit code to out/NAME.exit
ev() {
	local name=$1; shift
	"$TG" eval "$@" > "$WS/out/$name" 2> "$WS/out/$name.err" < /dev/null
	echo $? > "$WS/out/$name.exit"
	sanitizers "$WS/out/$name.err" "eval $name"
}
code() { cat "$WS/out/$1.exit"; }
O=$WS/out

# scores FILE GROUP "CASES RESULTS TOOL VALID ARGS POLICY PASS": a group's
# score (GROUP "overall": the overall one), each check as ok/of; and every
# rate is ok/of, or null when of is 0
scores() {
	local sel='.scores.tools[$g]'
	[ "$2" = overall ] && sel='.scores.overall'
	eq "$(jq -r --arg g "$2" "$sel"' | "\(.cases) \(.results) " + ([.tool, .valid, .args, .policy, .pass] | map("\(.ok)/\(.of)") | join(" "))' "$1")" \
		"$3" "$(basename "$1"): $2"
	eq "$(jq -r --arg g "$2" "$sel"' | [.tool, .valid, .args, .policy, .pass] | all(if .of == 0 then .rate == null else (.rate - .ok / .of | . < 1e-12 and . > -1e-12) end)' "$1")" \
		true "$(basename "$1"): $2: each rate is ok/of"
}
# checks FILE CASE RUN: "pass tool valid args policy" of one result
checks() {
	jq -r --arg c "$2" --argjson r "$3" '.results[] | select(.case == $c and .run == $r) |
		"\(.pass) \(.checks.tool) \(.checks.valid) \(.checks.args) \(.checks.policy)"' "$1"
}
# failure FILE CASE RUN: "check: message", or "none"
failure() {
	jq -r --arg c "$2" --argjson r "$3" '.results[] | select(.case == $c and .run == $r) |
		if .failure then "\(.failure.check): \(.failure.message)" else "none" end' "$1"
}
# row FILE NAME: the first table row whose first column is NAME, blanks squeezed
row() { awk -v n="$2" '$1 == n { $1 = $1; print; exit }' "$1"; }

# ==== 1. the scripted provider: one case per way to fail ====================
ev main.json "${SUITE[@]}" --script "$D/answers-chat.json" --model scripted-test --format json --no-record
M=$O/main.json
eq "$(code main.json)" 0 "main: exit 0 (no threshold given)"
eq "$(jq -r '"\(.provider) \(.api) \(.model) \(.runs) \(.profile) \(.suite.cases)"' "$M")" \
	"scripted openai-chat scripted-test 1 coding 14" "main: provider, api, model, runs, profile, cases"
eq "$(jq -r '.suite.files | join(" ")' "$M")" "${SUITE[*]}" "main: the files, in order"
eq "$(jq -r '.suite.digest | test("^[0-9a-f]{64}$")' "$M")" true "main: the suite's digest is a sha256"
eq "$(jq -r '.manifest' "$M")" "$("$TG" tools --digest 2> /dev/null)" "main: the manifest is the profile's digest"
eq "$(jq -r '.thresholds | "\(.fail_under) \(.max_drop) \(.failed | length)"' "$M")" "null null 0" \
	"main: thresholds is there, with none given"
eq "$(jq -r '[.results[] | "\(.case)/\(.run)"] | join(" ")' "$M")" \
	"right/1 wrong-tool/1 invalid/1 args-mismatch/1 asked/1 no-call/1 suite#7/1 chat-call/1 patch-bad-context/1 patch-ok/1 shell-denied/1 shell-touch/1 escapes/1 minimal-list/1" \
	"main: one result per case, in order (a case without an id is <stem>#<n>)"
eq "$(jq -r '.results[0].where' "$M")" "$D/suite.yaml:$(grep -n 'id: right$' "$D/suite.yaml" | cut -d: -f1):$(grep 'id: right$' "$D/suite.yaml" | awk '{print index($0, "id:")}')" \
	"main: where a case is: file:line:col"
contains "$(jq -r '.results[13].where' "$M")" "$D/more.yaml:$(grep -n 'id: minimal-list$' "$D/more.yaml" | cut -d: -f1):" \
	"main: where, in the second file"

# the checks of each case (pass tool valid args policy)
eq "$(checks "$M" right 1)" "true true true true true" "right: passes"
eq "$(jq -r '.results[0].got | "\(.tool) \(.calls) \(.args | tojson)"' "$M")" \
	'read_file 2 {"path":"README.md","limit":20}' "right: judged on its read_file, the second of two calls"
eq "$(checks "$M" wrong-tool 1)" "false false false false false" "wrong-tool: every check fails"
eq "$(failure "$M" wrong-tool 1)" "tool: called read_file, expected list_dir" "wrong-tool: the failure"
eq "$(checks "$M" invalid 1)" "false true false false false" "invalid: the right tool, not valid"
contains "$(failure "$M" invalid 1)" "valid: invalid: /file" "invalid: the failure names the field"
contains "$(failure "$M" invalid 1)" "not allowed" "invalid: and the schema's error"
eq "$(checks "$M" args-mismatch 1)" "false true true false true" "args-mismatch: valid, allowed, wrong path"
eq "$(failure "$M" args-mismatch 1)" 'args: /path: expected "config/*.yml", got "config.yml"' "args-mismatch: the failure"
eq "$(checks "$M" asked 1)" "false true true true false" "asked: decided otherwise than expected"
eq "$(failure "$M" asked 1)" "policy: decided ask (mode default), expected allow" "asked: the failure"
eq "$(jq -r '.results[4] | "\(.decision) \(.rule)"' "$M")" "ask mode default" "asked: the decision and the rule"
eq "$(checks "$M" no-call 1)" "false false false false false" "no-call: every check fails"
eq "$(failure "$M" no-call 1)" "tool: no tool was called, expected search_files" "no-call: the failure"
eq "$(jq -c '.results[5].got | [.tool, .calls, .text]' "$M")" '[null,0,"It is probably in <main.c> & ]]>\u0007\u001b[2J, I think."]' \
	"no-call: what came back (the text as data, whole)"
eq "$(checks "$M" 'suite#7' 1)" "true true null null null" "no_tool answered right: passes; the other checks do not apply"
eq "$(failure "$M" 'suite#7' 1)" "none" "no_tool answered right: no failure"
eq "$(checks "$M" chat-call 1)" "false false null null null" "no_tool answered with a call"
eq "$(failure "$M" chat-call 1)" "tool: called list_dir, expected no tool call" "chat-call: the failure"
eq "$(checks "$M" patch-bad-context 1)" "false true false true false" \
	"patch-bad-context: would fail (no args given: args true)"
contains "$(failure "$M" patch-bad-context 1)" "valid: would fail: Failed to find expected lines in lib.py" \
	"patch-bad-context: the dry run's reason"
eq "$(checks "$M" patch-ok 1)" "true true true true true" "patch-ok: fits the setup file"
eq "$(jq -r '.results[9].decision' "$M")" "ask" "patch-ok: asked, which the case allows"
eq "$(checks "$M" shell-denied 1)" "true true true true true" "shell-denied: denied, as expected"
eq "$(jq -r '.results[10] | "\(.decision) \(.rule | startswith("floor:"))"' "$M")" "deny true" "shell-denied: by the floor"
eq "$(checks "$M" shell-touch 1)" "true true true true true" "shell-touch: asked, which the case allows"
eq "$(checks "$M" escapes 1)" "false true true false true" "escapes: the pattern does not match"
contains "$(failure "$M" escapes 1)" 'args: /pattern: expected "TODO*", got ' "escapes: the failure"
eq "$(checks "$M" minimal-list 1)" "true true true true true" "minimal-list: passes under minimal"
eq "$(jq -r '[.results[] | select(.error != null)] | length' "$M")" 0 "main: no provider error"

# the scores (each worked out from the table of checks above)
eq "$(jq -r '.scores.tools | keys | join(",")' "$M")" \
	"(none),apply_patch,list_dir,read_file,search_files,shell,write_file" "main: a group per expected tool and (none)"
scores "$M" read_file    "3 3 3/3 2/3 1/3 2/3 1/3"
scores "$M" list_dir     "2 2 1/2 1/2 1/2 1/2 1/2"
scores "$M" write_file   "1 1 1/1 1/1 1/1 0/1 0/1"
scores "$M" search_files "2 2 1/2 1/2 0/2 1/2 0/2"
scores "$M" apply_patch  "2 2 2/2 1/2 2/2 1/2 1/2"
scores "$M" shell        "2 2 2/2 2/2 2/2 2/2 2/2"
scores "$M" "(none)"     "2 2 1/2 0/0 0/0 0/0 1/2"
scores "$M" overall      "14 14 11/14 8/12 7/12 7/12 6/14"
eq "$(jq -r '.definitions | "\(.profile) \(.api) \(.tools)"' "$M")" "coding openai-chat 6" "main: the definitions sent"
# chars: the tools array as sent (compact JSON), measured here on its own
eq "$(jq -r '.definitions.chars' "$M")" "$("$TG" tools --format openai-chat 2> /dev/null | jq -c . | tr -d '\n' | wc -c)" \
	"main: the definitions' size in characters"

# ---- the same in the table
ev main.txt "${SUITE[@]}" --script "$D/answers-chat.json" --model scripted-test --no-record
T=$O/main.txt
eq "$(code main.txt)" 0 "table: exit 0"
eq "$(head -1 "$T")" "eval: 14 cases × 1 run, scripted scripted-test, profile coding" "table: the first line"
contains "$(sed -n 2p "$T")" "definitions: 6 tools, " "table: the definitions' line"
contains "$(sed -n 2p "$T")" "(openai-chat)" "table: in the API's shape"
eq "$(row "$T" read_file)" "read_file 3 100% 67% 33% 67% 33%" "table: read_file"
eq "$(row "$T" write_file)" "write_file 1 100% 100% 100% 0% 0%" "table: write_file"
eq "$(row "$T" "(none)")" "(none) 2 50% - - - 50%" "table: (none), the checks that do not apply as -"
eq "$(row "$T" overall)" "overall 14 79% 67% 58% 58% 43%" "table: overall"
contains "$(cat "$T")" "failing (8):" "table: the failing count"
for c in wrong-tool invalid args-mismatch asked no-call chat-call patch-bad-context escapes; do
	eq "$(grep -c "^  $c (.*) run 1: " "$T")" 1 "table: $c is listed as failing"
done
for c in right suite#7 patch-ok shell-denied shell-touch minimal-list; do
	eq "$(grep -c "^  $c (" "$T")" 0 "table: $c (passed) is not listed"
done
contains "$(grep -A3 '^  args-mismatch (' "$T")" 'run 1: args: /path: expected "config/*.yml", got "config.yml"' \
	"table: the failure sentence"
contains "$(grep -A3 '^  args-mismatch (' "$T")" "request: Show me the app's config in config/app.yml" "table: the request"
eq "$(LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]' "$T")" 0 "table: no control character from the model"
contains "$(grep -A3 '^  escapes (' "$T")" "<TODO> & ]]>" "table: the model's text is shown, as data"

# ==== 7. nothing executed, nothing recorded as a call, the user's files unread
for f in hello.txt made-by-shell.txt notes.txt config src; do
	[ -e "$WS/$f" ] && fail "the eval made $f in the workspace"
done
CHECKS=$((CHECKS + 1))
eq "$(sha256sum app.py lib.py README.md)" "$USER_FILES" "the user's files are as they were"
eq "$("$TG" log --json 2> /dev/null | wc -l)" 0 "toolgate log shows no call"
eq "$(sql 'SELECT count(*) FROM ops') $(sql 'SELECT count(*) FROM approvals')" "0 0" \
	"no call and no approval in the ledger"
eq "$(ls -A "$WS/tmp" | wc -l)" 0 "the scratch workspaces are gone"

# ==== 2. --runs 2: results and rates count runs ============================
ev runs2.json "$D/runs.yaml" --runs 2 --script "$D/runs2-chat.json" --format json --no-record
R=$O/runs2.json
eq "$(code runs2.json)" 0 "runs 2: exit 0"
eq "$(jq -r '"\(.runs) \(.suite.cases) \(.results | length)"' "$R")" "2 3 6" "runs 2: 3 cases, 6 results"
eq "$(jq -r '[.results[] | "\(.case)/\(.run)"] | join(" ")' "$R")" \
	"readme/1 readme/2 notes/1 notes/2 hello/1 hello/2" "runs 2: each case's runs together"
eq "$(checks "$R" readme 1) | $(checks "$R" readme 2)" \
	"true true true true true | false false false false false" "runs 2: readme right, then list_dir"
eq "$(failure "$R" notes 1)" "policy: decided ask (mode default), expected allow" "runs 2: notes run 1"
eq "$(failure "$R" notes 2)" 'args: /path: expected "notes.txt", got "notes.md"' "runs 2: notes run 2"
eq "$(failure "$R" hello 2)" "tool: called shell, expected no tool call" "runs 2: hello run 2"
scores "$R" read_file  "1 2 1/2 1/2 1/2 1/2 1/2"
scores "$R" write_file "1 2 2/2 2/2 1/2 0/2 0/2"
scores "$R" "(none)"   "1 2 1/2 0/0 0/0 0/0 1/2"
scores "$R" overall    "3 6 4/6 3/4 2/4 1/4 2/6"
ev runs2.txt "$D/runs.yaml" --runs 2 --script "$D/runs2-chat.json" --no-record
eq "$(head -1 "$O/runs2.txt")" "eval: 3 cases × 2 runs, scripted, profile coding" "runs 2: the table's first line"
eq "$(grep -c '^  readme (.*) run 2: tool: called list_dir, expected read_file' "$O/runs2.txt")" 1 \
	"runs 2: the failing run is named"

# ==== 3. the fake HTTP provider ============================================
FAKE=$(dirname "$TG")/fake_provider
export OPENAI_API_KEY=sk-test-eval-0123456789abcdef ANTHROPIC_API_KEY=sk-ant-test-eval-0123456789
if [ -x "$FAKE" ]; then
	# each API's scenario: the scripted answers, one per request in order
	for api in chat anthropic; do
		mkdir -p "http/$api"
		n=$(jq '.turns | length' "$D/answers-$api.json")
		for i in $(seq 0 $((n - 1))); do
			{ echo ---; jq -c ".turns[$i]" "$D/answers-$api.json"; } > "http/$api/$((i + 1)).resp"
		done
	done
	# and one answer for every request, however many at once
	mkdir -p http/same
	{ echo ---; jq -c '.turns[0]' "$D/runs-right.json"; } > http/same/1.resp
	touch http/same/repeat
	"$FAKE" "$WS/fake.port" "$WS/http" "$WS/fake.log" 2> "$WS/fake.err" &
	FAKE_PID=$!
	trap 'kill "$FAKE_PID" 2> /dev/null; chattr -R -i "$WS" 2> /dev/null; rm -rf "$WS"' EXIT
	for _ in $(seq 100); do [ -s "$WS/fake.port" ] && break; sleep 0.05; done
	BASE=http://127.0.0.1:$(cat "$WS/fake.port")

	# the scripted equivalents, in the anthropic shape too
	ev anth.json "${SUITE[@]}" --script "$D/answers-anthropic.json" --format json --no-record
	ev hchat.json "${SUITE[@]}" --provider openai-chat --model gpt-test --base-url "$BASE/s/chat" \
		--jobs 1 --format json --no-record
	ev hanth.json "${SUITE[@]}" --provider anthropic --model claude-test --base-url "$BASE/s/anthropic" \
		--jobs 1 --format json --no-record
	verdicts='[.results[] | {case, run, pass, checks, failure}]'
	for f in anth.json hchat.json hanth.json; do
		eq "$(code $f)" 0 "$f: exit 0"
		eq "$(jq -cS .scores "$O/$f")" "$(jq -cS .scores "$M")" "$f: the scripted chat run's scores"
		eq "$(jq -cS "$verdicts" "$O/$f")" "$(jq -cS "$verdicts" "$M")" "$f: the same verdict for each case"
		scores "$O/$f" overall "14 14 11/14 8/12 7/12 7/12 6/14"
	done
	eq "$(jq -r '"\(.provider) \(.api) \(.model)"' "$O/hchat.json")" "openai-chat openai-chat gpt-test" "http chat: named"
	eq "$(jq -r '"\(.provider) \(.api) \(.model)"' "$O/hanth.json")" "anthropic anthropic claude-test" "http anthropic: named"

	# what the fake provider was sent: the tools, and the case's request as the
	# first (and only) message, from the user; no system prompt
	jq -s 'map(select(.path | startswith("/s/chat/")) | .body | fromjson)' fake.log > chat.bodies
	jq -s 'map(select(.path | startswith("/s/anthropic/")) | .body | fromjson)' fake.log > anth.bodies
	eq "$(jq length chat.bodies) $(jq length anth.bodies)" "14 14" "http: one request per case"
	eq "$(jq -r 'map(.model) | unique | join(",")' chat.bodies)" gpt-test "http chat: the model asked for"
	eq "$(jq -r 'map(.messages | length == 1 and .[0].role == "user") | all' chat.bodies)" true \
		"http chat: one user message, no system message"
	eq "$(jq -r 'map(.messages | length == 1 and .[0].role == "user") | all' anth.bodies)" true \
		"http anthropic: one user message"
	eq "$(jq -r 'map(has("system")) | any' anth.bodies)" false "http anthropic: no system prompt"
	text='if type == "string" then . else map(.text // "") | join("") end'
	eq "$(jq -r "map(.messages[0].content | $text) | sort | join(\"|\")" chat.bodies)" \
		"$(jq -r '[.results[].request] | sort | join("|")' "$M")" "http chat: each case's request, once"
	eq "$(jq -r "map(.messages[0].content | $text) | sort | join(\"|\")" anth.bodies)" \
		"$(jq -r '[.results[].request] | sort | join("|")' "$M")" "http anthropic: each case's request, once"
	eq "$(jq -r "map(select((.messages[0].content | $text) == \"Show me the first 20 lines of README.md\")) | length" chat.bodies)" \
		1 "http chat: the first case's request as written in its file"
	coding=apply_patch,list_dir,read_file,search_files,shell,write_file
	eq "$(jq -r "map(select((.messages[0].content | $text) != \"What files are in here?\") | .tools | map(.function.name) | sort | join(\",\")) | unique | join(\" \")" chat.bodies)" \
		"$coding" "http chat: the coding tools with every request"
	eq "$(jq -r "map(select((.messages[0].content | $text) == \"What files are in here?\") | .tools | map(.function.name) | sort | join(\",\")) | join(\" \")" chat.bodies)" \
		"list_dir,read_file,search_files" "http chat: the minimal profile's case gets its three tools"
	eq "$(jq -r "map(select((.messages[0].content | $text) != \"What files are in here?\") | .tools | map(.name) | sort | join(\",\")) | unique | join(\" \")" anth.bodies)" \
		"$coding" "http anthropic: the tools in its shape"
	eq "$(jq -r 'map(.tools[] | select(.name == "read_file") | .input_schema.required | join(",")) | unique | join(" ")' anth.bodies)" \
		path "http anthropic: the tools' schemas"

	# --jobs 4, --runs 4: the same answer to every request (read_file README.md)
	ev jobs.json "$D/runs.yaml" --provider openai-chat --base-url "$BASE/s/same" --jobs 4 --runs 4 \
		--format json --no-record
	J=$O/jobs.json
	eq "$(code jobs.json)" 0 "jobs 4: exit 0"
	eq "$(jq -r '[.results[] | "\(.case)/\(.run)"] | join(" ")' "$J")" \
		"readme/1 readme/2 readme/3 readme/4 notes/1 notes/2 notes/3 notes/4 hello/1 hello/2 hello/3 hello/4" \
		"jobs 4: the results in case and run order"
	scores "$J" read_file  "1 4 4/4 4/4 4/4 4/4 4/4"
	scores "$J" write_file "1 4 0/4 0/4 0/4 0/4 0/4"
	scores "$J" "(none)"   "1 4 0/4 0/0 0/0 0/0 0/4"
	scores "$J" overall    "3 12 4/12 4/8 4/8 4/8 4/12"
	eq "$(failure "$J" notes 3)" "tool: called read_file, expected write_file" "jobs 4: a failure"
	jq -s 'map(select(.path | startswith("/s/same/")) | .body | fromjson)' fake.log > same.bodies
	eq "$(jq -r "map(.messages[0].content | $text) | group_by(.) | map(\"\(.[0]):\(length)\") | join(\"|\")" same.bodies)" \
		"Create notes.txt with the word hello in it:4|Show me README.md:4|hi there!:4" \
		"jobs 4: each request sent four times"

	kill "$FAKE_PID" 2> /dev/null
	wait "$FAKE_PID" 2> /dev/null
	# nothing listens there now
	ev down "$D/runs.yaml" --provider openai-chat --base-url "$BASE/s/same" --no-record
	eq "$(code down)" 1 "a provider that cannot be reached: exit 1"
	contains "$(cat "$O/down.err")" "the model could not be asked" "a provider that cannot be reached: said so"
	eq "$(cat "$O/down")" "" "a provider that cannot be reached: no report"
else
	fail "no fake provider at $FAKE (make builds it beside toolgate)"
fi
unset OPENAI_API_KEY ANTHROPIC_API_KEY

# ==== 4. --compare, --fail-under, --max-drop ===============================
# candidate (toolgate.yaml, mode default): readme right, notes asked, hello right
# baseline (baseline.yaml, acceptEdits): readme a missing file, notes allowed, hello right
CMP=(--compare "$D/baseline.yaml" --script "$D/compare-chat.json" --no-record)
ev cmp.json "$D/runs.yaml" "${CMP[@]}" --format json
C=$O/cmp.json
eq "$(code cmp.json)" 0 "compare: exit 0 without thresholds"
scores "$C" read_file  "1 1 1/1 1/1 1/1 1/1 1/1"
scores "$C" write_file "1 1 1/1 1/1 1/1 0/1 0/1"
scores "$C" overall    "3 3 3/3 2/2 2/2 1/2 2/3"
B=$O/base.json
jq .baseline "$C" > "$B"
scores "$B" read_file  "1 1 1/1 0/1 0/1 0/1 0/1"
scores "$B" write_file "1 1 1/1 1/1 1/1 1/1 1/1"
scores "$B" "(none)"   "1 1 1/1 0/0 0/0 0/0 1/1"
scores "$B" overall    "3 3 3/3 1/2 1/2 1/2 2/3"
contains "$(failure "$B" readme 1)" "valid: would fail: no such file" "compare: the baseline's readme"
eq "$(jq -r .config "$B")" "$D/baseline.yaml" "compare: the baseline's configuration"
eq "$(jq -r .manifest "$B")" "$("$TG" tools --digest --config "$D/baseline.yaml" 2> /dev/null)" \
	"compare: the baseline's manifest"
eq "$(jq -r '.manifest != .baseline.manifest' "$C")" true "compare: two manifests"
eq "$(jq -r '"\(.definitions.tools) \(.baseline.definitions.tools) \(.definitions.chars < .baseline.definitions.chars)"' "$C")" \
	"6 7 true" "compare: the baseline offers one more tool"
# candidate rate minus baseline rate, per check: tool valid args policy pass
diffs() { jq -r --arg g "$1" '(if $g == "overall" then .difference.overall else .difference.tools[$g] end) |
	[.tool, .valid, .args, .policy, .pass] | map(tostring) | join(" ")' "$C"; }
eq "$(diffs read_file)" "0 1 1 1 1" "compare: read_file's difference"
eq "$(diffs write_file)" "0 0 0 -1 -1" "compare: write_file's difference"
eq "$(diffs "(none)")" "0 null null null 0" "compare: (none)'s difference"
eq "$(diffs overall)" "0 0.5 0.5 0 0" "compare: the overall difference"

ev cmp.txt "$D/runs.yaml" "${CMP[@]}"
S=$(sed -n '/^compared with /,$p' "$O/cmp.txt")
contains "$S" "compared with $D/baseline.yaml (baseline):" "compare table: the baseline named"
eq "$(row <(echo "$S") read_file)" "read_file 0% 100% +100 pts 0 pts +100 pts +100 pts +100 pts" "compare table: read_file"
eq "$(row <(echo "$S") write_file)" "write_file 100% 0% -100 pts 0 pts 0 pts 0 pts -100 pts" "compare table: write_file"
eq "$(row <(echo "$S") overall)" "overall 67% 67% 0 pts 0 pts +50 pts +50 pts 0 pts" "compare table: overall"
contains "$S" "definitions: $(jq -r .baseline.definitions.chars "$C" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') → $(jq -r .definitions.chars "$C" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') chars" \
	"compare table: the definitions' sizes, before → after"

# thresholds: exit 2 with the sentence when crossed, 0 when not
ev drop.json "$D/runs.yaml" "${CMP[@]}" --max-drop 0.05 --format json
eq "$(code drop.json)" 2 "max-drop 0.05: exit 2"
eq "$(jq -c .thresholds "$O/drop.json")" \
	'{"fail_under":null,"max_drop":0.05,"failed":["write_file: pass dropped 1.00 (1.00 → 0.00), more than 0.05"]}' \
	"max-drop 0.05: the one failed, in a sentence"
ev drop.txt "$D/runs.yaml" "${CMP[@]}" --max-drop 0.05
eq "$(code drop.txt)" 2 "max-drop 0.05 (table): exit 2"
contains "$(cat "$O/drop.txt")" "write_file: pass dropped 1.00 (1.00 → 0.00), more than 0.05" "max-drop: the sentence in the table"
ev drop1.txt "$D/runs.yaml" "${CMP[@]}" --max-drop 1
eq "$(code drop1.txt)" 0 "max-drop 1: a drop of 1.00 is not more: exit 0"
eq "$(tail -1 "$O/drop1.txt")" "thresholds: met" "max-drop 1: met"
ev under.txt "$D/runs.yaml" "${CMP[@]}" --fail-under 0.9
eq "$(code under.txt)" 2 "fail-under 0.9: exit 2"
contains "$(cat "$O/under.txt")" "overall: pass 0.67 is under 0.90" "fail-under 0.9: overall"
contains "$(cat "$O/under.txt")" "write_file: pass 0.00 is under 0.90" "fail-under 0.9: write_file"
eq "$(grep -c 'read_file: pass' "$O/under.txt")" 0 "fail-under 0.9: read_file (1.00) is not under"
ev met.txt "$D/runs.yaml" --config "$D/baseline.yaml" --script "$D/runs-right.json" --fail-under 1 --no-record
eq "$(code met.txt)" 0 "fail-under 1 with every case passing: exit 0"
eq "$(row "$O/met.txt" overall)" "overall 3 100% 100% 100% 100% 100%" "fail-under 1: all passed"
eq "$(tail -1 "$O/met.txt")" "thresholds: met" "fail-under 1: met"

# ==== 5. JUnit, read by junitparser and xmllint ============================
cat > junit.py <<'PY'
# junit.py FILE: what junitparser reads in FILE, as JSON
import json, sys
from junitparser import JUnitXml, Failure, Error
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for s in xml:
    cases = []
    for c in s:
        cases.append({"classname": c.classname, "name": c.name,
                      "results": [{"kind": "error" if isinstance(r, Error) else "failure"
                                   if isinstance(r, Failure) else type(r).__name__,
                                   "type": r.type, "message": r.message, "text": r.text}
                                  for r in c.result]})
    suites.append({"name": s.name, "tests": s.tests, "failures": s.failures, "errors": s.errors,
                   "properties": {p.name: p.value for p in s.properties()}, "cases": cases})
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "errors": xml.errors,
                  "suites": suites}))
PY
PY=/usr/bin/python3
if ! "$PY" -c 'import junitparser' 2> /dev/null; then
	fail "python3-junitparser is not installed (scripts/install-deps installs it)"
elif ! command -v xmllint > /dev/null; then
	fail "xmllint is not installed (scripts/install-deps installs it)"
else
	# counts per group from a JSON report: "name tests failures errors", sorted
	json_counts() {
		jq -r '.results | group_by(.expect.tool // "(none)") | map("\(.[0].expect.tool // "(none)") \(length) \(map(select(.pass == false and .error == null)) | length) \(map(select(.error != null)) | length)") | .[]' "$1" | sort
	}
	parsed_counts() { jq -r '.suites[] | select(.name != "thresholds") | "\(.name) \(.tests) \(.failures) \(.errors)"' "$1" | sort; }

	ev main.xml "${SUITE[@]}" --script "$D/answers-chat.json" --model scripted-test --format junit --no-record --output "$O/main.junit"
	eq "$(code main.xml)" 0 "junit: exit 0"
	eq "$(cat "$O/main.xml")" "" "junit --output: nothing on stdout"
	xmllint --noout "$O/main.junit" 2> "$O/xmllint.err"
	eq "$?" 0 "junit: xmllint reads it $(head -c 300 "$O/xmllint.err")"
	head -1 "$O/main.junit" | grep -q '^<?xml version="1.0" encoding="UTF-8"?>$'
	eq "$?" 0 "junit: the XML declaration"
	"$PY" junit.py "$O/main.junit" > "$O/main.parsed" 2> "$O/junit.err"
	eq "$?" 0 "junit: junitparser reads it $(tail -3 "$O/junit.err")"
	P=$O/main.parsed
	eq "$(parsed_counts "$P")" "$(json_counts "$M")" "junit: tests, failures, errors per suite as in the JSON"
	eq "$(jq -r '"\(.tests) \(.failures) \(.errors)"' "$P")" "14 8 0" "junit: the totals"
	eq "$(jq -r '.suites | map(.name) | sort | join(",")' "$P")" \
		"(none),apply_patch,list_dir,read_file,search_files,shell,write_file" "junit: a testsuite per group"
	eq "$(jq -r '.suites[] | select(.name == "read_file") | .cases | map("\(.classname)|\(.name)") | join(" ")' "$P")" \
		"toolgate.eval.read_file|right [run 1] toolgate.eval.read_file|invalid [run 1] toolgate.eval.read_file|args-mismatch [run 1]" \
		"junit: a testcase per case and run"
	eq "$(jq -r '.suites[] | select(.name == "read_file") | .cases[2].results[0] | "\(.kind) \(.type) \(.message)"' "$P")" \
		'failure args /path: expected "config/*.yml", got "config.yml"' "junit: the failed check and its sentence"
	eq "$(jq -r '.suites[] | select(.name == "write_file") | .cases[0].results[0] | "\(.type) \(.message)"' "$P")" \
		"policy decided ask (mode default), expected allow" "junit: a policy failure"
	eq "$(jq -r --arg m "$(jq -r .manifest "$M")" '.suites | map(.properties | .provider == "scripted" and .model == "scripted-test" and .profile == "coding" and .manifest == $m) | all' "$P")" \
		true "junit: each testsuite's properties"
	# <, &, ]]> and control characters from the model: escaped, replaced, read back
	E=$(jq -c '.suites[] | select(.name == "search_files") | .cases[] | select(.name == "escapes [run 1]") | .results[0]' "$P")
	contains "$(jq -r .message <<< "$E")" '/pattern: expected "TODO*", got ' "junit escapes: the message"
	contains "$(jq -r .message <<< "$E")" '<TODO> & ]]>' "junit escapes: <, & and ]]> read back"
	contains "$(jq -r .text <<< "$E")" '"pattern":"<TODO> & ]]>' "junit escapes: the model's arguments in the body"
	contains "$(jq -r .text <<< "$E")" 'Find the TODO <markers> & notes ]]> in the code' "junit escapes: the request in the body"
	N=$(jq -c '.suites[] | select(.name == "search_files") | .cases[] | select(.name == "no-call [run 1]") | .results[0]' "$P")
	contains "$(jq -r .text <<< "$N")" 'It is probably in <main.c> & ]]>' "junit escapes: the model's text in the body"
	eq "$(jq -s -r 'map(.message, .text) | map(test("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]")) | any' <<< "$E $N")" false \
		"junit escapes: no control character left"
	eq "$(LC_ALL=C grep -c $'[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]' "$O/main.junit")" 0 "junit: no control character in the file"

	# thresholds: a testsuite with one testcase per threshold checked
	ev cmp.xml "$D/runs.yaml" "${CMP[@]}" --fail-under 0.5 --max-drop 0.05 --format junit
	eq "$(code cmp.xml)" 2 "junit thresholds: exit 2"
	xmllint --noout "$O/cmp.xml" 2> /dev/null
	eq "$?" 0 "junit thresholds: xmllint reads it"
	"$PY" junit.py "$O/cmp.xml" > "$O/cmp.parsed" 2> /dev/null
	eq "$?" 0 "junit thresholds: junitparser reads it"
	TH=$(jq -c '.suites[] | select(.name == "thresholds")' "$O/cmp.parsed")
	eq "$(jq -r '"\(.tests) \(.failures) \(.errors)"' <<< "$TH")" "8 2 0" \
		"junit thresholds: (overall + 3 groups) × 2 thresholds, 2 failed"
	eq "$(jq -r '[.cases[].results[] | .message] | sort | join("|")' <<< "$TH")" \
		"write_file: pass 0.00 is under 0.50|write_file: pass dropped 1.00 (1.00 → 0.00), more than 0.05" \
		"junit thresholds: the failed ones' sentences"
	eq "$(jq -r '"\(.tests) \(.failures)"' "$O/cmp.parsed")" "11 3" "junit thresholds: counted in the totals"
	eq "$(parsed_counts "$O/cmp.parsed")" "$(json_counts "$C")" "junit thresholds: the groups as in the JSON"

	# a provider error is an <error>
	ev short.xml "$D/runs.yaml" --script "$D/short-chat.json" --format junit --no-record
	eq "$(code short.xml)" 0 "junit errors: exit 0"
	xmllint --noout "$O/short.xml" 2> /dev/null
	eq "$?" 0 "junit errors: xmllint reads it"
	"$PY" junit.py "$O/short.xml" > "$O/short.parsed" 2> /dev/null
	eq "$(jq -r '"\(.tests) \(.failures) \(.errors)"' "$O/short.parsed")" "3 0 2" "junit errors: two errors"
	eq "$(jq -r '[.suites[].cases[].results[] | select(.kind == "error") | .type] | join(",")' "$O/short.parsed")" \
		"provider,provider" "junit errors: type provider"
fi

# ==== 6. --history ==========================================================
mkdir -p hist
H=(--workspace "$WS/hist")
ev h1 "$D/runs.yaml" "${H[@]}" --model m-a --config "$D/baseline.yaml" --script "$D/runs-right.json" --format json
ev h2 "$D/runs.yaml" "${H[@]}" --model m-a --runs 2 --script "$D/runs2-chat.json" --format json
ev h3 "$D/runs.yaml" "${H[@]}" --model m-b --script "$D/runs-right.json" --format json
ev h4 "$D/runs.yaml" "${H[@]}" --model m-b --script "$D/runs-right.json" --format json --no-record
eq "$(code h1) $(code h2) $(code h3) $(code h4)" "0 0 0 0" "history: four runs"
ev hist.json --history "${H[@]}" --format json
HJ=$O/hist.json
eq "$(code hist.json)" 0 "history: exit 0"
eq "$(jq length "$HJ")" 3 "history: three runs kept (--no-record kept nothing)"
eq "$(jq -r 'map(.model) | join(" ")' "$HJ")" "m-a m-a m-b" "history: oldest first"
eq "$(jq -r 'map(.ts) == (map(.ts) | sort)' "$HJ")" true "history: in time order"
eq "$(jq -r 'map("\(.cases)x\(.runs)") | join(" ")' "$HJ")" "3x1 3x2 3x1" "history: cases and runs"
near='[., $want] | transpose | map(.[0] - .[1] | . < 1e-12 and . > -1e-12) | all'
eq "$(jq -r --argjson want '[1, 0.3333333333333333, 0.6666666666666666]' "map(.scores.pass) | $near" "$HJ")" true \
	"history: the pass rates (3/3, 2/6, 2/3)"
eq "$(jq -r --argjson want '[1, 0.25, 0.5]' "map(.scores.policy) | $near" "$HJ")" true \
	"history: the policy rates (3/3, 1/4, 1/2)"
eq "$(jq -r 'map(.suite) | unique | length' "$HJ")" 1 "history: one suite"
eq "$(jq -r '.[0].suite' "$HJ")" "$(jq -r .suite.digest "$O/h1")" "history: the suite's digest"
eq "$(jq -r 'map(.manifest) | join(" ")' "$HJ")" \
	"$("$TG" tools --digest --config "$D/baseline.yaml" 2> /dev/null) $("$TG" tools --digest 2> /dev/null) $("$TG" tools --digest 2> /dev/null)" \
	"history: each run's manifest"
eq "$(jq -r 'map("\(.provider) \(.profile)") | unique | join(",")' "$HJ")" "scripted coding" "history: provider and profile"
ev histm.json --history "${H[@]}" --model m-a --format json
eq "$(jq -r 'map(.model) | join(" ")' "$O/histm.json")" "m-a m-a" "history --model: only that model's runs"
ev histl.json --history "${H[@]}" --limit 1 --format json
eq "$(jq -r 'map(.model) | join(" ")' "$O/histl.json")" "m-b" "history --limit 1: the newest"
ev hist.txt --history "${H[@]}"
HT=$O/hist.txt
contains "$(head -1 "$HT")" "Δpass" "history table: a Δpass column"
eq "$(grep -c ' m-[ab] ' "$HT")" 3 "history table: a row per run"
eq "$(sed -n 2p "$HT" | awk '{print $3, $NF}')" "m-a -" "history table: the first run has no Δ"
eq "$(sed -n 3p "$HT" | awk '{print $3, $(NF-2), $(NF-1), $NF}')" "m-a 33% -67 pts" \
	"history table: the second m-a run, 67 points lower"
eq "$(sed -n 4p "$HT" | awk '{print $3, $NF}')" "m-b -" "history table: the first m-b run has no Δ"
# with --compare both runs are kept, the baseline as the older: the state before
ev hc "$D/runs.yaml" --model m-c --compare "$D/baseline.yaml" \
	--script "$D/compare-chat.json" --format json
ev histc.json --history --model m-c --format json
eq "$(code hc) $(jq length "$O/histc.json")" "0 2" "history --compare: two runs kept"
eq "$(jq -r 'map(.manifest) | join(" ")' "$O/histc.json")" \
	"$(jq -r .baseline.manifest "$O/hc") $(jq -r .manifest "$O/hc")" \
	"history --compare: the baseline first, then the configuration's run"
eq "$(ls -A "$WS/tmp" | wc -l)" 0 "history: the scratch workspaces are gone"

# ==== 8. bad input ==========================================================
ev badboth "$D/bad-both.yaml" --script "$D/runs-right.json" --no-record
eq "$(code badboth)" 1 "expect with tool and no_tool: exit 1"
grep -qE "^toolgate: eval: $D/bad-both.yaml:6:[0-9]+: " "$O/badboth.err"
eq "$?" 0 "expect with tool and no_tool: file:line:col ($(head -c 300 "$O/badboth.err"))"
eq "$(cat "$O/badboth")" "" "a bad eval file: no report"
ev badkey "$D/bad-key.yaml" --script "$D/runs-right.json" --no-record
eq "$(code badkey)" 1 "a misspelt key: exit 1"
grep -qE "$D/bad-key.yaml:3:[0-9]+: .*reqest" "$O/badkey.err"
eq "$?" 0 "a misspelt key: file:line:col and the key ($(head -c 300 "$O/badkey.err"))"
printf -- '- request: "unclosed\n  expect: {tool: read_file}\n' > bad-yaml.yaml
ev badyaml "$WS/bad-yaml.yaml" --script "$D/runs-right.json" --no-record
eq "$(code badyaml)" 1 "a YAML syntax error: exit 1"
grep -qE "$WS/bad-yaml.yaml:[0-9]+:[0-9]+: " "$O/badyaml.err"
eq "$?" 0 "a YAML syntax error: file:line:col ($(head -c 300 "$O/badyaml.err"))"
ev nofile "$WS/no-such.yaml" --script "$D/runs-right.json" --no-record
eq "$(code nofile)" 1 "a missing eval file: exit 1"
contains "$(cat "$O/nofile.err")" "no-such.yaml" "a missing eval file: named"

ev unknowntool.json "$D/unknown-tool.yaml" --script "$D/unknown-tool-chat.json" --format json --no-record
eq "$(code unknowntool.json)" 0 "an unknown tool in expect: scored (exit 0)"
scores "$O/unknowntool.json" deploy_service "1 1 1/1 0/1 1/1 0/1 0/1"
eq "$(jq -r '.results[0].failure.check' "$O/unknowntool.json")" valid "an unknown tool: the call is not valid"
ev badprof "$D/bad-profile.yaml" --script "$D/runs-right.json" --no-record
eq "$(code badprof)" 1 "a case under an unknown profile: exit 1"
contains "$(cat "$O/badprof.err")" "no-such-profile" "a case under an unknown profile: named"
ev badprof2 "$D/runs.yaml" --profile no-such-profile --script "$D/runs-right.json" --no-record
eq "$(code badprof2)" 1 "--profile unknown: exit 1"
contains "$(cat "$O/badprof2.err")" "no-such-profile" "--profile unknown: named"

# a script with fewer answers than requests: the rest carry the provider's error
ev short.json "$D/runs.yaml" --script "$D/short-chat.json" --format json --no-record
SH=$O/short.json
eq "$(code short.json)" 0 "a short script: the run still reports"
eq "$(checks "$SH" readme 1)" "true true true true true" "a short script: the answered case"
eq "$(jq -r '.results | map(.error != null) | join(" ")' "$SH")" "false true true" "a short script: two errors"
eq "$(checks "$SH" notes 1)" "false false false false false" "a provider error: every check false"
contains "$(jq -r '.results[1].error' "$SH")" "turn 2" "a provider error: the provider's sentence"
eq "$(jq -r '.results[2] | "\(.pass) \(.checks.tool)"' "$SH")" "false false" "a provider error on a no_tool case"
scores "$SH" write_file "1 1 0/1 0/1 0/1 0/1 0/1"
scores "$SH" overall    "3 3 1/3 1/2 1/2 1/2 1/3"
ev short.txt "$D/runs.yaml" --script "$D/short-chat.json" --no-record
eq "$(grep -c '^  notes (.*) run 1: error: ' "$O/short.txt")" 1 "a provider error in the table"

ev nocmp "$D/runs.yaml" --script "$D/runs-right.json" --max-drop 0.1 --no-record
eq "$(code nocmp)" 1 "--max-drop without --compare: exit 1"
contains "$(cat "$O/nocmp.err")" "--compare" "--max-drop without --compare: says what is missing"
ev noscript "$D/runs.yaml" --no-record
eq "$(code noscript)" 1 "the scripted provider without a script: exit 1"
contains "$(cat "$O/noscript.err")" "--script" "without a script: says so"
ev badfmt "$D/runs.yaml" --script "$D/runs-right.json" --format xml --no-record
eq "$(code badfmt)" 1 "an unknown format: exit 1"
ev badruns "$D/runs.yaml" --script "$D/runs-right.json" --runs 0 --no-record
eq "$(code badruns)" 1 "--runs 0: exit 1"
ev badrate "$D/runs.yaml" --script "$D/runs-right.json" --fail-under 1.5 --no-record
eq "$(code badrate)" 1 "--fail-under 1.5: exit 1"
ev badprov "$D/runs.yaml" --provider nope --no-record
eq "$(code badprov)" 1 "an unknown provider: exit 1"
contains "$(cat "$O/badprov.err")" "nope" "an unknown provider: named"
# five failures in a row end the asking: the rest are not asked
ev giveup.json "${SUITE[@]}" --script "$D/short-chat.json" --format json --no-record
eq "$(code giveup.json)" 0 "a script that ran out: the run still reports"
eq "$(jq -r '[.results[] | select(.error != null and (.error | startswith("not asked")))] | length' \
	"$O/giveup.json")" 8 "after five failures in a row, the eight cases left are not asked"
eq "$(jq -r '[.results[1:6][] | .error | test("turn")] | all' "$O/giveup.json")" true \
	"the five that failed carry the provider's sentence"
contains "$(jq -r '.results[13].error' "$O/giveup.json")" "5 requests in a row" "not asked: says why"

# an unknown principal fails closed, named or from the environment
ev badas "$D/runs.yaml" --script "$D/runs-right.json" --as nobody --no-record
eq "$(code badas)" 1 "--as an unknown principal: exit 1"
TOOLGATE_PRINCIPAL=nobody ev badenv "$D/runs.yaml" --script "$D/runs-right.json" --no-record
eq "$(code badenv)" 1 "an unknown principal from the environment: exit 1"
contains "$(cat "$O/badenv.err")" "unknown principal" "an unknown principal: says so"
ev badto "$D/runs.yaml" --script "$D/runs-right.json" --timeout 0 --no-record
eq "$(code badto)" 1 "--timeout 0: exit 1"

# what the model sent is masked wherever the report quotes it
SECRET=$(jq -r '.turns[0].choices[0].message.tool_calls[0].function.arguments | fromjson | .content' \
	"$D/secret-chat.json" | sed 's/^OPENAI_API_KEY=//')
for fmt in json table junit; do
	ev "secret.$fmt" "$D/secret.yaml" --script "$D/secret-chat.json" --format $fmt --no-record
	eq "$(grep -c -- "${SECRET:0:24}" "$O/secret.$fmt")" 0 "$fmt: the key the model sent is masked"
done
eq "$(jq -r '.results[0].failure.check' "$O/secret.json")" args "the secret case fails on args"
contains "$(jq -r '.results[0].failure.message' "$O/secret.json")" "redacted" \
	"the failure sentence quotes the value masked"

# a baseline that cannot be judged on, or an --output that cannot be written,
# is found before the model is asked: nothing is kept
ev early1 "$D/runs.yaml" --model m-early --script "$D/runs-right.json" \
	--compare "$WS/no-such-config.yaml"
eq "$(code early1)" 1 "--compare with a missing configuration: exit 1"
ev early2 "$D/runs.yaml" --model m-early --script "$D/runs-right.json" \
	--output "$WS/no-such-dir/report.txt"
eq "$(code early2)" 1 "--output that cannot be written: exit 1"
ev early.json --history --model m-early --format json
eq "$(jq length "$O/early.json")" 0 "nothing asked, nothing kept"

eq "$(ls -A "$WS/tmp" | wc -l)" 0 "bad input: no scratch workspace left behind"

# ==== 9. the built-in suite, answered right: 100% =========================
mkdir -p plain
(cd plain && unset TOOLGATE_CONFIG && "$TG" eval --provider scripted --script "$D/builtin-answers.json" \
	--format json --no-record > "$O/builtin.json" 2> "$O/builtin.err" < /dev/null; echo $? > "$O/builtin.json.exit")
sanitizers "$O/builtin.err" "eval builtin"
BI=$O/builtin.json
eq "$(code builtin.json)" 0 "built-in suite: exit 0 $(head -c 300 "$O/builtin.err")"
eq "$(jq -r '.scores.tools | keys | join(",")' "$BI")" \
	"(none),apply_patch,list_dir,read_file,search_files,shell,write_file" "built-in suite: every built-in tool and (none)"
eq "$(jq -r '[.scores.overall, .scores.tools[]] | map(.pass.rate == 1) | all' "$BI")" true \
	"built-in suite: pass rate 1.0 overall and for every tool"
eq "$(jq -r '[.scores.overall, .scores.tools[]] | map([.tool, .valid, .args, .policy][] | .rate == 1 or (.of == 0 and .rate == null)) | all' "$BI")" \
	true "built-in suite: every check 1.0 where it applies"
eq "$(jq -r '.scores.tools | to_entries | map(select(.key != "(none)" and .value.cases < 15) | .key) | join(",")' "$BI")" "" \
	"built-in suite: at least 15 cases per built-in tool"
eq "$(jq -r '.suite.files | map(startswith("builtin:")) | all' "$BI")" true "built-in suite: its files are builtin:"
eq "$(jq -r '"\(.suite.cases) \(.scores.overall.results)"' "$BI")" \
	"$(jq -r '.turns | length' "$D/builtin-answers.json") $(jq -r '.turns | length' "$D/builtin-answers.json")" \
	"built-in suite: one answer per case"

# ==== 10. the definitions' size per profile ================================
(cd plain && unset TOOLGATE_CONFIG && "$TG" eval --sizes --format json > "$O/sizes.json" 2> "$O/sizes.err" < /dev/null; echo $? > "$O/sizes.json.exit")
SZ=$O/sizes.json
eq "$(code sizes.json)" 0 "sizes: exit 0"
eq "$(jq -r '.[] | select(.profile == "coding") | .tools' "$SZ")" 6 "sizes: coding has 6 tools"
eq "$(jq -r '.[] | select(.profile == "minimal") | .tools' "$SZ")" 3 "sizes: minimal has 3"
eq "$(jq -r '.[] | select(.profile == "coding") | .apis | keys | join(",")' "$SZ")" \
	"anthropic,gemini,openai-chat,openai-responses" "sizes: per API"
eq "$(jq -r '.[] | select(.profile == "coding") | .apis | map(.tokens_est > 0 and .tokens_est < 3000) | all' "$SZ")" true \
	"sizes: coding is under 3,000 estimated tokens in every API"
eq "$(jq -r '.[] | select(.profile == "coding") | .apis["openai-chat"].chars' "$SZ")" \
	"$(cd plain && unset TOOLGATE_CONFIG && "$TG" tools --format openai-chat 2> /dev/null | jq -c . | tr -d '\n' | wc -c)" \
	"sizes: the characters of the tools array as sent"
(cd plain && unset TOOLGATE_CONFIG && "$TG" eval --sizes > "$O/sizes.txt" 2> /dev/null < /dev/null)
eq "$(awk '$1 == "coding" {print $2}' "$O/sizes.txt")" 6 "sizes table: coding's row"

finish
