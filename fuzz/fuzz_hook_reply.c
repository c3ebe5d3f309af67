/*
 * fuzz_hook_reply.c — arbitrary bytes into what reads a hook: the reply
 * parser (tgi_hook_reply_parse: exit code + stdout + stderr → decision) and,
 * for inputs that start with 'H', the `hooks` config section
 * (tgi_hooks_new).
 *
 * Input: byte 0 picks the exit code (0, 2, 1, else the byte itself); the
 * rest is stdout, up to a "\0\0" that starts stderr.
 *
 * Owns: nothing.  Must not: run a hook or write files; every input must end
 * in an answer that keeps the invariants below, never a crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config.h"
#include "mw/mw.h"
#include "util/util.h"

static void hooks_section(const uint8_t *data, size_t size)
{
	json_t *sec = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!sec)
		return;
	json_t *root = json_object();
	json_object_set_new(root, "hooks", sec);
	char err[1024] = "";
	tgi_config *c = NULL;
	if (tgi_config_from_json(root, NULL, "fuzz.yaml", "/nonexistent", &c, err, sizeof err) < 0)
		return;
	tgi_hooks *h = NULL;
	err[0] = '\0';
	int rc = tgi_hooks_new(c, &h, err, sizeof err);
	check(rc == 0 || (err[0] && printable(err)));
	check(rc == 0 || !h);
	if (h)
		check(tgi_hooks_any_before(h) || tgi_hooks_any_after(h));
	tgi_hooks_free(h);
	tgi_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	if (data[0] == 'H') {
		hooks_section(data + 1, size - 1);
		return 0;
	}
	static const int codes[] = {0, 2, 1};
	int code = data[0] < 3 ? codes[data[0]] : data[0];
	const char *out = (const char *)data + 1;
	size_t out_len = size - 1, err_len = 0;
	const char *err = "";
	const char *sep = memmem(out, out_len, "\0\0", 2);
	if (sep) {
		err = sep + 2;
		err_len = out_len - (size_t)(err - out);
		out_len = (size_t)(sep - out);
	}

	tgi_hook_reply r;
	tgi_hook_reply_parse(code, out, out_len, err, err_len, &r);
	check(r.decision >= TGI_HOOK_NONE && r.decision <= TGI_HOOK_DENY);
	check(strlen(r.reason) < sizeof r.reason && printable(r.reason));
	check(!r.failed || (r.decision == TGI_HOOK_DENY && r.reason[0]));
	check(!r.updated_args || (json_is_object(r.updated_args) && r.decision != TGI_HOOK_DENY));
	if (code == 2)
		check(r.decision == TGI_HOOK_DENY && !r.failed);
	else if (code != 0)
		check(r.failed);
	json_decref(r.updated_args);
	return 0;
}
