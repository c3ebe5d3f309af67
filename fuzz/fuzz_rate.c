/*
 * fuzz_rate.c — libFuzzer target for the `rate_limits` section
 * (src/mw/ratelimit.c): the tool globs and the "N/unit" rates.
 *
 * Input: "GLOB\nRATE" — one entry {GLOB: RATE}, where RATE is taken as a
 * JSON value when it parses as one (60, null, "\"60/min\"") and as a
 * string otherwise; or, when the input starts with '{', a whole section
 * as JSON.  Every input ends in limits or in one printable sentence that
 * names the file and the section; never a crash, leak or hang.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mw/mw.h"
#include "util/util.h"
#include "fuzz.h"

#define INPUT_MAX 4096

static json_t *section_of(const char *buf, size_t size)
{
	if (size && buf[0] == '{')
		return json_loadb(buf, size, 0, NULL);
	const char *nl = memchr(buf, '\n', size);
	size_t klen = nl ? (size_t)(nl - buf) : size;
	const char *rate = nl ? nl + 1 : "";
	size_t rlen = nl ? size - klen - 1 : 0;

	json_t *key = tgi_json_text(buf, klen);   /* keys are UTF-8 without NUL */
	json_t *v = json_loadb(rate, rlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!v)
		v = tgi_json_text(rate, rlen);
	json_t *sec = json_object();
	json_object_set_new(sec, json_string_value(key), v);
	json_decref(key);
	return sec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	if (size > INPUT_MAX)
		size = INPUT_MAX;
	json_t *sec = section_of((const char *)data, size);
	if (!sec)
		return 0;

	tgi_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.file = "fuzz.yaml";
	cfg.rate_limits = sec;
	tgi_ratelimit *r = (tgi_ratelimit *)1;
	err[0] = '\0';
	int rc = tgi_ratelimit_new(&cfg, &r, err, sizeof err);
	if (rc == 0) {
		/* limits exactly when there is an entry */
		int some = json_is_object(sec) && json_object_size(sec) > 0;
		check(some ? r != NULL : r == NULL);
		tgi_ratelimit_free(r);
	} else {
		check(rc == -1 && r == NULL);
		check(err[0] != '\0' && memchr(err, '\0', sizeof err) != NULL);
		check(printable(err));
		check(!strncmp(err, "fuzz.yaml: rate_limits", strlen("fuzz.yaml: rate_limits")));
	}
	json_decref(sec);
	return 0;
}
