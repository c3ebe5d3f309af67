# Tool versions: a renamed field still works through its alias, with a
# warning the model sees; the manifest digest names the definitions, and a
# session whose tools changed between two calls gets an event.
. "$(dirname "$0")/lib.sh"
cd "$WS"
write_config() { # description of add_task
	cat > toolgate.yaml <<YAML
mode: bypassPermissions
tools:
  add_task:
    description: $1
    input_schema:
      type: object
      properties: {title: {type: string}, due_date: {type: string, format: date}}
      required: [title]
      additionalProperties: false
    aliases: {due: due_date, name: title}
    command: [/bin/sh, -c, "cat"]
    read_only: true
YAML
}
write_config "Add a task."
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# the old name is rewritten before validation, and the result says so
tgcall old add_task '{"name":"ship","due":"2026-12-01"}'
eq "$(jqv old.json .status)" persisted "a call with old names runs"
eq "$(jqv old.json '.output.args.due_date')" 2026-12-01 "the tool gets the new name"
eq "$(jqv old.json '.output.args | has("due")')" false "the tool never sees the old name"
eq "$(jqv old.json '.warnings | length')" 2 "one warning per old name"
contains "$(jqv old.json '.warnings | join("|")')" "'due' is deprecated; use 'due_date'" "the warning names both"
# the rewritten value is validated like any other: a bad date is refused at its new name
tgcall bad add_task '{"title":"x","due":"tomorrow"}'
eq "$(jqv bad.json .status)" invalid "the aliased value is validated"
eq "$(jqv bad.json .error.field)" /due_date "the error points at the new field"
# both names at once: nothing is guessed
tgcall both add_task '{"title":"x","due":"2026-12-01","due_date":"2026-12-02"}'
eq "$(jqv both.json .status)" invalid "old and new together is refused"
eq "$(jqv both.json .error.kind)" ambiguous "as ambiguous"
# new names: no warning at all
tgcall new add_task '{"title":"ship","due_date":"2026-12-01"}'
eq "$(jqv new.json 'has("warnings")')" false "no warnings for current names"

# what the model reads: the provider surface carries the warning beside the result
printf '%s' '{"id":"m1","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"add_task","arguments":"{\"title\":\"t\",\"due\":\"2026-12-03\"}"}}]}}]}' > resp.json
"$TG" dispatch --protocol openai-chat resp.json > disp.json 2> disp.err || fail "dispatch ran"
contains "$(cat disp.json)" "warning: 'due' is deprecated; use 'due_date'" "the model reads the warning"

# a config that aliases a field still in the schema is refused with file:line
cat > bad.yaml <<'YAML'
tools:
  t:
    description: x
    input_schema: {type: object, properties: {a: {type: string}}}
    aliases: {a: b}
    command: [/bin/true]
YAML
"$TG" tools --config bad.yaml > /dev/null 2> badcfg.err && fail "a bad alias is refused"
contains "$(cat badcfg.err)" "bad.yaml:5:" "the error has file:line"
contains "$(cat badcfg.err)" "still a property" "and says why"

# the manifest digest: stable, on stdout with --digest, on stderr otherwise
d1=$("$TG" tools --digest)
[ ${#d1} -eq 64 ] || fail "the digest is sha256 hex: $d1"
eq "$("$TG" tools --digest)" "$d1" "the digest is stable"
"$TG" tools > tools.json 2> tools.err
jq -e 'length > 0' tools.json > /dev/null || fail "tools still prints JSON on stdout"
contains "$(cat tools.err)" "manifest sha256:$d1" "tools prints the digest on stderr"

# a session sees its tools change: one event, on the first call after the change
tgcall s1 --session S add_task '{"title":"a"}'
tgcall s2 --session S add_task '{"title":"b"}'
eq "$(sql "select count(*) from events where type='tool.manifest.changed'")" 0 "no change, no event"
write_config "Add a task to the list."
d2=$("$TG" tools --digest)
[ "$d1" != "$d2" ] || fail "a changed description changes the digest"
tgcall s3 --session S add_task '{"title":"c"}'
tgcall s4 --session S add_task '{"title":"d"}'
eq "$(sql "select count(*) from events where type='tool.manifest.changed'")" 1 "one change event"
eq "$(sql "select e.op_id from events e where type='tool.manifest.changed'")" "$(jqv s3.json .op_id)" \
	"on the first call after the change"
ev=$(sql "select data from events where type='tool.manifest.changed'")
eq "$(echo "$ev" | jq -r .from)" "$d1" "the event says what it was"
eq "$(echo "$ev" | jq -r .to)" "$d2" "and what it is"
# another session that never ran before: no event
tgcall o1 --session T add_task '{"title":"e"}'
eq "$(sql "select count(*) from events where type='tool.manifest.changed'")" 1 "a new session is not a change"
finish
