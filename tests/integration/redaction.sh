# Redaction: secrets of every kind planted in arguments, in a command
# tool's output, in a file read_file returns, in an error message, in a
# queued approval and in a dry run never reach the audit trail — the
# whole ledger (database, WAL, shared memory) and the JSONL event sink are
# grepped for each raw secret — while the model still gets the real
# values.  Masks are «redacted:<first 8 hex of an HMAC under the ledger's
# mask key>» (not of an unsalted sha256, which would confirm a guessed
# secret; equal within a ledger, different in two); long strings in
# the logged args are cut to a prefix + length + sha256; a bad pattern is
# refused with file:line.
. "$(dirname "$0")/lib.sh"
cd "$WS"

rnd() { LC_ALL=C tr -dc "$1" < /dev/urandom | head -c "$2"; }
hmac() { # HEXKEY: HMAC-SHA256 of stdin, hex
	openssl dgst -sha256 -mac HMAC -macopt hexkey:"$1" -r | cut -d' ' -f1
}
# the mask key of the ledger at $1 (default: the workspace's): HMAC under the
# machine key of "toolgate mask key\0" and the ledger's id (src/store/mac.c)
mask_key() {
	local db=${1:-$WS/.toolgate/ledger.db}
	printf 'toolgate mask key\0%s' "$(sqlite3 "$db" "select id from ledger")" |
		hmac "$(cat "$XDG_STATE_HOME/toolgate/key")"
}
mask() { printf '«redacted:%s»' "$(printf %s "$1" | hmac "$(mask_key "${2:-}")" | cut -c1-8)"; }
shamask() { printf '«redacted:%s»' "$(printf %s "$1" | sha256sum | cut -c1-8)"; }

# fresh made-up secrets each run, so that a hit can only be ours
AWS_ID=AKIA$(rnd 'A-Z0-9' 16)
AWS_SECRET=Q7$(rnd 'A-Za-z0-9/+' 38)
BEARER=Bt9$(rnd 'A-Za-z0-9' 29)
PEM_BODY=MIIEpQ$(rnd 'A-Za-z0-9' 58)
OPENAI=sk-proj-Q7$(rnd 'A-Za-z0-9' 46)
ANTHROPIC=sk-ant-api03-Q7$(rnd 'A-Za-z0-9' 80)AA
GITHUB=ghp_$(rnd 'A-Za-z0-9' 36)
SLACK=xoxb-$(rnd '0-9' 12)-$(rnd '0-9' 13)-$(rnd 'A-Za-z0-9' 24)
JWT=eyJ$(rnd 'A-Za-z0-9' 30).eyJ$(rnd 'A-Za-z0-9' 40).$(rnd 'A-Za-z0-9_-' 43)
URL_PW=Pw$(rnd 'A-Za-z0-9' 14)
ERR_PW=Ep$(rnd 'A-Za-z0-9' 14)
KEY_PW=hunter$(rnd 'a-z' 6)
CARD=4$(rnd '0-9' 15)
ACME=ACME-$(rnd '0-9' 6)
ASK_PW=Ak$(rnd 'A-Za-z0-9' 14)
ENUM_SECRET=sk-proj-Q8$(rnd 'A-Za-z0-9' 40)
ENUM_PW=Ev$(rnd 'A-Za-z0-9' 14)      # matches no pattern: masked for its key alone
TOOL_ID=AKIA$(rnd 'A-Z0-9' 16)       # in the name of a tool that does not exist
MARKER=marker-$(rnd 'a-z0-9' 20)   # not a secret: the grep below must find it
SECRETS=(AWS_ID AWS_SECRET BEARER PEM_BODY OPENAI ANTHROPIC GITHUB SLACK JWT URL_PW ERR_PW KEY_PW
         CARD ACME ASK_PW ENUM_SECRET ENUM_PW TOOL_ID)

cat > toolgate.yaml <<YAML
mode: bypassPermissions
permissions:
  ask: [approve_me]
redact:
  keys: [password, api_key, token, authorization]
  patterns: ["ACME-[0-9]{6}"]
events: {jsonl: events.jsonl}
# every output kept whole (a read-only call's is otherwise only its size and
# sha256): what is kept must be masked
ledger: {keep_output: all}
tools:
  login:
    description: Log in.
    input_schema:
      type: object
      properties:
        user: {type: string}
        password: {type: string}
        note: {type: string}
        card: {type: string, x-sensitive: true}
    command: [/bin/sh, -c, "cat > /dev/null; echo ok"]
    read_only: true
  leak:
    description: Print what a misbehaving service prints.
    input_schema: {type: object}
    command: [/bin/sh, -c, "cat > /dev/null; cat service.json"]
    read_only: true
  fail:
    description: Fail with a secret in the error.
    input_schema: {type: object}
    command: [/bin/sh, -c, "cat > /dev/null; echo \"cannot connect to postgres://app:$ERR_PW@db/x\" >&2; exit 1"]
    read_only: true
  pick:
    description: Pick an environment.
    input_schema:
      type: object
      properties:
        env: {type: string, enum: [staging, prod]}
        password: {type: string, enum: [letmein]}
    command: [/bin/sh, -c, "cat > /dev/null; echo ok"]
    read_only: true
  approve_me:
    description: Something that needs approval.
    input_schema: {type: object, properties: {password: {type: string}, note: {type: string}}}
    command: [/bin/sh, -c, "cat > /dev/null; echo ok"]
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

# what the command tool prints: JSON with secrets under a key and in text
jq -n --arg k "$OPENAI" --arg g "$GITHUB" --arg a "$AWS_ID" --arg s "$AWS_SECRET" --arg b "$BEARER" \
	'{status: "ok", api_key: $k, log: ("pushed with " + $g + "; aws " + $a + " aws_secret_access_key=" + $s
	  + "; curl -H \"Authorization: Bearer " + $b + "\"")}' > service.json
# a file read_file returns
cat > secrets.txt <<EOF
# service config
SLACK_BOT=$SLACK
ANTHROPIC_API_KEY=$ANTHROPIC
session cookie $JWT
-----BEGIN RSA PRIVATE KEY-----
$PEM_BODY
-----END RSA PRIVATE KEY-----
the end
EOF

# ---- arguments ----
tgcall login login "$(jq -n --arg p "$KEY_PW" --arg c "$CARD" \
	--arg n "deploy $AWS_ID via postgres://admin:$URL_PW@db/app, ticket $ACME, $MARKER" \
	'{user: "ann", password: $p, card: $c, note: $n}')"
eq "$(jqv login.json .status)" persisted "the login call runs"
op=$(jqv login.json .op_id)
row=$(sql "select args_redacted from ops where op_id='$op'")
eq "$(echo "$row" | jq -r .password)" "$(mask "$KEY_PW")" "a configured key is masked with the HMAC of its value"
[ "$(echo "$row" | jq -r .password)" != "$(shamask "$KEY_PW")" ] ||
	fail "the mask is the secret's unsalted sha256: a guess could be confirmed"
# equal secrets, equal masks in one ledger; another ledger masks it otherwise
tgcall login2 login "$(jq -n --arg p "$KEY_PW" '{user: "bob", password: $p}')"
eq "$(sql "select args_redacted from ops where op_id='$(jqv login2.json .op_id)'" | jq -r .password)" \
	"$(mask "$KEY_PW")" "the same secret, the same mask in one ledger"
mkdir "$WS/other"
cp "$WS/toolgate.yaml" "$WS/other/" 2> /dev/null || true
(cd "$WS/other" && "$TG" call --json --config "$WS/toolgate.yaml" --workspace "$WS/other" login \
	"$(jq -n --arg p "$KEY_PW" '{user: "ann", password: $p}')" > "$WS/other.json" 2> "$WS/other.err")
other=$(sqlite3 "$WS/other/.toolgate/ledger.db" "select args_redacted from ops" | jq -r .password)
eq "$other" "$(mask "$KEY_PW" "$WS/other/.toolgate/ledger.db")" "the other ledger's mask is under its own key"
[ "$other" != "$(mask "$KEY_PW")" ] || fail "two ledgers mask one secret alike"
eq "$(echo "$row" | jq -r .card)" "$(mask "$CARD")" "an x-sensitive property is masked"
eq "$(echo "$row" | jq -r .user)" ann "other values are kept"
note=$(echo "$row" | jq -r .note)
contains "$note" "postgres://admin:$(mask "$URL_PW")@db/app" "only the password of a URL is masked"
contains "$note" "deploy $(mask "$AWS_ID") via" "an AWS key id in a value is masked"
contains "$note" "ticket $(mask "$ACME")" "a configured pattern is masked"
[ "$(sql "select length(args_sha256) from ops where op_id='$op'")" = 64 ] || fail "args sha256 kept"

# ---- a command tool's output: the model gets it all, the ledger none ----
tgcall leak leak '{}'
eq "$(jqv leak.json .status)" persisted "the leaking tool runs"
eq "$(jqv leak.json .output.api_key)" "$OPENAI" "the model gets the real output"
contains "$(jqv leak.json .output.log)" "$GITHUB" "the model gets the real text"
stored=$(sql "select envelope from ops where op_id='$(jqv leak.json .op_id)'")
eq "$(echo "$stored" | jq -r .output.api_key)" "$(mask "$OPENAI")" "a secret key in the output is masked"
contains "$(echo "$stored" | jq -r .output.log)" "aws_secret_access_key=«redacted:" \
	"an aws_secret_access_key assignment keeps its name"
contains "$(echo "$stored" | jq -r .output.log)" "Authorization: Bearer $(mask "$BEARER")" \
	"a bearer token is masked, its scheme kept"

# ---- read_file of a file holding secrets ----
tgcall read read_file '{"path":"secrets.txt"}'
eq "$(jqv read.json .status)" persisted "read_file runs"
contains "$(jq -c . read.json)" "$PEM_BODY" "the model reads the real file"
contains "$(jq -c . read.json)" "$SLACK" "the model reads the real token"
stored=$(sql "select envelope from ops where op_id='$(jqv read.json .op_id)'")
contains "$stored" "the end" "the rest of the file is kept"
contains "$stored" "ANTHROPIC_API_KEY=$(mask "$ANTHROPIC")" "an API key assignment is masked"

# ---- an error message ----
tgcall fail fail '{}'
eq "$(jqv fail.json .status)" failed "the failing tool fails"
contains "$(jqv fail.json .error.message)" "$ERR_PW" "the model gets the real error"
contains "$(sql "select envelope from ops where op_id='$(jqv fail.json .op_id)'")" \
	"postgres://app:$(mask "$ERR_PW")@db" "the stored error is masked"

# ---- a validation error that echoes the value ----
tgcall pick pick "$(jq -n --arg e "$ENUM_SECRET" '{env: $e}')"
eq "$(jqv pick.json .status)" invalid "a value outside the enum is invalid"
contains "$(jqv pick.json .error.message)" "$ENUM_SECRET" "the model is told the value it sent"
# under a masked key the value is no pattern's: the kept message is masked whole
tgcall pickpw pick "$(jq -n --arg p "$ENUM_PW" '{password: $p}')"
eq "$(jqv pickpw.json .status)" invalid "a password outside the enum is invalid"
contains "$(jqv pickpw.json .error.message)" "$ENUM_PW" "the model is told the password it sent"
eq "$(sql "select json_extract(envelope, '$.error.message') from ops where op_id='$(jqv pickpw.json .op_id)'")" \
	"$(mask "$(jqv pickpw.json .error.message)")" "the kept message quoting a password is masked"

# ---- a tool name that names no tool ----
tgcall notool "deploy_$TOOL_ID" '{}'
eq "$(jqv notool.json .error.kind)" unknown_tool "a made-up tool is unknown"
contains "$(jqv notool.json .error.message)" "$TOOL_ID" "the model is told the name it sent"
eq "$(sql "select tool from ops where op_id='$(jqv notool.json .op_id)'")" "deploy_$(mask "$TOOL_ID")" \
	"the ledger keeps the name with its secret masked"

# ---- a queued approval ----
tgcall ask approve_me "$(jq -n --arg p "$ASK_PW" '{password: $p, note: "please"}')"
eq "$(jqv ask.json .status)" pending "the call waits for approval"
eq "$(sql "select args from approvals" | jq -r .password)" "$(mask "$ASK_PW")" \
	"the approval row masks the secret"

# ---- long strings: a long secret masked whole, a long string cut ----
long=$(head -c 6000 /dev/zero | tr '\0' 'S')
text=$(head -c 9000 /dev/zero | tr '\0' 'n')
tgcall long login "{\"user\":\"ann\",\"password\":\"$long\",\"note\":\"$text\"}"
row=$(sql "select args_redacted from ops where op_id='$(jqv long.json .op_id)'")
eq "$(echo "$row" | jq -r .password)" "$(mask "$long")" "a long secret is masked, not cut"
eq "$(echo "$row" | grep -c SSSS)" 0 "no part of the long secret is in the ledger"
contains "$(echo "$row" | jq -r .note)" "9000 bytes, sha256 $(printf %s "$text" | sha256sum | cut -c1-64)" \
	"a long string is cut with its length and hash"
[ "$(echo "$row" | jq -r .note | wc -c)" -lt 600 ] || fail "the cut string is short"

# ---- a dry run ----
tgcall dry --dry-run login "$(jq -n --arg p "$KEY_PW" '{user: "ann", password: $p}')"
eq "$(jqv dry.json .status)" dry_run "the dry run stops before execute"
eq "$(jqv dry.json .output.args.password)" "$(mask "$KEY_PW")" "the dry-run plan masks secrets"

# ---- nothing raw anywhere in the audit trail ----
trail=(.toolgate/ledger.db)
for f in .toolgate/ledger.db-wal .toolgate/ledger.db-shm events.jsonl; do
	[ -f "$f" ] && trail+=("$f")
done
[ -s events.jsonl ] || fail "the JSONL sink got events"
for name in "${SECRETS[@]}"; do
	CHECKS=$((CHECKS + 1))
	hits=$(grep -a -l -F -- "${!name}" "${trail[@]}" 2>/dev/null)
	[ -z "$hits" ] || fail "the raw $name secret is in: $hits"
done
grep -a -q -F -- "$MARKER" "${trail[@]}" || fail "the grep reads the ledger (a plain value is found)"
# and the masks are there instead
[ "$(sql "select count(*) from ops where envelope like '%«redacted:%'")" -ge 3 ] || \
	fail "the stored envelopes carry masks"
grep -q '«redacted:' events.jsonl || fail "the streamed events carry masks"

# ---- configuration ----
cat > bad.yaml <<'YAML'
mode: default
redact:
  keys: [password]
  patterns: ["ok-[0-9]+", "(unclosed"]
YAML
(cd "$WS" && "$TG" call --config "$WS/bad.yaml" --json read_file '{"path":"secrets.txt"}' \
	> bad.out 2> bad.err < /dev/null)
eq "$?" 1 "a pattern that does not compile is a configuration error"
contains "$(cat bad.err)" "bad.yaml:4:" "the error names the line"
contains "$(cat bad.err)" "redact.patterns[1]: does not compile" "the error names the pattern"
finish
