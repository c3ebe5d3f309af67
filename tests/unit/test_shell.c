/*
 * test_shell.c — the shell splitter (src/policy/shell.c): POSIX quoting,
 * the split into simple commands, normalisation ($IFS, NFKC, positional
 * parameters), opaque constructs, `sh -c` unwrapping, the argv form, the
 * wrappers tgi_shell_program peels, and every error a line can earn.
 *
 * Most cases are rows: a line and what it becomes, rendered one command
 * after another as "ASSIGNS ARGV REDIRS {FLAGS}" joined by " ; ", a word
 * with a space (or an empty one) in single quotes, flags among opaque,
 * piped, bg and dN (unwrapped from N `sh -c`).  Failing rows print the
 * line, what was expected and what came out.
 *
 * Owns: its tables.  Must not: run commands, touch the filesystem or the
 * network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/shell.h"
#include "util/util.h"

/* ---- rendering ---- */

static void put_word(tgi_buf *b, const char *w)
{
	if (!*w || strchr(w, ' '))
		tgi_buf_printf(b, "'%s'", w);
	else
		tgi_buf_puts(b, w);
}

static char *render(const tgi_cmdline *cl)
{
	tgi_buf b;
	tgi_buf_init(&b, 1u << 24);
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *c = &cl->v[i];
		const char *sep = "";
		if (i)
			tgi_buf_puts(&b, " ; ");
		for (size_t j = 0; j < c->nassigns; j++, sep = " ") {
			tgi_buf_puts(&b, sep);
			put_word(&b, c->assigns[j]);
		}
		for (size_t j = 0; j < c->argc; j++, sep = " ") {
			tgi_buf_puts(&b, sep);
			put_word(&b, c->argv[j]);
		}
		for (size_t j = 0; j < c->nredirs; j++, sep = " ") {
			tgi_buf_puts(&b, sep);
			if (c->redirs[j].fd >= 0)
				tgi_buf_printf(&b, "%d", c->redirs[j].fd);
			tgi_buf_puts(&b, c->redirs[j].op);
			put_word(&b, c->redirs[j].target);
		}
		if (c->flags || c->depth) {
			const char *fs = "";
			tgi_buf_printf(&b, "%s{", sep);
			if (c->flags & TGI_CMD_OPAQUE)
				tgi_buf_printf(&b, "%sopaque", fs), fs = ",";
			if (c->flags & TGI_CMD_PIPED_IN)
				tgi_buf_printf(&b, "%spiped", fs), fs = ",";
			if (c->flags & TGI_CMD_BACKGROUND)
				tgi_buf_printf(&b, "%sbg", fs), fs = ",";
			if (c->depth)
				tgi_buf_printf(&b, "%sd%zu", fs, c->depth);
			tgi_buf_puts(&b, "}");
		}
	}
	return tgi_buf_steal(&b);
}

/* Structural invariants every successful split keeps. */
static void check_shape(const tgi_cmdline *cl)
{
	assert_true(cl->n <= TGI_SHELL_MAX_CMDS);
	for (size_t i = 0; i < cl->n; i++) {
		const tgi_cmd *c = &cl->v[i];
		assert_non_null(c->argv);
		assert_null(c->argv[c->argc]);
		assert_non_null(c->assigns);
		assert_null(c->assigns[c->nassigns]);
		assert_true(c->argc || c->nassigns || c->nredirs);
		assert_true(c->depth <= 4);
		assert_true(!(c->flags & TGI_CMD_OPAQUE) == !c->why);
		assert_true(tgi_shell_program(c) <= c->argc);
	}
}

static char *split_render(const char *line, size_t len, char *err, size_t errlen)
{
	tgi_cmdline cl;
	char *s;
	if (tgi_shell_split(line, len, &cl, err, errlen) < 0) {
		assert_int_equal(cl.n, 0);
		assert_null(cl.v);
		return NULL;
	}
	check_shape(&cl);
	s = render(&cl);
	tgi_cmdline_free(&cl);
	return s;
}

typedef struct row {
	const char *line;
	const char *want;
} row;

static void run_rows(const row *rows, size_t n)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		char err[256] = "";
		char *got = split_render(rows[i].line, strlen(rows[i].line), err, sizeof err);
		if (!got || strcmp(got, rows[i].want) != 0) {
			print_error("line:     %s\nexpected: %s\ngot:      %s\n", rows[i].line, rows[i].want,
			            got ? got : err);
			bad++;
		}
		free(got);
	}
	assert_int_equal(bad, 0);
}

/* The why of the only (or the last) opaque command. */
static void expect_why(const char *line, const char *why)
{
	tgi_cmdline cl;
	char err[256];
	const char *got = NULL;
	assert_int_equal(tgi_shell_split(line, strlen(line), &cl, err, sizeof err), 0);
	for (size_t i = 0; i < cl.n; i++)
		if (cl.v[i].flags & TGI_CMD_OPAQUE)
			got = cl.v[i].why;
	if (!got || strcmp(got, why) != 0)
		print_error("line: %s\nexpected why: %s\ngot: %s\n", line, why, got ? got : "(none)");
	assert_non_null(got);
	assert_string_equal(got, why);
	tgi_cmdline_free(&cl);
}

static void expect_error(const char *line, size_t len, const char *part)
{
	char err[256] = "";
	char *got = split_render(line, len, err, sizeof err);
	if (got)
		print_error("line: %.200s\nexpected an error with: %s\ngot: %.200s\n", line, part, got);
	assert_null(got);
	if (!strstr(err, part))
		print_error("line: %.200s\nexpected: %s\ngot: %s\n", line, part, err);
	assert_non_null(strstr(err, part));
	/* a sentence: one printable line */
	for (const char *e = err; *e; e++)
		assert_true((unsigned char)*e >= 0x20 && *e != 0x7f);
}

/* ---- quoting ---- */

static const row quoting[] = {
	{ "ls -la", "ls -la" },
	{ "  ls\t-la  ", "ls -la" },
	{ "r''m -rf /", "rm -rf /" },
	{ "\"r\"m -rf /", "rm -rf /" },
	{ "r\"\"m -rf '/'", "rm -rf /" },
	{ "echo 'a b' c", "echo 'a b' c" },
	{ "echo '$HOME' '\\n'", "echo $HOME \\n" },
	{ "echo \"a\\\"b\\\\c\\$d\\`e\\x\"", "echo a\"b\\c$d`e\\x" },
	{ "echo a\\ b", "echo 'a b'" },
	{ "echo \\$HOME \\'x", "echo $HOME 'x" },
	{ "r\\\nm -rf /", "rm -rf /" },
	{ "ls \\\n -la", "ls -la" },
	{ "echo \"a\\\nb\"", "echo ab" },
	{ "echo 'a\\\nb'", "echo a\\\nb" },
	{ "echo \\", "echo \\" },
	{ "echo \"\" ''", "echo '' ''" },
	{ "echo \"it's\" 'say \"hi\"'", "echo it's 'say \"hi\"'" },
	{ "echo a\"b c\"d", "echo 'ab cd'" },
	{ "$'\\x72m' -rf /", "rm -rf /" },
	{ "echo $'\\101\\102\\7'", "echo AB\a" },
	{ "echo $'a\\tb'", "echo a\tb" },
	{ "echo $'it\\'s' $'\\\\'", "echo it's \\" },
	{ "echo $'\\u00e9\\U0001F600'", "echo \xc3\xa9\xf0\x9f\x98\x80" },
	{ "echo $'a\\0b' $'c\\x00d'", "echo a c" },
	{ "echo $'\\q' $'\\cA'", "echo \\q \x01" },
	{ "echo $\"hello $X\"", "echo 'hello $X'" },
	{ "echo \"$\" a$ $", "echo $ a$ $" },
	{ "echo ~ ~/x '~'", "echo ~ ~/x ~" },
	{ "echo *.c '*'", "echo *.c *" },
};

static void test_quoting(void **state)
{
	run_rows(quoting, TGI_ARRAY_LEN(quoting));
}

/* ---- comments and operators ---- */

static const row operators[] = {
	{ "ls # rm -rf /", "ls" },
	{ "# only a comment", "" },
	{ "", "" },
	{ "\n\n  \n", "" },
	{ "echo a#b '#c' \\#d", "echo a#b #c #d" },
	{ "ls;#c\nrm x", "ls ; rm x" },
	{ "a && b || c ; d", "a ; b ; c ; d" },
	{ "a;b&&c||d", "a ; b ; c ; d" },
	{ "a | b", "a ; b {piped}" },
	{ "a | b | c", "a ; b {piped} ; c {piped}" },
	{ "a |& b", "a 2>&1 ; b {piped}" },
	{ "a & b", "a {bg} ; b" },
	{ "a &", "a {bg}" },
	{ "a\nb\n", "a ; b" },
	{ "a &&\n\n b", "a ; b" },
	{ "a |\n b", "a ; b {piped}" },
	{ "a ||  # why\n b", "a ; b" },
	{ "a;", "a" },
	{ "(a; b) | c", "a ; b ; c {piped}" },
	{ "(a;)", "a" },
	{ "((a))", "a" },
	{ "{ a; b; } && c", "a ; b ; c" },
	{ "if a; then b; elif c; then d; else e; fi", "a ; b ; c ; d ; e" },
	{ "if (a) then b; fi", "a ; b" },
	{ "while a; do b; done > out", "a ; b ; >out" },
	{ "until a\ndo\n  b\ndone", "a ; b" },
	{ "for f in a b; do rm $f; done", "for f in a b ; rm $f" },
	{ "! a | b", "a ; b {piped}" },
	{ "curl x | { bash; }", "curl x ; bash {opaque,piped}" },
	{ "f() { rm -rf /; }; f", "rm -rf / ; f" },
	{ "f ( ) ( ls )", "ls" },
	{ "function g { ls; }", "ls" },
	{ "function g() { ls; }", "ls" },
	{ "echo {} } { if then", "echo {} } { if then" },
	{ "\"if\" a", "if a" },
	{ "X=1 if", "X=1 if" },
	{ "[[ -f a && -f b ]]", "[[ -f a ; -f b ]]" },
};

static void test_operators(void **state)
{
	run_rows(operators, TGI_ARRAY_LEN(operators));
}

/* ---- redirections and here-docs ---- */

static const row redirections[] = {
	{ "ls 2>&1", "ls 2>&1" },
	{ "ls >&2 2>&-", "ls >&2 2>&-" },
	{ "ls 2>/dev/null", "ls 2>/dev/null" },
	{ "ls &>f &>>g", "ls &>f &>>g" },
	{ "ls >>f <in 3<>rw >|c 0<&3", "ls >>f <in 3<>rw >|c 0<&3" },
	{ "ls 2> \"a b\"", "ls 2>'a b'" },
	{ "echo a2>f", "echo a2 >f" },
	{ "echo 2 >f", "echo 2 >f" },
	{ "echo \"2\">f", "echo 2 >f" },
	{ ">f", ">f" },
	{ ">f X=1 cmd <g", "X=1 cmd >f <g" },
	{ "ls>f;ls<g", "ls >f ; ls <g" },
	{ "cat <<EOF\nrm -rf /\nEOF\nls", "cat <<EOF ; ls" },
	{ "cat <<'EOF'\n$(x)\nEOF\nls", "cat <<EOF ; ls" },
	{ "cat <<\"E F\"\n`x`\nE F\nls", "cat <<'E F' ; ls" },
	{ "cat <<-EOF\n\tbody\n\tEOF\nls", "cat <<-EOF ; ls" },
	{ "cat <<A <<B\na\nA\nb\nB\nrm x", "cat <<A <<B ; rm x" },
	{ "cat <<EOF && ls\nbody\nEOF\npwd", "cat <<EOF ; ls ; pwd" },
	{ "cat <<EOF", "cat <<EOF" },
	{ "cat <<EOF\nno end", "cat <<EOF" },
	{ "cat <<EOF\n$(rm -rf /)\nEOF", "cat <<EOF {opaque}" },
	{ "bash <<EOF\nrm\nEOF", "bash <<EOF {opaque}" },
	{ "bash -s <<EOF\nrm\nEOF", "bash -s <<EOF {opaque}" },
	{ "python3 - <<'EOF'\nimport os\nEOF", "python3 - <<EOF {opaque}" },
	{ "python3 script.py <<EOF\ndata\nEOF", "python3 script.py <<EOF" },
	{ "perl -e 'print' <<EOF\nx\nEOF", "perl -e print <<EOF" },
	{ "cat <<EOF | sh\nx\nEOF", "cat <<EOF ; sh {opaque,piped}" },
	{ "cat <<< \"rm -rf /\"", "cat <<<'rm -rf /'" },
	{ "bash <<< \"rm -rf /\"", "bash <<<'rm -rf /' {opaque}" },
	{ "node <<<x", "node <<<x {opaque}" },
	{ "cat > >(tee log)", "tee log ; cat >'>(tee log)' {opaque}" },
};

static void test_redirections(void **state)
{
	run_rows(redirections, TGI_ARRAY_LEN(redirections));
}

/* ---- $IFS, variables, positional parameters, assignments ---- */

static const row expansions[] = {
	{ "rm$IFS-rf$IFS/", "rm -rf /" },
	{ "rm${IFS}-rf${IFS}/", "rm -rf /" },
	{ "rm${IFS:0:1}-rf /", "rm -rf /" },
	{ "cat$IFS$9/etc/shadow", "cat /etc/shadow" },
	{ "$IFS rm x", "rm x" },
	{ "rm$IFS#$IFS-rf$IFS/", "rm # -rf /" },
	{ "echo $IFSX", "echo $IFSX" },
	{ "echo \"a$IFS\"b", "echo a$IFSb" },
	{ "X=a$IFS cmd", "X=a$IFS cmd" },
	{ "rm -rf $HOME ${HOME} ~", "rm -rf $HOME ${HOME} ~" },
	{ "echo ${#x} ${x} $$ $? $# $! $- $0", "echo ${#x} ${x} $$ $? $# $! $- $0" },
	{ "echo $1 $@ ${2} $* x$1y", "echo xy" },
	{ "echo \"$1\"", "echo ''" },
	{ "A=1 B='x y' cmd a=b", "A=1 'B=x y' cmd a=b" },
	{ "A=1", "A=1" },
	{ "A+=1 B= cmd", "A+=1 B= cmd" },
	{ "\"A\"=1 cmd", "A=1 cmd" },
	{ "A\\B=1 cmd", "AB=1 cmd" },
	{ "1A=x cmd", "1A=x cmd" },
	{ "sudo A=1 rm", "sudo A=1 rm" },
};

static void test_expansions(void **state)
{
	run_rows(expansions, TGI_ARRAY_LEN(expansions));
}

/* ---- NFKC ---- */

static const row unicode[] = {
	/* fullwidth letters and solidus */
	{ "\xef\xbd\x92\xef\xbd\x8d -rf \xef\xbc\x8f", "rm -rf /" },
	/* the "fi" ligature */
	{ "cat \xef\xac\x81le", "cat file" },
	/* e + combining acute composes */
	{ "echo e\xcc\x81", "echo \xc3\xa9" },
	/* mathematical bold "ls" */
	{ "\xf0\x9d\x90\xa5\xf0\x9d\x90\xac", "ls" },
	/* a fullwidth semicolon is a character, not an operator */
	{ "echo a\xef\xbc\x9b rm", "echo a; rm" },
	/* invalid UTF-8 stays byte for byte, around valid text */
	{ "echo \xff\xfe \xef\xbd\x92\xc3", "echo \xff\xfe r\xc3" },
	{ "echo \xed\xa0\x80", "echo \xed\xa0\x80" },
};

static void test_unicode(void **state)
{
	run_rows(unicode, TGI_ARRAY_LEN(unicode));
}

/* ---- opaque constructs ---- */

static const row opaque_rows[] = {
	{ "echo \"$(rm -rf /)\"", "rm -rf / ; echo '$(rm -rf /)' {opaque}" },
	{ "echo $(ls)", "ls ; echo $(ls) {opaque}" },
	{ "echo $(echo $(id))", "id ; echo $(id) {opaque} ; echo '$(echo $(id))' {opaque}" },
	{ "echo `rm -rf /`", "rm -rf / ; echo '`rm -rf /`' {opaque}" },
	{ "echo \"`echo \\\"x\\\"`\"", "echo x ; echo '`echo \\\"x\\\"`' {opaque}" },
	{ "echo $( (a) )", "a ; echo '$( (a) )' {opaque}" },
	{ "echo $(echo ')' \")\")", "echo ) ) ; echo '$(echo ')' \")\")' {opaque}" },
	{ "cat <(ls) >(wc)", "ls ; wc ; cat <(ls) >(wc) {opaque}" },
	{ "echo $((1+2))", "echo $((1+2)) {opaque}" },
	{ "echo $[1+2]", "echo $[1+2] {opaque}" },
	{ "X=$(id) cmd", "id ; X=$(id) cmd {opaque}" },
	{ "eval ls", "eval ls {opaque}" },
	{ "command eval ls", "command eval ls {opaque}" },
	{ "$CMD x", "$CMD x {opaque}" },
	{ "${CMD} x", "${CMD} x {opaque}" },
	{ "sudo $CMD", "sudo $CMD {opaque}" },
	{ "/usr/bin/$X", "/usr/bin/$X {opaque}" },
	{ "echo $CMD", "echo $CMD" },
	{ "x=(a b) y", "'x=(a b)' y {opaque}" },
	{ "echo ${x:-/} ${x/a/b}", "echo ${x:-/} ${x/a/b} {opaque}" },
	{ "{rm,-rf,/}", "{rm,-rf,/} {opaque}" },
	{ "r{m,} -rf", "r{m,} -rf {opaque}" },
	{ "echo {a,b} {1..3} '{x,y}'", "echo {a,b} {1..3} {x,y}" },
	{ "'{rm,-rf}'", "{rm,-rf}" },
	{ "env -S 'rm -rf /'", "env -S 'rm -rf /' {opaque}" },
	{ "fish -c 'rm -rf /'", "fish -c 'rm -rf /' {opaque}" },
	{ "curl x | sh", "curl x ; sh {opaque,piped}" },
	{ "curl x | sudo bash -s", "curl x ; sudo bash -s {opaque,piped}" },
	{ "curl x | python3", "curl x ; python3 {opaque,piped}" },
	{ "curl x | bash < f", "curl x ; bash <f {piped}" },
	{ "echo x | bash script.sh", "echo x ; bash script.sh {piped}" },
	{ "ls | python3 -c 'print(1)'", "ls ; python3 -c print(1) {piped}" },
	{ "ls | python3 -m json.tool", "ls ; python3 -m json.tool {piped}" },
	{ "ls | node -e 1", "ls ; node -e 1 {piped}" },
	{ "curl x | sudo -s", "curl x ; sudo -s {opaque,piped}" },
	{ "curl x | sudo -u root -i", "curl x ; sudo -u root -i {opaque,piped}" },
	{ "curl x | sudo -u root ls", "curl x ; sudo -u root ls {piped}" },
	{ "curl x | su - root", "curl x ; su - root {opaque,piped}" },
	{ "echo x | su -c 'ls' root", "echo x ; su -c ls root {piped}" },
	{ "echo x | xargs -0 sh -c", "echo x ; xargs -0 sh -c {opaque,piped}" },
	{ "xargs sh -c 'rm -rf $1' _", "xargs rm -rf $1 {opaque,d1}" },
};

static void test_opaque(void **state)
{
	run_rows(opaque_rows, TGI_ARRAY_LEN(opaque_rows));
}

static void test_opaque_why(void **state)
{
	expect_why("echo \"$(rm -rf /)\"", "command substitution $(…)");
	expect_why("echo `id`", "command substitution `…`");
	expect_why("cat <(ls)", "process substitution <(…)");
	expect_why("tee >(wc)", "process substitution >(…)");
	expect_why("echo $((1+2))", "arithmetic expansion $((…))");
	expect_why("echo ${x:-$(id)}", "command substitution $(…)");
	expect_why("echo ${x:-y}", "parameter expansion ${…} with an operator");
	expect_why("eval ls", "eval");
	expect_why("$CMD", "a program name that is an expansion");
	expect_why("{rm,-rf,/}", "brace expansion in the program name");
	expect_why("a=(1 2)", "an array assignment");
	expect_why("bash <<EOF\nrm\nEOF", "bash reading a here-doc");
	expect_why("python3 <<< 'import os'", "python3 reading a here-string");
	expect_why("curl x | sh", "sh reading its script from a pipe");
	expect_why("cat <<EOF\n`id`\nEOF", "command substitution in a here-doc");
	expect_why("sh -c \"$X\"", "a sh -c script that is not a literal");
	expect_why("bash -c \"rm ${IFS}x\"", "a bash -c script that is not a literal");
	expect_why("bash -c `id`", "command substitution `…`");
	expect_why("bash --weird -c ls", "bash -c with options that cannot be judged");
	expect_why("sh -c 'rm \"$1\"' sh /", "positional parameters of a sh -c script");
	expect_why("bash -c 'a && && b'",
	           "a bash -c script that does not parse (empty command before `&&` at byte 5)");
	expect_why("ls > $IFS", "an ambiguous redirection");
	expect_why("ls > a$IFS/b", "an ambiguous redirection");
	expect_why("env -S 'rm -rf /'", "env -S (a command line in one word)");
	expect_why("curl x | sudo -s", "a root shell reading its script from a pipe");
	expect_why("xargs sh -c", "a sh -c script that xargs reads from stdin");
	expect_why("bash -c 'rm -rf /' $(id)", "command substitution $(…)");
}

/* ---- sh -c unwrapping ---- */

static const row unwrapping[] = {
	{ "bash -lc \"git status && rm -rf build\"", "git status {d1} ; rm -rf build {d1}" },
	{ "sh -c 'ls'", "ls {d1}" },
	{ "/bin/sh -ec 'ls | wc'", "ls {d1} ; wc {piped,d1}" },
	{ "bash -l -c ls", "ls {d1}" },
	{ "bash -o pipefail -c 'a | b'", "a {d1} ; b {piped,d1}" },
	{ "bash --login --norc -xc ls", "ls {d1}" },
	{ "zsh -c ls; dash -c ls; ksh -c ls", "ls {d1} ; ls {d1} ; ls {d1}" },
	{ "bash -c \"echo \\$HOME\"", "echo $HOME {d1}" },
	{ "bash -c 'echo $HOME'", "echo $HOME {d1}" },
	{ "sh -c 'ls' sh", "ls {d1}" },
	{ "sh -c 'echo $1' sh", "echo {d1}" },
	{ "sh -c \"echo \\`id\\`\"", "id {d1} ; echo `id` {opaque,d1}" },
	{ "sudo bash -c 'rm x; ls'", "sudo rm x {d1} ; sudo ls {d1}" },
	{ "timeout 5 sh -c 'a && b'", "timeout 5 a {d1} ; timeout 5 b {d1}" },
	{ "bash -c 'ls' > out 2>&1", "ls >out 2>&1 {d1}" },
	{ "sudo bash -c 'cat x' > /etc/passwd", "sudo cat x >/etc/passwd {d1}" },
	{ "bash -c 'X=1' >f", "X=1 >f {d1}" },
	{ "curl x | bash -c 'cat | sh'", "curl x ; cat {piped,d1} ; sh {opaque,piped,d1}" },
	{ "bash -c ls &", "ls {bg,d1}" },
	{ "bash -c 'bash' <<EOF\nrm\nEOF", "bash <<EOF {opaque,d1}" },
	{ "bash -c 'bash -c \"bash -c \\\"bash -c ls\\\"\"'", "ls {d4}" },
	{ "bash -c 'bash -c \"bash -c \\\"bash -c \\\\\\\"bash -c ls\\\\\\\"\\\"\"'",
	  "bash -c ls {opaque,d4}" },
	{ "bash -c", "bash -c" },
	{ "bash script.sh", "bash script.sh" },
	{ "bash -c 'case x in a) ls;; esac'", "bash -c 'case x in a) ls;; esac' {opaque}" },
	/* xargs -I fills its words into the script: not unwrapped, judged whole */
	{ "xargs -I{} sh -c 'rm {}'", "xargs -I{} sh -c 'rm {}' {opaque}" },
	{ "xargs -n1 sh -c 'rm \"$0\"'", "xargs -n1 rm $0 {d1}" },
	{ "env -i bash -c 'rm -rf /'", "env -i rm -rf / {d1}" },
	/* a wrapper opaque for another reason is still unwrapped, its commands opaque too */
	{ "bash -c 'rm -rf /; ls' $(id)", "id ; rm -rf / {opaque,d1} ; ls {opaque,d1}" },
	{ "X=$(id) sh -c ls", "id ; X=$(id) ls {opaque,d1}" },
	/* the wrapper's assignments are the script's environment: they stay */
	{ "LD_PRELOAD=./x.so bash -c 'ls; cat f'", "LD_PRELOAD=./x.so ls {d1} ; LD_PRELOAD=./x.so cat f {d1}" },
	{ "sh -c ls > $IFS", "ls >'' {opaque,d1}" },
};

static void test_unwrap(void **state)
{
	run_rows(unwrapping, TGI_ARRAY_LEN(unwrapping));
	expect_why("bash -c 'bash -c \"bash -c \\\"bash -c \\\\\\\"bash -c ls\\\\\\\"\\\"\"'",
	           "shell wrappers nested more than 4 deep");
}

/* ---- errors ---- */

static void test_errors(void **state)
{
	expect_error("a && && b", 9, "empty command before `&&` at byte 5");
	expect_error("a || || b", 9, "empty command before `||` at byte 5");
	expect_error("; a", 3, "empty command before `;` at byte 0");
	expect_error("a | | b", 7, "empty command before `|` at byte 4");
	expect_error("a ; & b", 7, "empty command before `&` at byte 4");
	expect_error("a ;; b", 6, "`;;` at byte 2");
	expect_error("a |", 3, "`|` at byte 2 is not followed by a command");
	expect_error("a &&", 4, "`&&` at byte 2 is not followed by a command");
	expect_error("if", 2, "`if` at byte 0 is not followed by a command");
	expect_error("(a", 2, "the `(` at byte 0 is never closed");
	expect_error("a)", 2, "unexpected `)` at byte 1");
	expect_error("( )", 3, "empty command before `)` at byte 2");
	expect_error("{ }", 3, "empty command before `}` at byte 2");
	expect_error("echo a (b)", 10, "unexpected `(` at byte 7");
	expect_error("echo 'abc", 9, "unterminated single quote starting at byte 5");
	expect_error("echo \"abc", 9, "unterminated double quote starting at byte 5");
	expect_error("echo \"a\\\"", 9, "unterminated double quote starting at byte 5");
	expect_error("echo $(ls", 9, "unterminated command substitution `$(` starting at byte 5");
	expect_error("echo $(echo ')", 14, "unterminated command substitution");
	expect_error("echo `ls", 8, "unterminated backquote starting at byte 5");
	expect_error("echo ${x", 8, "unterminated parameter expansion `${` starting at byte 5");
	expect_error("echo $'abc", 10, "unterminated $'...' string starting at byte 5");
	expect_error("cat <(ls", 8, "unterminated process substitution `<(` starting at byte 4");
	expect_error("echo \"$(ls\"", 11, "unterminated command substitution");
	expect_error("ls >", 4, "the redirection `>` at byte 3 has no target");
	expect_error("ls > ;", 6, "the redirection `>` at byte 3 has no target");
	expect_error("cat <<", 6, "the here-doc `<<` at byte 4 has no delimiter");
	expect_error("99999999999>f", 13, "the file descriptor number at byte 0 is too large");
	expect_error("function", 8, "`function` at byte 0 has no name");
	expect_error("ls\0rm", 5, "the command contains a NUL byte at byte 2");
	expect_error("x=(a", 4, "unterminated array assignment");
}

static void test_limits(void **state)
{
	char err[256];
	tgi_cmdline cl;
	size_t max = TGI_SHELL_MAX;
	char *big = malloc(max + 2);

	/* exactly TGI_SHELL_MAX bytes is fine; one more is not */
	memcpy(big, "echo ", 5);
	memset(big + 5, 'x', max - 5);
	big[max] = '\0';
	assert_int_equal(tgi_shell_split(big, max, &cl, err, sizeof err), 0);
	assert_int_equal(cl.n, 1);
	assert_int_equal(strlen(cl.v[0].argv[1]), max - 5);
	tgi_cmdline_free(&cl);
	big[max] = 'x';
	big[max + 1] = '\0';
	expect_error(big, max + 1, "the command is longer than 1048576 bytes");

	/* 1024 commands are fine; 1025 are not */
	for (size_t i = 0; i < 1025; i++)
		memcpy(big + 2 * i, "a;", 2);
	assert_int_equal(tgi_shell_split(big, 2 * 1024, &cl, err, sizeof err), 0);
	assert_int_equal(cl.n, 1024);
	tgi_cmdline_free(&cl);
	expect_error(big, 2 * 1025, "the command has more than 1024 simple commands");

	/* the limit holds inside unwrapped scripts and substitutions too */
	{
		tgi_buf b;
		tgi_buf_init(&b, max);
		tgi_buf_puts(&b, "bash -c '");
		for (size_t i = 0; i < 1025; i++)
			tgi_buf_puts(&b, "a;");
		tgi_buf_puts(&b, "'");
		expect_error(b.p, b.len, "more than 1024 simple commands");
		b.len = 0;
		tgi_buf_puts(&b, "echo $(");
		for (size_t i = 0; i < 1025; i++)
			tgi_buf_puts(&b, "a;");
		tgi_buf_puts(&b, ")");
		expect_error(b.p, b.len, "more than 1024 simple commands");
		tgi_buf_free(&b);
	}

	/* NFKC may grow a word (U+FDFA is 18 characters); the output is capped */
	{
		size_t n = max / 3 * 3;
		for (size_t i = 0; i < n; i += 3)
			memcpy(big + i, "\xef\xb7\xba", 3);
		expect_error(big, n, "once normalised");
	}

	/* substitutions nested past the stack */
	{
		tgi_buf b;
		tgi_buf_init(&b, max);
		for (int i = 0; i < 100; i++)
			tgi_buf_puts(&b, "$(");
		for (int i = 0; i < 100; i++)
			tgi_buf_puts(&b, ")");
		expect_error(b.p, b.len, "nests more than 64 levels deep");
		tgi_buf_free(&b);
	}
	free(big);
}

/* Deep but legal nesting finishes, and the depth of parsing stays bounded. */
static void test_nesting(void **state)
{
	tgi_buf b;
	char err[256];
	tgi_cmdline cl;

	tgi_buf_init(&b, TGI_SHELL_MAX);
	for (int i = 0; i < 40; i++)
		tgi_buf_puts(&b, "echo $(");
	tgi_buf_puts(&b, "id");
	for (int i = 0; i < 40; i++)
		tgi_buf_puts(&b, ")");
	assert_int_equal(tgi_shell_split(b.p, b.len, &cl, err, sizeof err), 0);
	check_shape(&cl);
	assert_true(cl.n >= 1 && cl.n <= 10);
	assert_string_equal(cl.v[cl.n - 1].argv[0], "echo");
	assert_true(cl.v[cl.n - 1].flags & TGI_CMD_OPAQUE);
	tgi_cmdline_free(&cl);

	b.len = 0;
	for (int i = 0; i < 2000; i++)
		tgi_buf_puts(&b, "(");
	tgi_buf_puts(&b, "rm -rf /");
	for (int i = 0; i < 2000; i++)
		tgi_buf_puts(&b, ")");
	assert_int_equal(tgi_shell_split(b.p, b.len, &cl, err, sizeof err), 0);
	assert_int_equal(cl.n, 1);
	assert_string_equal(cl.v[0].argv[0], "rm");
	tgi_cmdline_free(&cl);
	tgi_buf_free(&b);
}

/* Subshells: each `( … )` gets its own id, and its commands their level;
 * commands of sibling subshells have different ids. */
static void test_subshells(void **state)
{
	(void)state;
	tgi_cmdline cl = {0};
	char err[256];
	const char *line = "(cd a; (cd b); x) ; (y) && z";
	assert_int_equal(tgi_shell_split(line, strlen(line), &cl, err, sizeof err), 0);
	assert_int_equal(cl.n, 5);
	unsigned lvl[] = {1, 2, 1, 1, 0};
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(cl.v[i].sublevel, lvl[i]);
	assert_int_equal(cl.v[0].subshell, cl.v[2].subshell);   /* back in the same one */
	assert_int_not_equal(cl.v[1].subshell, cl.v[0].subshell);
	assert_int_not_equal(cl.v[3].subshell, cl.v[0].subshell); /* a sibling */
	assert_int_equal(cl.v[4].subshell, 0);
	tgi_cmdline_free(&cl);
}

/* ---- the argv form ---- */

static char *argv_render(const char *const *argv, size_t argc, char *err, size_t errlen)
{
	tgi_cmdline cl;
	char *s;
	if (tgi_shell_from_argv(argv, argc, &cl, err, errlen) < 0) {
		assert_int_equal(cl.n, 0);
		return NULL;
	}
	check_shape(&cl);
	s = render(&cl);
	tgi_cmdline_free(&cl);
	return s;
}

static void expect_argv(const char *const *argv, size_t argc, const char *want)
{
	char err[256] = "";
	char *got = argv_render(argv, argc, err, sizeof err);
	if (!got || strcmp(got, want) != 0)
		print_error("expected: %s\ngot: %s\n", want, got ? got : err);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_argv(void **state)
{
	static const char *const a1[] = { "git", "status" };
	static const char *const a2[] = { "bash", "-lc", "git status && rm -rf build" };
	static const char *const a3[] = { "r''m", "a b", "c;d", "$HOME", "X=1" };
	static const char *const a4[] = { "eval", "ls" };
	static const char *const a5[] = { "$X", "ls" };
	static const char *const a6[] = { "sh", "-c", "$X" };
	static const char *const a7[] = { "\xef\xbd\x92\xef\xbd\x8d", "-rf", "/" };
	static const char *const a8[] = { "sudo", "sh", "-c", "rm $1 && ls", "sh", "/" };
	static const char *const a9[] = { "bash", "-c", "a &&" };
	static const char *const a10[] = { "X=1", "ls" };
	static const char *const a11[] = { "{rm,-rf}" };
	static const char *const bad[] = { "ls", NULL };
	char err[256];

	expect_argv(a1, 2, "git status");
	expect_argv(a2, 3, "git status {d1} ; rm -rf build {d1}");
	expect_argv(a3, 5, "r''m 'a b' c;d $HOME X=1");
	expect_argv(a4, 2, "eval ls {opaque}");
	expect_argv(a5, 2, "$X ls {opaque}");
	expect_argv(a6, 3, "$X {opaque,d1}");
	expect_argv(a7, 3, "rm -rf /");
	expect_argv(a8, 6, "sudo rm $1 {opaque,d1} ; sudo ls {d1}");
	expect_argv(a9, 3, "bash -c 'a &&' {opaque}");
	expect_argv(a10, 2, "X=1 ls");
	expect_argv(a11, 1, "{rm,-rf}");

	assert_null(argv_render(a1, 0, err, sizeof err));
	assert_non_null(strstr(err, "the command has no words"));
	assert_null(argv_render(NULL, 2, err, sizeof err));
	assert_null(argv_render(bad, 2, err, sizeof err));
	assert_non_null(strstr(err, "word 1 of the command is missing"));
	{
		char *huge = malloc(TGI_SHELL_MAX + 1);
		const char *const ah[] = { "echo", huge };
		memset(huge, 'x', TGI_SHELL_MAX);
		huge[TGI_SHELL_MAX] = '\0';
		assert_null(argv_render(ah, 2, err, sizeof err));
		assert_non_null(strstr(err, "longer than 1048576 bytes"));
		free(huge);
	}
}

/* ---- basename and program ---- */

static void test_basename(void **state)
{
	assert_string_equal(tgi_shell_basename("/usr/bin/sudo"), "sudo");
	assert_string_equal(tgi_shell_basename("sudo"), "sudo");
	assert_string_equal(tgi_shell_basename("./bin/rm"), "rm");
	assert_string_equal(tgi_shell_basename("dir/"), "");
	assert_string_equal(tgi_shell_basename(""), "");
	assert_string_equal(tgi_shell_basename(NULL), "");
}

typedef struct prog_row {
	const char *line;
	const char *want; /* the program word, or NULL when nothing runs */
	size_t      index;
} prog_row;

static const prog_row programs[] = {
	{ "ls -la", "ls", 0 },
	{ "/usr/bin/sudo rm", "rm", 1 },
	{ "sudo env FOO=1 nice rm -rf /", "rm", 4 },
	{ "sudo -u root -g wheel rm", "rm", 5 },
	{ "sudo -nu root rm", "rm", 3 },
	{ "sudo -uroot rm", "rm", 2 },
	{ "sudo --user=root rm", "rm", 2 },
	{ "sudo --user root -- rm", "rm", 4 },
	{ "sudo -h host -p pw -C 3 -r r -t t -U u rm", "rm", 13 },
	{ "sudo FOO=1 rm", "rm", 2 },
	{ "sudo -l rm", NULL, 3 },
	{ "sudo", NULL, 1 },
	{ "doas -u root rm", "rm", 3 },
	{ "env -i -u X -C /tmp A=1 rm", "rm", 7 },
	{ "env - A=1 rm", "rm", 3 },
	{ "env --unset X --chdir=/ rm", "rm", 4 },
	{ "env -- A=1 rm", "rm", 3 },
	{ "env", NULL, 1 },
	{ "nice -n 10 rm", "rm", 3 },
	{ "nice -10 rm", "rm", 2 },
	{ "nice -n10 --adjustment=5 rm", "rm", 3 },
	{ "ionice -c 3 -n 7 rm", "rm", 5 },
	{ "ionice -c3 rm", "rm", 2 },
	{ "ionice -p 12", NULL, 3 },
	{ "nohup rm", "rm", 1 },
	{ "time -p rm", "rm", 2 },
	{ "command rm", "rm", 1 },
	{ "command -p rm", "rm", 2 },
	{ "command -v rm", NULL, 3 },
	{ "exec -a name rm", "rm", 3 },
	{ "exec", NULL, 1 },
	{ "builtin echo", "echo", 1 },
	{ "timeout 5 rm", "rm", 2 },
	{ "timeout -s KILL -k 2 5 rm", "rm", 6 },
	{ "timeout --signal=KILL --preserve-status 5s rm", "rm", 4 },
	{ "timeout 5", NULL, 2 },
	{ "stdbuf -oL -e0 rm", "rm", 3 },
	{ "stdbuf -o L rm", "rm", 3 },
	{ "chrt 5 rm", "rm", 2 },
	{ "chrt -f 5 rm", "rm", 3 },
	{ "chrt -p 5 123", NULL, 4 },
	{ "taskset 0x3 rm", "rm", 2 },
	{ "taskset -c 0-3 rm", "rm", 3 },
	{ "taskset -p 1 2", NULL, 4 },
	{ "setsid -f rm", "rm", 2 },
	{ "xargs -0 -I {} rm {}", "rm", 4 },
	{ "xargs -I{} -n 1 -P 4 rm", "rm", 6 },
	{ "xargs -r -t --max-args=2 rm", "rm", 4 },
	{ "xargs -i -e rm", "rm", 3 },
	{ "xargs", NULL, 1 },
	{ "sudo timeout 5 env A=1 nohup nice -n 5 xargs -0 rm -rf", "rm", 11 },
	{ "nice sudo -u x stdbuf -oL time nohup ls", "ls", 8 },
	{ "sudo -u", NULL, 2 },
};

static void test_program(void **state)
{
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(programs); i++) {
		const prog_row *r = &programs[i];
		tgi_cmdline cl;
		char err[256];
		size_t p;
		assert_int_equal(tgi_shell_split(r->line, strlen(r->line), &cl, err, sizeof err), 0);
		assert_int_equal(cl.n, 1);
		p = tgi_shell_program(&cl.v[0]);
		if (p != r->index || (r->want ? p >= cl.v[0].argc || strcmp(cl.v[0].argv[p], r->want)
		                              : p != cl.v[0].argc)) {
			print_error("line: %s\nexpected %s at %zu, got %zu\n", r->line,
			            r->want ? r->want : "(nothing)", r->index, p);
			bad++;
		}
		tgi_cmdline_free(&cl);
	}
	assert_int_equal(bad, 0);
	/* a command with no words */
	{
		tgi_cmd empty = { 0 };
		char *none[] = { NULL };
		empty.argv = none;
		assert_int_equal(tgi_shell_program(&empty), 0);
		assert_int_equal(tgi_shell_program(NULL), 0);
	}
}

/* The output owns its strings: a caller may edit and free them. */
static void test_ownership(void **state)
{
	tgi_cmdline cl;
	char err[256];
	const char *line = "A=1 ls -l >f && sudo bash -c 'x=$(id) wc' 2>&1";
	assert_int_equal(tgi_shell_split(line, strlen(line), &cl, err, sizeof err), 0);
	assert_int_equal(cl.n, 3);
	free(cl.v[0].argv[1]);
	cl.v[0].argv[1] = NULL;
	cl.v[0].argc = 1;
	tgi_cmdline_free(&cl);
	assert_null(cl.v);
	assert_int_equal(cl.n, 0);
	tgi_cmdline_free(&cl);
	tgi_cmdline_free(NULL);
}


/* ---- what the split keeps for an evaluation (expand.c) ---- */

/* Here-doc bodies, function definitions, the source, where pipes read. */
static void test_kept(void **state)
{
	tgi_cmdline cl;
	char err[256];
	const char *line = "f() { rm -rf \"$1\"; }; function g { ls; }\n"
	                   "cat <<'EOF' | sh\nrm -rf /\nEOF\n"
	                   "{ echo a; echo b; } | xargs touch; echo c | while read d; do :; done";

	assert_int_equal(tgi_shell_split(line, strlen(line), &cl, err, sizeof err), 0);
	assert_int_equal(cl.srclen, strlen(line));
	assert_memory_equal(cl.src, line, cl.srclen);
	assert_null(cl.srcv);
	assert_int_equal(cl.nfuncs, 2);
	assert_string_equal(cl.funcs[0].name, "f");
	assert_string_equal(cl.funcs[0].body, "{ rm -rf \"$1\"; }");
	assert_string_equal(cl.funcs[1].name, "g");
	assert_string_equal(cl.funcs[1].body, "{ ls; }");
	size_t cat = 0, xa = 0, rd = 0;
	for (size_t i = 0; i < cl.n; i++) {
		if (cl.v[i].argc && !strcmp(cl.v[i].argv[0], "cat"))
			cat = i;
		if (cl.v[i].argc && !strcmp(cl.v[i].argv[0], "xargs"))
			xa = i;
		if (cl.v[i].argc && !strcmp(cl.v[i].argv[0], "read"))
			rd = i;
	}
	assert_non_null(cl.v[cat].redirs[0].body);
	assert_string_equal(cl.v[cat].redirs[0].body, "rm -rf /\n");
	assert_true(cl.v[cat + 1].flags & TGI_CMD_PIPED_IN);
	assert_int_equal(cl.v[cat + 1].from, cat);
	/* a compound member: xargs reads what both echos print */
	assert_true(cl.v[xa].flags & TGI_CMD_PIPED_IN);
	assert_string_equal(cl.v[cl.v[xa].from].argv[1], "a");
	/* the loop's first command reads the pipe, inside the loop */
	assert_true(cl.v[rd].flags & TGI_CMD_PIPED_IN);
	assert_int_equal(cl.v[rd].nest, 1);
	assert_string_equal(cl.v[cl.v[rd].from].argv[1], "c");
	tgi_cmdline_free(&cl);

	const char *const argv[] = { "bash", "-lc", "ls" };
	assert_int_equal(tgi_shell_from_argv(argv, 3, &cl, err, sizeof err), 0);
	assert_int_equal(cl.srcc, 3);
	assert_string_equal(cl.srcv[2], "ls");
	tgi_cmdline_free(&cl);
}

/* A toy evaluation: d is "/" and x is "a b"; anything else is kept.  It
 * records whether the last use of d was dominated. */
static int last_dominated = -1;

static int toy_lookup(void *ctx, const char *name, int dominated, int raw, const char *const **f,
                      size_t *n)
{
	static const char *const d[] = { "/" }, *const x[] = { "a b" }, *const arr[] = { "1", "2 3" };
	if (!strcmp(name, "d")) {
		last_dominated = dominated;
		*f = d;
		*n = 1;
		return 1;
	}
	if (!strcmp(name, "x")) {
		*f = x;
		*n = 1;
		return 1;
	}
	if (!strcmp(name, "arr")) {
		*f = arr;
		*n = 2;
		return 1;
	}
	return 0;
}

static int toy_subst(void *ctx, const char *text, size_t len, char **out)
{
	if (len == 6 && !memcmp(text, "echo /", 6)) {
		*out = tgi_strdup("/\n");
		return 1;
	}
	return 0;
}

static char *env_render(const char *line)
{
	tgi_shell_env env = { NULL, toy_lookup, toy_subst, NULL };
	tgi_cmdline cl;
	char err[256], *s;
	if (tgi_shell_split_env(line, strlen(line), &env, NULL, 0, &cl, err, sizeof err) < 0)
		return tgi_strdup(err);
	s = render(&cl);
	tgi_cmdline_free(&cl);
	return s;
}

static void test_evaluation(void **state)
{
	static const row rows[] = {
		{ "rm -rf $d", "rm -rf /" },
		{ "rm -rf \"$d\"/usr ${d}", "rm -rf //usr /" },
		{ "echo $x \"$x\"", "echo a b 'a b'" },
		{ "echo \"${arr[@]}\" ${#d}", "echo 1 '2 3' 1" },
		{ "echo $unknown ${also}", "echo $unknown ${also}" },
		{ "rm -rf $(echo /) \"`echo /`\"", "echo / ; echo / ; rm -rf / /" },
		{ "rm -rf $(id)", "id ; rm -rf $(id) {opaque}" },
		{ "v=$d; $x", "v=/ ; a b" },
		{ "rm -rf ${d%/}x ${nope:-/y}", "rm -rf x /y {opaque}" },
		{ "bash -c 'rm -rf \"$1\" $0' zero /", "rm -rf / zero {d1}" },
		{ "sh -c 'echo $1'", "echo {d1}" },
	};
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(rows); i++) {
		char *got = env_render(rows[i].line);
		if (strcmp(got, rows[i].want)) {
			print_error("line:     %s\nexpected: %s\ngot:      %s\n", rows[i].line, rows[i].want, got);
			bad++;
		}
		free(got);
	}
	assert_int_equal(bad, 0);

	/* dominance: an assignment first in its list dominates what follows;
	 * one after && only its chain; one in a loop body only the body */
	static const struct { const char *line; int dominated; } dom[] = {
		{ "d=1; echo $d", 1 },
		{ "echo $d; d=1", 0 },
		{ "true && d=1 && echo $d", 1 },
		{ "true && d=1; echo $d", 0 },
		{ "false || d=1; echo $d", 0 },
		{ "d=1 | cat; echo $d", 0 },
		{ "d=1 & echo $d", 0 },
		{ "(d=1); echo $d", 0 },
		{ "(d=1; echo $d)", 1 },
		{ "if true; then d=1; fi; echo $d", 0 },
		{ "if true; then d=1; echo $d; fi", 1 },
		{ "for d in a b; do echo $d; done", 1 },
		{ "for i in a; do echo $d; d=1; done", 0 },
		{ "echo / | read d; echo $d", 0 },
		{ "echo / | while read d; do echo $d; done", 1 },
		{ "export d=1; echo $d", 1 },
		{ "d=1; sh -c 'echo $d'", 0 },
		{ "d=1 sh -c 'echo $d'", 1 },
		{ "d=1; echo $(echo $d)", 1 },
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(dom); i++) {
		last_dominated = -1;
		free(env_render(dom[i].line));
		if (last_dominated != dom[i].dominated) {
			print_error("`%s`: the use of d dominated %d, want %d\n", dom[i].line, last_dominated,
			            dom[i].dominated);
			bad++;
		}
	}
	assert_int_equal(bad, 0);

	/* bound parameters (a function body called with arguments) */
	tgi_shell_env env = { NULL, toy_lookup, toy_subst, NULL };
	const char *params[] = { "/", "x y" };
	tgi_cmdline cl;
	char err[256];
	const char *line = "rm -rf \"$1\" $2 \"$@\" $#";
	assert_int_equal(tgi_shell_split_env(line, strlen(line), &env, params, 2, &cl, err, sizeof err), 0);
	char *got = render(&cl);
	assert_string_equal(got, "rm -rf / x y / 'x y' 2");
	free(got);
	tgi_cmdline_free(&cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_redirections),
		cmocka_unit_test(test_expansions),
		cmocka_unit_test(test_unicode),
		cmocka_unit_test(test_opaque),
		cmocka_unit_test(test_opaque_why),
		cmocka_unit_test(test_unwrap),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_subshells),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_basename),
		cmocka_unit_test(test_program),
		cmocka_unit_test(test_ownership),
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_evaluation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
