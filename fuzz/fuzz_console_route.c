/*
 * fuzz_console_route.c — libFuzzer target for the console's router, query
 * and form parser (src/console/route.c).
 *
 * The input is "METHOD\nTARGET\nBODY" (a missing part is empty).  What
 * route.c promises must hold for every input:
 *   - tgc_route_parse answers 0, -1 or -2; -1 with a printable sentence
 *     and nothing kept (no argument, no parameters);
 *   - otherwise at most TGC_MAX_PARAMS parameters, each name non-empty,
 *     each name and value valid UTF-8 of at most TGC_MAX_VALUE bytes;
 *   - the argument is what the route names: a lower-case UUID for a call,
 *     a spill or a decision, 1 to 200 bytes without a control character
 *     for a session, an embedded file's name for an asset, none otherwise;
 *   - post is set exactly for POST; -2 only for a method other than GET,
 *     HEAD and POST or a route that does not take it;
 *   - tgc_form_parse keeps the same promises for the body, and the
 *     pairs it gave, percent-encoded again, parse to the same pairs.
 * Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "console/console.h"

#define INPUT_MAX (64u << 10)

/* Valid UTF-8: shortest forms, no surrogates, at most U+10FFFF. */
static int utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], cp, min;
		size_t k;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			k = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			k = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			k = 3, cp = c & 0x07, min = 0x10000;
		else
			return 0;
		if (n - i <= k)
			return 0;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k + 1;
	}
	return 1;
}

static void check_params(const tgc_params *p)
{
	check(p->n <= TGC_MAX_PARAMS);
	for (size_t i = 0; i < p->n; i++) {
		size_t nl = strlen(p->v[i].name), vl = strlen(p->v[i].value);
		check(nl > 0 && nl <= TGC_MAX_VALUE && vl <= TGC_MAX_VALUE);
		check(utf8_ok((const unsigned char *)p->v[i].name, nl));
		check(utf8_ok((const unsigned char *)p->v[i].value, vl));
	}
}

static int is_uuid_lower(const char *s)
{
	if (strlen(s) != 36)
		return 0;
	for (size_t i = 0; i < 36; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]) || !s[i])
			return 0;
	}
	return 1;
}

static void check_arg(const tgc_request *r)
{
	switch (r->route) {
	case TGC_CALL:
	case TGC_SPILL:
	case TGC_DECIDE:
		check(r->arg && is_uuid_lower(r->arg));
		break;
	case TGC_SESSION: {
		check(r->arg != NULL);
		size_t n = strlen(r->arg);
		check(n >= 1 && n <= 200);
		for (size_t i = 0; i < n; i++)
			check((unsigned char)r->arg[i] >= 0x20 && r->arg[i] != 0x7f);
		break;
	}
	case TGC_ASSET:
		check(r->arg && (!strcmp(r->arg, "console.css") || !strcmp(r->arg, "console.js")));
		break;
	default:
		check(r->arg == NULL);
	}
}

/* The pairs of p, percent-encoded again as a form. */
static char *encode(const tgc_params *p)
{
	tgi_buf b;
	tgi_buf_init(&b, (size_t)-1 / 2);
	for (size_t i = 0; i < p->n; i++) {
		const char *parts[2] = {p->v[i].name, p->v[i].value};
		if (i)
			tgi_buf_puts(&b, "&");
		for (int k = 0; k < 2; k++) {
			if (k)
				tgi_buf_puts(&b, "=");
			for (const unsigned char *s = (const unsigned char *)parts[k]; *s; s++)
				if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
				    (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.')
					tgi_buf_append(&b, s, 1);
				else
					tgi_buf_printf(&b, "%%%02X", *s);
		}
	}
	char *out = tgi_buf_steal(&b);
	return out ? out : tgi_strdup("");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	const char *in = (const char *)data;
	/* the whole input as a Host header's authority too (both HTTP servers) */
	char host[256];
	unsigned port = 7;
	if (tgi_split_authority(in, size, host, sizeof host, &port) == 0) {
		if (port > 65535 || !host[0] || strlen(host) >= sizeof host || strpbrk(host, "/@ "))
			abort();
	}
	const char *nl1 = memchr(in, '\n', size);
	size_t ml = nl1 ? (size_t)(nl1 - in) : size;
	const char *t = nl1 ? nl1 + 1 : in + size;
	const char *nl2 = memchr(t, '\n', (size_t)(in + size - t));
	size_t tl = nl2 ? (size_t)(nl2 - t) : (size_t)(in + size - t);
	const char *body = nl2 ? nl2 + 1 : in + size;
	size_t bl = (size_t)(in + size - body);
	char *method = tgi_strndup(in, strnlen(in, ml));
	char *target = tgi_strndup(t, strnlen(t, tl));
	char err[256];

	tgc_request r;
	err[0] = '\0';
	int rc = tgc_route_parse(method, target, &r, err, sizeof err);
	check(rc == 0 || rc == -1 || rc == -2);
	int known = !strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "POST");
	check(r.post == !strcmp(method, "POST"));
	if (rc == -1) {
		check(*err && printable(err));
		check(r.arg == NULL && r.query.n == 0);
	} else {
		check_params(&r.query);
		check_arg(&r);
		if (rc == 0)
			check(known);
		if (r.route == TGC_NOT_FOUND && rc == -2)
			check(!known);
	}

	/* the body as a form */
	err[0] = '\0';
	int frc = tgc_form_parse(body, bl, &r.form, err, sizeof err);
	check(frc == 0 || frc == -1);
	if (frc < 0) {
		check(*err && printable(err) && r.form.n == 0);
	} else {
		check_params(&r.form);
		check(bl || r.form.n == 0);
		/* encoded again, the same pairs */
		char *again = encode(&r.form);
		tgc_params p2;
		memset(&p2, 0, sizeof p2);
		check(tgc_form_parse(again, strlen(again), &p2, err, sizeof err) == 0);
		check(p2.n == r.form.n);
		for (size_t i = 0; i < p2.n; i++) {
			check(!strcmp(p2.v[i].name, r.form.v[i].name));
			check(!strcmp(p2.v[i].value, r.form.v[i].value));
			free(p2.v[i].name);
			free(p2.v[i].value);
		}
		free(again);
	}
	tgc_request_free(&r);
	free(method);
	free(target);
	return 0;
}
