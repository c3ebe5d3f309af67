/*
 * fixture.h — what the protocol tests share: the files of their folder of
 * tests/data/protocols/, read whole (at most 1 MiB) as text or as JSON.
 * A file that cannot be read or parsed fails the test that asked for it.
 * Include after cmocka.h and jansson.h.
 */
#ifndef TG_TEST_FIXTURE_H
#define TG_TEST_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define FIXTURE_MAX (1u << 20)

static char fixture_dir[PATH_MAX + 64];

/* Point at tests/data/protocols/<api> of the repository ($TOOLGATE_ROOT,
 * else the current directory).  -1 (said on stderr) if it is not there. */
static int fixture_open(const char *api)
{
	char root[PATH_MAX];
	const char *env = getenv("TOOLGATE_ROOT");
	if (!realpath(env && *env ? env : ".", root)) {
		perror("toolgate root");
		return -1;
	}
	snprintf(fixture_dir, sizeof fixture_dir, "%s/tests/data/protocols/%s", root, api);
	return 0;
}

/* The file's bytes, NUL-terminated; caller frees. */
static char *fixture(const char *name, size_t *len)
{
	char path[sizeof fixture_dir + 256];
	snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open fixture %s", path);
	char *buf = malloc(FIXTURE_MAX + 1);
	assert_non_null(buf);
	size_t n = fread(buf, 1, FIXTURE_MAX, f);
	assert_true(feof(f));              /* not cut at the cap */
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The file as JSON (new reference). */
static json_t *fixture_json(const char *name)
{
	size_t len;
	char *text = fixture(name, &len);
	json_error_t je;
	json_t *v = json_loadb(text, len, 0, &je);
	free(text);
	if (!v)
		fail_msg("fixture %s:%d: %s", name, je.line, je.text);
	return v;
}

#endif
