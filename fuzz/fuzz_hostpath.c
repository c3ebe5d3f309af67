/*
 * fuzz_hostpath.c — libFuzzer target for the program-path test
 * (src/policy/hostpath.c).
 *
 * Input: a path as a model could write it (any bytes; cut at the first
 * NUL), asked of the gate's list and of an empty one, with and without a
 * leading '/'.  The answer is 0 or 1; a refusal carries one printable
 * sentence; nothing under /tmp (the path folded: "/tmp/../bin" is /bin), nor
 * any relative path, is ever trusted.
 * Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: write anything (the test
 * only looks: lstat, readlink, faccessat).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "policy/hostpath.h"
#include "util/fs.h"

#define INPUT_MAX 8192

static void ask(const tgi_hostpath *hp, const char *path)
{
	char why[512];
	why[0] = 'x';
	why[1] = '\0';
	int ok = tgi_hostpath_trusted(hp, path, why, sizeof why);
	check(ok == 0 || ok == 1);
	if (!ok)
		check(why[0] && printable(why));
	/* nothing under /tmp as the walk reaches it: "/tmp/../bin/git" is
	 * /bin/git (a directory, /tmp is one here), so the path is folded first */
	char *folded = strdup(path);
	if (path[0] == '/')
		tgi_path_fold(folded, folded, 1);
	if (path[0] != '/' || !strncmp(folded, "/tmp/", 5) || !strcmp(folded, "/tmp"))
		check(!ok);
	free(folded);
	check(tgi_hostpath_ep((void *)hp, path) == ok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static tgi_hostpath *gate, *none;
	if (!gate) {
		gate = tgi_hostpath_for_gate("/nonexistent-workspace", 0);
		none = tgi_hostpath_new(NULL, 0, 0);
	}
	if (size > INPUT_MAX)
		size = INPUT_MAX;
	char *path = malloc(size + 2);
	path[0] = '/';
	memcpy(path + 1, data, size);
	path[size + 1] = '\0';
	ask(gate, path);
	ask(none, path);
	ask(gate, path + 1);
	free(path);
	return 0;
}
