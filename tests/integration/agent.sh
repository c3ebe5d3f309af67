# toolgate agent with the scripted provider: the same conversation in each of
# the four API shapes (two calls in one batch, a batch with a denied call, a
# final answer), the transcript and its --json events, the ledger rows of the
# session and `toolgate log --session`, the conversation saved (redacted),
# --max-turns, --resume continuing a session, and the errors: a bad script, a
# reply that is not the API's, a script that runs out, an unknown session.
. "$(dirname "$0")/lib.sh"
cd "$WS"
SCRIPTS=$ROOT/tests/data/agent/scripts
printf 'alpha\n' > a.txt
printf 'bravo\n' > b.txt
printf 'SECRET=1\n' > .env
cat > toolgate.yaml <<'YAML'
mode: acceptEdits
permissions:
  deny: ["read_file(./.env)"]
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# agent NAME ARGS...: stdout to NAME.out, stderr to NAME.err, exit code to NAME.exit
agent() {
	local name=$1; shift
	"$TG" agent "$@" > "$WS/$name.out" 2> "$WS/$name.err" < /dev/null
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "agent $name"
}

# ---- the four API shapes, one conversation each
for api in openai-chat openai-responses anthropic gemini; do
	case $api in
	openai-chat) script=chat ;; openai-responses) script=responses ;; *) script=$api ;;
	esac
	S=s-$api
	agent "$api" --script "$SCRIPTS/$script.json" --session "$S" "Read a.txt and b.txt"
	out=$(cat "$api.out")
	eq "$(cat "$api.exit")" 0 "$api: exit 0 when the model answers without calls"
	contains "$out" "session $S (scripted, $api)" "$api: the session line"
	contains "$out" "-- turn 1" "$api: turn 1"
	contains "$out" "-- turn 3" "$api: turn 3"
	contains "$out" "Reading both files." "$api: the model's text"
	eq "$(grep -c '^→ read_file  persisted' "$api.out")" 2 "$api: both reads of turn 1 ran"
	contains "$out" "\"content\":\"     1\\talpha" "$api: a short result of the first read"
	contains "$out" "→ read_file  denied  [decide]  not_permitted:" "$api: the denied call, its stage and kind"
	contains "$out" "→ write_file  persisted" "$api: the write beside the denial ran"
	contains "$out" "All done ($api)." "$api: the final answer"
	contains "$out" "done: 3 turns, 4 calls (1 stopped); session $S" "$api: the end line"
	eq "$(head -c 11 "note-$api.txt")" "written by " "$api: the write landed"

	# the ledger: one row per call, all in the session, the batch in call order
	eq "$(sql "SELECT count(*) FROM ops WHERE session = '$S'")" 4 "$api: four calls in the session"
	eq "$(sql "SELECT group_concat(status, ',') FROM (SELECT status FROM ops WHERE session = '$S' ORDER BY op_id)")" \
		"persisted,persisted,denied,persisted" "$api: statuses in call order"
	"$TG" log --session "$S" --json > "log-$api.json" 2> "log-$api.err"
	eq "$(jq -s 'length' "log-$api.json")" 4 "$api: toolgate log --session shows the four calls"
	eq "$(jq -rs '[.[].session] | unique | join(",")' "log-$api.json")" "$S" "$api: and only them"

	# the conversation in the ledger: in the API's shape, the prompt first,
	# the final answer last
	eq "$(sql "SELECT DISTINCT api FROM messages WHERE session = '$S'")" "$api" "$api: the conversation's API"
	first=$(sql "SELECT entry FROM messages WHERE session = '$S' ORDER BY seq LIMIT 1")
	contains "$first" "Read a.txt and b.txt" "$api: the first entry is the prompt"
	last=$(sql "SELECT entry FROM messages WHERE session = '$S' ORDER BY seq DESC LIMIT 1")
	contains "$last" "All done ($api)." "$api: the last entry is the answer"
	case $api in
	openai-chat) eq "$(sql "SELECT count(*) FROM messages WHERE session = '$S'")" 8 \
		"chat: user, 3 assistant messages, 4 tool messages" ;;
	anthropic) eq "$(sql "SELECT count(*) FROM messages WHERE session = '$S'")" 6 \
		"anthropic: user, then assistant and user by turns" ;;
	esac
done

# the ledger never holds a secret: the key the anthropic script wrote is in
# the file, masked in the saved conversation
eq "$(grep -c 'sk-proj-Zq4Wx9' note-anthropic.txt)" 1 "the tool got the real value"
eq "$(sql "SELECT count(*) FROM messages WHERE entry LIKE '%Zq4Wx9%'")" 0 "no secret in the saved conversation"
eq "$(sql "SELECT count(*) FROM messages WHERE session = 's-anthropic' AND entry LIKE '%redacted:%'")" 1 \
	"the secret is masked where it was"

# ---- --json: one event per line
agent json --script "$SCRIPTS/anthropic.json" --json "Read a.txt and b.txt"
eq "$(cat json.exit)" 0 "json: exit 0"
eq "$(jq -c . json.out > /dev/null 2>&1 && echo ok)" ok "json: every line is JSON"
eq "$(jq -r .event json.out | tr '\n' ' ')" \
	"session turn text call call turn text call call turn text finished " "json: the events in order"
JS=$(jq -r 'select(.event == "session") | .session' json.out)
contains "$JS" "agent-" "json: a new session is agent-<uuid>"
eq "$(jq -r 'select(.event == "finished") | "\(.reason) \(.turns) \(.calls) \(.stopped)"' json.out)" \
	"done 3 4 1" "json: the finished event"
eq "$(jq -r 'select(.event == "call" and .status == "denied") | "\(.tool) \(.stage) \(.error.kind)"' json.out)" \
	"read_file decide not_permitted" "json: the denied call"
eq "$(jq -r 'select(.event == "call") | .op_id' json.out | sort | tr '\n' ' ')" \
	"$(sql "SELECT op_id FROM ops WHERE session = '$JS' ORDER BY op_id" | tr '\n' ' ')" \
	"json: the calls' op ids are the ledger's"
eq "$(grep -c 'Zq4Wx9' json.out)" 0 "json: no secret in the events"

# ---- --max-turns stops the loop (exit 2); --resume continues the session
agent max --script "$SCRIPTS/chat.json" --session resume-me --max-turns 1 "Read a.txt and b.txt"
eq "$(cat max.exit)" 2 "max-turns: exit 2"
contains "$(cat max.out)" "stopped at the turn limit (--max-turns 1): 2 calls (0 stopped)" "max-turns: said so"
contains "$(cat max.out)" "--resume resume-me" "max-turns: how to continue"
eq "$(sql "SELECT count(*) FROM ops WHERE session = 'resume-me'")" 2 "max-turns: only turn 1's calls ran"
saved=$(sql "SELECT count(*) FROM messages WHERE session = 'resume-me'")
eq "$saved" 4 "max-turns: the prompt and turn 1 were saved"

# the same session again without --resume is refused
agent again --script "$SCRIPTS/chat.json" --session resume-me "Read a.txt"
eq "$(cat again.exit)" 1 "a used session: exit 1"
contains "$(cat again.err)" "already has a conversation; continue it with --resume resume-me" "a used session: said so"

agent resumed --script "$SCRIPTS/chat_rest.json" --resume resume-me --json "Carry on."
eq "$(cat resumed.exit)" 0 "resume: exit 0"
eq "$(jq -r 'select(.event == "session") | "\(.resumed) \(.history)"' resumed.out)" "true $saved" \
	"resume: the saved conversation was loaded"
eq "$(jq -r 'select(.event == "turn" and .turn == 1) | .history' resumed.out)" "$((saved + 1))" \
	"resume: the first request carried it and the new prompt"
eq "$(jq -r 'select(.event == "text") | .text' resumed.out | head -1)" "Now the env file, and a note." \
	"resume: the script's next turn was consumed"
eq "$(sql "SELECT count(*) FROM ops WHERE session = 'resume-me'")" 4 "resume: the calls join the session"
contains "$(sql "SELECT entry FROM messages WHERE session = 'resume-me' AND seq = $((saved + 1))")" "Carry on." \
	"resume: the new prompt was saved after the old entries"
eq "$(sql "SELECT count(*) FROM messages WHERE session = 'resume-me'")" 9 \
	"resume: the whole conversation is saved (4 + the prompt + 4)"

# resume without a prompt is allowed; an unknown session or another API is not
agent unknown --script "$SCRIPTS/chat_rest.json" --resume no-such-session
eq "$(cat unknown.exit)" 1 "resume unknown: exit 1"
contains "$(cat unknown.err)" "session \"no-such-session\" has no conversation to resume" "resume unknown: said so"
agent otherapi --script "$SCRIPTS/anthropic.json" --resume resume-me "More."
eq "$(cat otherapi.exit)" 1 "resume in another API: exit 1"
contains "$(cat otherapi.err)" "is a conversation in the openai-chat API" "resume in another API: said so"

# ---- errors
agent nofile --script "$WS/no-such-script.json" "x"
eq "$(cat nofile.exit)" 1 "a missing script: exit 1"
contains "$(cat nofile.err)" "no-such-script.json" "a missing script: named"
agent badjson --script "$SCRIPTS/bad_json.json" "x"
eq "$(cat badjson.exit)" 1 "a script that is not JSON: exit 1"
contains "$(cat badjson.err)" "JSON" "a script that is not JSON: said so"
eq "$(cat badjson.out)" "" "a bad script: no transcript"
agent notreply --script "$SCRIPTS/not_a_reply.json" --session nr "x"
eq "$(cat notreply.exit)" 1 "a reply that is not the API's: exit 1"
contains "$(cat notreply.err)" "turn 1: the model's reply is not a anthropic response" "a reply that is not the API's: said so"
agent short --script "$SCRIPTS/short.json" --session short "x"
eq "$(cat short.exit)" 1 "a script that runs out: exit 1"
contains "$(cat short.err)" "turn 2:" "a script that runs out: at turn 2"
contains "$(cat short.err)" "no turn 2" "a script that runs out: said so"
eq "$(sql "SELECT count(*) FROM messages WHERE session = 'short'")" 3 \
	"a script that runs out: what happened before is saved"
agent unknownprov --provider nope "x"
eq "$(cat unknownprov.exit)" 1 "an unknown provider: exit 1"
contains "$(cat unknownprov.err)" "unknown provider \"nope\"" "an unknown provider: said so"
agent noprompt --script "$SCRIPTS/chat.json"
eq "$(cat noprompt.exit)" 1 "no prompt: exit 1"
agent badmax --script "$SCRIPTS/chat.json" --max-turns 0 "x"
eq "$(cat badmax.exit)" 1 "--max-turns 0: exit 1"
agent help --help
eq "$(cat help.exit)" 0 "--help: exit 0"
contains "$(cat help.out)" "--resume S" "--help: the options"
(unset OPENAI_API_KEY; "$TG" agent --provider openai-chat "x" > nokey.out 2> nokey.err < /dev/null; echo $? > nokey.exit)
eq "$(cat nokey.exit)" 1 "an HTTP provider without a key: exit 1"
contains "$(cat nokey.err)" "OPENAI_API_KEY" "an HTTP provider without a key: says which variable"

# ---- text from the model and from tools is data: no control character
# (an escape sequence could rewrite the terminal) reaches the transcript
printf 'file \033[31mred\302\233 \303\251\n' > esc.txt
agent esc --script "$SCRIPTS/escapes.json" "x"
eq "$(cat esc.exit)" 0 "escapes: exit 0"
eq "$(LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]' esc.out)" 0 "escapes: no C0 control in the transcript"
eq "$(LC_ALL=C grep -c $'\xc2[\x80-\x9f]' esc.out)" 0 "escapes: no C1 control in the transcript"
contains "$(cat esc.out)" "text" "escapes: the text is shown"
contains "$(cat esc.out)" "été." "escapes: other characters are kept"
contains "$(cat esc.out)" "→ read_file  persisted" "escapes: the call line"

# ---- Gemini gives no call ids: the made-up ones repeat every turn, and must
# not make a later write a replay (or a conflict) of an earlier one
agent gw --script "$SCRIPTS/gemini_writes.json" --session gw "Write w.txt"
eq "$(cat gw.exit)" 0 "gemini writes: exit 0"
eq "$(sql "SELECT group_concat(status, ',') FROM (SELECT status FROM ops WHERE session = 'gw' ORDER BY op_id)")" \
	"persisted,persisted,persisted" "gemini writes: every turn's write ran"
eq "$(sql "SELECT count(DISTINCT call_id) FROM ops WHERE session = 'gw'")" 3 "gemini writes: three call ids"
eq "$(cat w.txt)" "one" "gemini writes: the last write is the file"
contains "$(sql "SELECT entry FROM messages WHERE session = 'gw' AND seq = 3")" '"name":"write_file"' \
	"gemini writes: the results answer by name"
eq "$(sql "SELECT count(*) FROM messages WHERE session = 'gw' AND entry LIKE '%@%'")" 0 \
	"gemini writes: the gate's ids stay out of the conversation"

# ---- an HTTP provider against the local fake model API (tests/fake_provider.c):
# a streamed turn shown live, the results sent back in the next request, a
# 429 retried, and the key nowhere but in the request's header
FAKE=$(dirname "$TG")/fake_provider
if [ -x "$FAKE" ]; then
	"$FAKE" "$WS/fake.port" "$SCRIPTS/http" "$WS/fake.log" 2> "$WS/fake.err" &
	FAKE_PID=$!
	for _ in $(seq 100); do [ -s "$WS/fake.port" ] && break; sleep 0.05; done
	BASE=http://127.0.0.1:$(cat "$WS/fake.port")
	KEY=sk-test-Abc123DEF456ghi789JKL0xyz
	OPENAI_API_KEY=$KEY agent hchat --provider openai-chat --base-url "$BASE/s/chat_loop" \
		--session http-chat "What is in a.txt?"
	eq "$(cat hchat.exit)" 0 "http chat: exit 0"
	contains "$(cat hchat.out)" "Looking at a.txt." "http chat: the streamed text"
	contains "$(cat hchat.out)" "→ read_file  persisted" "http chat: the streamed call ran"
	contains "$(cat hchat.out)" "a.txt says alpha." "http chat: the answer after the results"
	eq "$(jq -s 'map(select(.path | startswith("/s/chat_loop/"))) | length' fake.log)" 2 "http chat: two requests"
	eq "$(jq -s -r 'map(select(.path | startswith("/s/chat_loop/")))[0].body | fromjson | .stream' fake.log)" true \
		"http chat: a stream was asked for"
	second=$(jq -s -r 'map(select(.path | startswith("/s/chat_loop/")))[1].body' fake.log)
	eq "$(jq -r '.messages | map(.role) | join(",")' <<< "$second")" "user,assistant,tool" \
		"http chat: the second request carries the call and its result"
	contains "$(jq -r '.messages[2].content' <<< "$second")" "alpha" "http chat: the tool's output"
	eq "$(jq -r '.messages[1].tool_calls[0].id + " " + .messages[2].tool_call_id' <<< "$second")" \
		"call_h1 call_h1" "http chat: the result answers the call's id"

	ANTHROPIC_API_KEY=$KEY agent hanth --provider anthropic --base-url "$BASE/s/anthropic_loop" \
		--session http-anthropic --json "What is in b.txt?"
	eq "$(cat hanth.exit)" 0 "http anthropic: exit 0 after a 429"
	eq "$(jq -s 'map(select(.path | startswith("/s/anthropic_loop/"))) | length' fake.log)" 3 \
		"http anthropic: the 429 was retried"
	eq "$(jq -r 'select(.event == "call") | .status' hanth.out)" persisted "http anthropic: the call ran"
	eq "$(jq -r 'select(.event == "text") | .text' hanth.out | tail -1)" "b.txt says bravo." "http anthropic: the answer"

	# the key: in the auth header of each request, nowhere else
	eq "$(jq -s "[.[] | select(.body | contains(\"$KEY\"))] | length" fake.log)" 0 "key: not in a request body"
	eq "$(jq -rs "[.[].headers[] | select(.[1] | contains(\"$KEY\")) | .[0] | ascii_downcase] | unique | join(\",\")" fake.log)" \
		"authorization,x-api-key" "key: only in the auth headers"
	eq "$(cat hchat.out hchat.err hanth.out hanth.err | grep -c "$KEY")" 0 "key: never printed"
	eq "$(sql "SELECT count(*) FROM messages WHERE entry LIKE '%$KEY%'") $(sql "SELECT count(*) FROM ops WHERE envelope LIKE '%$KEY%'")" \
		"0 0" "key: not in the ledger"
	kill "$FAKE_PID" 2> /dev/null
	wait "$FAKE_PID" 2> /dev/null
else
	fail "no fake provider at $FAKE (make builds it beside toolgate)"
fi

# ---- the session is the loop detector's window: the same read again and
# again is warned about, then blocked
agent loop --script "$SCRIPTS/loop.json" --session looping "x"
eq "$(cat loop.exit)" 0 "loop: the run ends"
contains "$(cat loop.out)" "loop_detected" "loop: the repeats are blocked in the session"
eq "$(sql "SELECT count(*) FROM ops WHERE session = 'looping' AND error_kind = 'loop_detected'")" \
	"$(grep -c 'loop_detected' loop.out)" "loop: the ledger agrees with the transcript"

# a key is never sent in clear text to another machine (refused before any connection)
(OPENAI_API_KEY=sk-not-for-the-wire-0123456789 "$TG" agent --provider openai-chat \
	--base-url http://192.0.2.1:9/v1 "x" > clear.out 2> clear.err < /dev/null; echo $? > clear.exit)
eq "$(cat clear.exit)" 1 "a key over plain http to another host: refused"
contains "$(cat clear.err)" "refusing to send OPENAI_API_KEY over plain http" "and says why"
eq "$(grep -c 'sk-not-for-the-wire' clear.err clear.out | awk -F: '{s+=$2} END {print s}')" 0 \
	"without printing the key"

finish
