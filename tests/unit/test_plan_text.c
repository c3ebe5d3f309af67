/*
 * test_plan_text.c — what a person is shown of a call (src/pipeline/plan_text.c):
 * a write's plan (its path and diff, in git's colours or none), a patch's
 * files, a command's argv quoted as a shell needs it (quotes, $'...' for
 * control characters), workdir, sandbox, network hosts, timeout and
 * environment names; control characters in a diff shown as spaces, never
 * written; a plan's unknown members as "key: value"; would_fail; what is
 * not a plan (NULL).  And the status colours, and tgi_names_join, the list
 * the errors for people give.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "toolgate.h"
#include "util/util.h"

static char *text(const char *plan, int color)
{
	char *t = tg_plan_text(plan, color);
	assert_non_null(t);
	return t;
}

static void assert_has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("\"%s\" not in:\n%s", needle, hay);
}

static void test_write_plan(void **state)
{
	const char *plan = "{\"path\":\"a.txt\",\"exists\":true,\"bytes\":3,"
	                   "\"diff\":\"--- a/a.txt\\n+++ b/a.txt\\n@@ -1 +1 @@\\n-hello\\n+hi\\n\","
	                   "\"added_lines\":1,\"removed_lines\":1}";
	char *t = text(plan, 0);
	assert_string_equal(t, "  replace a.txt: 3 bytes, +1 -1\n"
	                       "    --- a/a.txt\n"
	                       "    +++ b/a.txt\n"
	                       "    @@ -1 +1 @@\n"
	                       "    -hello\n"
	                       "    +hi\n");
	free(t);
	t = text(plan, 1);
	assert_has(t, "\033[1mreplace\033[0m a.txt");
	assert_has(t, "    \033[31m-hello\033[0m\n");
	assert_has(t, "    \033[32m+hi\033[0m\n");
	assert_has(t, "    \033[36m@@ -1 +1 @@\033[0m\n");
	free(t);
	t = text("{\"path\":\"n.txt\",\"exists\":false,\"bytes\":1,\"diff\":\"+x\\n\"}", 0);
	assert_has(t, "  create n.txt: 1 bytes\n");
	free(t);
}

static void test_patch_plan(void **state)
{
	char *t = text("{\"files\":[{\"operation\":\"move\",\"path\":\"b.txt\",\"from\":\"a.txt\","
	               "\"bytes\":2,\"diff\":\"-a\\n+b\\n\"},{\"operation\":\"delete\",\"path\":\"c\"}],"
	               "\"summary\":\"Success.\"}", 0);
	assert_string_equal(t, "  move b.txt (from a.txt): 2 bytes\n"
	                       "    -a\n"
	                       "    +b\n"
	                       "  delete c\n");
	free(t);
	t = text("{\"files\":[{\"operation\":\"update\",\"path\":\"s\"}],\"unchecked\":\"not matched\"}",
	         0);
	assert_has(t, "  update s\n");
	assert_has(t, "  note: not matched\n");
	free(t);
}

static void test_command_plan(void **state)
{
	char *t = text("{\"argv\":[\"git\",\"commit\",\"-m\",\"it's done\",\"a\\nb\",\"\"],"
	               "\"workdir\":\"src\",\"sandbox\":{\"mode\":\"workspace-write\","
	               "\"backend\":\"bubblewrap\",\"network\":[\"pypi.org:443\",\"x.io\"]},"
	               "\"env\":{\"PATH\":\"/usr/bin\",\"HOME\":\"/root\"},\"timeout_s\":120}", 0);
	assert_string_equal(t, "  $ git commit -m 'it'\\''s done' $'a\\nb' ''\n"
	                       "  workdir src\n"
	                       "  sandbox workspace-write (bubblewrap), network only to pypi.org:443 x.io\n"
	                       "  timeout 120 s\n"
	                       "  env PATH HOME\n");
	free(t);
	/* a command tool: env names as a list, its stdin (the call) */
	t = text("{\"argv\":[\"./deploy.sh\"],\"workdir\":\".\",\"stdin\":{\"env\":\"staging\"},"
	         "\"env\":[\"PATH\",\"TOKEN\"],\"sandbox\":{\"mode\":\"read-only\",\"backend\":\"landlock\","
	         "\"network\":false},\"timeout_s\":5}", 0);
	assert_has(t, "  $ ./deploy.sh\n");
	assert_has(t, "  sandbox read-only (landlock), network off\n");
	assert_has(t, "  env PATH TOKEN\n");
	assert_has(t, "  stdin {\"env\":\"staging\"}\n");
	free(t);
}

/* What a file or a model wrote is shown, never obeyed: no escape sequence
 * of the data reaches the terminal, coloured or not. */
static void test_control_characters(void **state)
{
	char *t = text("{\"path\":\"a\\u001b[2Jb\",\"diff\":\"+x\\u001b]0;owned\\u0007y\\r\\n"
	               "+\\u009b31m\\n\",\"exists\":true}", 1);
	const char *p = t;
	while ((p = strchr(p, '\033'))) {     /* only our own SGR sequences */
		if (!(p[1] == '[' && (p[2] == '0' || p[2] == '1' || p[2] == '3') &&
		      strspn(p + 2, "0123456789;") > 0 && p[2 + strspn(p + 2, "0123456789;")] == 'm'))
			fail_msg("a foreign escape sequence in:\n%s", t);
		p++;
	}
	assert_null(strchr(t, '\a'));
	assert_null(strchr(t, '\r'));
	assert_null(strstr(t, "\xc2\x9b"));
	assert_has(t, "a [2Jb");
	free(t);
}

static void test_other_plans(void **state)
{
	char *t = text("{\"would_fail\":\"no such file\",\"error_kind\":\"tool_error\"}", 0);
	assert_string_equal(t, "  would fail (tool_error): no such file\n");
	free(t);
	t = text("{\"reads\":[{\"path\":\"a\",\"resolved\":\"a\",\"type\":\"file\"}],\"server\":\"fs\","
	         "\"n\":3}", 0);
	assert_has(t, "  read a (file)\n");
	assert_has(t, "  server: fs\n");
	assert_has(t, "  n: 3\n");
	free(t);
	t = tg_plan_text("{}", 0);
	assert_string_equal(t, "");
	free(t);
	assert_null(tg_plan_text("[1]", 0));
	assert_null(tg_plan_text("not json", 0));
	assert_null(tg_plan_text(NULL, 0));
}

static void test_status_colours(void **state)
{
	assert_string_equal(tg_status_sgr("persisted"), "32");
	assert_string_equal(tg_status_sgr("replayed"), "32");
	assert_string_equal(tg_status_sgr("pending"), "33");
	assert_string_equal(tg_status_sgr("denied"), "31");
	assert_string_equal(tg_status_sgr("failed"), "1;31");
	assert_string_equal(tg_status_sgr("dry_run"), "36");
	assert_string_equal(tg_status_sgr("no such status"), "");
	assert_string_equal(tg_status_sgr(NULL), "");
	for (int s = 0; s < TG_STATUS__COUNT; s++)   /* every status has one */
		assert_true(tg_status_sgr(tg_status_name((tg_status)s))[0] != '\0');
}

static void test_names_join(void **state)
{
	const char *names[] = {"read_file", "list_dir", "search_files", "write_file"};
	char out[64];
	assert_string_equal(tgi_names_join(out, sizeof out, names, 4),
	                    "read_file, list_dir, search_files, write_file");
	assert_string_equal(tgi_names_join(out, sizeof out, names, 0), "none");
	char small[40];
	assert_string_equal(tgi_names_join(small, sizeof small, names, 4), "read_file and 3 more");
	char tiny[8];
	tgi_names_join(tiny, sizeof tiny, names, 4);
	assert_true(strlen(tiny) < sizeof tiny);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_plan),
		cmocka_unit_test(test_patch_plan),
		cmocka_unit_test(test_command_plan),
		cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_other_plans),
		cmocka_unit_test(test_status_colours),
		cmocka_unit_test(test_names_join),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
