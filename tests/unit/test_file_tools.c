/*
 * test_file_tools.c — the built-in file tools: read_file, list_dir,
 * search_files, write_file (src/tools/).
 *
 * Each test gets a fresh temporary workspace (with a sibling "outside"),
 * and calls the tool rows' handlers with JSON arguments as a model would
 * send them (also unvalidated ones: a handler never relies on the schema).
 * Checks the outputs and the error kind, sentence and `applied` of every
 * refusal: escapes, absolute paths, embedded NULs, protected paths (at any
 * depth), binary files, paging and the 100,000-character rule, limits, and
 * a full disk.  The walks put every entry to the context's may_read (here
 * test_policy) and withhold what it refuses; spill files named exactly are
 * readable; every tool stops at the deadline.  Given the paths the policy
 * stage judged (ctx.checked), a tool whose open lands elsewhere fails with
 * nothing done.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"
#include "util/fs.h"
#include "util/util.h"

typedef struct fx {
	char         root[64];
	char         ws[96];
	tgi_exec_ctx ctx;
	tgi_tool_out out;
	json_t      *args;
} fx;

static void put(const fx *f, const char *rel, const char *data, size_t len)
{
	int fd = openat(f->ctx.ws_fd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void puts_file(const fx *f, const char *rel, const char *text)
{
	put(f, rel, text, strlen(text));
}

/* n lines, each `width` copies of c, then a newline. */
static void put_lines(const fx *f, const char *rel, int n, int width, char c)
{
	tgi_buf b;
	tgi_buf_init(&b, (size_t)n * (size_t)(width + 1) + 1);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < width; k++)
			tgi_buf_append(&b, &c, 1);
		tgi_buf_append(&b, "\n", 1);
	}
	put(f, rel, b.p ? b.p : "", b.len);
	tgi_buf_free(&b);
}

static int rm_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(p);
}

/*
 * The policy of these tests, standing in for the pipeline's: ".env",
 * ".ssh" and what is below it, and any name starting with "secret" are
 * withheld.  Every question is logged as "\npath[/]" ("/": a directory).
 */
static tgi_buf asked;

static int test_policy(const tgi_exec_ctx *ctx, const char *rel, int is_dir)
{
	tgi_buf_printf(&asked, "%s%s\n", rel, is_dir ? "/" : "");
	if (strcmp(rel, ".env") == 0 || strcmp(rel, ".ssh") == 0 || strncmp(rel, ".ssh/", 5) == 0)
		return 0;
	for (const char *c = rel; c; c = strchr(c, '/')) {
		c += *c == '/';
		if (strncmp(c, "secret", 6) == 0)
			return 0;
	}
	return 1;
}

/* Was rel (with "/" for a directory) put to the policy? */
static int was_asked(const char *rel)
{
	char line[PATH_MAX + 2];
	snprintf(line, sizeof line, "\n%s\n", rel);
	return asked.p && strstr(asked.p, line) != NULL;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	char p[256];

	strcpy(f->root, "/tmp/tg-tools-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->ws, sizeof f->ws, "%s/ws", f->root);
	snprintf(p, sizeof p, "%s/outside", f->root);
	if (mkdir(f->ws, 0755) < 0 || mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/outside/secret.txt", f->root);
	FILE *s = fopen(p, "w");
	fputs("needle outside\n", s);
	fclose(s);
	f->ctx.ws_fd = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	f->ctx.workspace = f->ws;
	f->ctx.tool = "test";
	f->ctx.may_read = test_policy;
	f->ctx.deadline_ms = tgi_now_ms() + 60000;
	if (f->ctx.ws_fd < 0)
		return -1;

	int ws = f->ctx.ws_fd;
	mkdirat(ws, "src", 0755);
	mkdirat(ws, "src/sub", 0755);
	mkdirat(ws, ".git", 0755);
	mkdirat(ws, ".toolgate", 0755);
	puts_file(f, "hello.txt", "one\ntwo\nthree\n");
	puts_file(f, "src/a.c", "int needle_a;\n");
	puts_file(f, "src/b.h", "/* needle in a header */\n");
	puts_file(f, "src/sub/deep.c", "x\ny\nint needle_deep;\n");
	puts_file(f, ".git/config", "needle in git\n");
	puts_file(f, ".toolgate/ledger.db", "needle in state\n");
	put(f, "bin.dat", "needle\0needle\n", 14);
	symlinkat("../outside/secret.txt", ws, "link_out");
	symlinkat("/etc/passwd", ws, "link_abs");
	symlinkat("hello.txt", ws, "link_in");
	symlinkat("src", ws, "dir_link");
	symlinkat("../outside", ws, "dir_out");
	symlinkat(".git", ws, "git_link");
	symlinkat(".toolgate/ledger.db", ws, "state_link");
	/* deep/d1/d2/.../d12/leaf.txt */
	strcpy(p, "deep");
	mkdirat(ws, p, 0755);
	for (int i = 1; i <= 12; i++) {
		size_t n = strlen(p);
		snprintf(p + n, sizeof p - n, "/d%d", i);
		mkdirat(ws, p, 0755);
	}
	strcat(p, "/leaf.txt");
	puts_file(f, p, "needle at the bottom\n");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	json_decref(f->out.output);
	json_decref(f->out.warnings);
	json_decref(f->args);
	tgi_buf_free(&asked);
	close(f->ctx.ws_fd);
	nftw(f->root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* Run tool with args given as JSON text (NULs as \u0000 allowed). */
static int call(fx *f, const tgi_tool *tool, const char *json)
{
	json_error_t e;

	json_decref(f->out.output);
	json_decref(f->out.warnings);
	json_decref(f->args);
	memset(&f->out, 0, sizeof f->out);
	tgi_buf_free(&asked);
	tgi_buf_init(&asked, 1 << 20);
	tgi_buf_puts(&asked, "\n");
	f->args = json_loads(json, JSON_ALLOW_NUL, &e);
	if (!f->args)
		fail_msg("bad test JSON %s: %s", json, e.text);
	f->ctx.tool = tool->name;
	return tool->handler(&f->ctx, f->args, &f->out);
}

static void expect_ok(fx *f, const tgi_tool *tool, const char *json)
{
	if (call(f, tool, json) != 0)
		fail_msg("%s %s failed: %s", tool->name, json, f->out.message);
	assert_int_equal(f->out.kind, TG_ERR_NONE);
	assert_non_null(f->out.output);
}

static void expect_err(fx *f, const tgi_tool *tool, const char *json, tg_errkind kind, const char *want)
{
	if (call(f, tool, json) != -1)
		fail_msg("%s %s succeeded", tool->name, json);
	assert_null(f->out.output);
	if (f->out.kind != kind)
		fail_msg("%s %s: kind %s, want %s (%s)", tool->name, json, tg_errkind_name(f->out.kind),
		         tg_errkind_name(kind), f->out.message);
	assert_int_equal(f->out.applied, TGI_APPLIED_NO);
	if (!strstr(f->out.message, want))
		fail_msg("%s %s: message \"%s\" lacks \"%s\"", tool->name, json, f->out.message, want);
}

static const char *ostr(const fx *f, const char *key)
{
	const char *s = json_string_value(json_object_get(f->out.output, key));
	assert_non_null(s);
	return s;
}

static long long oint(const fx *f, const char *key)
{
	json_t *v = json_object_get(f->out.output, key);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static int temp_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type;
	return strncmp(p + ftw->base, ".tg-", 4) == 0;
}

static void assert_no_temp(const fx *f)
{
	assert_int_equal(nftw(f->ws, temp_cb, 16, FTW_PHYS), 0);
}

/* ---- the rows ---- */

static void test_rows(void **state)
{
	(void)state;
	const tgi_tool *rows[] = { &tgi_tool_read_file, &tgi_tool_list_dir,
	                           &tgi_tool_search_files, &tgi_tool_write_file };
	const unsigned flags[] = {
		TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE | TGI_T_IDEMPOTENT,
		TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE,
		TGI_T_READ_ONLY | TGI_T_CONCURRENCY_SAFE,
		TGI_T_EDITS_FILES | TGI_T_IDEMPOTENT,
	};
	const char *required[] = { "path", NULL, "pattern", "content" };

	for (size_t i = 0; i < 4; i++) {
		const tgi_tool *t = rows[i];
		json_error_t e;
		assert_string_equal(t->category, "fs");
		assert_int_equal(t->flags, flags[i]);
		assert_null(t->flags_for);
		assert_non_null(t->paths);
		assert_non_null(t->handler);
		assert_true(strlen(t->description) > 40);
		json_t *s = json_loads(t->input_schema, 0, &e);
		if (!s)
			fail_msg("%s schema: %s", t->name, e.text);
		assert_string_equal(json_string_value(json_object_get(s, "type")), "object");
		assert_true(json_is_false(json_object_get(s, "additionalProperties")));
		assert_non_null(json_object_get(json_object_get(s, "properties"), "path"));
		json_t *req = json_object_get(s, "required");
		if (required[i]) {
			int found = 0;
			for (size_t k = 0; k < json_array_size(req); k++)
				found |= strcmp(json_string_value(json_array_get(req, k)), required[i]) == 0;
			assert_true(found);
		} else {
			assert_null(req);
		}
		json_decref(s);
	}
	assert_string_equal(tgi_tool_read_file.name, "read_file");
	assert_string_equal(tgi_tool_list_dir.name, "list_dir");
	assert_string_equal(tgi_tool_search_files.name, "search_files");
	assert_string_equal(tgi_tool_write_file.name, "write_file");
}

/* paths(): one new string into sv; returns the count or -1 with err */
static int paths_of(const tgi_tool *t, json_t *a, tgi_strv *sv, char *err, size_t errlen)
{
	tgi_strv_free(sv);
	return t->paths(a, sv, err, errlen);
}

static void test_paths_fns(void **state)
{
	(void)state;
	tgi_strv sv = {0};
	char err[256];
	json_t *a = json_pack("{s:s, s:s}", "path", "./src//x.c", "content", "c");

	assert_int_equal(paths_of(&tgi_tool_read_file, a, &sv, err, sizeof err), 1);
	assert_string_equal(sv.v[0], "./src//x.c");              /* as written */
	assert_ptr_not_equal(sv.v[0], json_string_value(json_object_get(a, "path")));
	assert_int_equal(paths_of(&tgi_tool_write_file, a, &sv, err, sizeof err), 1);
	assert_string_equal(sv.v[0], "./src//x.c");
	json_decref(a);

	a = json_object();
	assert_int_equal(paths_of(&tgi_tool_list_dir, a, &sv, err, sizeof err), 1);
	assert_string_equal(sv.v[0], ".");
	assert_int_equal(paths_of(&tgi_tool_search_files, a, &sv, err, sizeof err), 1);
	assert_string_equal(sv.v[0], ".");
	assert_int_equal(paths_of(&tgi_tool_read_file, a, &sv, err, sizeof err), -1);
	json_decref(a);

	/* one shared function each: the path as written, required or "." */
	assert_ptr_equal(tgi_tool_read_file.paths, tgi_paths_required_path);
	assert_ptr_equal(tgi_tool_write_file.paths, tgi_paths_required_path);
	assert_ptr_equal(tgi_tool_list_dir.paths, tgi_paths_optional_path);
	assert_ptr_equal(tgi_tool_search_files.paths, tgi_paths_optional_path);
	a = json_pack("{s:i}", "path", 7);
	assert_int_equal(paths_of(&tgi_tool_read_file, a, &sv, err, sizeof err), -1);
	assert_non_null(strstr(err, "string"));
	assert_int_equal(paths_of(&tgi_tool_list_dir, a, &sv, err, sizeof err), -1);
	json_decref(a);
	a = json_pack("{s:s}", "path", "link_in");         /* a symlink is reported as written */
	assert_int_equal(paths_of(&tgi_tool_read_file, a, &sv, err, sizeof err), 1);
	assert_string_equal(sv.v[0], "link_in");
	json_decref(a);

	/* embedded NUL: refused by paths() itself, with tgi_path_check's sentence */
	a = json_pack("{s:s#}", "path", "a\0b", (int)3);
	const tgi_tool *const rows[] = {&tgi_tool_read_file, &tgi_tool_list_dir,
	                                &tgi_tool_search_files, &tgi_tool_write_file};
	for (size_t i = 0; i < 4; i++) {
		err[0] = '\0';
		assert_int_equal(paths_of(rows[i], a, &sv, err, sizeof err), -1);
		assert_non_null(strstr(err, "NUL"));
	}
	json_decref(a);
	tgi_strv_free(&sv);
}

/* ---- every tool: the same path refusals ---- */

static void test_path_refusals(void **state)
{
	fx *f = *state;
	const tgi_tool *tools[] = { &tgi_tool_read_file, &tgi_tool_list_dir,
	                            &tgi_tool_search_files, &tgi_tool_write_file };
	char json[256];

	for (size_t i = 0; i < 4; i++) {
		const tgi_tool *t = tools[i];
		const char *extra = t == &tgi_tool_search_files ? ", \"pattern\": \"x\""
		                  : t == &tgi_tool_write_file ? ", \"content\": \"x\"" : "";
#define TRY(path, kind, want) \
		snprintf(json, sizeof json, "{\"path\": %s%s}", path, extra); \
		expect_err(f, t, json, kind, want)
		TRY("\"/etc/passwd\"", TG_ERR_INVALID_INPUT,
		    "path must be relative to the workspace, got \"/etc/passwd\"");
		TRY("\"a\\u0000b\"", TG_ERR_INVALID_INPUT, "NUL byte");
		TRY("\"\"", TG_ERR_INVALID_INPUT, "must not be empty");
		TRY("\"../outside/secret.txt\"", TG_ERR_NOT_PERMITTED,
		    "path \"../outside/secret.txt\" leaves the workspace; do not retry; ask the owner");
		TRY("\"src/../../outside\"", TG_ERR_NOT_PERMITTED, "leaves the workspace");
		TRY("\"link_out\"", TG_ERR_NOT_PERMITTED, "leaves the workspace");
		TRY("\"link_abs\"", TG_ERR_NOT_PERMITTED, "leaves the workspace");
		TRY("\"dir_out/secret.txt\"", TG_ERR_NOT_PERMITTED, "leaves the workspace");
		TRY("\".toolgate/ledger.db\"", TG_ERR_NOT_PERMITTED, "do not retry");
		TRY("\"state_link\"", TG_ERR_NOT_PERMITTED, "do not retry");
		TRY("7", TG_ERR_INVALID_INPUT, "\"path\" must be a string");
#undef TRY
	}
	char p[256];
	snprintf(p, sizeof p, "%s/outside/secret.txt", f->root);
	FILE *s = fopen(p, "r");
	char line[64] = "";
	assert_non_null(fgets(line, sizeof line, s));
	fclose(s);
	assert_string_equal(line, "needle outside\n");     /* never written */
}

/* ---- read_file ---- */

static void test_read_file_basic(void **state)
{
	fx *f = *state;

	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"./hello.txt\"}");
	assert_string_equal(ostr(f, "path"), "hello.txt");
	assert_string_equal(ostr(f, "content"), "     1\tone\n     2\ttwo\n     3\tthree\n");
	assert_int_equal(oint(f, "start_line"), 1);
	assert_int_equal(oint(f, "lines"), 3);
	assert_int_equal(oint(f, "total_lines"), 3);

	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"link_in\"}");       /* symlink inside */
	assert_string_equal(ostr(f, "content"), "     1\tone\n     2\ttwo\n     3\tthree\n");
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \".git/config\"}");   /* .git is readable */
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"git_link/config\"}");
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"deep/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/leaf.txt\"}");
	assert_int_equal(oint(f, "total_lines"), 1);

	puts_file(f, "nonl.txt", "a\n\nlast");
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"nonl.txt\", \"offset\": 2}");
	assert_string_equal(ostr(f, "content"), "     2\t\n     3\tlast\n");
	assert_int_equal(oint(f, "lines"), 2);
	assert_int_equal(oint(f, "total_lines"), 3);

	puts_file(f, "empty.txt", "");
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"empty.txt\"}");
	assert_string_equal(ostr(f, "content"), "");
	assert_int_equal(oint(f, "lines"), 0);
	assert_int_equal(oint(f, "total_lines"), 0);

	put(f, "latin1.txt", "caf\xE9\n", 5);                             /* not UTF-8 */
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"latin1.txt\"}");
	assert_string_equal(ostr(f, "content"), "     1\tcaf\xEF\xBF\xBD\n");
}

static void test_read_file_errors(void **state)
{
	fx *f = *state;

	expect_err(f, &tgi_tool_read_file, "{\"path\": \"nope.txt\"}", TG_ERR_TOOL_ERROR,
	           "no such file: \"nope.txt\"");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"src\"}", TG_ERR_INVALID_INPUT,
	           "\"src\" is a directory; use list_dir");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"bin.dat\"}", TG_ERR_INVALID_INPUT,
	           "\"bin.dat\" is a binary file");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\", \"offset\": 4}",
	           TG_ERR_INVALID_INPUT, "offset 4 is past the end of \"hello.txt\", which has 3 lines");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\", \"offset\": 0}",
	           TG_ERR_INVALID_INPUT, "\"offset\" must be between 1 and");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\", \"limit\": 0}",
	           TG_ERR_INVALID_INPUT, "\"limit\" must be between 1 and");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\", \"limit\": \"5\"}",
	           TG_ERR_INVALID_INPUT, "\"limit\" must be an integer");
	expect_err(f, &tgi_tool_read_file, "{}", TG_ERR_INVALID_INPUT, "\"path\" is required");
	assert_int_equal(mkfifoat(f->ctx.ws_fd, "fifo", 0644), 0);
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"fifo\"}", TG_ERR_INVALID_INPUT,
	           "is not a regular file");                             /* and no hang */

	/* a NUL after the first 8 KiB does not make a file binary */
	char *late = malloc(9000);
	memset(late, 'a', 9000);
	late[99] = '\n';
	late[8999] = '\0';
	put(f, "late.txt", late, 9000);
	free(late);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"late.txt\"}");
	assert_int_equal(oint(f, "total_lines"), 2);
}

static void test_read_file_paging(void **state)
{
	fx *f = *state;

	put_lines(f, "big.txt", 5000, 9, 'b');
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"big.txt\"}");     /* default limit 2000 */
	assert_int_equal(oint(f, "lines"), 2000);
	assert_int_equal(oint(f, "total_lines"), 5000);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"big.txt\", \"offset\": 4999, \"limit\": 5}");
	assert_string_equal(ostr(f, "content"), "  4999\tbbbbbbbbb\n  5000\tbbbbbbbbb\n");
	assert_int_equal(oint(f, "start_line"), 4999);
	assert_int_equal(oint(f, "lines"), 2);
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"big.txt\", \"offset\": 5001}",
	           TG_ERR_INVALID_INPUT, "which has 5000 lines");

	/* a 12 MB file is streamed: the last line is found, the memory is not the file */
	put_lines(f, "huge.txt", 400000, 29, 'h');
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"huge.txt\", \"offset\": 400000}");
	assert_string_equal(ostr(f, "content"), "400000\thhhhhhhhhhhhhhhhhhhhhhhhhhhhh\n");
	assert_int_equal(oint(f, "total_lines"), 400000);
}

static void test_read_file_100k_rule(void **state)
{
	fx *f = *state;

	/* 2000 lines of 100 characters: each numbered line is 7 + 100 + 1 = 108 */
	put_lines(f, "wide.txt", 2000, 100, 'w');
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"wide.txt\"}", TG_ERR_INVALID_INPUT,
	           "the selection is 216000 characters (over 100000); read fewer lines with "
	           "offset and limit, e.g. offset=1 limit=");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"wide.txt\", \"offset\": 11}",
	           TG_ERR_INVALID_INPUT, "e.g. offset=11 limit=");
	/* the suggested page fits */
	const char *lim = strstr(f->out.message, "limit=") + 6;
	char json[128];
	snprintf(json, sizeof json, "{\"path\": \"wide.txt\", \"offset\": 11, \"limit\": %d}", atoi(lim));
	expect_ok(f, &tgi_tool_read_file, json);
	assert_true(strlen(ostr(f, "content")) <= 100000);

	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"wide.txt\", \"limit\": 925}");   /* 99,900 */
	assert_int_equal(strlen(ostr(f, "content")), 99900);
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"wide.txt\", \"limit\": 926}",
	           TG_ERR_INVALID_INPUT, "the selection is 100008 characters");

	/* characters, not bytes: 108,000 bytes but 58,000 characters fit */
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	for (int i = 0; i < 1000; i++) {
		for (int k = 0; k < 50; k++)
			tgi_buf_puts(&b, "\xC3\xA9");
		tgi_buf_puts(&b, "\n");
	}
	put(f, "accents.txt", b.p, b.len);
	tgi_buf_free(&b);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"accents.txt\"}");
	assert_int_equal(oint(f, "lines"), 1000);
	assert_int_equal(strlen(ostr(f, "content")), 108000);
}

static void test_read_file_long_line(void **state)
{
	fx *f = *state;
	char *line = malloc(3002);

	memset(line, 'L', 3000);
	line[3000] = '\n';
	put(f, "long.txt", line, 3001);
	free(line);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"long.txt\"}");
	const char *c = ostr(f, "content");
	assert_memory_equal(c, "     1\t", 7);
	assert_int_equal(strspn(c + 7, "L"), 2000);
	assert_string_equal(c + 7 + 2000, " ... [line cut at 2000 characters; it is 3000 bytes long]\n");

	/* a cut never splits a character */
	tgi_buf b;
	tgi_buf_init(&b, 1 << 16);
	for (int i = 0; i < 2500; i++)
		tgi_buf_puts(&b, "\xE2\x82\xAC");                /* euro sign, 3 bytes */
	put(f, "euros.txt", b.p, b.len);
	tgi_buf_free(&b);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"euros.txt\"}");
	c = ostr(f, "content");
	static const char tail[] = "\xE2\x82\xAC ... [line cut at 2000 characters; it is 7500 bytes long]\n";
	assert_int_equal(strlen(c), 7 + 6000 + strlen(tail) - 3);
	assert_string_equal(c + 7 + 5997, tail);
}

/* ---- list_dir ---- */

static json_t *entry(const fx *f, const char *name)
{
	json_t *es = json_object_get(f->out.output, "entries"), *e;
	size_t i;
	json_array_foreach(es, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
			return e;
	return NULL;
}

static const char *etype(const fx *f, const char *name)
{
	json_t *e = entry(f, name);
	if (!e)
		fail_msg("no entry \"%s\"", name);
	return json_string_value(json_object_get(e, "type"));
}

static void test_list_dir(void **state)
{
	fx *f = *state;

	expect_ok(f, &tgi_tool_list_dir, "{}");
	assert_string_equal(ostr(f, "path"), ".");
	assert_int_equal(oint(f, "more"), 0);
	assert_int_equal(oint(f, "withheld"), 0);
	json_t *es = json_object_get(f->out.output, "entries");
	assert_int_equal(json_array_size(es), 13);
	for (size_t i = 1; i < json_array_size(es); i++)
		assert_true(strcmp(json_string_value(json_object_get(json_array_get(es, i - 1), "name")),
		                   json_string_value(json_object_get(json_array_get(es, i), "name"))) < 0);
	assert_string_equal(etype(f, "hello.txt"), "file");
	assert_int_equal(json_integer_value(json_object_get(entry(f, "hello.txt"), "size")), 14);
	assert_string_equal(etype(f, "src/"), "dir");
	assert_true(json_is_null(json_object_get(entry(f, "src/"), "size")));
	assert_string_equal(etype(f, ".git/"), "dir");        /* listed */
	assert_string_equal(etype(f, ".toolgate/"), "dir");
	assert_string_equal(etype(f, "link_out"), "symlink");
	assert_string_equal(etype(f, "link_abs"), "symlink");
	assert_string_equal(etype(f, "dir_link"), "symlink");
	assert_null(entry(f, "src/a.c"));                     /* depth 1 */

	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \".\", \"depth\": 3}");
	assert_string_equal(etype(f, "src/a.c"), "file");
	assert_string_equal(etype(f, "src/sub/"), "dir");
	assert_string_equal(etype(f, "src/sub/deep.c"), "file");
	assert_null(entry(f, ".git/config"));                 /* not descended */
	assert_null(entry(f, ".toolgate/ledger.db"));
	assert_null(entry(f, "dir_link/a.c"));                /* symlinks never descended */
	assert_null(entry(f, "dir_out/secret.txt"));

	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \"src\", \"depth\": 2}");
	assert_string_equal(ostr(f, "path"), "src");
	assert_string_equal(etype(f, "a.c"), "file");
	assert_string_equal(etype(f, "sub/deep.c"), "file");
	assert_int_equal(json_array_size(json_object_get(f->out.output, "entries")), 4);

	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \".git\"}");   /* named explicitly: readable */
	assert_string_equal(etype(f, "config"), "file");
	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \"dir_link\"}"); /* a symlink inside, as the root */
	assert_string_equal(etype(f, "a.c"), "file");
}

static void test_list_dir_limits(void **state)
{
	fx *f = *state;

	expect_ok(f, &tgi_tool_list_dir, "{\"limit\": 3}");
	assert_int_equal(json_array_size(json_object_get(f->out.output, "entries")), 3);
	assert_int_equal(oint(f, "more"), 10);
	expect_ok(f, &tgi_tool_list_dir, "{\"limit\": 1, \"depth\": 2}");
	assert_int_equal(oint(f, "more"), 13 + 4 - 1);   /* + src/{a.c,b.h,sub/}, deep/d1/ */

	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \"deep\", \"depth\": 10, \"limit\": 10000}");
	assert_string_equal(etype(f, "d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/"), "dir");
	assert_null(entry(f, "d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/"));
	assert_int_equal(json_array_size(json_object_get(f->out.output, "entries")), 10);

	expect_err(f, &tgi_tool_list_dir, "{\"depth\": 11}", TG_ERR_INVALID_INPUT,
	           "\"depth\" must be between 1 and 10, got 11");
	expect_err(f, &tgi_tool_list_dir, "{\"depth\": 0}", TG_ERR_INVALID_INPUT, "\"depth\"");
	expect_err(f, &tgi_tool_list_dir, "{\"limit\": 10001}", TG_ERR_INVALID_INPUT,
	           "\"limit\" must be between 1 and 10000");
	expect_err(f, &tgi_tool_list_dir, "{\"path\": \"hello.txt\"}", TG_ERR_INVALID_INPUT,
	           "\"hello.txt\" is not a directory; use read_file");
	expect_err(f, &tgi_tool_list_dir, "{\"path\": \"nope\"}", TG_ERR_TOOL_ERROR, "no such file");
	expect_err(f, &tgi_tool_list_dir, "{\"path\": \".toolgate\"}", TG_ERR_NOT_PERMITTED,
	           "do not retry");
}

/* ---- search_files ---- */

static const char *match_file(const fx *f, size_t i)
{
	json_t *m = json_array_get(json_object_get(f->out.output, "matches"), i);
	return json_string_value(json_object_get(m, "file"));
}

static size_t nmatches(const fx *f)
{
	return json_array_size(json_object_get(f->out.output, "matches"));
}

static void test_search_files(void **state)
{
	fx *f = *state;

	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\"}");
	/* in path order; not .git, .toolgate, bin.dat, symlinks or outside */
	assert_int_equal(nmatches(f), 4);
	assert_string_equal(match_file(f, 0), "deep/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/leaf.txt");
	assert_string_equal(match_file(f, 1), "src/a.c");
	assert_string_equal(match_file(f, 2), "src/b.h");
	assert_string_equal(match_file(f, 3), "src/sub/deep.c");
	json_t *m = json_array_get(json_object_get(f->out.output, "matches"), 3);
	assert_int_equal(json_integer_value(json_object_get(m, "line")), 3);
	assert_string_equal(json_string_value(json_object_get(m, "text")), "int needle_deep;");
	assert_true(json_is_false(json_object_get(f->out.output, "more")));
	assert_int_equal(oint(f, "files_scanned"), 5);        /* hello.txt too; not bin.dat */
	assert_int_equal(oint(f, "withheld"), 0);

	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"glob\": \"*.c\"}");
	assert_int_equal(nmatches(f), 2);
	assert_int_equal(oint(f, "files_scanned"), 2);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"glob\": \"src/*.h\"}");
	assert_int_equal(nmatches(f), 1);
	assert_string_equal(match_file(f, 0), "src/b.h");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"path\": \"src/sub\"}");
	assert_int_equal(nmatches(f), 1);
	assert_string_equal(match_file(f, 0), "src/sub/deep.c");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"^t\", \"path\": \"hello.txt\"}");
	assert_int_equal(nmatches(f), 2);
	assert_string_equal(match_file(f, 0), "hello.txt");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"path\": \".git\"}");
	assert_int_equal(nmatches(f), 1);                     /* named explicitly: readable */
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"zzz-none\"}");
	assert_int_equal(nmatches(f), 0);

	puts_file(f, "crlf.txt", "end\r\nmid\r\n");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"d$\", \"path\": \"crlf.txt\"}");
	assert_int_equal(nmatches(f), 2);
	m = json_array_get(json_object_get(f->out.output, "matches"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "text")), "end");
}

static void test_search_files_limits(void **state)
{
	fx *f = *state;

	put_lines(f, "many.txt", 50, 3, 'm');
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"mmm\", \"limit\": 10}");
	assert_int_equal(nmatches(f), 10);
	assert_true(json_is_true(json_object_get(f->out.output, "more")));
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"mmm\", \"limit\": 50}");
	assert_int_equal(nmatches(f), 50);
	assert_true(json_is_false(json_object_get(f->out.output, "more")));
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"m\", \"limit\": 1001}",
	           TG_ERR_INVALID_INPUT, "\"limit\" must be between 1 and 1000");

	/* text is cut at 500 characters */
	char *line = malloc(1002);
	memset(line, 'q', 1000);
	line[1000] = '\n';
	put(f, "wide.txt", line, 1001);
	free(line);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"q+\", \"path\": \"wide.txt\"}");
	json_t *m = json_array_get(json_object_get(f->out.output, "matches"), 0);
	const char *text = json_string_value(json_object_get(m, "text"));
	assert_int_equal(strlen(text), 503);
	assert_string_equal(text + 500, "...");

	/* over 10 MiB: skipped in a walk, refused by name (text first, so not binary) */
	mkdirat(f->ctx.ws_fd, "huge", 0755);
	put_lines(f, "huge/big.log", 2000, 9, 'n');
	int fd = openat(f->ctx.ws_fd, "huge/big.log", O_WRONLY);
	assert_int_equal(ftruncate(fd, (10 << 20) + 1), 0);
	close(fd);
	puts_file(f, "huge/small.log", "nnnnnnnnn\n");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"nnn\", \"path\": \"huge\"}");
	assert_int_equal(nmatches(f), 1);
	assert_string_equal(match_file(f, 0), "huge/small.log");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"nnn\", \"path\": \"huge/big.log\"}",
	           TG_ERR_INVALID_INPUT, "is over 10 MiB");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"path\": \"bin.dat\"}",
	           TG_ERR_INVALID_INPUT, "\"bin.dat\" is a binary file");
}

static void test_search_files_patterns(void **state)
{
	fx *f = *state;

	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"a(b\"}", TG_ERR_INVALID_INPUT,
	           "pattern \"a(b\" does not compile at offset 3: missing closing parenthesis");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"\"}", TG_ERR_INVALID_INPUT,
	           "pattern must be 1 to");
	expect_err(f, &tgi_tool_search_files, "{\"path\": \".\"}", TG_ERR_INVALID_INPUT,
	           "\"pattern\" is required");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"x\", \"glob\": \"a\\u0000b\"}",
	           TG_ERR_INVALID_INPUT, "glob");

	/* catastrophic backtracking is refused quickly, not left to hang */
	puts_file(f, "evil.txt", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n");
	double t0 = tgi_now_ms();
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"^(a|aa)+$\", \"path\": \"evil.txt\"}",
	           TG_ERR_INVALID_INPUT, "is too expensive");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"(x+x+)+y|^(a|aa)+$\"}",
	           TG_ERR_INVALID_INPUT, "is too expensive");         /* in a walk too */
	assert_true(tgi_now_ms() - t0 < 5000);

	/* a pattern may match invalid UTF-8 files; text comes back valid */
	put(f, "latin1.txt", "caf\xE9 ok\n", 8);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"ok$\", \"path\": \"latin1.txt\"}");
	json_t *m = json_array_get(json_object_get(f->out.output, "matches"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "text")), "caf\xEF\xBF\xBD ok");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"\\u00e9\"}");   /* é itself */
	assert_int_equal(nmatches(f), 0);
}

/* ---- write_file ---- */

static void test_write_file(void **state)
{
	fx *f = *state;
	char *buf;
	size_t n;
	struct stat st;

	expect_ok(f, &tgi_tool_write_file, "{\"path\": \"new/dir/f.txt\", \"content\": \"hi\\n\"}");
	assert_string_equal(ostr(f, "path"), "new/dir/f.txt");
	assert_int_equal(oint(f, "bytes"), 3);
	assert_true(json_is_true(json_object_get(f->out.output, "created")));
	assert_int_equal(tgi_read_all(f->ctx.ws_fd, "new/dir/f.txt", 100, &buf, &n), 0);
	assert_string_equal(buf, "hi\n");
	free(buf);

	fchmodat(f->ctx.ws_fd, "hello.txt", 0640, 0);
	expect_ok(f, &tgi_tool_write_file, "{\"path\": \"./hello.txt\", \"content\": \"a\\u0000b\"}");
	assert_true(json_is_false(json_object_get(f->out.output, "created")));
	assert_int_equal(oint(f, "bytes"), 3);
	assert_int_equal(tgi_read_all(f->ctx.ws_fd, "hello.txt", 100, &buf, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(buf, "a\0b", 3);
	free(buf);
	assert_int_equal(fstatat(f->ctx.ws_fd, "hello.txt", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640);

	expect_ok(f, &tgi_tool_write_file, "{\"path\": \"dir_link/via.c\", \"content\": \"\"}");
	assert_int_equal(fstatat(f->ctx.ws_fd, "src/via.c", &st, 0), 0);
	assert_int_equal(st.st_size, 0);
	assert_no_temp(f);
}

static void test_write_file_refusals(void **state)
{
	fx *f = *state;

	const char *prot[] = { ".git/config", ".git/hooks/pre-commit", ".git", ".toolgate/x",
	                       "git_link/config", "git_link/new/x", "state_link", "new/../.git/x" };
	for (size_t i = 0; i < sizeof prot / sizeof *prot; i++) {
		char json[128];
		snprintf(json, sizeof json, "{\"path\": \"%s\", \"content\": \"x\"}", prot[i]);
		expect_err(f, &tgi_tool_write_file, json, TG_ERR_NOT_PERMITTED, "do not retry");
	}
	expect_err(f, &tgi_tool_write_file, "{\"path\": \".git/config\", \"content\": \"x\"}",
	           TG_ERR_NOT_PERMITTED, "is in .git/, which is read-only to tools; do not retry");
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"src\", \"content\": \"x\"}",
	           TG_ERR_INVALID_INPUT, "\"src\" is a directory");
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"hello.txt/x\", \"content\": \"x\"}",
	           TG_ERR_TOOL_ERROR, "not a directory");
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"x\"}", TG_ERR_INVALID_INPUT,
	           "\"content\" is required");

	char *buf;
	size_t n;
	assert_int_equal(tgi_read_all(f->ctx.ws_fd, ".git/config", 100, &buf, &n), 0);
	assert_string_equal(buf, "needle in git\n");
	free(buf);
	struct stat st;
	assert_int_equal(fstatat(f->ctx.ws_fd, ".git/hooks", &st, 0), -1);
	assert_int_equal(fstatat(f->ctx.ws_fd, ".git/new", &st, 0), -1);
	assert_no_temp(f);
}

/* A full disk (here: the file size limit) fails cleanly: tool_error,
 * applied no, the old content intact, no temp file. */
static void test_write_file_disk_full(void **state)
{
	fx *f = *state;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 1024, 1024 };
		size_t big = 64 << 10;
		char *content = malloc(big + 1);
		memset(content, 'z', big);
		content[big] = '\0';
		json_t *args = json_pack("{s:s, s:s}", "path", "hello.txt", "content", content);
		tgi_tool_out out;
		memset(&out, 0, sizeof out);
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		int r = tgi_tool_write_file.handler(&f->ctx, args, &out);
		_exit(r == -1 && out.kind == TG_ERR_TOOL_ERROR && out.applied == TGI_APPLIED_NO &&
		      strstr(out.message, "the disk is full") && !out.output ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	char *buf;
	size_t n;
	assert_int_equal(tgi_read_all(f->ctx.ws_fd, "hello.txt", 100, &buf, &n), 0);
	assert_string_equal(buf, "one\ntwo\nthree\n");
	free(buf);
	assert_no_temp(f);
}

/* ---- policy on every entry of a walk ---- */

/* The output as JSON text (caller frees). */
static char *dump(const fx *f)
{
	char *d = json_dumps(f->out.output, JSON_COMPACT);
	assert_non_null(d);
	return d;
}

static void put_private(fx *f)
{
	int ws = f->ctx.ws_fd;
	mkdirat(ws, ".ssh", 0700);
	puts_file(f, ".ssh/id_rsa", "-----BEGIN PRIVATE KEY-----\n");
	puts_file(f, ".env", "PRIVATE_TOKEN=1\n");
	puts_file(f, "src/secret.c", "PRIVATE in source\n");
	mkdirat(ws, "secrets", 0755);
	puts_file(f, "secrets/x.txt", "PRIVATE\n");
	puts_file(f, "notes.txt", "PRIVATE but allowed\n");
	symlinkat(".", ws, "root_link");
	symlinkat(".env", ws, "env_link");
}

static void test_search_files_policy(void **state)
{
	fx *f = *state;
	put_private(f);

	/* a deny on .env, .ssh and secret* holds inside a search of "." */
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\"}");
	assert_int_equal(nmatches(f), 1);
	assert_string_equal(match_file(f, 0), "notes.txt");
	assert_int_equal(oint(f, "withheld"), 4);   /* .env, .ssh/, secrets/, src/secret.c */
	char *d = dump(f);
	assert_null(strstr(d, "ssh"));
	assert_null(strstr(d, "secret"));
	assert_null(strstr(d, "\".env\""));
	free(d);
	assert_true(was_asked("./"));
	assert_true(was_asked(".ssh/"));             /* asked as a directory ... */
	assert_false(was_asked(".ssh/id_rsa"));      /* ... and, refused, not descended */
	assert_false(was_asked("secrets/x.txt"));
	assert_true(was_asked("src/secret.c"));
	assert_false(was_asked(".git/"));            /* never descended anyway */
	assert_false(was_asked(".git/config"));
	assert_false(was_asked("root_link/"));       /* symlinks are neither followed nor asked */

	/* the named file itself, as written and as resolved */
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\", \"path\": \".env\"}");
	assert_int_equal(nmatches(f), 0);
	assert_int_equal(oint(f, "withheld"), 1);
	assert_int_equal(oint(f, "files_scanned"), 0);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\", \"path\": \"./env_link\"}");
	assert_int_equal(nmatches(f), 0);
	assert_int_equal(oint(f, "withheld"), 1);
	assert_true(was_asked(".env"));              /* the resolved form refuses it */
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\", \"path\": \".ssh\"}");
	assert_int_equal(nmatches(f), 0);
	assert_int_equal(oint(f, "withheld"), 1);

	/* a root reached through a symlink: root_link/.env is .env */
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\", \"path\": \"root_link\"}");
	assert_int_equal(nmatches(f), 1);
	assert_string_equal(match_file(f, 0), "root_link/notes.txt");
	assert_int_equal(oint(f, "withheld"), 4);
	assert_true(was_asked(".env"));
	assert_true(was_asked("notes.txt"));         /* both forms of what is shown */
	assert_true(was_asked("root_link/notes.txt"));

	/* files the glob leaves out are not opened, so not asked about */
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\", \"glob\": \"*.c\"}");
	assert_int_equal(nmatches(f), 0);
	assert_int_equal(oint(f, "withheld"), 3);    /* .ssh/, secrets/, src/secret.c */
	assert_false(was_asked(".env"));

	/* no may_read: nothing is shown (fail closed) */
	f->ctx.may_read = NULL;
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\"}");
	assert_int_equal(nmatches(f), 0);
	assert_int_equal(oint(f, "withheld"), 1);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"PRIVATE\", \"path\": \"notes.txt\"}");
	assert_int_equal(nmatches(f), 0);
	assert_int_equal(oint(f, "withheld"), 1);
}

static void test_list_dir_policy(void **state)
{
	fx *f = *state;
	put_private(f);

	expect_ok(f, &tgi_tool_list_dir, "{\"depth\": 2}");
	assert_null(entry(f, ".env"));
	assert_null(entry(f, ".ssh/"));
	assert_null(entry(f, ".ssh/id_rsa"));
	assert_null(entry(f, "secrets/"));
	assert_null(entry(f, "src/secret.c"));
	assert_string_equal(etype(f, "notes.txt"), "file");
	assert_string_equal(etype(f, "src/a.c"), "file");
	assert_string_equal(etype(f, "env_link"), "symlink");
	assert_int_equal(oint(f, "withheld"), 4);
	assert_int_equal(oint(f, "more"), 0);        /* withheld entries are not "more" */
	char *d = dump(f);
	assert_null(strstr(d, "ssh"));
	assert_null(strstr(d, "secret"));
	assert_null(strstr(d, "\".env\""));
	free(d);
	assert_true(was_asked(".ssh/"));
	assert_false(was_asked(".ssh/id_rsa"));
	assert_true(was_asked("src/"));
	assert_true(was_asked("hello.txt"));

	/* a limit counts what may be shown; withheld entries are not in "more" */
	expect_ok(f, &tgi_tool_list_dir, "{\"limit\": 1}");
	assert_int_equal(oint(f, "withheld"), 3);
	assert_int_equal(json_array_size(json_object_get(f->out.output, "entries")) + (size_t)oint(f, "more"),
	                 13 + 3);                   /* + notes.txt, root_link, env_link */

	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \"root_link\"}");
	assert_null(entry(f, ".env"));
	assert_null(entry(f, ".ssh/"));
	assert_string_equal(etype(f, "notes.txt"), "file");
	assert_int_equal(oint(f, "withheld"), 3);
	assert_true(was_asked(".env"));
	assert_true(was_asked("root_link/hello.txt"));

	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \".ssh\"}");
	assert_int_equal(json_array_size(json_object_get(f->out.output, "entries")), 0);
	assert_int_equal(oint(f, "withheld"), 1);

	f->ctx.may_read = NULL;
	expect_ok(f, &tgi_tool_list_dir, "{}");
	assert_int_equal(json_array_size(json_object_get(f->out.output, "entries")), 0);
	assert_int_equal(oint(f, "withheld"), 1);
}

/* ---- .git and .toolgate at any depth ---- */

static void test_nested_protected(void **state)
{
	fx *f = *state;
	int ws = f->ctx.ws_fd;
	char *buf;
	size_t n;
	struct stat st;

	mkdirat(ws, "sub", 0755);
	mkdirat(ws, "sub/mod", 0755);
	mkdirat(ws, "sub/mod/.git", 0755);
	mkdirat(ws, "sub/mod/.git/hooks", 0755);
	puts_file(f, "sub/mod/.git/config", "needle in a submodule\n");
	mkdirat(ws, "vendor", 0755);
	mkdirat(ws, "vendor/.toolgate", 0755);
	puts_file(f, "vendor/.toolgate/ledger.db", "needle in vendored state\n");

	expect_err(f, &tgi_tool_write_file,
	           "{\"path\": \"sub/mod/.git/hooks/pre-commit\", \"content\": \"#!/bin/sh\"}",
	           TG_ERR_NOT_PERMITTED, "is in .git/, which is read-only to tools; do not retry");
	assert_int_equal(fstatat(ws, "sub/mod/.git/hooks/pre-commit", &st, 0), -1);
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"sub/mod/.git/config\", \"content\": \"x\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"vendor/.toolgate/x\", \"content\": \"x\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"vendor/.toolgate/ledger.db\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"sub/mod/.git/config\"}");   /* .git is readable */

	/* walks list a nested .git or .toolgate but never descend it */
	expect_ok(f, &tgi_tool_list_dir, "{\"depth\": 4}");
	assert_string_equal(etype(f, "sub/mod/.git/"), "dir");
	assert_null(entry(f, "sub/mod/.git/config"));
	assert_string_equal(etype(f, "vendor/.toolgate/"), "dir");
	assert_null(entry(f, "vendor/.toolgate/ledger.db"));
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\"}");
	assert_int_equal(nmatches(f), 4);
	for (size_t i = 0; i < nmatches(f); i++)
		assert_null(strstr(match_file(f, i), "sub/mod") ? match_file(f, i) : NULL);
	assert_false(was_asked("sub/mod/.git/"));
	assert_false(was_asked("vendor/.toolgate/"));

	/* a write replaces the last component: .git/out_link, though it
	 * points out of .git, is still in .git */
	assert_int_equal(symlinkat("../hello.txt", ws, ".git/out_link"), 0);
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"git_link/out_link\", \"content\": \"x\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
	assert_int_equal(fstatat(ws, ".git/out_link", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(tgi_read_all(ws, "hello.txt", 100, &buf, &n), 0);
	assert_string_equal(buf, "one\ntwo\nthree\n");
	free(buf);

	/* a symlink named by path is replaced, not written through */
	expect_ok(f, &tgi_tool_write_file, "{\"path\": \"link_in\", \"content\": \"new\"}");
	assert_string_equal(ostr(f, "path"), "link_in");
	assert_int_equal(fstatat(ws, "link_in", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(tgi_read_all(ws, "hello.txt", 100, &buf, &n), 0);
	assert_string_equal(buf, "one\ntwo\nthree\n");
	free(buf);
}

/* ---- spill files ---- */

#define SPILL ".toolgate/spill/0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77.txt"

static void test_spill_files(void **state)
{
	fx *f = *state;
	int ws = f->ctx.ws_fd;
	char *buf;
	size_t n;

	assert_int_equal(mkdirat(ws, ".toolgate/spill", 0700), 0);
	puts_file(f, SPILL, "line one\nneedle two\n");
	/* made for a call of no session, as this one is (store/spill.c) */
	char mark[66];
	tgi_sha256_hex("", 0, mark);
	strcat(mark, "\n");
	puts_file(f, ".toolgate/spill/0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77.session", mark);

	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"" SPILL "\"}");
	assert_string_equal(ostr(f, "path"), SPILL);
	assert_string_equal(ostr(f, "content"), "     1\tline one\n     2\tneedle two\n");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"path\": \"" SPILL "\"}");
	assert_int_equal(nmatches(f), 1);
	assert_string_equal(match_file(f, 0), SPILL);
	assert_int_equal(oint(f, "withheld"), 0);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle two\"}");  /* never walked */
	assert_int_equal(nmatches(f), 0);

	/* near misses stay refused */
	puts_file(f, ".toolgate/spill/x.txt", "needle\n");
	const char *near[] = {
		".toolgate/spill/x.txt",
		".toolgate/spill/0193A5F0-7C1E-7D2A-9B1E-4F0C2A9D1E77.txt",
		SPILL "/..",
		".toolgate/ledger.db",
		".toolgate/spill",
		"src/../" SPILL,
	};
	for (size_t i = 0; i < sizeof near / sizeof *near; i++) {
		char json[256];
		snprintf(json, sizeof json, "{\"path\": \"%s\"}", near[i]);
		expect_err(f, &tgi_tool_read_file, json, TG_ERR_NOT_PERMITTED, "do not retry");
		snprintf(json, sizeof json, "{\"pattern\": \"e\", \"path\": \"%s\"}", near[i]);
		expect_err(f, &tgi_tool_search_files, json, TG_ERR_NOT_PERMITTED, "do not retry");
	}
	expect_err(f, &tgi_tool_list_dir, "{\"path\": \".toolgate/spill\"}", TG_ERR_NOT_PERMITTED,
	           "do not retry");
	expect_err(f, &tgi_tool_list_dir, "{\"path\": \"" SPILL "\"}", TG_ERR_INVALID_INPUT,
	           "is not a directory");

	/* a spill file is never writable */
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"" SPILL "\", \"content\": \"x\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
	assert_int_equal(tgi_read_all(ws, SPILL, 100, &buf, &n), 0);
	assert_string_equal(buf, "line one\nneedle two\n");
	free(buf);

	/* a symlink at a spill name is not followed */
	static const char link[] = ".toolgate/spill/11111111-1111-1111-1111-111111111111.txt";
	assert_int_equal(symlinkat("../../hello.txt", ws, link), 0);
	expect_err(f, &tgi_tool_read_file,
	           "{\"path\": \".toolgate/spill/11111111-1111-1111-1111-111111111111.txt\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
	expect_err(f, &tgi_tool_search_files,
	           "{\"pattern\": \"o\", \"path\": \".toolgate/spill/11111111-1111-1111-1111-111111111111.txt\"}",
	           TG_ERR_NOT_PERMITTED, "do not retry");
}

/* ---- deadlines and budgets ---- */

static void test_deadlines(void **state)
{
	fx *f = *state;

	f->ctx.deadline_ms = tgi_now_ms() - 1;
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\"}", TG_ERR_TIMEOUT,
	           "reading \"hello.txt\" did not finish within the time limit");
	expect_err(f, &tgi_tool_list_dir, "{}", TG_ERR_TIMEOUT,
	           "the listing of \".\" did not finish within the time limit; list a smaller "
	           "directory or a lower depth");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"needle\"}", TG_ERR_TIMEOUT,
	           "the search did not finish within the time limit; narrow path or glob");
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"one\", \"path\": \"hello.txt\"}",
	           TG_ERR_TIMEOUT, "the search did not finish within the time limit");

	/* no deadline from the pipeline: the tool's timeout_s, else 120 s */
	f->ctx.deadline_ms = 0;
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\"}");
	expect_ok(f, &tgi_tool_list_dir, "{}");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\"}");
	assert_int_equal(nmatches(f), 4);
}

/* 26 links to one 10 MiB text file: a search of all of them would read
 * 260 MiB, past the 256 MiB a search may read. */
/* ---- files and names that are not UTF-8 ---- */

/* A Latin-1 file: shown with U+FFFD, and the result says so (a field and
 * a warning); a UTF-8 file says nothing of its encoding. */
static void test_read_file_not_utf8(void **state)
{
	fx *f = *state;
	static const char latin1[] = "ok line\ncaf\xE9 au lait\n\xFF\xFE end\n";
	put(f, "latin1.txt", latin1, sizeof latin1 - 1);
	expect_ok(f, &tgi_tool_read_file, "{\"path\":\"latin1.txt\"}");
	assert_string_equal(ostr(f, "content"),
	                    "     1\tok line\n     2\tcaf\xEF\xBF\xBD au lait\n"
	                    "     3\t\xEF\xBF\xBD\xEF\xBF\xBD end\n");
	json_t *enc = json_object_get(f->out.output, "encoding");
	assert_non_null(enc);
	assert_true(json_is_false(json_object_get(enc, "utf8")));
	assert_int_equal(json_integer_value(json_object_get(enc, "invalid_bytes")), 3);
	assert_int_equal(json_integer_value(json_object_get(enc, "first_line")), 2);
	assert_string_equal(json_string_value(json_object_get(enc, "shown_as")), "U+FFFD");
	assert_int_equal(json_array_size(f->out.warnings), 1);
	const char *w = json_string_value(json_array_get(f->out.warnings, 0));
	assert_non_null(strstr(w, "\"latin1.txt\" is not UTF-8: 3 bytes of it (the first on line 2) "
	                          "are shown as U+FFFD; apply_patch cannot match"));

	/* the whole file counts, not only the lines shown; a sequence cut by a
	 * chunk's end is whole */
	tgi_buf b;
	tgi_buf_init(&b, 1 << 20);
	for (int i = 0; i < 70000; i++)
		tgi_buf_puts(&b, "\xC3\xA9");                   /* é, across the 64 KiB chunks */
	tgi_buf_puts(&b, "\nlast \xE9\n");
	put(f, "big.txt", b.p, b.len);
	tgi_buf_free(&b);
	expect_ok(f, &tgi_tool_read_file, "{\"path\":\"big.txt\",\"limit\":1}");
	enc = json_object_get(f->out.output, "encoding");
	assert_int_equal(json_integer_value(json_object_get(enc, "invalid_bytes")), 1);
	assert_int_equal(json_integer_value(json_object_get(enc, "first_line")), 2);

	expect_ok(f, &tgi_tool_read_file, "{\"path\":\"hello.txt\"}");
	assert_null(json_object_get(f->out.output, "encoding"));
	assert_null(f->out.warnings);
}

/* A name with byte 0xE9: list_dir shows it as "caf\xE9.txt", and that
 * name reads, writes and searches the file; other spellings are refused. */
static void test_names_not_utf8(void **state)
{
	fx *f = *state;
	mkdirat(f->ctx.ws_fd, "d\xE9r", 0755);
	puts_file(f, "d\xE9r/caf\xE9.txt", "needle in latin1 name\n");
	puts_file(f, "lit\\xE9.txt", "literal backslash\n");

	expect_ok(f, &tgi_tool_list_dir, "{\"path\":\".\",\"depth\":2}");
	char *listed = json_dumps(json_object_get(f->out.output, "entries"), JSON_COMPACT);
	assert_non_null(strstr(listed, "{\"name\":\"d\\\\xE9r/\",\"type\":\"dir\""));
	assert_non_null(strstr(listed, "{\"name\":\"d\\\\xE9r/caf\\\\xE9.txt\",\"type\":\"file\""));
	assert_non_null(strstr(listed, "{\"name\":\"lit\\\\x5CxE9.txt\",\"type\":\"file\""));
	free(listed);

	/* read back by the name list_dir gave */
	expect_ok(f, &tgi_tool_read_file, "{\"path\":\"d\\\\xE9r/caf\\\\xE9.txt\"}");
	assert_string_equal(ostr(f, "path"), "d\\xE9r/caf\\xE9.txt");
	assert_string_equal(ostr(f, "content"), "     1\tneedle in latin1 name\n");
	expect_ok(f, &tgi_tool_read_file, "{\"path\":\"lit\\\\x5CxE9.txt\"}");
	assert_string_equal(ostr(f, "content"), "     1\tliteral backslash\n");
	expect_ok(f, &tgi_tool_list_dir, "{\"path\":\"d\\\\xE9r\"}");
	assert_string_equal(ostr(f, "path"), "d\\xE9r");

	/* other spellings of it are refused, saying which to use */
	expect_err(f, &tgi_tool_read_file, "{\"path\":\"d\\\\xe9r/caf\\\\xE9.txt\"}",
	           TG_ERR_INVALID_INPUT, "write \"d\\xE9r/caf\\xE9.txt\"");
	expect_err(f, &tgi_tool_read_file, "{\"path\":\"lit\\\\xE9.txt\"}", TG_ERR_TOOL_ERROR,
	           "no such file");

	/* search_files names it the same way, and its glob sees that name (a
	 * glob's backslash escapes, as in rules: the name's is written \\) */
	expect_ok(f, &tgi_tool_search_files,
	          "{\"pattern\":\"needle in latin1\",\"glob\":\"caf\\\\\\\\xE9*\"}");
	json_t *m = json_array_get(json_object_get(f->out.output, "matches"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "file")), "d\\xE9r/caf\\xE9.txt");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\":\"needle\",\"path\":\"d\\\\xE9r\"}");
	assert_int_equal(json_array_size(json_object_get(f->out.output, "matches")), 1);

	/* write_file writes the file the name names */
	expect_ok(f, &tgi_tool_write_file, "{\"path\":\"d\\\\xE9r/caf\\\\xE9.txt\",\"content\":\"new\\n\"}");
	assert_string_equal(ostr(f, "path"), "d\\xE9r/caf\\xE9.txt");
	assert_true(json_is_false(json_object_get(f->out.output, "created")));
	char buf[16] = "";
	int fd = openat(f->ctx.ws_fd, "d\xE9r/caf\xE9.txt", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof buf - 1), 4);
	close(fd);
	assert_string_equal(buf, "new\n");
	expect_ok(f, &tgi_tool_write_file, "{\"path\":\"new\\\\xFF.txt\",\"content\":\"x\"}");
	assert_int_equal(faccessat(f->ctx.ws_fd, "new\xFF.txt", F_OK, 0), 0);
}

static void test_search_files_budget(void **state)
{
	fx *f = *state;
	int ws = f->ctx.ws_fd;

	mkdirat(ws, "big", 0755);
	put_lines(f, "big/f00", 10, (1 << 20) - 1, 'b');
	for (int i = 1; i < 26; i++) {
		char name[32];
		snprintf(name, sizeof name, "big/f%02d", i);
		assert_int_equal(linkat(ws, "big/f00", ws, name, 0), 0);
	}
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"zzz\", \"path\": \"big\"}",
	           TG_ERR_INVALID_INPUT, "the search would read more than 256 MiB; narrow path or glob");
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"zzz\", \"path\": \"big\", \"glob\": \"f0[01]\"}");
	assert_int_equal(oint(f, "files_scanned"), 2);
}

/* ---- held to the checked path ---- */

static const char *checked_one[1];
static char checked_text[PATH_MAX];

/* What decide would judge for path now: resolved (a write: its parent,
 * the last component as written), held in ctx.checked. */
static void judge(fx *f, const char *path, int writing)
{
	int r = writing ? tgi_path_resolve_parent(f->ctx.ws_fd, path, checked_text, sizeof checked_text)
	                : tgi_path_resolve(f->ctx.ws_fd, path, checked_text, sizeof checked_text);
	assert_int_equal(r, 0);
	checked_one[0] = checked_text;
	f->ctx.checked = checked_one;
	f->ctx.nchecked = 1;
}

static void relink(fx *f, const char *target, const char *link)
{
	assert_int_equal(unlinkat(f->ctx.ws_fd, link, 0), 0);
	assert_int_equal(symlinkat(target, f->ctx.ws_fd, link), 0);
}

static int present(const fx *f, const char *rel)
{
	struct stat st;
	return fstatat(f->ctx.ws_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * The pipeline hands the tools the paths decide judged (ctx.checked); an
 * open that lands elsewhere -- a symlink swapped, a directory on the way
 * replaced -- fails transient ("changed"), applied no, with nothing read,
 * listed, searched or written.  Where nothing changed, through a symlink
 * or not, the tools run as before.
 */
static void test_checked_paths(void **state)
{
	fx *f = *state;
	const char *changed = "changed between the policy check and its use";

	/* unchanged: plain, through a symlink, the workspace itself */
	judge(f, "hello.txt", 0);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\"}");
	judge(f, "link_in", 0);
	expect_ok(f, &tgi_tool_read_file, "{\"path\": \"./link_in\"}");
	judge(f, "dir_link/sub", 0);
	expect_ok(f, &tgi_tool_list_dir, "{\"path\": \"dir_link/sub\"}");
	judge(f, ".", 0);
	expect_ok(f, &tgi_tool_list_dir, "{}");
	judge(f, ".", 0);
	expect_ok(f, &tgi_tool_search_files, "{\"pattern\": \"needle\"}");
	judge(f, "dir_link/w.c", 1);
	expect_ok(f, &tgi_tool_write_file, "{\"path\": \"dir_link/w.c\", \"content\": \"w\"}");
	assert_true(present(f, "src/w.c"));
	judge(f, "dir_link/n1/n2/w.c", 1);
	expect_ok(f, &tgi_tool_write_file,
	          "{\"path\": \"dir_link/n1/n2/w.c\", \"content\": \"w\"}");
	assert_true(present(f, "src/n1/n2/w.c"));
	judge(f, "fresh/a/b.c", 1);
	expect_ok(f, &tgi_tool_write_file, "{\"path\": \"fresh/a/b.c\", \"content\": \"w\"}");
	assert_true(present(f, "fresh/a/b.c"));

	/* a file's symlink swapped */
	judge(f, "link_in", 0);
	relink(f, "src/a.c", "link_in");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"link_in\"}", TG_ERR_TRANSIENT, changed);
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"path\": \"link_in\"}",
	           TG_ERR_TRANSIENT, changed);
	/* a plain file replaced by a symlink */
	judge(f, "hello.txt", 0);
	assert_int_equal(renameat(f->ctx.ws_fd, "hello.txt", f->ctx.ws_fd, "hello.old"), 0);
	assert_int_equal(symlinkat("src/b.h", f->ctx.ws_fd, "hello.txt"), 0);
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"hello.txt\"}", TG_ERR_TRANSIENT, changed);

	/* a directory's symlink swapped: list, search, write (into an existing
	 * directory and into ones to be made: none is made where it leads) */
	judge(f, "dir_link", 0);
	relink(f, "src/sub", "dir_link");
	expect_err(f, &tgi_tool_list_dir, "{\"path\": \"dir_link\"}", TG_ERR_TRANSIENT, changed);
	expect_err(f, &tgi_tool_search_files, "{\"pattern\": \"needle\", \"path\": \"dir_link\"}",
	           TG_ERR_TRANSIENT, changed);
	relink(f, "src", "dir_link");
	judge(f, "dir_link/x.c", 1);
	relink(f, "src/sub", "dir_link");
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"dir_link/x.c\", \"content\": \"x\"}",
	           TG_ERR_TRANSIENT, changed);
	assert_false(present(f, "src/sub/x.c"));
	assert_false(present(f, "src/x.c"));
	relink(f, "src", "dir_link");
	judge(f, "dir_link/m1/m2/x.c", 1);
	relink(f, "src/sub", "dir_link");
	expect_err(f, &tgi_tool_write_file,
	           "{\"path\": \"dir_link/m1/m2/x.c\", \"content\": \"x\"}", TG_ERR_TRANSIENT,
	           changed);
	assert_false(present(f, "src/sub/m1"));
	/* a directory judged missing, then planted as a symlink: nothing is
	 * made through it */
	judge(f, "planted/m/x.c", 1);
	assert_int_equal(symlinkat("src/sub", f->ctx.ws_fd, "planted"), 0);
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"planted/m/x.c\", \"content\": \"x\"}",
	           TG_ERR_TRANSIENT, changed);
	assert_false(present(f, "src/sub/m"));
	/* a real directory renamed and another put in its place by a link */
	assert_int_equal(mkdirat(f->ctx.ws_fd, "d", 0755), 0);
	puts_file(f, "d/x.txt", "plain\n");
	judge(f, "d/x.txt", 0);
	assert_int_equal(renameat(f->ctx.ws_fd, "d", f->ctx.ws_fd, "d.old"), 0);
	assert_int_equal(symlinkat("src/sub", f->ctx.ws_fd, "d"), 0);
	puts_file(f, "src/sub/x.txt", "needle swapped in\n");
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"d/x.txt\"}", TG_ERR_TRANSIENT, changed);
	judge(f, "d.old/y.txt", 1);
	assert_int_equal(renameat(f->ctx.ws_fd, "d.old", f->ctx.ws_fd, "d.older"), 0);
	assert_int_equal(symlinkat("src/sub", f->ctx.ws_fd, "d.old"), 0);
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"d.old/y.txt\", \"content\": \"y\"}",
	           TG_ERR_TRANSIENT, changed);
	assert_false(present(f, "src/sub/y.txt"));
	assert_false(present(f, "d.older/y.txt"));

	/* a path decide did not judge fails closed */
	f->ctx.nchecked = 0;
	expect_err(f, &tgi_tool_read_file, "{\"path\": \"src/a.c\"}", TG_ERR_TRANSIENT, changed);
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"src/a.c\", \"content\": \"\"}",
	           TG_ERR_TRANSIENT, changed);
	/* ".." over a directory that does not exist: the kernel's answer (no
	 * directory is made that decide did not judge) */
	judge(f, "nothere/../top.c", 1);
	assert_string_equal(checked_text, "top.c");
	expect_err(f, &tgi_tool_write_file, "{\"path\": \"nothere/../top.c\", \"content\": \"\"}",
	           TG_ERR_TOOL_ERROR, "no such file");
	assert_false(present(f, "nothere"));
	assert_no_temp(f);
	f->ctx.checked = NULL;
	f->ctx.nchecked = 0;
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_paths_fns),
		T(test_path_refusals),
		T(test_read_file_basic),
		T(test_read_file_errors),
		T(test_read_file_paging),
		T(test_read_file_100k_rule),
		T(test_read_file_long_line),
		T(test_list_dir),
		T(test_list_dir_limits),
		T(test_search_files),
		T(test_search_files_limits),
		T(test_search_files_patterns),
		T(test_write_file),
		T(test_write_file_refusals),
		T(test_write_file_disk_full),
		T(test_search_files_policy),
		T(test_list_dir_policy),
		T(test_nested_protected),
		T(test_spill_files),
		T(test_deadlines),
		T(test_search_files_budget),
		T(test_read_file_not_utf8),
		T(test_names_not_utf8),
		T(test_checked_paths),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
