# What the ledger keeps of the arguments: configured secret keys masked
# (whatever their length), long strings cut to a prefix + sha256, the raw
# args' sha256 always; a dry run's plan shows the masked args too.
. "$(dirname "$0")/lib.sh"
cd "$WS"
cat > toolgate.yaml <<'YAML'
mode: bypassPermissions
redact: {keys: [password, api_key]}
tools:
  login:
    description: Log in.
    input_schema: {type: object, properties: {user: {type: string}, password: {type: string}, note: {type: string}}}
    command: [/bin/sh, -c, "cat > /dev/null; echo ok"]
    read_only: true
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml
long=$(head -c 6000 /dev/zero | tr '\0' 'S')
note=$(head -c 9000 /dev/zero | tr '\0' 'n')
tgcall login login "{\"user\":\"ann\",\"password\":\"$long\",\"note\":\"$note\"}"
eq "$(jqv login.json .status)" persisted "the call runs"
row=$(sql "select args_redacted from ops where op_id='$(jqv login.json .op_id)'")
eq "$(echo "$row" | jq -r .password)" "[redacted]" "a long secret is masked, not cut"
eq "$(echo "$row" | grep -c SSSS)" 0 "no part of the secret is in the ledger"
contains "$(echo "$row" | jq -r .note)" "9000 bytes, sha256" "a long string is cut with its length and hash"
[ "$(echo "$row" | jq -r .note | wc -c)" -lt 600 ] || fail "the cut string is short"
eq "$(echo "$row" | jq -r .user)" ann "other values are kept"
[ "$(sql "select length(args_sha256) from ops where op_id='$(jqv login.json .op_id)'")" = 64 ] || fail "args sha256 kept"
tgcall dry --dry-run login '{"user":"ann","password":"hunter2"}'
eq "$(jqv dry.json .output.args.password)" "[redacted]" "the dry-run plan masks secrets"
eq "$(sql "select count(*) from ops where envelope like '%hunter2%' or args_redacted like '%hunter2%'")" 0 \
	"the secret is nowhere in the ledger"
finish
