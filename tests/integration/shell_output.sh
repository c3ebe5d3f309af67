# The shell tool's output within the result cap (issue 21): a command that
# prints more than limits.max_result_chars gets one spill file holding all
# of its output, an `output` that is an object (never a string of JSON)
# within the cap, and text that points the model at the spill.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'mode: bypassPermissions\n' > toolgate.yaml
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# chars FILE FILTER: characters of the compact JSON text of a value
chars() { jq -c "$2" "$1" | tr -d '\n' | wc -m; }

# ---- 250,000 bytes on stdout, over the default cap of 50,000
tgcall big shell '{"command":"head -c 250000 /dev/zero | tr \"\\\\0\" a"}'
eq "$(jqv big.json .status)" persisted "250,000 bytes: persisted"
eq "$(jqv big.json '.output | type')" object "250,000 bytes: output is an object"
eq "$(jqv big.json '.output.exit_code')" 0 "250,000 bytes: its exit code is there"
CHECKS=$((CHECKS + 1))
[ "$(chars big.json .output)" -le 50000 ] || fail "the output is within max_result_chars: $(chars big.json .output)"
CHECKS=$((CHECKS + 1))
[ "$(chars big.json .output)" -ge 45000 ] || fail "the output uses the cap: $(chars big.json .output)"
spill=$(jqv big.json .truncated.spill_path)
eq "$(jqv big.json .output.spilled)" "$spill" "the output names the envelope's spill file"
eq "$(ls .toolgate/spill | grep -c "\.txt$")" 1 "one spill file for the call"
eq "$spill" ".toolgate/spill/$(jqv big.json .op_id).txt" "the spill file is the call's"
eq "$(tr -cd a < "$spill" | wc -c)" 250000 "the spill file holds all 250,000 bytes"
eq "$(jqv big.json .truncated.original_chars)" 250000 "truncated.original_chars counts them"
contains "$(jqv big.json .output.stdout)" "the full output is in $spill" "the model's text points at the spill"
contains "$(jqv big.json .output.stdout)" "read_file" "and says how to read it"
eq "$(jqv big.json '.stages[] | select(.stage == "shape") | .spilled')" "by the tool" \
	"the shape stage did not spill again"
# the spill is readable as lines the model can page through
tgcall rd read_file "{\"path\":\"$spill\",\"limit\":2}"
eq "$(jqv rd.json .status)" persisted "read_file reads the spill file"
contains "$(jqv rd.json '.output | tostring')" "--- stdout (250000 bytes) ---" "its first line says what follows"

# ---- both streams, with characters JSON escapes (newlines, control bytes)
tgcall both shell '{"command":"seq 1 100000; seq 1 50000 >&2; printf \"\\001\\002\\\"\" >&2"}'
eq "$(jqv both.json '.output | type')" object "two large streams: output is an object"
CHECKS=$((CHECKS + 1))
[ "$(chars both.json .output)" -le 50000 ] || fail "escapes counted: within the cap: $(chars both.json .output)"
CHECKS=$((CHECKS + 1))
[ "$(jqv both.json '.output.stderr | length')" -ge 10000 ] || fail "stderr keeps its share"
eq "$(jqv both.json .output.stdout | head -n 1)" "1" "stdout keeps its head"
eq "$(jqv both.json .output.stdout | grep -c '^100000$')" 1 "stdout keeps its tail"
eq "$(tail -c 3 "$(jqv both.json .truncated.spill_path)" | od -An -c | tr -d ' ')" '001002"' \
	"the spill ends with stderr's last bytes"
eq "$(grep -c '^100000$' "$(jqv both.json .truncated.spill_path)")" 1 "the spill holds all of stdout"

# ---- a small output is untouched: no spill, no truncated
tgcall small shell '{"command":"echo hi"}'
eq "$(jqv small.json .output.stdout)" "hi" "a small output is whole"
eq "$(jqv small.json .truncated)" null "a small output is not truncated"
eq "$(jqv small.json '.output | has("spilled")')" false "a small output names no spill"
eq "$(ls .toolgate/spill | grep -c "\.txt$")" 2 "no spill file for it"

# ---- a smaller cap and a per-stream cap: one spill, within both
cat > small.yaml <<'YAML'
mode: bypassPermissions
limits: {max_result_chars: 2000}
shell: {max_output_chars: 300}
YAML
tgcall capped shell '{"command":"seq 1 5000"}' --config small.yaml
CHECKS=$((CHECKS + 1))
[ "$(chars capped.json .output)" -le 2000 ] || fail "within a 2,000 cap: $(chars capped.json .output)"
eq "$(jqv capped.json '.output | type')" object "capped: output is an object"
CHECKS=$((CHECKS + 1))
[ "$(jqv capped.json .output.stdout | grep -c '^[0-9][0-9]*$')" -le 300 ] || fail "within max_output_chars"
eq "$(grep -c '^[0-9][0-9]*$' "$(jqv capped.json .truncated.spill_path)")" 5000 "the spill holds all 5,000 lines"
eq "$(ls .toolgate/spill | grep -c "\.txt$")" 3 "one more spill file"
finish
