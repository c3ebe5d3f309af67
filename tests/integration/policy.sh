# Identity, rules, modes, grants and the hard floor (DESIGN §3).
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'SECRET=1\n' > .env
printf 'hello\n' > README.md
mkdir -p src docs
ln -s ../.env src/link
cat > toolgate.yaml <<'YAML'
default_principal: dev
principals:
  dev:    {roles: [developer]}
  ci-bot: {roles: [staging-deployer], token_env: CI_BOT_TOKEN}
  ops:    {roles: [owner]}
roles:
  developer:        {ask: ["write_file(./docs/**)"]}
  staging-deployer: {allow: ["deploy(env=staging)"]}
  owner:            {allow: ["*"]}
permissions:
  allow: ["write_file(./src/**)"]
  deny:  ["read_file(./.env)", "write_file(*.pem)"]
tools:
  deploy:
    description: Deploy.
    input_schema:
      type: object
      properties: {env: {type: string}}
      required: [env]
    command: [/bin/sh, -c, "cat > /dev/null; echo deployed"]
    requires_grant: true
  cleanup:
    description: Remove build output.
    input_schema: {type: object}
    command: [/bin/sh, -c, "cat > /dev/null; echo cleaned"]
    destructive: true
YAML
export TOOLGATE_CONFIG=$WS/toolgate.yaml

st() { jqv "$1.json" .status; }

# identity
tgcall who read_file '{"path":"README.md"}'
eq "$(jqv who.json .principal)" dev "default principal"
tgcall nobody --as nobody read_file '{"path":"README.md"}'
eq "$(st nobody)" denied "unknown principal is denied"
contains "$(jqv nobody.json .error.message)" "unknown principal" "unknown principal message"
tgcall notoken --as ci-bot read_file '{"path":"README.md"}'
eq "$(st notoken)" denied "a principal with a token needs it (no token configured)"
export CI_BOT_TOKEN=t0ken
tgcall badtoken --as ci-bot read_file '{"path":"README.md"}'
eq "$(st badtoken)" denied "wrong token"
TOOLGATE_TOKEN=t0ken tgcall goodtoken --as ci-bot read_file '{"path":"README.md"}'
eq "$(st goodtoken)" persisted "right token"
TOOLGATE_TOKEN=t0ken tgcall bytoken read_file '{"path":"README.md"}'
eq "$(jqv bytoken.json .principal)" ci-bot "the token names the principal"
TOOLGATE_PRINCIPAL=ops tgcall envp read_file '{"path":"README.md"}'
eq "$(jqv envp.json .principal)" ops "TOOLGATE_PRINCIPAL"

# deny rules, as written and as resolved
tgcall env read_file '{"path":".env"}'
eq "$(st env)" denied "deny read_file(./.env)"
eq "$(jqv env.json .error.rule)" "deny: read_file(./.env)" "the rule that decided"
tgcall envlink read_file '{"path":"src/link"}'
eq "$(st envlink)" denied "a symlink to .env is still .env"
tgcall envops --as ops read_file '{"path":".env"}'
eq "$(st envops)" denied "deny beats a role's allow *"
tgcall pem --as ops --mode bypassPermissions write_file '{"path":"keys/a.pem","content":"x"}'
eq "$(st pem)" denied "deny holds in bypassPermissions"
[ -e keys/a.pem ] && fail "denied write happened"

# allow / ask / mode default
tgcall src write_file '{"path":"src/new.txt","content":"hi"}'
eq "$(st src)" persisted "allow write_file(./src/**)"
eq "$(cat src/new.txt)" hi "the allowed write happened"
tgcall docs write_file '{"path":"docs/a.md","content":"x"}'
eq "$(st docs)" pending "role ask rule → pending approval"
eq "$(jqv docs.json .error.rule)" "ask: write_file(./docs/**)" "the ask rule is named"
eq "$(jqv docs.json .error.kind)" needs_approval "ask → needs_approval"
tgcall docsnever --approval never write_file '{"path":"docs/a.md","content":"x"}'
eq "$(st docsnever)" denied "approval never → denied"
tgcall other write_file '{"path":"other.txt","content":"x"}'
eq "$(st other)" pending "default mode: writes ask"
tgcall otherae --mode acceptEdits write_file '{"path":"other.txt","content":"x"}'
eq "$(st otherae)" persisted "acceptEdits: file edits allowed"
tgcall clean_ae --mode acceptEdits cleanup '{}'
eq "$(st clean_ae)" pending "acceptEdits: a destructive tool still asks"
tgcall plan --mode plan write_file '{"path":"other.txt","content":"y"}'
eq "$(st plan)" denied "plan: writes denied"
tgcall planread --mode plan read_file '{"path":"README.md"}'
eq "$(st planread)" persisted "plan: reads allowed"
tgcall bypass --mode bypassPermissions write_file '{"path":"other.txt","content":"z"}'
eq "$(st bypass)" persisted "bypassPermissions: allowed"
tgcall untrusted --mode bypassPermissions --approval untrusted write_file '{"path":"other.txt","content":"w"}'
eq "$(st untrusted)" pending "untrusted: a mode-default allow of a write asks"
tgcall untrusted_allow --approval untrusted write_file '{"path":"src/u.txt","content":"w"}'
eq "$(st untrusted_allow)" persisted "untrusted: an explicit allow rule runs"

# requires_grant: only an allow rule lets it run, whatever the mode
tgcall grant_dev --mode bypassPermissions deploy '{"env":"staging"}'
eq "$(st grant_dev)" denied "requires_grant: no grant in bypass"
contains "$(jqv grant_dev.json .error.message)" "grant" "requires_grant message"
TOOLGATE_TOKEN=t0ken tgcall grant_ci --as ci-bot deploy '{"env":"staging"}'
eq "$(st grant_ci)" persisted "requires_grant: the role's allow rule"
TOOLGATE_TOKEN=t0ken tgcall grant_prod --as ci-bot deploy '{"env":"prod"}'
eq "$(st grant_prod)" denied "requires_grant: prod not granted"

# the hard floor: the workspace may be $HOME; ~/.ssh stays out of reach
mkdir -p .ssh && printf 'key' > .ssh/id_rsa
HOME=$WS tgcall ssh --as ops --mode bypassPermissions read_file '{"path":".ssh/id_rsa"}'
eq "$(st ssh)" denied "floor: ~/.ssh"
contains "$(jqv ssh.json .error.rule)" "floor" "floor rule named"
HOME=$WS tgcall sshlist --as ops --mode bypassPermissions list_dir '{"path":".ssh"}'
eq "$(st sshlist)" denied "floor: listing ~/.ssh"

# an allow rule holds only if every path matches as written AND as resolved
printf 'all:\n' > Makefile
tgcall dotdot_allow write_file '{"path":"src/../Makefile","content":"pwn:\n"}'
eq "$(st dotdot_allow)" pending "src/../Makefile is not under src/: the allow rule does not hold"
tgcall dotdot_plan --mode plan write_file '{"path":"src/../Makefile","content":"pwn:\n"}'
eq "$(st dotdot_plan)" denied "plan mode: src/../Makefile denied"
ln -s ../Makefile src/mk
tgcall link_allow write_file '{"path":"src/mk","content":"pwn:\n"}'
eq "$(st link_allow)" persisted "a write replaces the symlink src/mk itself, which is under src/"
[ -L src/mk ] && fail "the symlink was written through instead of replaced"
eq "$(cat Makefile)" "all:" "the link's target outside src/ is untouched"
ln -s src/a.txt mk-out
tgcall link_out write_file '{"path":"mk-out","content":"pwn:\n"}'
eq "$(st link_out)" pending "a symlink outside src/ pointing in: the write replaces it outside src/"

# the gate's own configuration and the programs it runs are read-only to tools
tgcall own_cfg --as ops --mode bypassPermissions write_file '{"path":"toolgate.yaml","content":"mode: bypassPermissions\n"}'
eq "$(st own_cfg)" denied "toolgate.yaml is read-only to tools"
contains "$(jqv own_cfg.json .error.message)" "configuration" "says why"
printf '#!/bin/sh\necho ok\n' > deploy-script.sh
sed -i 's|command: \[/bin/sh, -c, "cat > /dev/null; echo deployed"\]|command: [./deploy-script.sh]|' toolgate.yaml
tgcall own_script --as ops --mode bypassPermissions write_file '{"path":"deploy-script.sh","content":"id"}'
eq "$(st own_script)" denied "a configured tool's program is read-only to tools"
tgcall own_other --as ops --mode bypassPermissions write_file '{"path":"toolgate.json","content":"{}"}'
eq "$(st own_other)" denied "toolgate.json (another config name) is read-only too"

# nested .git (submodules) is protected like the top one
tgcall subgit --as ops --mode bypassPermissions write_file '{"path":"sub/mod/.git/hooks/pre-commit","content":"id"}'
eq "$(st subgit)" denied "nested .git is read-only"
[ -e sub/mod/.git/hooks/pre-commit ] && fail "nested .git was written"

# read rules cover every read tool and every entry of a walk
tgcall search_env search_files '{"pattern":".","path":".env"}'
eq "$(st search_env)" denied "deny read_file(./.env) holds for search_files on .env"
tgcall search_all search_files '{"pattern":"SECRET"}'
eq "$(st search_all)" persisted "a search of the workspace runs"
eq "$(jqv search_all.json '[.output.matches[] | select(.file == ".env")] | length')" 0 \
	"but .env is left out of it"
[ "$(jqv search_all.json .output.withheld)" -ge 1 ] || fail "withheld entries are counted"
tgcall list_all list_dir '{"path":".","depth":2}'
eq "$(jqv list_all.json '[.output.entries[].name] | index(".env")')" null "list_dir leaves .env out"

# the floor holds for walks: with the workspace as $HOME, ~/.ssh stays out
HOME=$WS tgcall ssh_search --as ops --mode bypassPermissions search_files '{"pattern":"key"}'
eq "$(jqv ssh_search.json '[.output.matches[] | select(.file | startswith(".ssh"))] | length')" 0 \
	"floor: search_files does not read ~/.ssh"
HOME=$WS tgcall ssh_walk --as ops list_dir '{"path":".","depth":3}'
eq "$(jqv ssh_walk.json '[.output.entries[].name | select(startswith(".ssh"))] | length')" 0 \
	"floor: list_dir does not show ~/.ssh"

# requires_grant is never turned into ask (and so never approved into running)
cat >> toolgate.yaml <<'YAML'
  grant_ask:
    description: Needs a grant.
    input_schema: {type: object, properties: {env: {type: string}}}
    command: [/bin/sh, -c, "cat > /dev/null; echo ran"]
    requires_grant: true
YAML
sed -i 's|^  ask:   \[|  ask:   ["grant_ask(env=staging)", |; s|^permissions:|permissions:\n  ask: ["grant_ask(env=staging)"]|' toolgate.yaml
tgcall grant_asked grant_ask '{"env":"staging"}'
eq "$(st grant_asked)" denied "an ask rule does not stand in for a grant"

# key=glob deny rules: an array matches if any element does
cat >> toolgate.yaml <<'YAML'
  send:
    description: Send.
    input_schema: {type: object, properties: {to: {}}}
    command: [/bin/sh, -c, "cat > /dev/null; echo sent"]
YAML
sed -i 's|^  deny:  \["read_file(./.env)"|  deny:  ["send(to=*@evil.com)", "read_file(./.env)"|' toolgate.yaml
tgcall send_arr --mode bypassPermissions send '{"to":["a@ok.com","b@evil.com"]}'
eq "$(st send_arr)" denied "deny key=glob: any element of an array"
tgcall send_ok --mode bypassPermissions send '{"to":["a@ok.com"]}'
eq "$(st send_ok)" persisted "no element matches: allowed by the mode"

# a rule that can never match is a load error, not a silent hole
cp toolgate.yaml good.yaml
sed -i 's|^  deny:  \[|  deny:  ["send(prod)", |' toolgate.yaml
(cd "$WS" && "$TG" call send '{"to":"x"}' > typo.out 2> typo.err)
eq "$?" 1 "a path rule for a tool without paths: config error"
contains "$(cat typo.err)" "toolgate.yaml:" "with the file and line"
contains "$(cat typo.err)" "key=glob" "and what to write instead"
cp good.yaml toolgate.yaml

# dry run: decided, nothing run
tgcall dry --dry-run --mode acceptEdits write_file '{"path":"dry.txt","content":"x"}'
eq "$(st dry)" dry_run "dry run status"
eq "$(cat dry.exit)" 0 "dry run exit 0"
[ -e dry.txt ] && fail "dry run wrote the file"

# every call above has exactly one ledger row
eq "$(sql 'select count(*) from ops')" "$(ls "$WS"/*.json | grep -vc 'toolgate\.json')" "one row per call"
finish
