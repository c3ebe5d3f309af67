# Rate limits (issue 7): a token bucket per (principal, tool).  Every
# `toolgate call` is a fresh process, so each call after the first starts
# from what the ledger saved: the restart case on every call.
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'one\ntwo\n' > hello.txt
cat > toolgate.yaml <<'YAML'
default_principal: dev
principals:
  dev: {roles: [owner]}
  ci:  {roles: [owner]}
roles:
  owner: {allow: ["*"]}
rate_limits:
  read_file: 3/hour
  "list_*": 2/hour
  write_file: 500/hour
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
READ='{"path":"hello.txt"}'
LIST='{"path":"."}'

# N calls pass, the N+1st is rate_limited
for i in 1 2 3; do
	tgcall "r$i" read_file "$READ"
	eq "$(cat "$WS/r$i.exit")" 0 "read $i of 3 exits 0"
	eq "$(jqv "$WS/r$i.json" .status)" persisted "read $i of 3 runs"
done
tgcall r4 read_file "$READ"
eq "$(cat "$WS/r4.exit")" 3 "the 4th read exits 3 (denied)"
eq "$(jqv "$WS/r4.json" .status)" denied "the 4th read is denied"
eq "$(jqv "$WS/r4.json" .error.kind)" rate_limited "as rate_limited"
eq "$(jqv "$WS/r4.json" '.error.retry_after_s | type')" number "with retry_after_s"
# one token of 3/hour comes back in 20 minutes at most
eq "$(jqv "$WS/r4.json" '.error.retry_after_s > 0 and .error.retry_after_s <= 1200')" true \
	"retry_after_s within one token's refill"
eq "$(jqv "$WS/r4.json" .error.rule)" "rate_limits: read_file 3/hour" "the rule names the entry"
contains "$(jqv "$WS/r4.json" .error.message)" "read_file is limited to 3 calls an hour for you; wait" \
	"a sentence the model can act on"
eq "$(jqv "$WS/r4.json" .output)" null "nothing ran"
# a refused call gives nothing back
tgcall r5 read_file "$READ"
eq "$(jqv "$WS/r5.json" .error.kind)" rate_limited "still limited after a refusal"

# another principal has its own bucket
tgcall ci1 --as ci read_file "$READ"
eq "$(jqv "$WS/ci1.json" .status)" persisted "another principal is not limited by dev's calls"

# a glob gives each tool it covers its own bucket; a dry run takes no token
tgcall dry --dry-run list_dir "$LIST"
eq "$(jqv "$WS/dry.json" .status)" dry_run "a dry run passes"
tgcall dry2 --dry-run list_dir "$LIST"
eq "$(jqv "$WS/dry2.json" .status)" dry_run "a second dry run passes"
tgcall l1 list_dir "$LIST"
tgcall l2 list_dir "$LIST"
tgcall l3 list_dir "$LIST"
eq "$(jqv "$WS/l1.json" .status)/$(jqv "$WS/l2.json" .status)" persisted/persisted \
	"list_dir's own 2 tokens, untouched by the dry runs"
eq "$(jqv "$WS/l3.json" .error.kind)" rate_limited "list_dir's 3rd call is limited"
eq "$(jqv "$WS/l3.json" .error.rule)" "rate_limits: list_* 2/hour" "by the glob's entry"

# a tool no entry names is free
tgcall s1 search_files '{"pattern":"one"}'
eq "$(jqv "$WS/s1.json" .error.kind)" null "search_files has no limit"

# a generous limit (saved every 1% of N in a long-lived process) still
# carries each one-call process's token to the next
for i in 1 2 3; do
	tgcall "w$i" write_file "{\"path\":\"w.txt\",\"content\":\"$i\"}"
done
eq "$(for i in 1 2 3; do jqv "$WS/w$i.json" '.stages[] | select(.stage == "rate_limit") | .remaining'; done | tr '\n' ' ')" \
	"499 498 497 " "each process starts from the token the last one took"

# the ledger and the log show the refusals
out=$("$TG" log --status denied 2>&1)
eq "$(grep -c 'rate_limited:' <<< "$out")" 3 "toolgate log --status denied shows each rate_limited call"
contains "$out" "rate_limited: read_file is limited to 3 calls an hour" "with its sentence"
eq "$(sql "SELECT count(*) FROM ops WHERE error_kind = 'rate_limited'")" 3 "one ledger row per refusal"

# a bad entry stops the program with file:line before any call
printf 'rate_limits:\n  read_file: 3/fortnight\n' > bad.yaml
"$TG" call --config bad.yaml read_file "$READ" > bad.out 2> bad.err
eq "$?" 1 "a bad rate exits 1 (configuration error)"
contains "$(cat bad.err)" 'bad.yaml:2:14: rate_limits.read_file: expected N/sec, N/min or N/hour, got "3/fortnight"' \
	"the error names file:line:column and what was expected"
sanitizers bad.err "bad config"

finish
