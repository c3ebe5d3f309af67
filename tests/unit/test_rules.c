/*
 * test_rules.c — permission rule grammar, matching and rulesets (DESIGN §3).
 *
 * One table of (rule, call, expected match) covers every specifier form:
 * the bare tool and `*`, tool globs for bridged MCP tools, path globs as
 * written and as resolved, shell command prefixes over split command lines, and
 * key=glob pairs over strings, numbers, booleans, null, pointers, absent
 * keys and model text that looks like rule syntax, and Claude Code's names
 * for toolgate's tools.  A second table holds rules that must not parse
 * and the sentence each gets.  Then shell prefixes as Claude Code reads
 * them, where anchored path patterns start, and what a rule tells of
 * itself.
 *
 * Owns: its tables.  Must not: touch the filesystem or the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "policy/shell.h"
#include "util/util.h"

typedef struct rule_case {
	const char *rule;
	const char *tool;
	const char *args;        /* JSON text, or NULL for no args */
	const char *paths[4];    /* as written; NULL-terminated */
	const char *resolved[4]; /* same index; NULL: not resolved */
	int         has_paths;
	int         match;
} rule_case;

#define NOPATHS { NULL }, { NULL }, 0

static const rule_case cases[] = {
	/* the bare tool, `Tool(*)` and tool globs */
	{ "read_file", "read_file", "{\"path\":\"a\"}", { "a" }, { "a" }, 1, 1 },
	{ "read_file", "write_file", "{}", { "a" }, { "a" }, 1, 0 },
	{ "read_file", "read_files", "{}", NOPATHS, 0 },
	{ "Read_file", "read_file", "{}", { "a" }, { "a" }, 1, 0 },
	{ "read_file(*)", "read_file", "{}", { "." }, { "." }, 1, 1 },
	{ "read_file(*)", "read_file", "{}", { NULL }, { NULL }, 1, 1 },
	{ "deploy_service(*)", "deploy_service", "{\"env\":\"prod\"}", NOPATHS, 1 },
	{ "*", "deploy_service", "{}", NOPATHS, 1 },
	{ "*", "fs__read_file", "{}", NOPATHS, 1 },
	{ "fs__*", "fs__read_file", "{}", NOPATHS, 1 },
	{ "fs__*", "gh__list_issues", "{}", NOPATHS, 0 },
	{ "fs__*", "fs_read_file", "{}", NOPATHS, 0 },
	{ "fs__read_file", "fs__read_file", "{}", NOPATHS, 1 },
	{ "deploy_*", "deploy_service", "{}", NOPATHS, 1 },
	{ "deploy-?", "deploy-a", "{}", NOPATHS, 1 },

	/* file tools: path globs, as written */
	{ "read_file(./.env)", "read_file", "{}", { ".env" }, { ".env" }, 1, 1 },
	{ "read_file(./.env)", "read_file", "{}", { "config/.env" }, { "config/.env" }, 1, 0 },
	{ "read_file(./.env)", "write_file", "{}", { ".env" }, { ".env" }, 1, 0 },
	{ "read_file(.env)", "read_file", "{}", { "config/.env" }, { "config/.env" }, 1, 1 },
	{ "read_file( ./.env )", "read_file", "{}", { ".env" }, { ".env" }, 1, 1 },
	{ "write_file(./src/**)", "write_file", "{}", { "src/a/b.c" }, { "src/a/b.c" }, 1, 1 },
	{ "write_file(./src/**)", "write_file", "{}", { "lib/a.c" }, { "lib/a.c" }, 1, 0 },
	{ "write_file(src/**)", "write_file", "{}", { "lib/src/a.c" }, { "lib/src/a.c" }, 1, 0 },
	{ "list_dir(src/**)", "list_dir", "{}", { "src" }, { "src" }, 1, 1 },
	{ "list_dir(./)", "list_dir", "{}", { "." }, { "." }, 1, 1 },
	{ "list_dir(*.md)", "list_dir", "{}", { "." }, { "." }, 1, 0 },
	{ "read_file(**/*.pem)", "read_file", "{}", { "a/b/k.pem" }, { "a/b/k.pem" }, 1, 1 },
	{ "read_file(/secrets/**)", "read_file", "{}", { "secrets/x" }, { "secrets/x" }, 1, 1 },
	{ "read_file(/secrets/**)", "read_file", "{}", { "a/secrets/x" }, { "a/secrets/x" }, 1, 0 },
	{ "read_file(docs/)", "read_file", "{}", { "docs/x.md" }, { "docs/x.md" }, 1, 1 },
	{ "search_files(./vendor)", "search_files", "{}", { "vendor/lib" }, { "vendor/lib" }, 1, 1 },
	{ "read_file(my\\(1\\).txt)", "read_file", "{}", { "my(1).txt" }, { "my(1).txt" }, 1, 1 },
	{ "read_file(a=b)", "read_file", "{}", { "a=b" }, { "a=b" }, 1, 1 },
	/* as resolved: a link to .env is still .env */
	{ "read_file(./.env)", "read_file", "{}", { "src/link" }, { ".env" }, 1, 1 },
	{ "read_file(./.env)", "read_file", "{}", { "src/link" }, { NULL }, 1, 0 },
	{ "read_file(./.env)", "read_file", "{}", { ".env" }, { NULL }, 1, 1 },
	{ "read_file(./.env)", "read_file", "{}", { ".env" }, { "real.env" }, 1, 1 },
	/* any touched path counts */
	{ "apply_patch(src/**)", "apply_patch", "{}", { "docs/a.md", "src/b.c" },
	  { "docs/a.md", "src/b.c" }, 1, 1 },
	{ "apply_patch(src/**)", "apply_patch", "{}", { "docs/a.md", "lib/b.c" },
	  { "docs/a.md", "lib/b.c" }, 1, 0 },
	{ "apply_patch(./.env)", "apply_patch", "{}", { "a", "b" }, { "a", ".env" }, 1, 1 },
	/* absolute patterns are kept but match nothing yet */
	{ "read_file(~/.ssh/**)", "read_file", "{}", { ".ssh/id" }, { ".ssh/id" }, 1, 0 },
	{ "read_file(//etc/passwd)", "read_file", "{}", { "etc/passwd" }, { "etc/passwd" }, 1, 0 },
	/* other tools with paths: a specifier without '=' is a path glob */
	{ "*(./.env)", "my_tool", "{}", { ".env" }, { ".env" }, 1, 1 },
	{ "*(./.env)", "my_tool", "{}", { "x" }, { ".env" }, 1, 1 },
	{ "*(./.env)", "deploy_service", "{\"env\":\".env\"}", NOPATHS, 0 },
	{ "*(./.env)", "my_tool", "{}", { ".env" }, { ".env" }, 0, 0 }, /* no paths contract */
	{ "fs__*(*.pem)", "fs__read", "{}", { "k.pem" }, { "k.pem" }, 1, 1 },

	/* shell: prefixes match the call's split commands (test_shell_rules);
	 * a call without them matches no prefix */
	{ "shell(git status)", "shell", "{\"command\":\"git status\"}", NOPATHS, 0 },
	{ "shell(npm run test:*)", "shell", "{\"command\":\"npm run test:unit\"}", NOPATHS, 0 },
	{ "shell", "shell", "{\"command\":\"ls\"}", NOPATHS, 1 },
	{ "shell(*)", "shell", "{\"command\":\"rm -rf x\"}", NOPATHS, 1 },

	/* key=glob: strings */
	{ "deploy_service(env=staging)", "deploy_service", "{\"env\":\"staging\",\"version\":\"v1\"}", NOPATHS, 1 },
	{ "deploy_service(env=staging)", "deploy_service", "{\"env\":\"prod\"}", NOPATHS, 0 },
	{ "deploy_service(env=staging)", "deploy_service", "{\"env\":\"staging2\"}", NOPATHS, 0 },
	{ "deploy_service(env=staging)", "deploy_service", "{\"version\":\"v1\"}", NOPATHS, 0 },
	{ "deploy_service(env=staging)", "deploy_service", NULL, NOPATHS, 0 },
	{ "deploy_service(env=staging)", "deploy_service", "[\"staging\"]", NOPATHS, 0 },
	{ "deploy_service(env=staging)", "other_tool", "{\"env\":\"staging\"}", NOPATHS, 0 },
	{ "send_email(to=*@example.com)", "send_email", "{\"to\":\"a@example.com\"}", NOPATHS, 1 },
	{ "send_email(to=*@example.com)", "send_email", "{\"to\":\"a@example.com.evil.org\"}", NOPATHS, 0 },
	{ "x( env = staging , v = v1 )", "x", "{\"env\":\"staging\",\"v\":\"v1\"}", NOPATHS, 1 },
	{ "x(env=staging,v=v1)", "x", "{\"env\":\"staging\",\"v\":\"v2\"}", NOPATHS, 0 },
	{ "x(msg=hello world)", "x", "{\"msg\":\"hello world\"}", NOPATHS, 1 },
	{ "x(url=https://a.example/?q=1)", "x", "{\"url\":\"https://a.example/?q=1\"}", NOPATHS, 1 },
	{ "x(a=1*,a=*2)", "x", "{\"a\":12}", NOPATHS, 1 },
	{ "x(a=1*,a=*2)", "x", "{\"a\":13}", NOPATHS, 0 },
	{ "my_tool(dir=src)", "my_tool", "{\"dir\":\"src\"}", { "src" }, { "src" }, 1, 1 },
	/* quoted values */
	{ "x(msg=\"a, b\")", "x", "{\"msg\":\"a, b\"}", NOPATHS, 1 },
	{ "x(msg=\"a, b\")", "x", "{\"msg\":\"a\"}", NOPATHS, 0 },
	{ "x(msg=\"say \\\"hi\\\" (now)\")", "x", "{\"msg\":\"say \\\"hi\\\" (now)\"}", NOPATHS, 1 },
	{ "x(p=\"a\\\\b\")", "x", "{\"p\":\"a\\\\b\"}", NOPATHS, 1 },
	{ "x(a=\" padded \")", "x", "{\"a\":\" padded \"}", NOPATHS, 1 },
	{ "x(a=\" padded \")", "x", "{\"a\":\"padded\"}", NOPATHS, 0 },
	{ "x(a=\"\")", "x", "{\"a\":\"\"}", NOPATHS, 1 },
	{ "x(a=\"\")", "x", "{\"a\":\"x\"}", NOPATHS, 0 },
	{ "x(a=\"v*\")", "x", "{\"a\":\"v1\"}", NOPATHS, 1 },
	/* numbers, booleans, null: their JSON text */
	{ "x(a=1,b=true)", "x", "{\"a\":1,\"b\":true}", NOPATHS, 1 },
	{ "x(a=1,b=true)", "x", "{\"a\":1,\"b\":false}", NOPATHS, 0 },
	{ "x(a=1,b=true)", "x", "{\"a\":\"1\",\"b\":\"true\"}", NOPATHS, 1 },
	{ "x(a=1)", "x", "{\"a\":1.0}", NOPATHS, 1 },
	{ "x(a=1)", "x", "{\"a\":1.5}", NOPATHS, 0 },
	{ "x(a=1)", "x", "{\"a\":10}", NOPATHS, 0 },
	{ "x(a=1.5)", "x", "{\"a\":1.5}", NOPATHS, 1 },
	{ "x(a=0.1)", "x", "{\"a\":0.1}", NOPATHS, 1 },
	{ "x(a=0)", "x", "{\"a\":-0.0}", NOPATHS, 1 },
	{ "x(n=-3)", "x", "{\"n\":-3}", NOPATHS, 1 },
	{ "x(a=1*)", "x", "{\"a\":12}", NOPATHS, 1 },
	{ "x(big=12345678901234)", "x", "{\"big\":12345678901234}", NOPATHS, 1 },
	{ "x(b=false)", "x", "{\"b\":false}", NOPATHS, 1 },
	{ "x(a=null)", "x", "{\"a\":null}", NOPATHS, 1 },
	{ "x(a=null)", "x", "{}", NOPATHS, 0 },
	{ "x(a=*)", "x", "{\"a\":null}", NOPATHS, 1 },
	/* objects and arrays: only `*` */
	{ "x(a=*)", "x", "{\"a\":{\"k\":1}}", NOPATHS, 1 },
	{ "x(a=*)", "x", "{\"a\":[1]}", NOPATHS, 1 },
	{ "x(a=*)", "x", "{}", NOPATHS, 0 },
	{ "x(a=*k*)", "x", "{\"a\":{\"k\":1}}", NOPATHS, 0 },
	{ "x(a=[1])", "x", "{\"a\":[1]}", NOPATHS, 0 },
	/* JSON pointers */
	{ "x(/nested/key=v*)", "x", "{\"nested\":{\"key\":\"v2\"}}", NOPATHS, 1 },
	{ "x(/nested/key=v*)", "x", "{\"nested\":{}}", NOPATHS, 0 },
	{ "x(/nested/key=v*)", "x", "{\"nested\":\"key\"}", NOPATHS, 0 },
	{ "x(/nested/key=v*)", "x", "{\"key\":\"v2\"}", NOPATHS, 0 },
	{ "x(/items/0/name=a)", "x", "{\"items\":[{\"name\":\"a\"}]}", NOPATHS, 1 },
	{ "x(/items/1/name=a)", "x", "{\"items\":[{\"name\":\"a\"}]}", NOPATHS, 0 },
	{ "x(/a~1b=1)", "x", "{\"a/b\":1}", NOPATHS, 1 },
	{ "x(/a~0b=1)", "x", "{\"a~b\":1}", NOPATHS, 1 },
	{ "x(/env=prod)", "x", "{\"env\":\"prod\"}", NOPATHS, 1 },
	/* NUL bytes in a value are part of it */
	{ "x(env=prod)", "x", "{\"env\":\"prod\\u0000x\"}", NOPATHS, 0 },
	{ "x(env=prod*)", "x", "{\"env\":\"prod\\u0000x\"}", NOPATHS, 1 },
	/* Claude Code's names stand for toolgate's tools that do that work */
	{ "Read(./.env)", "read_file", "{}", { ".env" }, { ".env" }, 1, 1 },
	{ "Read(./.env)", "list_dir", "{}", { ".env" }, { ".env" }, 1, 1 },
	{ "Read(./.env)", "search_files", "{}", { ".env" }, { ".env" }, 1, 1 },
	{ "Read(./.env)", "write_file", "{}", { ".env" }, { ".env" }, 1, 0 },
	{ "Read(./.env)", "read_file", "{}", { "a/.env" }, { "a/.env" }, 1, 0 },
	{ "Read", "search_files", "{}", NOPATHS, 1 },
	{ "Read(*)", "list_dir", "{}", { "." }, { "." }, 1, 1 },
	{ "Edit(./src/**)", "apply_patch", "{}", { "docs/a", "src/b.c" }, { "docs/a", "src/b.c" }, 1, 1 },
	{ "Edit(./src/**)", "write_file", "{}", { "src/b.c" }, { "src/b.c" }, 1, 1 },
	{ "Edit(./src/**)", "read_file", "{}", { "src/b.c" }, { "src/b.c" }, 1, 0 },
	{ "MultiEdit", "apply_patch", "{}", NOPATHS, 1 },
	{ "Write(./out/**)", "write_file", "{}", { "out/x" }, { "out/x" }, 1, 1 },
	{ "Write(./out/**)", "apply_patch", "{}", { "out/x" }, { "out/x" }, 1, 0 }, /* decide.c borrows */
	{ "Glob", "list_dir", "{}", NOPATHS, 1 },
	{ "Glob", "search_files", "{}", NOPATHS, 1 },
	{ "Glob", "read_file", "{}", NOPATHS, 0 },
	{ "Grep", "search_files", "{}", NOPATHS, 1 },
	{ "Grep", "list_dir", "{}", NOPATHS, 0 },
	{ "LS", "list_dir", "{}", NOPATHS, 1 },
	{ "Bash", "shell", "{\"command\":\"ls\"}", NOPATHS, 1 },
	{ "Bash", "bash", "{}", NOPATHS, 0 },
	{ "read", "read_file", "{}", NOPATHS, 0 },                 /* names are exact */
	{ "mcp__fs__read_file", "fs__read_file", "{}", NOPATHS, 1 },
	{ "mcp__fs__read_file", "mcp__fs__read_file", "{}", NOPATHS, 0 },
	{ "mcp__fs", "fs__write_file", "{}", NOPATHS, 1 },
	{ "mcp__fs", "gh__write_file", "{}", NOPATHS, 0 },
	{ "mcp__fs__*", "fs__write_file", "{}", NOPATHS, 1 },
	{ "mcp__fs__get_*", "fs__get_issue", "{}", NOPATHS, 1 },
	{ "mcp__fs__get_*", "fs__list_issues", "{}", NOPATHS, 0 },
	{ "mcp__my-srv__t", "my-srv__t", "{}", NOPATHS, 1 },
	{ "mcp__fs__w(path=a*)", "fs__w", "{\"path\":\"ab\"}", NOPATHS, 1 },
	/* a Claude Code tool toolgate lacks: kept, matches nothing */
	{ "WebFetch(domain:example.com)", "WebFetch", "{}", NOPATHS, 0 },
	{ "WebFetch", "WebFetch", "{}", NOPATHS, 0 },
	{ "WebSearch", "shell", "{}", NOPATHS, 0 },
	{ "NotebookEdit(./a.ipynb)", "write_file", "{}", { "a.ipynb" }, { "a.ipynb" }, 1, 0 },

	/* model text is data: rule syntax inside a value changes nothing */
	{ "x(a=safe)", "x", "{\"a\":\"safe) , b=(x\"}", NOPATHS, 0 },
	{ "x(a=safe,b=1)", "x", "{\"a\":\"safe,b=1\"}", NOPATHS, 0 },
	{ "x(a=*)", "x", "{\"a\":\"\\\")(,=*\"}", NOPATHS, 1 },
};

static json_t *load(const char *text)
{
	if (!text)
		return NULL;
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (!v)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return v;
}

static void test_match_table(void **state)
{
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(cases); i++) {
		const rule_case *c = &cases[i];
		char err[256] = "";
		tgi_rule *r = tgi_rule_parse(c->rule, err, sizeof err);
		if (!r) {
			fprintf(stderr, "rule %s did not parse: %s\n", c->rule, err);
			bad++;
			continue;
		}
		size_t n = 0;
		while (n < 4 && c->paths[n])
			n++;
		json_t *args = load(c->args);
		tgi_match_input in = {
			.tool = c->tool,
			.args = args,
			.paths = c->paths,
			.resolved = c->resolved,
			.npaths = n,
			.has_paths = c->has_paths,
		};
		int got = tgi_rule_matches(r, &in);
		if (got != c->match) {
			fprintf(stderr, "rule %s on %s %s: got %d, want %d\n", c->rule, c->tool,
			        c->args ? c->args : "(no args)", got, c->match);
			bad++;
		}
		json_decref(args);
		tgi_rule_free(r);
	}
	assert_int_equal(bad, 0);
}

typedef struct error_case {
	const char *rule;
	const char *says;     /* a phrase of the sentence */
	int         position; /* 1-based, or 0 not to check */
} error_case;

static const error_case errors[] = {
	{ "", "a rule is empty", 0 },
	{ "   \t ", "a rule is empty", 0 },
	{ "read_file()", "empty specifier", 11 },
	{ "read_file( )", "empty specifier", 11 },
	{ "deploy_service()", "empty specifier", 16 },
	{ "shell()", "empty specifier", 7 },
	{ "x(env=)", "empty glob after '='", 6 },
	{ "x(env=  ,b=1)", "empty glob after '='", 6 },
	{ "x(=v)", "empty key before '='", 3 },
	{ "x(a=1,)", "empty key=glob pair", 7 },
	{ "x(,a=1)", "empty key=glob pair", 3 },
	{ "x(a=1,b)", "expected '=' after key \"b\"", 8 },
	{ "x(a=1", "missing ')'", 6 },
	{ "x(a=\"1\"", "missing ')'", 0 },
	{ "read_file(./.env", "missing ')'", 17 },
	{ "read_file(abc\\)", "missing ')'", 0 },
	{ "x(a=1))", "unexpected text after ')'", 7 },
	{ "x(a=1)junk", "unexpected text after ')'", 7 },
	{ "read_file(a)(b)", "unexpected text after ')'", 13 },
	{ "x(a=(1))", "unexpected '(' in a value", 5 },
	{ "x(a=f(x))", "unexpected '(' in a value", 6 },
	{ "x(a(b)=1)", "unexpected '(' in a key", 4 },
	{ "read_file(a(b))", "unexpected '(' in a path", 12 },
	{ "read_file((((((((", "unexpected '('", 11 },
	{ "x(a=\"unterminated)", "unterminated quoted value", 5 },
	{ "x(a=\"v\" junk)", "unexpected 'j' after a quoted value", 9 },
	{ "x(a=\"\\n\")", "unknown escape 'n'", 6 },
	{ "x(a=b\"c\")", "unexpected '\"' in a value", 6 },
	{ "x(k\"=1)", "unexpected '\"' in a key", 4 },
	{ "x(/a~2=1)", "JSON pointer", 5 },
	{ "x(/a~=1)", "JSON pointer", 5 },
	{ "read_file([abc)", "unclosed '['", 11 },
	{ "read_file(x[[:nope:]])", "unknown character class", 13 },
	{ "*([a-)", "unclosed '['", 3 },
	{ "read file", "unexpected a space in the tool name", 5 },
	{ "read_file.x", "unexpected '.' in the tool name", 10 },
	{ "(x)", "expected a tool name, found '('", 1 },
	{ "r\xc3\xa9" "ad", "unexpected byte 0xc3 in the tool name", 2 },
	{ "x\ty", "control character", 2 },
	{ "x(a=\x1b)", "control character", 5 },
	{ "shell(git status", "missing ')'", 0 },
	{ "shell(ls) x", "expected ')' at the end of a shell rule", 0 },
	{ "Bash(ls | wc)", "one command", 0 },
	{ "Bash(git push", "missing ')'", 0 },
	{ "Read(./.env", "missing ')'", 12 },
	{ "Read(a(b))", "unexpected '('", 7 },
	{ "WebFetch(domain:x", "missing ')'", 0 },
	{ "WebFetch(domain:x) y", "unexpected text after ')'", 0 },
	{ "mcp__*__x", "a glob in the server part", 6 },
	{ "mcp____x", "expected a server name", 6 },
};

static void test_parse_errors(void **state)
{
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(errors); i++) {
		const error_case *c = &errors[i];
		char err[256] = "", pos[32];
		tgi_rule *r = tgi_rule_parse(c->rule, err, sizeof err);
		snprintf(pos, sizeof pos, "at position %d", c->position);
		if (r || !strstr(err, c->says) || (c->position && !strstr(err, pos)) ||
		    (c->rule[strspn(c->rule, " \t")] && strncmp(err, "rule \"", 6))) {
			fprintf(stderr, "rule \"%s\": got %s \"%s\", want \"%s\" %s\n", c->rule,
			        r ? "a rule" : "error", err, c->says, pos);
			bad++;
		}
		tgi_rule_free(r);
	}
	assert_int_equal(bad, 0);
}

static void test_error_sentence(void **state)
{
	char err[256];
	assert_null(tgi_rule_parse("deploy_service(env=)", err, sizeof err));
	assert_string_equal(err, "rule \"deploy_service(env=)\": empty glob after '=' at position 19");

	/* control characters are not echoed */
	assert_null(tgi_rule_parse("x(a=\x07)", err, sizeof err));
	assert_null(strchr(err, '\x07'));

	/* NULL text, and no room for the sentence */
	assert_null(tgi_rule_parse(NULL, err, sizeof err));
	assert_string_equal(err, "a rule is empty");
	assert_null(tgi_rule_parse("x(", NULL, 0));
	char tiny[8];
	assert_null(tgi_rule_parse("x(a=", tiny, sizeof tiny));
	assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

static void test_length_cap(void **state)
{
	char rule[4200], err[256];

	/* exactly 4096 bytes, with whitespace around it that is trimmed */
	memset(rule, ' ', 10);
	memcpy(rule + 10, "x(a=", 4);
	memset(rule + 14, 'v', 4091);
	strcpy(rule + 14 + 4091, ")   ");
	tgi_rule *r = tgi_rule_parse(rule, err, sizeof err);
	assert_non_null(r);
	assert_int_equal(strlen(tgi_rule_text(r)), 4096);
	tgi_rule_free(r);

	/* one byte more: refused, and the echo is cut */
	memset(rule + 14, 'v', 4092);
	strcpy(rule + 14 + 4092, ")");
	assert_null(tgi_rule_parse(rule, err, sizeof err));
	assert_non_null(strstr(err, "longer than 4096 bytes"));
	assert_non_null(strstr(err, "...\""));
	assert_true(strlen(err) < 200);

	/* the echo never splits a UTF-8 character */
	memcpy(rule, "x(a=", 4);
	for (int i = 0; i < 30; i++)
		memcpy(rule + 4 + 3 * i, "\xe2\x82\xac", 3); /* U+20AC, 3 bytes */
	strcpy(rule + 94, ",)");
	assert_null(tgi_rule_parse(rule, err, sizeof err));
	assert_non_null(strstr(err, "x(a=\xe2\x82\xac"));
	char *cut = strstr(err, "...\"");
	assert_non_null(cut);
	assert_true(((cut - err) - 6 - 4) % 3 == 0);
}

static void test_rule_text(void **state)
{
	tgi_rule *r = tgi_rule_parse("  read_file(./.env)\t\n", NULL, 0);
	assert_non_null(r);
	assert_string_equal(tgi_rule_text(r), "read_file(./.env)");
	tgi_rule_free(r);

	r = tgi_rule_parse("x( a = \"b, c\" )", NULL, 0);
	assert_non_null(r);
	assert_string_equal(tgi_rule_text(r), "x( a = \"b, c\" )");
	tgi_rule_free(r);

	assert_null(tgi_rule_text(NULL));
	tgi_rule_free(NULL);
}

/* Shell specifiers are the words of one command; they keep their text. */
static void test_shell_parses(void **state)
{
	static const char *const ok[] = {
		"shell(git status)", "shell(npm run test:*)", "shell(echo \"(\" )", "shell(git push *)",
		"shell(/usr/bin/git log)",
	};
	static const char *const bad[] = {
		"shell(ls | grep x)", "shell(a && b)", "shell(echo $(pwd))", "shell(FOO=1 ls)",
		"shell(ls > x)", "shell(echo 'open)", "shell(:*)",
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(ok); i++) {
		char err[256] = "";
		tgi_rule *r = tgi_rule_parse(ok[i], err, sizeof err);
		if (!r)
			fail_msg("%s: %s", ok[i], err);
		assert_string_equal(tgi_rule_text(r), ok[i]);
		tgi_rule_free(r);
	}
	for (size_t i = 0; i < TGI_ARRAY_LEN(bad); i++) {
		char err[256] = "";
		tgi_rule *r = tgi_rule_parse(bad[i], err, sizeof err);
		if (r)
			fail_msg("%s parsed", bad[i]);
		assert_true(err[0] != '\0');
	}
}

/* A prefix against command lines: deny/ask (lenient) when any simple
 * command matches, as written or with wrappers peeled; allow (strict) only
 * when every one matches as written and none is opaque. */
static void test_shell_rules(void **state)
{
	static const struct {
		const char *rule, *command;
		int lenient, strict;
	} shell_cases[] = {
		{ "shell(git status)", "git status", 1, 1 },
		{ "shell(git status)", "git status -s", 0, 0 },              /* exact without * */
		{ "shell(git status)", "/usr/bin/git status", 1, 0 },        /* basename: deny only */
		{ "shell(git status)", "./git status", 1, 0 },               /* a workspace file */
		{ "shell(/usr/bin/git status)", "/usr/bin/git status", 1, 1 },
		{ "shell(git status *)", "git status -s", 1, 1 },
		{ "shell(git status *)", "git status", 1, 1 },               /* * may be nothing */
		{ "shell(npm run test:*)", "npm run test", 1, 1 },
		{ "shell(npm run test:*)", "npm run test --watch", 1, 1 },
		{ "shell(npm run test:*)", "npm run build", 0, 0 },
		{ "shell(git log)", "git log && rm -rf build", 1, 0 },        /* one part only */
		{ "shell(rm *)", "echo a; sudo rm x", 1, 0 },                 /* peeled for deny */
		{ "shell(rm *)", "sudo rm x", 1, 0 },                         /* not for allow */
		{ "shell(echo *)", "echo $(rm -rf x)", 1, 0 },                /* opaque: denies, never allows */
		{ "shell(echo *)", "echo a | echo b", 1, 1 },
		{ "shell(git push origin *)", "git push origin main", 1, 1 },
		{ "shell(git push origin *)", "git push upstream main", 0, 0 },
		{ "shell(git * --dry-run)", "git push --dry-run", 1, 1 },    /* a glob word */
		{ "shell(ls)", "FOO=1 ls", 1, 1 },                            /* assignments apart */
		{ "shell(ls)", "ｌｓ", 1, 1 },                                  /* NFKC */
		/* Claude Code's prefixes: `:*`, ` *` and a last word ending in `*` */
		{ "shell(git push)", "git push", 1, 1 },                      /* exact */
		{ "shell(git push)", "git push origin main", 0, 0 },
		{ "shell(git push*)", "git push origin main", 1, 1 },
		{ "shell(git push*)", "git push", 1, 1 },
		{ "shell(git push*)", "git pushx", 1, 1 },                    /* no word boundary */
		{ "shell(git push*)", "git pull", 0, 0 },
		{ "shell(rm build/*)", "rm build/x", 1, 1 },                  /* a path glob: one word */
		{ "shell(rm build/*)", "rm build/x -rf ~", 0, 0 },            /* and nothing after it */
		{ "shell(git push:*)", "git push origin main", 1, 1 },
		{ "shell(git push:*)", "git pushx", 0, 0 },
		{ "shell(git push *)", "git pushx", 0, 0 },
		{ "Bash(git push:*)", "git push origin main", 1, 1 },
		{ "Bash(git push:*)", "git pull", 0, 0 },
		{ "Bash(git push:*)", "git pull && git push -f", 1, 0 },
		{ "Bash(git push *)", "sudo git push", 1, 0 },
		{ "Bash(npm run test:*)", "npm run test -- --watch", 1, 1 },
		{ "Bash(npm run test:*)", "npm run build", 0, 0 },
		{ "Bash(ls *)", "ls -la", 1, 1 },
		{ "Bash(ls *)", "ls", 1, 1 },
		{ "Bash(ls *)", "lsof -i", 0, 0 },
		{ "Bash(ls*)", "lsof -i", 1, 1 },
		{ "Bash(curl:*)", "curl -s https://example.com", 1, 1 },
		{ "Bash(npm run build)", "npm run build:dev", 0, 0 },
		/* `*` alone takes one or more words */
		{ "Bash(git * main)", "git push origin main", 1, 1 },
		{ "Bash(git * main)", "git checkout main", 1, 1 },
		{ "Bash(git * main)", "git main", 0, 0 },
		{ "Bash(git * main)", "git push origin dev", 0, 0 },
		{ "Bash(* --version)", "node --version", 1, 1 },
		{ "Bash(git * * main)", "git push origin main", 1, 1 },
		{ "Bash(git * * main)", "git push main", 0, 0 },
		{ "Bash(a * b *)", "a x y b", 1, 1 },
		{ "Bash(a * b *)", "a x y b z", 1, 1 },
		{ "Bash(a * b *)", "a b", 0, 0 },
	};
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(shell_cases); i++) {
		char err[256] = "";
		tgi_rule *r = tgi_rule_parse(shell_cases[i].rule, err, sizeof err);
		tgi_cmdline cl = {0};
		if (!r || tgi_shell_split(shell_cases[i].command, strlen(shell_cases[i].command), &cl, err,
		                          sizeof err) < 0)
			fail_msg("%s / %s: %s", shell_cases[i].rule, shell_cases[i].command, err);
		tgi_match_input in = {.tool = "shell", .cmds = &cl};
		int l = tgi_rule_matches(r, &in), s = tgi_rule_allows(r, &in);
		if (l != shell_cases[i].lenient || s != shell_cases[i].strict) {
			fprintf(stderr, "%s on \"%s\": lenient %d strict %d, want %d %d\n", shell_cases[i].rule,
			        shell_cases[i].command, l, s, shell_cases[i].lenient, shell_cases[i].strict);
			bad++;
		}
		tgi_cmdline_free(&cl);
		tgi_rule_free(r);
	}
	assert_int_equal(bad, 0);
}

static void test_match_null(void **state)
{
	tgi_rule *r = tgi_rule_parse("*", NULL, 0);
	tgi_match_input in = { .tool = NULL };
	assert_int_equal(tgi_rule_matches(r, &in), 0);
	assert_int_equal(tgi_rule_matches(r, NULL), 0);
	in.tool = "t";
	assert_int_equal(tgi_rule_matches(r, &in), 1);
	assert_int_equal(tgi_rule_matches(NULL, &in), 0);
	tgi_rule_free(r);
}

static void test_ruleset(void **state)
{
	char err[256];
	tgi_ruleset *rs = tgi_ruleset_new();

	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_ALLOW, "read_file", err, sizeof err), 0);
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, "read_file(./.env)", err, sizeof err), 0);
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, "deploy_service(env=prod)", err, sizeof err), 0);
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, "deploy_service(env=p*)", err, sizeof err), 0);
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_ASK, "write_file(./src/**)", err, sizeof err), 0);

	const char *env[] = { ".env" }, *link[] = { "src/link" };
	tgi_match_input in = { .tool = "read_file", .paths = link, .resolved = env, .npaths = 1,
	                       .has_paths = 1 };
	const tgi_rule *r = tgi_ruleset_first(rs, TGI_RULE_DENY, &in);
	assert_non_null(r);
	assert_string_equal(tgi_rule_text(r), "read_file(./.env)");
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_ALLOW, &in)), "read_file");
	assert_null(tgi_ruleset_first(rs, TGI_RULE_ASK, &in));

	/* first match wins, in the order added */
	json_t *args = json_pack("{s:s}", "env", "prod");
	tgi_match_input dep = { .tool = "deploy_service", .args = args };
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_DENY, &dep)),
	                    "deploy_service(env=prod)");
	json_object_set_new(args, "env", json_string("preview"));
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_DENY, &dep)),
	                    "deploy_service(env=p*)");
	json_object_set_new(args, "env", json_string("staging"));
	assert_null(tgi_ruleset_first(rs, TGI_RULE_DENY, &dep));
	json_decref(args);

	/* a bad rule is refused with its text; the list is unchanged */
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, "read_file(", err, sizeof err), -1);
	assert_non_null(strstr(err, "rule \"read_file(\""));
	assert_int_equal(tgi_ruleset_add(rs, (tgi_rule_kind)7, "read_file", err, sizeof err), -1);
	assert_non_null(strstr(err, "allow, ask or deny"));
	assert_int_equal(tgi_ruleset_add(rs, (tgi_rule_kind)7, "read_file", NULL, 0), -1);
	assert_null(tgi_ruleset_first(rs, (tgi_rule_kind)7, &in));
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_DENY, &in)), "read_file(./.env)");

	/* growth past the first allocation */
	for (int i = 0; i < 100; i++) {
		char text[32];
		snprintf(text, sizeof text, "tool_%d", i);
		assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_ASK, text, err, sizeof err), 0);
	}
	tgi_match_input t99 = { .tool = "tool_99" };
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_ASK, &t99)), "tool_99");

	assert_null(tgi_ruleset_first(NULL, TGI_RULE_DENY, &in));
	tgi_ruleset_free(rs);
	tgi_ruleset_free(NULL);
}

/* One deny rule in a ruleset anchored at env: does it deny a read_file
 * call of path (as written and resolved)? */
static int anchored_denies(const tgi_rule_env *env, const char *rule, const char *path)
{
	char err[256];
	tgi_ruleset *rs = tgi_ruleset_new();
	tgi_ruleset_anchor(rs, env);
	if (tgi_ruleset_add(rs, TGI_RULE_DENY, rule, err, sizeof err) < 0)
		fail_msg("%s: %s", rule, err);
	const char *paths[] = { path };
	tgi_match_input in = { .tool = "read_file", .paths = paths, .resolved = paths, .npaths = 1,
	                       .has_paths = 1 };
	int hit = tgi_ruleset_first(rs, TGI_RULE_DENY, &in) != NULL;
	tgi_ruleset_free(rs);
	return hit;
}

/* Where a path starts, as Claude Code reads it: `./x` and `x` in the
 * workspace, `/x` in the configuration's directory, `~/x` at home, `//x`
 * at the root; an absolute pattern outside the workspace is matched
 * against the call's paths made absolute. */
static void test_anchored_paths(void **state)
{
	static const struct {
		const char *rule, *path;
		int deny;
	} same[] = {   /* the configuration in the workspace, under home */
		{ "Read(./.env)", ".env", 1 },
		{ "Read(.env)", "sub/.env", 1 },                /* gitignore: at any depth */
		{ "Read(/.env)", ".env", 1 },                   /* the settings' directory */
		{ "Read(/.env)", "sub/.env", 0 },
		{ "Read(/src/**/*.ts)", "src/a/b.ts", 1 },
		{ "Read(~/proj/.env)", ".env", 1 },             /* home */
		{ "Read(~/proj/secrets/**)", "secrets/k", 1 },
		{ "Read(~/other/.env)", ".env", 0 },
		{ "Read(~/**/.env)", "sub/.env", 1 },           /* a glob reaching in from home */
		{ "Read(//home/u/proj/.env)", ".env", 1 },      /* the root */
		{ "Read(//home/u/proj/.env)", "sub/.env", 0 },
		{ "Read(//**/.env)", "sub/.env", 1 },
		{ "Read(//etc/passwd)", "etc/passwd", 0 },
		{ "Read(//link/proj/.env)", ".env", 1 },        /* the workspace as configured */
		{ "read_file(/secrets/**)", "secrets/x", 1 },
	};
	tgi_rule_env env = { .workspace = "/home/u/proj", .workspace_given = "/link/proj",
	                     .settings_dir = "/home/u/proj", .home = "/home/u" };
	int bad = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(same); i++)
		if (anchored_denies(&env, same[i].rule, same[i].path) != same[i].deny) {
			fprintf(stderr, "%s on %s: want %d\n", same[i].rule, same[i].path, same[i].deny);
			bad++;
		}
	assert_int_equal(bad, 0);

	/* the configuration one directory above the workspace */
	env.settings_dir = "/home/u";
	assert_true(anchored_denies(&env, "Read(/proj/.env)", ".env"));
	assert_false(anchored_denies(&env, "Read(/.env)", ".env"));
	assert_true(anchored_denies(&env, "Read(/**/.env)", "a/.env"));
	assert_true(anchored_denies(&env, "Read(./.env)", ".env"));

	/* a pattern wholly outside the workspace is known as such */
	char err[256];
	tgi_ruleset *rs = tgi_ruleset_new();
	tgi_ruleset_anchor(rs, &env);
	static const char *const rules[] = { "Read(/q/.env)", "Read(~/**/.env)", "Read(//etc/x)",
	                                     "Read(./x)", "Read(/proj/x)", "Read" };
	static const int outside[] = { 1, 0, 1, 0, 0, 0 };
	for (size_t i = 0; i < TGI_ARRAY_LEN(rules); i++) {
		assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, rules[i], err, sizeof err), 0);
		assert_int_equal(tgi_rule_outside(tgi_ruleset_at(rs, TGI_RULE_DENY, i)), outside[i]);
	}
	tgi_ruleset_free(rs);
	assert_int_equal(tgi_rule_outside(NULL), 0);

	/* without an anchor: `/x` at the workspace root, `~` and `//` match nothing */
	tgi_rule_env none = { 0 };
	assert_true(anchored_denies(&none, "Read(/.env)", ".env"));
	assert_false(anchored_denies(&none, "Read(~/proj/.env)", ".env"));
	assert_false(anchored_denies(&none, "Read(//home/u/proj/.env)", ".env"));
}

/* What a rule says about itself: its targets, Claude Code's name, its
 * server and keys; an `mcp__` rule follows its server's prefix. */
static void test_rule_parts(void **state)
{
	tgi_rule *r = tgi_rule_parse("Read(./.env)", NULL, 0);
	assert_string_equal(tgi_rule_claude(r), "Read");
	assert_int_equal(tgi_rule_ntargets(r), 3);
	assert_string_equal(tgi_rule_target(r, 0), "read_file");
	assert_string_equal(tgi_rule_target(r, 2), "search_files");
	assert_null(tgi_rule_target(r, 3));
	assert_true(tgi_rule_is_path(r));
	assert_true(tgi_rule_has_spec(r));
	tgi_rule_free(r);

	r = tgi_rule_parse("WebFetch(domain:example.com)", NULL, 0);
	assert_string_equal(tgi_rule_claude(r), "WebFetch");
	assert_int_equal(tgi_rule_ntargets(r), 0);
	assert_false(tgi_rule_is_path(r));
	tgi_rule_free(r);

	r = tgi_rule_parse("deploy(env=prod, /a~1b/c=1)", NULL, 0);
	assert_null(tgi_rule_claude(r));
	assert_int_equal(tgi_rule_ntargets(r), 1);
	assert_string_equal(tgi_rule_target(r, 0), "deploy");
	assert_int_equal(tgi_rule_nkeys(r), 2);
	assert_string_equal(tgi_rule_key(r, 1), "/a~1b/c");
	assert_null(tgi_rule_key(r, 2));
	tgi_rule_free(r);

	r = tgi_rule_parse("mcp__gh", NULL, 0);
	assert_null(tgi_rule_claude(r));
	assert_string_equal(tgi_rule_server(r), "gh");
	assert_string_equal(tgi_rule_target(r, 0), "gh__*");
	assert_false(tgi_rule_has_spec(r));
	tgi_rule_free(r);

	size_t n = 0;
	for (; tgi_rule_claude_name(n); n++) {   /* each name is read as Claude Code's */
		r = tgi_rule_parse(tgi_rule_claude_name(n), NULL, 0);
		assert_string_equal(tgi_rule_claude(r), tgi_rule_claude_name(n));
		tgi_rule_free(r);
	}
	assert_true(n >= 8);

	char err[256];
	tgi_ruleset *rs = tgi_ruleset_new();
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, "mcp__gh__get_*", err, sizeof err), 0);
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_ASK, "mcp__gh", err, sizeof err), 0);
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_ASK, "mcp__fs", err, sizeof err), 0);
	tgi_ruleset_mcp_prefix(rs, "gh", "github_");
	tgi_match_input in = { .tool = "github_get_issue" };
	assert_non_null(tgi_ruleset_first(rs, TGI_RULE_DENY, &in));
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_ASK, &in)), "mcp__gh");
	in.tool = "gh__get_issue";
	assert_null(tgi_ruleset_first(rs, TGI_RULE_DENY, &in));
	in.tool = "fs__x";
	assert_string_equal(tgi_rule_text(tgi_ruleset_first(rs, TGI_RULE_ASK, &in)), "mcp__fs");
	assert_int_equal(tgi_ruleset_count(rs, TGI_RULE_ASK), 2);
	assert_string_equal(tgi_rule_text(tgi_ruleset_at(rs, TGI_RULE_ASK, 1)), "mcp__fs");
	assert_null(tgi_ruleset_at(rs, TGI_RULE_ASK, 2));
	assert_int_equal(tgi_ruleset_count(rs, (tgi_rule_kind)7), 0);
	/* a bare Read names read_file for the tool list (tgi_ruleset_names) */
	assert_int_equal(tgi_ruleset_add(rs, TGI_RULE_DENY, "Read", err, sizeof err), 0);
	assert_true(tgi_ruleset_names(rs, TGI_RULE_DENY, "list_dir", 1));
	assert_false(tgi_ruleset_names(rs, TGI_RULE_DENY, "write_file", 0));
	tgi_ruleset_free(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_table),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_error_sentence),
		cmocka_unit_test(test_length_cap),
		cmocka_unit_test(test_rule_text),
		cmocka_unit_test(test_shell_parses),
		cmocka_unit_test(test_shell_rules),
		cmocka_unit_test(test_match_null),
		cmocka_unit_test(test_ruleset),
		cmocka_unit_test(test_anchored_paths),
		cmocka_unit_test(test_rule_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
