# toolgate dispatch and tools --format: a model's response from each API through
# the gate, every call answered once in call order in that API's result shape,
# whatever happened to the others (allowed, denied by a rule, invalid JSON,
# unknown tool); a custom/freeform apply_patch call; a cut stream; tools in
# each API's shape.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'alpha\n' > a.txt
printf 'SECRET=1\n' > .env
cat > toolgate.yaml <<'YAML'
mode: acceptEdits
permissions:
  deny: ["read_file(./.env)"]
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# dispatch API FILE [--stream]: results to API.out, summary to API.err
dispatch() {
	local api=$1 file=$2; shift 2
	"$TG" dispatch --protocol "$api" "$@" "$file" > "$WS/$api.out" 2> "$WS/$api.err"
	echo $? > "$WS/$api.exit"
	sanitizers "$WS/$api.err" "dispatch $api"
}

# ---- OpenAI Chat: four calls, one of each fate
cat > chat.json <<'JSON'
{"id":"c1","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls",
 "message":{"role":"assistant","content":null,"tool_calls":[
  {"id":"call_ok","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}},
  {"id":"call_deny","type":"function","function":{"name":"read_file","arguments":"{\"path\":\".env\"}"}},
  {"id":"call_bad","type":"function","function":{"name":"read_file","arguments":"{\"path\": "}},
  {"id":"call_unknown","type":"function","function":{"name":"no_such_tool","arguments":"{}"}}]}}]}
JSON
dispatch openai-chat chat.json
eq "$(cat openai-chat.exit)" 0 "chat: exit 0 when every call got a result"
eq "$(jq -r '[.[].tool_call_id] | join(",")' openai-chat.out)" "call_ok,call_deny,call_bad,call_unknown" "chat: one tool message per call, in order"
eq "$(jq -r '[.[].role] | unique | join(",")' openai-chat.out)" "tool" "chat: role tool"
contains "$(jq -r '.[0].content' openai-chat.out)" "alpha" "chat: the file's content"
contains "$(jq -r '.[1].content' openai-chat.out)" "denied" "chat: the denial"
contains "$(jq -r '.[2].content' openai-chat.out)" "invalid" "chat: the invalid call"
contains "$(jq -r '.[3].content' openai-chat.out)" "unknown tool" "chat: the unknown tool"
eq "$(wc -l < openai-chat.err)" 4 "chat: one summary line per call"
contains "$(sed -n 2p openai-chat.err)" "call_deny read_file denied" "chat: summary line"
eq "$(sql "SELECT count(*) FROM ops WHERE call_id LIKE 'call_%'")" 4 "chat: four ledger rows"

# ---- OpenAI strict mode: the nulls a strict model sends for optional arguments
cat > strict.json <<'JSON'
{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[
 {"id":"call_strict","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\",\"offset\":null,\"limit\":null}"}}]}}]}
JSON
dispatch openai-chat strict.json
contains "$(jq -r '.[0].content' openai-chat.out)" "alpha" "strict: optional nulls are dropped before validation"
eq "$("$TG" tools --format openai-chat | jq -r '.[] | select(.function.name=="read_file") | .function.strict')" true "strict: read_file is exported strict"

# ---- Anthropic: tool_use with end_turn still counts; is_error on the denial
cat > anthropic.json <<'JSON'
{"id":"msg_1","type":"message","role":"assistant","stop_reason":"end_turn","content":[
 {"type":"text","text":"Reading."},
 {"type":"tool_use","id":"toolu_a","name":"read_file","input":{"path":"a.txt"}},
 {"type":"tool_use","id":"toolu_b","name":"read_file","input":{"path":".env"}}]}
JSON
dispatch anthropic anthropic.json
eq "$(jq -r 'length' anthropic.out)" 1 "anthropic: one user message"
eq "$(jq -r '.[0].role' anthropic.out)" user "anthropic: role user"
eq "$(jq -r '[.[0].content[].tool_use_id] | join(",")' anthropic.out)" "toolu_a,toolu_b" "anthropic: tool_result blocks in order"
eq "$(jq -r '.[0].content[1].is_error' anthropic.out)" true "anthropic: is_error on the denial"
eq "$(jq -r '.[0].content[0].is_error // false' anthropic.out)" false "anthropic: no is_error on success"

# ---- Responses: a custom (freeform) apply_patch call
cat > responses.json <<'JSON'
{"id":"r1","object":"response","status":"completed","output":[
 {"type":"custom_tool_call","id":"ctc_1","call_id":"call_patch","name":"apply_patch",
  "input":"*** Begin Patch\n*** Add File: new.txt\n+made by a patch\n*** End Patch"},
 {"type":"function_call","id":"fc_1","call_id":"call_read","name":"read_file","arguments":"{\"path\":\"a.txt\"}"}]}
JSON
dispatch openai-responses responses.json
eq "$(jq -r '[.[].call_id] | join(",")' openai-responses.out)" "call_patch,call_read" "responses: one output item per call"
eq "$(jq -r '.[0].type' openai-responses.out)" custom_tool_call_output "responses: the custom call's output type"
eq "$(jq -r '.[1].type' openai-responses.out)" function_call_output "responses: the function call's output type"
eq "$(cat new.txt)" "made by a patch" "responses: the freeform patch applied"
contains "$(jq -r '.[0].output' openai-responses.out)" "Success. Updated the following files:" "responses: Codex's summary is the text"

# ---- Gemini: no ids; synthesized, answered by name and order
cat > gemini.json <<'JSON'
{"candidates":[{"finishReason":"STOP","content":{"role":"model","parts":[
 {"functionCall":{"name":"read_file","args":{"path":"a.txt"}}},
 {"functionCall":{"name":"list_dir","args":{}}}]}}]}
JSON
dispatch gemini gemini.json
eq "$(jq -r '[.[0].parts[].functionResponse.name] | join(",")' gemini.out)" "read_file,list_dir" "gemini: functionResponse parts in order"
contains "$(jq -r '.[0].parts[0].functionResponse.response.output' gemini.out)" "alpha" "gemini: output"

# the made-up ids repeat in every response: in one session a later response's
# write is not a replay (or a conflict) of an earlier one's
for n in one two; do
	printf '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{"path":"g.txt","content":"%s"}}}]}}]}' "$n" > "gw-$n.json"
	"$TG" dispatch --protocol gemini --session gsess "gw-$n.json" > "gw-$n.out" 2> "gw-$n.err"
	eq "$?" 0 "gemini $n: exit 0"
done
eq "$(cat g.txt)" "two" "gemini: the second response's write ran"
eq "$(sql "SELECT group_concat(status, ',') FROM (SELECT status FROM ops WHERE session = 'gsess' ORDER BY op_id)")" \
	"persisted,persisted" "gemini: both writes persisted, none replayed"
eq "$(sql "SELECT count(DISTINCT call_id) FROM ops WHERE session = 'gsess' AND call_id LIKE 'gemini-0-write_file@%'")" 2 \
	"gemini: each response's call has its own gate id"
eq "$(jq -r '.[0].parts[0].functionResponse | has("id")' gw-two.out)" false "gemini: the made-up id is not sent back"

# ---- a stream cut inside a call: that call is invalid, never run
cat > cut.sse <<'SSE'
data: {"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_cut","type":"function","function":{"name":"write_file","arguments":""}}]}}]}

data: {"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"cut.txt\",\"content\":\"x\"}"}}]}}]}

SSE
dispatch openai-chat cut.sse --stream
eq "$(cat openai-chat.exit)" 0 "stream: dispatched"
contains "$(jq -r '.[0].content' openai-chat.out)" "invalid" "stream: the cut call is invalid"
eq "$(wc -l < openai-chat.err)" 1 "stream: the cut call got its one summary line"
contains "$(cat openai-chat.err)" "call_cut write_file invalid" "stream: recorded invalid, not run"
[ -e cut.txt ] && fail "a call from a cut stream was run"

# ---- not a response of that API
printf '{"hello": 1}' > nonsense.json
dispatch anthropic nonsense.json
eq "$(cat anthropic.exit)" 1 "a document that is no response is refused (exit 1, no crash)"
contains "$(cat anthropic.err)" "toolgate: " "and the refusal is a sentence"

# ---- tools in each API's shape
eq "$("$TG" tools --format openai-chat | jq -r '.[0].type')" function "tools: chat shape"
eq "$("$TG" tools --format openai-responses | jq -r '.[0].type')" function "tools: responses shape"
eq "$("$TG" tools --format anthropic | jq -r '.[0] | has("input_schema")')" true "tools: anthropic input_schema"
eq "$("$TG" tools --format gemini | jq -r '.[0].functionDeclarations[0] | has("parametersJsonSchema")')" true "tools: gemini parametersJsonSchema"
eq "$("$TG" tools --format gemini --gemini-legacy | jq -r '.[0].functionDeclarations[0].parameters.type')" OBJECT "tools: gemini legacy types uppercase"
"$TG" tools --format cobol > /dev/null 2>&1 && fail "an unknown API is refused"

finish
