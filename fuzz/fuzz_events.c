/*
 * fuzz_events.c — the events sinks on arbitrary input: the `events:`
 * section of a configuration, and the summary line made from a call's
 * (model-supplied) tool name, arguments and error message.
 *
 * The input's first byte chooses:
 *   even: the rest is the `events:` section (JSON).  Paths are kept to plain
 *         names inside a temporary workspace (made once), so that opening a
 *         sink never writes elsewhere.  tgi_sinks_open either refuses with a
 *         printable sentence naming events, or opens sinks that take an event
 *         and close.
 *   odd:  the rest is five NUL-separated fields (tool, args, status, kind,
 *         message) for tgi_event_summary, whose line must be valid UTF-8,
 *         free of control characters, and short.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "mw/mw.h"
#include "util/util.h"
#include "fuzz.h"

static char root[64];

static int rm_cb(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	return remove(p);
}

static void cleanup(void)
{
	if (root[0])
		nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void make_workspace(void)
{
	strcpy(root, "/tmp/tg-fuzz-events-XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(cleanup);
}

/* A path the fuzzer may use: a plain name, nothing that leaves the workspace. */
static int plain_name(const json_t *v)
{
	if (!json_is_string(v))
		return 1;   /* not a path: the sinks refuse it */
	const char *s = json_string_value(v);
	return !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static void fuzz_config(const char *text, size_t len)
{
	json_t *events = json_loadb(text, len, JSON_DECODE_ANY, NULL);
	if (!events)
		return;
	if (json_is_object(events) && (!plain_name(json_object_get(events, "jsonl")) ||
	                               !plain_name(json_object_get(events, "socket")))) {
		json_decref(events);
		return;
	}
	json_t *doc = json_pack("{s:s, s:o}", "workspace", root, "events", events);
	tgi_config *cfg = NULL;
	char err[1024];
	if (tgi_config_from_json(doc, NULL, "fuzz.yaml", root, &cfg, err, sizeof err) < 0)
		return;   /* the loader refused it (it took doc) */
	tgi_sinks *s = NULL;
	if (tgi_sinks_open(cfg, 0, &s, err, sizeof err) < 0) {
		check(printable(err));
		check(strstr(err, "events") != NULL);
		check(s == NULL);
	} else if (s) {
		const tgi_strv *paths = tgi_sinks_paths(s);
		for (size_t i = 0; i < paths->n; i++)
			check(!strncmp(paths->v[i], root, strlen(root)));
		json_t *ev = json_pack("{s:s}", "type", "fuzz");
		tgi_sinks_emit(s, ev);
		json_decref(ev);
		tgi_sinks_close(s);
	}
	tgi_config_free(cfg);
}

static void fuzz_summary(const char *text, size_t len)
{
	const char *f[5] = {NULL, NULL, NULL, NULL, NULL};
	char *copy = tgi_strndup(text, len);   /* cut at the first NUL too: fine */
	size_t n = strlen(copy), k = 0;
	/* fields separated by 0x01 (a NUL would end the copy) */
	f[k++] = copy;
	for (size_t i = 0; i < n && k < 5; i++) {
		if (copy[i] == '\x01') {
			copy[i] = '\0';
			f[k++] = copy + i + 1;
		}
	}
	char *s = tgi_event_summary(f[0], f[1], f[2], f[3], f[4]);
	check(s != NULL);
	check(printable(s));
	size_t sl = strlen(s);
	/* head ~160 characters, status and kind 32 each, message ~240: all cut */
	check(tgi_utf8_len(s, sl) <= 160 + 1 + 3 + 32 + 1 + 32 + 2 + 240 + 1 + 2);
	json_t *j = tgi_json_text(s, sl);
	check(!strcmp(json_string_value(j), s));   /* valid UTF-8: nothing replaced */
	json_decref(j);
	free(s);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root[0])
		make_workspace();
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_config((const char *)data + 1, size - 1);
	else
		fuzz_summary((const char *)data + 1, size - 1);
	return 0;
}
