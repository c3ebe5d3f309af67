# A command tool's output against its output_schema (issue 21): the gate
# checks it, and an output that does not fit is the tool's error (failed,
# the mismatch named), never passed on to an MCP client that validates it.
# The example configuration's word_count answers what it advertises.
. "$(dirname "$0")/lib.sh"
cd "$WS"

# ---- the example's word_count, as shipped
{ echo "tools:"
  awk '/^  word_count:/ { f = 1; print; next } f && /^(  )?[^ ]/ { exit } f' "$ROOT/examples/toolgate.yaml"
} > example.yaml
contains "$(cat example.yaml)" "output_schema" "the example's word_count has an output_schema"
tgcall ex word_count '{"text":"one two  three\nfour"}' --config example.yaml
eq "$(jqv ex.json .status)" persisted "the example's word_count: persisted"
eq "$(jq -c .output ex.json)" '{"words":4}' "the example's word_count: an object, as its output_schema says"

# ---- a tool that answers what its output_schema does not allow
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
tools:
  count_old:
    description: The example's old word_count.
    input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
    output_schema: {type: object, properties: {words: {type: integer}}}
    command: [wc, -w]
    read_only: true
  typed:
    description: Answers a string where an integer is promised.
    input_schema: {type: object}
    output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
    command: [sh, -c, 'cat > /dev/null; echo "{\"n\": \"seven\"}"']
  fine:
    description: Answers what it promises.
    input_schema: {type: object}
    output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
    command: [sh, -c, 'cat > /dev/null; echo "{\"n\": 7}"']
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
tgcall old count_old '{"text":"a b c"}'
eq "$(jqv old.json .status)/$(jqv old.json .error.kind)" failed/tool_error "a number for an object: the tool's error"
contains "$(jqv old.json .error.message)" "does not match its output_schema" "the message says so"
contains "$(jqv old.json .error.message)" "must be an object" "and names the mismatch"
eq "$(jqv old.json .error.applied)" no "a read-only tool: nothing applied"
eq "$(jqv old.json .output)" null "the output is not passed on"
tgcall typed typed '{}'
eq "$(jqv typed.json .status)" failed "a string for an integer: failed"
contains "$(jqv typed.json .error.message)" "/n must be an integer" "the mismatch is named by its pointer"
eq "$(jqv typed.json .error.applied)" unknown "a tool with side effects that answered wrongly: applied unknown"
eq "$(sql "select status from ops where op_id = '$(jqv typed.json .op_id)'")" failed "the ledger says failed"
tgcall fine fine '{}'
eq "$(jqv fine.json .status)/$(jq -c .output fine.json)" 'persisted/{"n":7}' "an output that fits passes"

# ---- an output_schema that is not a schema is refused at load
cat > bad.yaml <<'YAML'
tools:
  broken:
    description: x
    output_schema: {type: objectz}
    command: [sh, -c, 'echo {}']
YAML
tgcall bad broken '{}' --config bad.yaml
eq "$(cat bad.exit)" 1 "a broken output_schema: the configuration is refused"
contains "$(cat bad.err)" "output_schema does not compile" "and says why"
contains "$(cat bad.err)" "bad.yaml:2" "where (the tool's key)"
finish
