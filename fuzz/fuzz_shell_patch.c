/*
 * fuzz_shell_patch.c — libFuzzer target for the recogniser of Codex's
 * apply_patch through the shell (src/mw/shell_patch.c).
 *
 * The input is tried as a command string, as the script of
 * ["bash", "-lc", SCRIPT], and as the patch of ["apply_patch", PATCH].
 * Whatever it answers must keep tgi_shell_patch_of's promise: a match
 * gives a patch of len bytes that is a piece of the input (the script's
 * here-doc body, or the argv's patch whole) and a cd directory, if any,
 * that is a non-empty piece of it with no newline; no match leaves both
 * NULL.  The argv form always matches.  Any crash, leak or sanitizer report
 * is a bug.
 *
 * Owns: nothing beyond one input.  Must not: run anything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mw/mw.h"
#include "util/util.h"

#define INPUT_MAX (64 * 1024)

/* Is s (n bytes) a piece of text (tn bytes)? */
static int piece_of(const char *s, size_t n, const char *text, size_t tn)
{
	if (!n)
		return 1;
	for (size_t i = 0; i + n <= tn; i++)
		if (!memcmp(text + i, s, n))
			return 1;
	return 0;
}

static void one(json_t *args, const char *text, size_t tn, int must)
{
	char *patch = (char *)1, *dir = (char *)1;
	size_t len = 7;
	int r = tgi_shell_patch_of(args, &patch, &len, &dir);
	check(r == 0 || r == 1);
	if (must)
		check(r == 1);
	if (!r) {
		check(!patch && !dir && !len);
		json_decref(args);
		return;
	}
	check(patch != NULL && patch[len] == '\0');
	check(piece_of(patch, len, text, tn));
	if (dir) {
		check(*dir && !strchr(dir, '\n'));
		check(piece_of(dir, strlen(dir), text, tn));
	}
	free(patch);
	free(dir);
	json_decref(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	json_t *s = tgi_json_text((const char *)data, size);
	const char *text = json_string_value(s);
	size_t tn = json_string_length(s);
	one(json_pack("{s:O}", "command", s), text, tn, 0);
	one(json_pack("{s:[s, s, O]}", "command", "bash", "-lc", s), text, tn, 0);
	one(json_pack("{s:[s, O]}", "command", "apply_patch", s), text, tn, 1);
	json_decref(s);
	return 0;
}
