# Spill files (issue 22 §3): the full output of a cut result, unredacted,
# kept for `spill.keep` (default 7 days) and pruned when a gate opens; and
# readable only in the session whose call made it.
#  - a spill made in session A is read by read_file (and search_files) in
#    A; from session B, or from a call of no session, it is refused with a
#    sentence; a spill of no session is read by calls of no session (the
#    `toolgate call` flow) and refused to a session;
#  - a spill file older than spill.keep (touch -d) is gone after the next
#    gate opens, with what records its session; a fresh one stays; a
#    configured spill.keep (2h) counts, and a bad one is refused with a
#    sentence naming the key;
#  - the shell tool's own spill is bound to its session alike.
. "$(dirname "$0")/lib.sh"
cd "$WS"
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
tools:
  big:
    description: Prints a lot.
    input_schema: {type: object}
    command: [/bin/sh, -c, "cat >/dev/null; seq 1 30000"]
    read_only: true
    max_result_chars: 1000
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

spill_of() { jqv "$1.json" .truncated.spill_path; }
read_spill() { # NAME SPILL [call options]: read_file of the spill's last lines
	local name=$1 path=$2; shift 2
	tgcall "$name" "$@" read_file "{\"path\":\"$path\",\"offset\":29990}"
}

# ---- bound to the session that made it
tgcall a big '{}' --session sess-A
SA=$(spill_of a)
[ -f "$SA" ] || fail "session A's call spilled ($(cat a.json | head -c 300))"
read_spill a-from-a "$SA" --session sess-A
eq "$(jqv a-from-a.json .status)" persisted "session A reads its own spill"
contains "$(jqv a-from-a.json .output.content)" 30000 "and gets the full output"
read_spill a-from-b "$SA" --session sess-B
eq "$(jqv a-from-b.json .status)" denied "session B cannot read session A's spill ($(jqv a-from-b.json .error.message))"
contains "$(jqv a-from-b.json .error.message)" "another session" "and is told why"
CHECKS=$((CHECKS + 1))
! grep -q 29999 a-from-b.json || fail "session B saw session A's output"
read_spill a-from-none "$SA"
eq "$(jqv a-from-none.json .status)" denied "a call of no session cannot read session A's spill"
tgcall a-search-b search_files "{\"path\":\"$SA\",\"pattern\":\"29999\"}" --session sess-B
eq "$(jqv a-search-b.json .status)" denied "search_files from session B is refused too"
tgcall a-search-a search_files "{\"path\":\"$SA\",\"pattern\":\"29999\"}" --session sess-A
eq "$(jqv a-search-a.json .status)" persisted "search_files in session A finds it"

tgcall n big '{}'
SN=$(spill_of n)
read_spill n-from-none "$SN"
eq "$(jqv n-from-none.json .status)" persisted "a spill of no session is read by a call of no session"
read_spill n-from-a "$SN" --session sess-A
eq "$(jqv n-from-a.json .status)" denied "and refused to a session"

# the shell tool spills its own streams: bound alike
tgcall sh shell '{"command":"seq 1 300000"}' --session sess-A
SS=$(jqv sh.json '.output.spilled // .truncated.spill_path')
[ -f "$SS" ] || fail "the shell call spilled: $(head -c 300 sh.json)"
tgcall sh-from-b read_file "{\"path\":\"$SS\",\"offset\":1,\"limit\":3}" --session sess-B
eq "$(jqv sh-from-b.json .status)" denied "session B cannot read session A's shell spill"
tgcall sh-from-a read_file "{\"path\":\"$SS\",\"offset\":1,\"limit\":3}" --session sess-A
eq "$(jqv sh-from-a.json .status)" persisted "session A reads its shell spill"

# ---- retention: pruned when a gate opens
tgcall old big '{}' --session sess-A
SO=$(spill_of old)
touch -d '8 days ago' "$SO"
tgcall fresh big '{}' --session sess-A
SF=$(spill_of fresh)
# the gate that made "fresh" opened after the touch: the old one is gone
CHECKS=$((CHECKS + 1))
[ ! -e "$SO" ] || fail "a spill file 8 days old is still there after a gate opened"
CHECKS=$((CHECKS + 1))
[ -z "$(ls -A .toolgate/spill | grep -F "$(basename "$SO" .txt)")" ] ||
	fail "what recorded its session is still there: $(ls -A .toolgate/spill)"
CHECKS=$((CHECKS + 1))
[ -f "$SF" ] && [ -f "$SA" ] || fail "fresh spill files stay"

# a configured retention
printf 'spill:\n  keep: 2h\n' >> toolgate.yaml
touch -d '3 hours ago' "$SF"
touch -d '1 hour ago' "$SA"
tgcall probe list_dir '{}'
eq "$(jqv probe.json .status)" persisted "a gate with spill.keep: 2h opens ($(head -c 200 probe.err))"
CHECKS=$((CHECKS + 1))
[ ! -e "$SF" ] || fail "spill.keep 2h: a spill 3 hours old is gone"
CHECKS=$((CHECKS + 1))
[ -f "$SA" ] || fail "spill.keep 2h: a spill 1 hour old stays"

# a bad retention is refused, naming the key
sed -i 's/keep: 2h/keep: soon/' toolgate.yaml
tgcall bad list_dir '{}'
eq "$(cat bad.exit)" 1 "a bad spill.keep: the gate does not open"
contains "$(cat bad.err)" "spill.keep" "and the error names the key"
finish
