# Registry and contract: profiles, availability (fail closed), command tools'
# protocol and exit codes, result spill, the CLI surface.
. "$(dirname "$0")/lib.sh"
cd "$WS"
cat > echo.sh <<'SH'
#!/bin/sh
# echoes its stdin call JSON back as the result
cat
SH
cat > code.sh <<'SH'
#!/bin/sh
cat > /dev/null
echo "the service is busy" >&2
exit "$1"
SH
chmod +x echo.sh code.sh
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
profiles:
  ops: [runtime]
tools:
  echo_call:
    description: Echo the call.
    input_schema: {type: object, properties: {x: {type: string}}}
    command: [./echo.sh]
    read_only: true
  tempfail:
    description: Always busy.
    input_schema: {type: object}
    command: [./code.sh, "75"]
  broken:
    description: Always fails.
    input_schema: {type: object}
    command: [./code.sh, "3"]
  needs_env:
    description: Needs a secret.
    input_schema: {type: object}
    command: [./echo.sh]
    requires_env: [TG_TEST_SECRET]
  needs_check:
    description: Needs a check to pass.
    input_schema: {type: object}
    command: [./echo.sh]
    check: [/bin/false]
  missing_cmd:
    description: Its command does not exist.
    input_schema: {type: object}
    command: [./does-not-exist]
  big:
    description: Prints a lot.
    input_schema: {type: object}
    command: [/bin/sh, -c, "cat >/dev/null; seq 1 30000"]
    read_only: true
    max_result_chars: 1000
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

names() { "$TG" tools "$@" | jq -r '[.[].name] | join(",")'; }
eq "$(names --profile minimal)" "read_file,list_dir,search_files" "minimal: read-only fs"
eq "$(names --profile coding)" "read_file,list_dir,search_files,write_file,apply_patch,shell,echo_call,tempfail,broken,missing_cmd,big" \
	"coding: fs + runtime, unavailable tools left out"
eq "$(names --profile ops)" "shell,echo_call,tempfail,broken,missing_cmd,big" "a configured profile (runtime: shell and the command tools)"
eq "$(TG_TEST_SECRET=1 "$TG" tools | jq -r '[.[].name] | index("needs_env") != null')" true \
	"requires_env satisfied: listed"
eq "$("$TG" tools | jq -r '.[] | select(.name=="read_file") | .annotations.readOnlyHint')" true "annotations"
"$TG" tools --profile nope > /dev/null 2>&1 && fail "unknown profile accepted"

tgcall unavail needs_env '{}'
eq "$(jqv unavail.json .status)" denied "unavailable tool: denied (fail closed)"
contains "$(jqv unavail.json .error.message)" "TG_TEST_SECRET" "says what is missing"
tgcall unavail2 needs_check '{}'
eq "$(jqv unavail2.json .status)" denied "failing check: denied"
tgcall profile_out --profile minimal write_file '{"path":"a","content":"b"}'
eq "$(jqv profile_out.json .error.kind)" unknown_tool "a tool outside the profile is unknown"

# the stdin protocol
tgcall echo echo_call '{"x":"hi"}' --call-id c1 --session s1
eq "$(jqv echo.json .status)" persisted "command tool ran"
eq "$(jqv echo.json .output.args.x)" hi "args on stdin"
eq "$(jqv echo.json .output.tool)" echo_call "tool on stdin"
eq "$(jqv echo.json .output.principal)" local "principal on stdin"
eq "$(jqv echo.json .output.op_id)" "$(jqv echo.json .op_id)" "op_id on stdin"
eq "$(jqv echo.json .call_id)/$(jqv echo.json .session)" c1/s1 "call id and session"

tgcall temp tempfail '{}'
eq "$(jqv temp.json .status)" failed "exit 75: failed"
eq "$(jqv temp.json .error.kind)" transient "exit 75: transient"
eq "$(jqv temp.json .error.applied)" no "exit 75: nothing applied"
[ "$(jqv temp.json .error.retry_after_s)" != null ] || fail "exit 75: retry_after_s"
contains "$(jqv temp.json .error.message)" "busy" "the tool's sentence"
tgcall broken broken '{}'
eq "$(jqv broken.json .error.kind)" tool_error "other exit: tool_error"
eq "$(jqv broken.json .error.applied)" unknown "other exit: effect unknown"
eq "$(cat broken.exit)" 4 "failed exits 4"
tgcall missing missing_cmd '{}'
eq "$(jqv missing.json .error.applied)" no "a command that cannot start applied nothing"

# spill: over max_result_chars → head + tail + path, full text on disk
tgcall big big '{}'
eq "$(jqv big.json .status)" persisted "big output"
chars=$(seq 1 30000 | wc -c)
eq "$(jqv big.json .truncated.original_chars)" "$chars" "original_chars"
spill=$(jqv big.json .truncated.spill_path)
eq "$spill" ".toolgate/spill/$(jqv big.json .op_id).txt" "spill path"
cmp -s "$spill" <(seq 1 30000) || fail "the spill file holds the full output"
[ "$(jqv big.json '.output | length')" -le 1000 ] || fail "shaped output within max_result_chars"
contains "$(jqv big.json .output)" "30000" "the tail is kept"
contains "$(jqv big.json .output)" "$spill" "the output names the spill file"
eq "$(stat -c %a "$spill")" 600 "spill file is private"

# the spill file is readable by the model, and nothing else under .toolgate is
tgcall spill_read read_file "{\"path\":\"$spill\",\"offset\":29990}"
eq "$(jqv spill_read.json .status)" persisted "read_file of the spill path"
contains "$(jqv spill_read.json .output.content)" "30000" "the spill holds the tail"
tgcall ledger_read read_file '{"path":".toolgate/ledger.db"}'
eq "$(jqv ledger_read.json .status)" denied "the ledger itself stays unreadable"

# bytes that are not UTF-8 still give a complete envelope
printf '#!/bin/sh\ncat >/dev/null\nprintf "abc\\377def\\n"\nprintf "bad \\377\\n" >&2\nexit "$1"\n' > bin.sh
chmod +x bin.sh
cat >> toolgate.yaml <<'YAML'
  binout:
    description: Prints invalid UTF-8.
    input_schema: {type: object}
    command: [./bin.sh, "0"]
    read_only: true
  binerr:
    description: Fails with invalid UTF-8 on stderr.
    input_schema: {type: object}
    command: [./bin.sh, "1"]
    read_only: true
YAML
tgcall binout binout '{}'
eq "$(jqv binout.json .status)" persisted "invalid UTF-8 output: persisted"
eq "$(jqv binout.json .output)" "abc�def" "invalid bytes become U+FFFD"
eq "$(sql "select json_extract(envelope, '$.status') from ops where op_id='$(jqv binout.json .op_id)'")" \
	persisted "the ledger holds the full envelope"
tgcall binerr binerr '{}'
eq "$(jqv binerr.json .error.kind)" tool_error "invalid UTF-8 on stderr: the error is kept"
contains "$(jqv binerr.json .error.message)" "bad" "with the tool's sentence"
(cd "$WS" && "$TG" call --json --session $'s\xff' read_file '{"path":"bin.sh"}' > badsess.json)
eq "$(jqv badsess.json .error.kind)" invalid_input "a session that is not UTF-8 is refused, not mangled"

# large read_file: the 100,000 rule tells the model to page
seq -f '%060g' 1 40000 > long.txt   # 61 characters a line
tgcall long read_file '{"path":"long.txt"}'
eq "$(jqv long.json .status)" failed "over 100,000 chars: refused"
contains "$(jqv long.json .error.message)" "offset" "tells the model to page"
tgcall page read_file '{"path":"long.txt","offset":39999,"limit":5}'
eq "$(jqv page.json .output.total_lines)" 40000 "paging: total_lines"
contains "$(jqv page.json .output.content)" "$(printf '%060d' 40000)" "paging: the last line"

# search and list
mkdir -p sub && printf 'alpha\nneedle here\n' > sub/a.txt && printf '\0binary needle' > sub/b.bin
tgcall search search_files '{"pattern":"needle","path":"."}'
eq "$(jqv search.json '[.output.matches[].file] | join(",")')" "sub/a.txt" "search skips binary files"
tgcall badre search_files '{"pattern":"("}'
eq "$(jqv badre.json .status)" failed "bad regex"
eq "$(jqv badre.json .error.kind)" invalid_input "bad regex kind"
tgcall list list_dir '{"path":"sub"}'
eq "$(jqv list.json '[.output.entries[].name] | join(",")')" "a.txt,b.bin" "list_dir"

# CLI surface
"$TG" --version | grep -q '^toolgate [0-9]' || fail "--version"
for c in call tools log approvals ops; do
	"$TG" "$c" --help | grep -q "usage: toolgate $c" || fail "$c --help"
done
"$TG" nonsense > /dev/null 2>&1 && fail "unknown command accepted"
echo '{"path":"long.txt","limit":1}' | (cd "$WS" && "$TG" call --json read_file - > stdin.json)
eq "$(jqv stdin.json .output.lines)" 1 "ARGS from stdin"

# a tool's check command runs when that tool is used (or listed), once per
# process: never for the calls of other tools
cat > check.yaml <<'YAML'
tools:
  checked:
    description: Counts its checks.
    input_schema: {type: object}
    command: [./echo.sh]
    check: [/bin/sh, -c, "echo x >> check.log"]
    read_only: true
YAML
TOOLGATE_CONFIG=$WS/check.yaml tgcall other list_dir '{}'
eq "$(jqv other.json .status)" persisted "another tool's call runs"
[ ! -e check.log ] || fail "another tool's call ran the check command"
CHECKS=$((CHECKS + 1))
TOOLGATE_CONFIG=$WS/check.yaml tgcall other2 --session S list_dir '{}'
TOOLGATE_CONFIG=$WS/check.yaml tgcall own --session S checked '{}'
eq "$(jqv own.json .status)" persisted "the tool's own call passes its check"
eq "$(wc -l < check.log)" 2 "the check ran once for each process that needed it"
finish
