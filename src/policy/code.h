/*
 * code.h — what inline interpreter code does, as far as its text says
 * (src/policy/code.c), for the floor.
 *
 * `python3 -c CODE`, `perl -e CODE`, `ruby -e`, `node -e`/`--eval`/`-p`,
 * `php -r`, `awk PROGRAM`, `lua -e`, and code fed to an interpreter by a
 * here-doc, a here-string or a literal pipe: the code is read for the
 * floor's targets.  A scan finds
 *   - effects the floor judges with its own rules: command lines given to
 *     a shell (os.system, system, exec, backticks, child_process.exec),
 *     programs run with their words (subprocess.run([...]), spawn), paths
 *     deleted recursively (shutil.rmtree, rmtree, FileUtils.rm_rf,
 *     fs.rmSync with recursive), paths opened for writing, files a download
 *     may have written;
 *   - floors of its own: a fork in a loop, downloaded code run (urlopen
 *     and exec, requests and eval, …), rebooting (reboot(), the reboot
 *     syscall and its magic numbers), /proc/sysrq-trigger;
 *   - what it cannot see into: a dangerous call whose argument is computed
 *     at run time, code run by exec/eval that is not a literal, a
 *     dangerous name called through reflection or hidden from the reader.
 *
 * A call's arguments are evaluated as far as literals go: strings (their
 * escapes, concatenation, f-strings and interpolation of variables the
 * code assigns literally), lists, path helpers (os.path.join, path.join,
 * File.join, Path), the home and working directories (expanduser('~'),
 * os.homedir(), os.getcwd()), base64 and hex literals decoded.  Anything
 * else is unknown, never guessed.
 *
 * Owns: the lexers (their strings, comments, regexes), the primitive
 * tables and the report.  Must not: judge paths or commands (floor.c),
 * run anything.
 */
#ifndef TGI_CODE_H
#define TGI_CODE_H

#include <stddef.h>
#include "policy/shell.h"
#include "util/util.h"

typedef enum {
	TGI_LANG_NONE,
	TGI_LANG_PYTHON,
	TGI_LANG_PERL,
	TGI_LANG_RUBY,
	TGI_LANG_JS,
	TGI_LANG_PHP,
	TGI_LANG_AWK,
	TGI_LANG_LUA,
} tgi_lang;

typedef enum {
	TGI_CODE_SHELL,    /* a command line run by a shell: words[0] */
	TGI_CODE_ARGV,     /* a program and its words */
	TGI_CODE_RMTREE,   /* a path deleted with everything under it: words[0] */
	TGI_CODE_WRITE,    /* a path opened for writing: words[0] */
	TGI_CODE_DOWNLOAD, /* a file a download may have written: words[0] */
	TGI_CODE_UNLINK,   /* a path removed (not its tree): words[0] */
	TGI_CODE_WALKDEL,  /* a tree walked by code that removes what it finds: words[0] */
} tgi_code_kind;

typedef struct tgi_code_effect {
	tgi_code_kind kind;
	tgi_strv      words;  /* owned */
} tgi_code_effect;

typedef struct tgi_code_report {
	tgi_code_effect *v;       /* owned */
	size_t           n;
	const char      *floor;   /* a static reason the code is floored by itself, or NULL */
	const char      *blind;   /* a static phrase for what it cannot see into, or NULL */
	int              fetches; /* the code downloads something */
	int              dl_unknown; /* … and may write it to a file the scan cannot name */
	int              stdin_eval; /* it runs code it reads from stdin */
} tgi_code_report;

/* The language of an interpreter program (a basename: python3.12, nodejs). */
tgi_lang tgi_code_lang(const char *prog);

/*
 * The code a command gives its interpreter (argv[prog] is one):
 * the inline code (the -c/-e/-r/--eval values, several -e joined with
 * newlines; awk's program operand) pushed to codes; *from_stdin set when
 * it reads its program from stdin (no inline code and no script file, or
 * "-").  Returns the language.
 */
tgi_lang tgi_code_of(const tgi_cmd *cmd, size_t prog, tgi_strv *codes, int *from_stdin);

/* Scan code (len bytes) of a language; depth: code inside code (exec of a
 * literal) stops at 4.  The report is filled (free it). */
void tgi_code_scan(tgi_lang lang, const char *code, size_t len, tgi_code_report *out);
void tgi_code_report_free(tgi_code_report *r);

#endif
