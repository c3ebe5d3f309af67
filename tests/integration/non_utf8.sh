# Files and names that are not UTF-8 (issue 21), through `toolgate call`:
# read_file says when a file is not UTF-8 and how it was shown; a name with
# byte 0xE9 is listed as "caf\xE9.txt" and that name reads, writes,
# searches and patches the file (other spellings are refused, and a rule
# names it the same way); apply_patch says it is the encoding when a
# Latin-1 line cannot be matched.
. "$(dirname "$0")/lib.sh"
cd "$WS"

printf 'profile: full\nmode: bypassPermissions\n' > toolgate.yaml
printf 'caf\xe9 au lait\nsecond line\n' > latin1.txt
mkdir "d$(printf '\xe9')r"
printf 'needle in a latin-1 name\n' > "d$(printf '\xe9')r/caf$(printf '\xe9').txt"
printf 'a literal backslash\n' > 'lit\xE9.txt'
E=$(printf '\xe9')

# ---- a Latin-1 file: read, and said to be not UTF-8 ----
tgcall read read_file '{"path":"latin1.txt"}'
eq "$(jqv read.json .status)" persisted "a Latin-1 file reads"
eq "$(jqv read.json .output.content)" "$(printf '     1\tcaf\xef\xbf\xbd au lait\n     2\tsecond line')" \
	"its byte 0xE9 shown as U+FFFD"
eq "$(jq -c .output.encoding read.json)" '{"utf8":false,"invalid_bytes":1,"first_line":1,"shown_as":"U+FFFD"}' \
	"the output says the file is not UTF-8 and how it was shown"
contains "$(jqv read.json '.warnings[0]')" '"latin1.txt" is not UTF-8: 1 byte of it (the first on line 1) is shown as U+FFFD' \
	"and a warning the model reads says so"
tgcall readu read_file '{"path":"toolgate.yaml"}'
eq "$(jq -c '.output | has("encoding")' readu.json)" false "a UTF-8 file has no encoding field"

# ---- apply_patch against it: the encoding is named ----
tgcall patch apply_patch "$(jq -nc '{patch: "*** Begin Patch\n*** Update File: latin1.txt\n@@\n-caf\ufffd au lait\n+coffee\n*** End Patch\n"}')"
eq "$(jqv patch.json .status)" failed "a patch of the Latin-1 line as read_file showed it fails"
contains "$(jqv patch.json .error.message)" "latin1.txt is not UTF-8: these lines are at line 1, but there the file holds bytes that are not UTF-8 text" \
	"its error says the encoding is why, and where the lines are"
eq "$(cat latin1.txt)" "$(printf 'caf\xe9 au lait\nsecond line')" "and the file is unchanged"
tgcall patch2 apply_patch "$(jq -nc '{patch: "*** Begin Patch\n*** Update File: latin1.txt\n@@\n-second line\n+2nd line\n*** End Patch\n"}')"
eq "$(jqv patch2.json .status)" persisted "a patch of a UTF-8 line of that file applies"
eq "$(cat latin1.txt)" "$(printf 'caf\xe9 au lait\n2nd line')" "the Latin-1 byte is kept as it was"

# ---- a name with byte 0xE9: listed, and read back by that name ----
tgcall list list_dir '{"path":".","depth":2}'
eq "$(jq -r '[.output.entries[].name | select(test("[.](json|err|exit)$") | not)] | join(" ")' list.json)" \
	'd\xE9r/ d\xE9r/caf\xE9.txt latin1.txt lit\x5CxE9.txt toolgate.yaml' \
	"list_dir names bytes that are not UTF-8 as \\xHH, and a literal \\x as \\x5C"
name=$(jq -r '.output.entries[1].name' list.json)
tgcall back read_file "$(jq -nc --arg p "$name" '{path: $p}')"
eq "$(jqv back.json .status)" persisted "the name list_dir gave reads the file"
eq "$(jqv back.json .output.content)" "$(printf '     1\tneedle in a latin-1 name')" "its content"
eq "$(jqv back.json .output.path)" 'd\xE9r/caf\xE9.txt' "and the output names it the same way"
tgcall lit read_file '{"path":"lit\\x5CxE9.txt"}'
eq "$(jqv lit.json .output.content)" "$(printf '     1\ta literal backslash')" "the literal backslash name reads by its form"
tgcall lower read_file '{"path":"d\\xe9r/caf\\xE9.txt"}'
eq "$(jqv lower.json .status)" invalid "another spelling is refused"
contains "$(jqv lower.json .error.message)" 'write "d\xE9r/caf\xE9.txt"' "saying the one to use"
tgcall search search_files '{"pattern":"needle","path":"d\\xE9r"}'
eq "$(jqv search.json '.output.matches[0].file')" 'd\xE9r/caf\xE9.txt' "search_files names it so"
tgcall write write_file '{"path":"d\\xE9r/caf\\xE9.txt","content":"rewritten\n"}'
eq "$(jqv write.json .status)" persisted "write_file takes the name"
eq "$(cat "d${E}r/caf${E}.txt")" rewritten "and writes that file"
tgcall pname apply_patch "$(jq -nc '{patch: "*** Begin Patch\n*** Update File: d\\xE9r/caf\\xE9.txt\n@@\n-rewritten\n+patched\n*** End Patch\n"}')"
eq "$(jqv pname.json .status)" persisted "apply_patch takes the name"
eq "$(cat "d${E}r/caf${E}.txt")" patched "and patches that file"
eq "$(sql "select count(*) from ops where tool = 'apply_patch' and status = 'persisted'")" 2 \
	"the ledger records the calls"

# ---- a rule names it as the tools do (a glob's backslash doubled) ----
printf "profile: full\nmode: bypassPermissions\npermissions:\n  deny: ['read_file(d\\\\\\\\xE9r/**)']\n" > toolgate.yaml
tgcall deny read_file "$(jq -nc --arg p "$name" '{path: $p}')"
eq "$(jqv deny.json .status)" denied "a deny rule on the text form of the name holds"

finish
