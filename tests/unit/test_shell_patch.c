/*
 * test_shell_patch.c — Codex's apply_patch through the shell
 * (src/mw/shell_patch.c, tgi_shell_patch_of): which shell calls are
 * apply_patch calls, the patch each carries and the directory its `cd`
 * names.  The forms are Codex's (an argv [apply_patch, PATCH]; a script
 * that is only `[cd DIR &&] apply_patch <<DELIM` and the patch, as a
 * string or [bash|sh|zsh|dash, -c|-lc, SCRIPT]); anything else -- a
 * command before or after, another redirection, a here-string, <<-, an
 * unterminated here-doc, a cd with an expansion -- stays a shell call.
 *
 * Owns: its tables.  Must not: touch the filesystem.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mw/mw.h"

#define P  "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
/* the same, inside a JSON string */
#define PJ "*** Begin Patch\\n*** Add File: a.txt\\n+hi\\n*** End Patch"

typedef struct sp_case {
	const char *args;   /* the shell call's arguments */
	const char *patch;  /* NULL: not apply_patch */
	const char *dir;    /* the cd's directory, or NULL */
} sp_case;

static const sp_case cases[] = {
	/* the argv form */
	{ "{\"command\":[\"apply_patch\",\"" PJ "\"]}", P, NULL },
	{ "{\"command\":[\"applypatch\",\"" PJ "\"]}", P, NULL },
	{ "{\"command\":[\"apply_patch\",\"not a patch\"]}", "not a patch", NULL },
	{ "{\"command\":[\"apply_patch\"]}", NULL, NULL },
	{ "{\"command\":[\"apply_patch\",\"" PJ "\",\"x\"]}", NULL, NULL },
	{ "{\"command\":[\"/usr/bin/apply_patch\",\"" PJ "\"]}", NULL, NULL },
	{ "{\"command\":[\"git\",\"apply\"]}", NULL, NULL },
	{ "{\"command\":[\"apply_patch\",1]}", NULL, NULL },
	/* the here-doc script, as a string */
	{ "{\"command\":\"apply_patch <<'EOF'\\n" PJ "\\nEOF\\n\"}", P "\n", NULL },
	{ "{\"command\":\"apply_patch <<\\\"EOF\\\"\\n" PJ "\\nEOF\"}", P "\n", NULL },
	{ "{\"command\":\"apply_patch <<EOF\\n" PJ "\\nEOF\\n\\n  \"}", P "\n", NULL },
	{ "{\"command\":\"\\n  applypatch<<'PATCH'  \\n" PJ "\\nPATCH\"}", P "\n", NULL },
	{ "{\"command\":\"apply_patch <<'EOF'\\nEOF not yet\\n" PJ "\\nEOF\"}",
	  "EOF not yet\n" P "\n", NULL },
	{ "{\"command\":\"cd sub && apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", P "\n", "sub" },
	{ "{\"command\":\"cd 'my dir' && apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", P "\n", "my dir" },
	{ "{\"command\":\"cd \\\"a b\\\" &&apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", P "\n", "a b" },
	{ "{\"command\":\"cd /abs/dir && apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", P "\n", "/abs/dir" },
	/* ... and as a shell's script */
	{ "{\"command\":[\"bash\",\"-lc\",\"apply_patch <<'EOF'\\n" PJ "\\nEOF\"]}", P "\n", NULL },
	{ "{\"command\":[\"/bin/sh\",\"-c\",\"cd x && apply_patch <<'EOF'\\n" PJ "\\nEOF\"]}",
	  P "\n", "x" },
	{ "{\"command\":[\"zsh\",\"-lc\",\"apply_patch <<'EOF'\\n" PJ "\\nEOF\"]}", P "\n", NULL },
	{ "{\"command\":[\"python3\",\"-c\",\"apply_patch <<'EOF'\\n" PJ "\\nEOF\"]}", NULL, NULL },
	{ "{\"command\":[\"bash\",\"-x\",\"apply_patch <<'EOF'\\n" PJ "\\nEOF\"]}", NULL, NULL },
	/* anything else is a shell command */
	{ "{\"command\":\"echo hi; apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<'EOF'\\n" PJ "\\nEOF\\necho done\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<'EOF' && rm -rf x\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<'EOF'\\n" PJ "\\n\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<-'EOF'\\n" PJ "\\n\\tEOF\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<< x\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch < p.diff\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch\"}", NULL, NULL },
	{ "{\"command\":\"apply_patchx <<'EOF'\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"cd $HOME && apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"cd \\\"$X\\\" && apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"cd a || apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"cd a b && apply_patch <<'EOF'\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<'EOF\\n" PJ "\\nEOF\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<\\n" PJ "\\n\"}", NULL, NULL },
	{ "{\"command\":\"apply_patch <<'EOF'\\r\\n" PJ "\\r\\nEOF\\r\\n\"}", NULL, NULL },
	{ "{}", NULL, NULL },
	{ "{\"command\":7}", NULL, NULL },
};

static void test_forms(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const sp_case *t = &cases[i];
		json_error_t je;
		json_t *args = json_loads(t->args, 0, &je);
		char *patch, *dir;
		size_t len;
		if (!args)
			fail_msg("case %zu: %s", i, je.text);
		int r = tgi_shell_patch_of(args, &patch, &len, &dir);
		if (r != (t->patch != NULL))
			fail_msg("case %zu (%s): expected %s", i, t->args,
			         t->patch ? "apply_patch" : "a shell call");
		if (t->patch) {
			if (len != strlen(t->patch) || strcmp(patch, t->patch))
				fail_msg("case %zu: patch \"%s\"", i, patch);
			if ((t->dir == NULL) != (dir == NULL) || (dir && strcmp(dir, t->dir)))
				fail_msg("case %zu: dir \"%s\"", i, dir ? dir : "(none)");
		} else {
			assert_null(patch);
			assert_null(dir);
		}
		free(patch);
		free(dir);
		json_decref(args);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
