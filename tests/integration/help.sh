# `toolgate <command> --help` lists only the options the command takes, each
# described once (issue 21).  For every subcommand `toolgate --help` names:
#  - every option its help describes (a line "  --name ..." or "  -x, --name
#    ...") is accepted: the command run with it, then --help, is not refused
#    by getopt as unknown (the shared gate and --color options, which every
#    command that takes them takes from one table in cli/cli.h, are run once);
#  - every option the command accepts (its getopt_long table and option
#    string, given to getopt_long or cli_getopt, in cli/cmd_<command>.c, with
#    the shared tables of cli/cli.h it names) is described exactly once;
#    --help and -h themselves need not be.
. "$(dirname "$0")/lib.sh"
cd "$WS"
CLI=$ROOT/cli

# the entries {"name", has_arg, ...} of the table a cli.h macro expands to
macro_opts() { # MACRO
	sed -n "/^#define $1\b/,/^[^#]*[^\\\\]\$/p" "$CLI/cli.h" | grep -oE '\{"[a-z][a-z-]*", *[0-9]' |
		sed -E 's/\{"([^"]*)", *([0-9])/--\1 \2/'
}

# every option SRC accepts, one "NAME HAS_ARG" per line
accepted() { # SRC
	local src=$1
	grep -oE '\{"[a-z][a-z-]*", *[0-9]' "$src" | sed -E 's/\{"([^"]*)", *([0-9])/--\1 \2/'
	grep -q CLI_GATE_LONGOPTS "$src" && macro_opts CLI_GATE_LONGOPTS
	grep -q CLI_COLOR_LONGOPT "$src" && macro_opts CLI_COLOR_LONGOPT
	# short options: the option string of getopt_long, or of cli_getopt (cli/util.c)
	grep -oE '(getopt_long\(|cli_getopt\(r, )argc, argv, "[^"]*"' "$src" | sed -E 's/.*"([^"]*)"/\1/' |
		sed 's/^+//' | grep -oE '[a-zA-Z]:?' | sed -E 's/^(.):$/-\1 1/; s/^(.)$/-\1 0/'
	# options read by hand (apply-patch, as Codex's program reads them)
	grep -oE 'strcmp\(argv\[i\], "--?[a-z][a-z-]*"\)' "$src" | grep -oE '"[^"]*"' | tr -d '"' |
		sed 's/$/ 0/'
	true
}

# the options a help text describes: the option words that start its lines
# (a description's own continuation lines are indented further)
described() { # HELP_FILE
	grep -E '^ {1,6}-' "$1" | sed -E 's/^ +//' | grep -oE '^(-[a-zA-Z], )?--?[a-zA-Z][a-zA-Z-]*' |
		tr ',' '\n' | sed 's/^ *//' | grep -E '^-'
}

shared=$( (macro_opts CLI_GATE_LONGOPTS; macro_opts CLI_COLOR_LONGOPT) | awk '{ print $1 }')
probed=" "
cmds=$("$TG" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { on = 0 }
                           on && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || fail "toolgate --help lists no commands"
ncmd=0
for cmd in $cmds; do
	ncmd=$((ncmd + 1))
	src=$CLI/cmd_${cmd//-/_}.c
	[ -f "$src" ] || { fail "$cmd: no $src"; continue; }
	"$TG" "$cmd" --help > "$cmd.help" 2> "$cmd.err" < /dev/null
	eq "$?" 0 "$cmd --help exits 0"
	sanitizers "$cmd.err" "$cmd --help"
	accepted "$src" | sort -u > "$cmd.accepted"
	described "$cmd.help" | sort > "$cmd.described"

	# every described option is accepted by the command
	for opt in $(sort -u "$cmd.described"); do
		has_arg=$(awk -v o="$opt" '$1 == o { print $2; exit }' "$cmd.accepted")
		[ -n "$has_arg" ] || fail "$cmd: its --help describes $opt, which $(basename "$src") does not take"
		case " $shared " in
		*" $opt "*)
			case $probed in *" $opt "*) continue ;; esac
			probed="$probed$opt " ;;
		esac
		# (a probe only parses: leak checking at its exit would only cost time)
		if [ "${has_arg:-0}" != 0 ]; then
			ASAN_OPTIONS=detect_leaks=0 timeout 20 "$TG" "$cmd" "$opt" 1 --help > /dev/null \
				2> probe.err < /dev/null
		else
			ASAN_OPTIONS=detect_leaks=0 timeout 20 "$TG" "$cmd" "$opt" --help > /dev/null \
				2> probe.err < /dev/null
		fi
		CHECKS=$((CHECKS + 1))
		if grep -qE 'unrecognized option|invalid option|unknown option' probe.err; then
			fail "$cmd: its --help describes $opt, which it refuses: $(head -n 1 probe.err)"
		fi
	done

	# every accepted option is described exactly once
	for opt in $(awk '{ print $1 }' "$cmd.accepted" | sort -u); do
		case $opt in --help|-h) continue ;; esac
		n=$(grep -cxF -- "$opt" "$cmd.described")
		eq "$n" 1 "$cmd: $opt (which it takes) is described in its --help"
	done
done
[ "$ncmd" -ge 16 ] || fail "only $ncmd commands were checked"
# `toolgate help CMD` is CMD --help
eq "$("$TG" help log)" "$("$TG" log --help)" "toolgate help log is toolgate log --help"
finish
