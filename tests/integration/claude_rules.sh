# Claude Code's permission rules, drop-in (docs/RULES.md): the permissions
# block of a realistic .claude/settings.json, copied as it is into
# toolgate.yaml, protects here what it protected there, through `toolgate
# call` and `call --dry-run`: Read denials stop read_file, list_dir,
# search_files and the shell's reading of the file (denied, and hidden in
# the sandbox); Bash prefixes deny `git push origin main` but not `git
# pull`; Edit allows writes and patches; WebFetch loads and is reported as
# matching nothing.  A rule naming no tool or argument does not load.
. "$(dirname "$0")/lib.sh"
cd "$WS"

mkdir -p .claude secrets src
printf 'TOKEN=hunter2\n' > .env
printf 'k\n' > secrets/key
printf 'int a;\n' > src/a.c
cat > .claude/settings.json <<'JSON'
{
  "permissions": {
    "allow": ["Bash(npm run test:*)", "Bash(python3:*)", "Edit", "Read(./src/**)"],
    "deny": ["Read(./.env)", "Read(./secrets/**)", "Bash(curl:*)", "Bash(git push:*)",
             "WebFetch(domain:evil.example)"],
    "ask": ["Bash(git commit:*)"],
    "defaultMode": "default"
  },
  "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"}
}
JSON
jq '{permissions}' .claude/settings.json > toolgate.yaml

# ---- Read denials: every file tool, and the shell ----
tgcall env read_file '{"path":".env"}'
eq "$(jqv env.json .status)" denied "Read(./.env) denies read_file"
eq "$(jqv env.json .error.rule)" "deny: Read(./.env)" "and names the rule as written"
tgcall sec list_dir '{"path":"secrets"}'
eq "$(jqv sec.json .status)" denied "Read(./secrets/**) denies list_dir of the directory"
tgcall grep search_files '{"pattern":"TOKEN|k","path":"."}'
eq "$(jqv grep.json .status)" persisted "a search of the workspace runs"
eq "$(jq '[.output.matches[] | select(.file == ".env" or (.file | startswith("secrets")))] | length' grep.json)" 0 \
	"and finds nothing in what Read denies"
eq "$(jqv grep.json .output.withheld)" 2 "withholding both files"
tgcall grepenv search_files '{"pattern":"TOKEN","path":".env"}'
eq "$(jqv grepenv.json .status)" denied "a search of .env itself is denied"
tgcall cat shell '{"command":"cat .env"}'
eq "$(jqv cat.json .status)" denied "shell cat .env is denied"
eq "$(jqv cat.json .error.rule)" "deny: Read(./.env)" "by the Read rule"
if [ "$("$TG" doctor --json | jq -r .backend)" = bubblewrap ] && command -v python3 > /dev/null; then
	tgcall py shell '{"command":"python3 -c \"print(open(\\\".env\\\").read())\""}'
	eq "$(jqv py.json .status)" persisted "a command that reads .env by itself runs (allowed)"
	eq "$(jqv py.json .output.stdout)" "" "but prints nothing of it"
	contains "$(jqv py.json .output.stderr)" "PermissionError" "the sandbox hides .env from it"
	"$TG" doctor --json > doctor.json
	contains "$(jq -c '.shell.read_rules.hidden' doctor.json)" "$WS/.env" "doctor shows .env hidden"
	contains "$(jq -c '.shell.read_rules.hidden' doctor.json)" "$WS/secrets" "and secrets/"
fi
tgcall src read_file '{"path":"src/a.c"}'
eq "$(jqv src.json .status)" persisted "what no rule denies is read"

# ---- Bash prefixes ----
decision() { # NAME TOOL ARGS: the decision and its rule of a dry run
	tgcall "$1" --dry-run "$2" "$3"
	jq -r '[.stages[] | select(.stage == "decide")][0] | "\(.decision) \(.rule)"' "$WS/$1.json"
}
eq "$(decision push shell '{"command":"git push origin main"}')" "deny deny: Bash(git push:*)" \
	"Bash(git push:*) denies git push origin main"
eq "$(decision pull shell '{"command":"git pull"}')" "ask mode default" "but not git pull"
eq "$(decision curl shell '{"command":"curl -s https://example.com"}')" "deny deny: Bash(curl:*)" \
	"Bash(curl:*) denies curl"
eq "$(decision npm shell '{"command":"npm run test -- --watch"}')" \
	"allow allow: Bash(npm run test:*)" "Bash(npm run test:*) allows npm run test"
eq "$(decision build shell '{"command":"npm run build"}')" "ask mode default" "and nothing else of npm"
eq "$(decision commit shell '{"command":"git commit -m wip"}')" "ask ask: Bash(git commit:*)" \
	"an ask rule asks"
tgcall push-run shell '{"command":"git push origin main"}'
eq "$(jqv push-run.json .status)" denied "and through a real call"

# ---- Edit: writes and patches ----
tgcall write write_file '{"path":"notes.md","content":"hi\n"}'
eq "$(jqv write.json .status)" persisted "Edit allows write_file"
eq "$(cat notes.md)" hi "which wrote the file"
tgcall patch apply_patch '{"patch":"*** Begin Patch\n*** Update File: src/a.c\n@@\n-int a;\n+int b;\n*** End Patch\n"}'
eq "$(jqv patch.json .status)" persisted "Edit allows apply_patch"
eq "$(cat src/a.c)" "int b;" "which applied it"
tgcall patchenv apply_patch '{"patch":"*** Begin Patch\n*** Add File: secrets/new\n+x\n*** End Patch\n"}'
eq "$(jqv patchenv.json .status)" persisted "Read denials do not stop writes (as in Claude Code)"

# ---- what matches nothing is said; the JSON form loads the same ----
"$TG" policy test > pt.out 2> pt.err
eq "$?" 0 "policy test passes"
contains "$(cat pt.out)" "rule \"WebFetch(domain:evil.example)\": Claude Code's WebFetch has no counterpart" \
	"and warns of WebFetch"
contains "$(cat pt.out)" "0 passed, 0 failed, 1 warning" "as a warning"
eq "$("$TG" doctor --json | jq -r '.rules.unmatched[0].rule')" "WebFetch(domain:evil.example)" \
	"doctor lists it"
mv toolgate.yaml block.yaml
jq '{permissions}' .claude/settings.json > toolgate.json
tgcall json read_file '{"path":".env"}'
eq "$(jqv json.json .status)" denied "the block as toolgate.json denies the same"
rm toolgate.json

# ---- a rule that names nothing does not load ----
jq '.permissions.deny += ["Raed(./.env)"] | {permissions}' .claude/settings.json > toolgate.yaml
tgcall typo read_file '{"path":"src/a.c"}'
eq "$(cat typo.exit)" 1 "a misspelt tool name is a load error"
contains "$(cat typo.err)" "toolgate.yaml:15:7: permissions.deny[5]: rule \"Raed(./.env)\": no tool is named Raed; did you mean Read?" \
	"with its place and a suggestion"
cat > toolgate.yaml <<'YAML'
permissions:
  deny: ["deploy(enw=prod)"]
tools:
  deploy:
    description: Deploy a version.
    command: [/bin/true]
    input_schema: {type: object, properties: {env: {type: string}}}
YAML
tgcall arg read_file '{"path":"src/a.c"}'
eq "$(cat arg.exit)" 1 "an argument the tool lacks is a load error"
contains "$(cat arg.err)" "toolgate.yaml:2:10: permissions.deny[0]: rule \"deploy(enw=prod)\": deploy has no argument \"enw\"; did you mean env?" \
	"with its place and a suggestion"
finish
