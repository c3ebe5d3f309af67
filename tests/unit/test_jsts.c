/*
 * test_jsts.c — the JSON Schema Test Suite (draft 7) against src/schema.
 *
 * Runs every case of the required draft 7 tests with format assertion off
 * (draft 7 makes `format` an annotation by default), then the optional
 * format tests for the formats toolgate asserts, with assertion on.  Each
 * test is validated through both entry points, tgi_schema_validate_text()
 * on the data's JSON text and tgi_schema_validate() on its jansson value,
 * each yes/no and with a result: all four answers must match "valid", an
 * invalid answer must come with at least one error, and both paths must
 * report the same errors.
 * Cases whose schema needs a remote `$ref` (refRemote.json, the draft 7
 * metaschema by URL) are skipped and counted.
 *
 * Prints each mismatch, then the optional format tally and, last,
 * `jsts: N passed, N failed, N skipped` for the required tests; exits
 * non-zero on any required failure or if the suite is not installed.
 *
 * Owns: nothing beyond the run.  Must not: need the network or any file
 * other than the Debian package's.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "schema/schema.h"

#define SUITE "/usr/share/json-schema-test-suite/tests/draft7"

/* Formats the validator asserts that the draft 7 suite has tests for. */
static const char *const asserted_formats[] = {
	"date-time", "date", "time", "email", "hostname", "ipv4", "ipv6", "uri",
};

typedef struct tally {
	int passed, failed, skipped;
} tally;

static void mismatch(const char *file, const char *cdesc, const char *tdesc, int want,
                     const char *why)
{
	printf("  %s: %s / %s: expected %s, %s\n", file, cdesc, tdesc,
	       want ? "valid" : "invalid", why);
}

static void run_case(const char *file, const json_t *c, unsigned flags, tally *t)
{
	const char *cdesc = json_string_value(json_object_get(c, "description"));
	const json_t *tests = json_object_get(c, "tests");
	size_t ntests = json_array_size(tests);
	char err[512];
	tgi_schema *s = tgi_schema_compile(json_object_get(c, "schema"), flags, err, sizeof err);
	if (!s) {
		if (strstr(err, "remote reference")) {
			t->skipped += (int)ntests;
			return;
		}
		for (size_t i = 0; i < ntests; i++) {
			const json_t *tc = json_array_get(tests, i);
			char why[600];
			snprintf(why, sizeof why, "schema did not compile: %s", err);
			mismatch(file, cdesc, json_string_value(json_object_get(tc, "description")),
			         json_is_true(json_object_get(tc, "valid")), why);
		}
		t->failed += (int)ntests;
		return;
	}
	for (size_t i = 0; i < ntests; i++) {
		const json_t *tc = json_array_get(tests, i);
		const char *tdesc = json_string_value(json_object_get(tc, "description"));
		int want = json_is_true(json_object_get(tc, "valid"));
		json_t *data = json_deep_copy(json_object_get(tc, "data"));
		char *text = json_dumps(data, JSON_ENCODE_ANY | JSON_COMPACT);
		tgi_schema_result res, tres;
		char perr[256];
		int quick = tgi_schema_validate(s, data, 0, NULL);
		int full = tgi_schema_validate(s, data, 0, &res);
		int tquick = text ? tgi_schema_validate_text(s, text, strlen(text), NULL, perr,
		                                             sizeof perr) : -1;
		int tfull = text ? tgi_schema_validate_text(s, text, strlen(text), &tres, perr,
		                                            sizeof perr) : -1;
		char why[700];
		why[0] = '\0';
		if (quick != want)
			snprintf(why, sizeof why, "got %s", quick ? "valid" : "invalid");
		else if (full != quick)
			snprintf(why, sizeof why, "the reporting walk says %s", full ? "valid" : "invalid");
		else if (!full && res.nerrors < 1)
			snprintf(why, sizeof why, "invalid without an error");
		else if (tquick < 0 || tfull < 0)
			snprintf(why, sizeof why, "the text did not parse: %s", perr);
		else if (tquick != want || tfull != want)
			snprintf(why, sizeof why, "the text path says %s", tquick ? "valid" : "invalid");
		else if (!full && (tres.nerrors != res.nerrors ||
		                   strcmp(tres.errors[0].message, res.errors[0].message) != 0 ||
		                   strcmp(tres.errors[0].pointer, res.errors[0].pointer) != 0))
			snprintf(why, sizeof why, "the text path reports %s: %s",
			         tres.errors[0].pointer, tres.errors[0].message);
		free(text);
		if (why[0]) {
			if (!full && res.nerrors > 0) {
				size_t len = strlen(why);
				snprintf(why + len, sizeof why - len, " (%s: %s)",
				         res.errors[0].pointer[0] ? res.errors[0].pointer : "(root)",
				         res.errors[0].message);
			}
			mismatch(file, cdesc, tdesc, want, why);
			t->failed++;
		} else {
			t->passed++;
		}
		json_decref(data);
	}
	tgi_schema_free(s);
}

static void run_file(const char *dir, const char *name, unsigned flags, tally *t)
{
	char path[1024];
	json_error_t je;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	json_t *cases = json_load_file(path, 0, &je);
	if (!json_is_array(cases)) {
		printf("  %s: cannot be read: %s (line %d)\n", name, je.text, je.line);
		t->failed++;
		json_decref(cases);
		return;
	}
	for (size_t i = 0; i < json_array_size(cases); i++)
		run_case(name, json_array_get(cases, i), flags, t);
	json_decref(cases);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	tally req = {0, 0, 0}, fmt = {0, 0, 0};
	DIR *d = opendir(SUITE);
	if (!d) {
		printf("jsts: the JSON Schema Test Suite is missing: %s does not exist; "
		       "install the json-schema-test-suite package (scripts/install-deps)\n", SUITE);
		return 1;
	}
	char *names[256];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < sizeof names / sizeof names[0]) {
		size_t len = strlen(e->d_name);
		if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	if (n == 0) {
		printf("jsts: no test files in %s\n", SUITE);
		return 1;
	}

	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], "refRemote.json") == 0) {
			/* every case there needs a remote server's schemas */
			char path[1024];
			snprintf(path, sizeof path, "%s/%s", SUITE, names[i]);
			json_t *cases = json_load_file(path, 0, NULL);
			for (size_t k = 0; k < json_array_size(cases); k++)
				req.skipped += (int)json_array_size(
					json_object_get(json_array_get(cases, k), "tests"));
			json_decref(cases);
		} else {
			run_file(SUITE, names[i], TGI_SCHEMA_DRAFT7, &req);
		}
		free(names[i]);
	}
	for (size_t i = 0; i < sizeof asserted_formats / sizeof asserted_formats[0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "%s.json", asserted_formats[i]);
		run_file(SUITE "/optional/format", name, TGI_SCHEMA_DRAFT7 | TGI_SCHEMA_ASSERT_FORMATS,
		         &fmt);
	}
	printf("jsts optional/format: %d passed, %d failed\n", fmt.passed, fmt.failed);
	printf("jsts: %d passed, %d failed, %d skipped\n", req.passed, req.failed, req.skipped);
	return req.failed ? 1 : 0;
}
