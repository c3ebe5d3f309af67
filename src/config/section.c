/*
 * section.c — configuration sections as tables (section.h): the rows'
 * checks, and the one place a configuration error's sentence is made (the
 * loader's, the middleware's, the bridge's and the eval files').
 *
 * Owns: nothing past a call.  Must not: know a section, the registry or
 * the gate.
 */
#include "config/section.h"
#include "util/yaml.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTR_MAX 1024   /* JSON pointers built while checking */

/* ---- where a node is, and how to say what went wrong ---- */

/* Line and column an error about the node at ptr points at: a scalar
 * value itself (the token that is wrong); else the key it is written
 * under -- a mapping or a list (whose own mark is its first member), a
 * key the message names (member), a missing key (reported at the key of
 * the nearest ancestor the map knows). */
int tgi_conf_locate(const tgi_conf_doc *d, const char *ptr, int member, int *line, int *col)
{
	char p[PTR_MAX];
	if (!d->map)
		return 0;
	tgi_snprintf(p, sizeof p, "%s", ptr);
	const json_t *v = tgi_json_pointer((json_t *)d->root, p);
	if (!member && v && !json_is_object(v) && !json_is_array(v) &&
	    tgi_srcmap_lookup(d->map, p, line, col) == 0)
		return 1;
	for (;;) {
		if (tgi_srcmap_lookup_key(d->map, p, line, col) == 0)
			return 1;
		char *slash = strrchr(p, '/');
		if (!slash)
			return 0;
		*slash = '\0';
	}
}

void tgi_conf_where(const tgi_conf_doc *d, const char *ptr, int member, char *out, size_t cap)
{
	char file[256];
	int line, col;
	tgi_sanitize(file, sizeof file, d->file ? d->file : "built-in defaults");
	if (tgi_conf_locate(d, ptr ? ptr : "", member, &line, &col))
		tgi_snprintf(out, cap, "%s:%d:%d", file, line, col);
	else
		tgi_snprintf(out, cap, "%s", file);
}

/* The pointer as a key path for people: /tools/x/command/0 → tools.x.command[0]. */
static void keypath(const json_t *root, const char *ptr, char *out, size_t cap)
{
	tgi_buf b;
	char tok[128];
	const json_t *cur = root;

	tgi_buf_init(&b, cap ? cap - 1 : 0);
	for (const char *p = ptr; *p == '/';) {
		size_t j = 0;
		for (p++; *p && *p != '/'; p++) {
			char ch = *p;
			if (ch == '~' && (p[1] == '0' || p[1] == '1'))
				ch = *++p == '0' ? '~' : '/';
			if (j + 1 < sizeof tok)
				tok[j++] = ch;
		}
		tok[j] = '\0';
		if (json_is_array(cur)) {
			tgi_buf_printf(&b, "[%s]", tok);
			cur = json_array_get(cur, strtoul(tok, NULL, 10));
		} else {
			tgi_buf_printf(&b, "%s%s", b.len ? "." : "", tok);
			cur = json_object_get(cur, tok);
		}
	}
	tgi_sanitize(out, cap, b.p ? b.p : "");
	tgi_buf_free(&b);
}

int tgi_conf_vfail_at(const tgi_conf_ctx *x, const char *loc, const char *path,
                      const char *fmt, va_list ap)
{
	char raw[512], msg[512], at[300], kp[256];
	vsnprintf(raw, sizeof raw, fmt, ap);
	tgi_sanitize(msg, sizeof msg, raw);   /* a value or a path may hold anything */
	tgi_conf_where(x->doc, loc, strcmp(loc, path) != 0, at, sizeof at);   /* a member: its key */
	if (x->doc->pointers)
		tgi_sanitize(kp, sizeof kp, path);
	else
		keypath(x->doc->root, path, kp, sizeof kp);
	if (kp[0])
		tgi_snprintf(x->err, x->errlen, "%s: %s: %s", at, kp, msg);
	else
		tgi_snprintf(x->err, x->errlen, "%s: %s", at, msg);
	return -1;
}

int tgi_conf_fail_at(const tgi_conf_ctx *x, const char *loc, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tgi_conf_vfail_at(x, loc, path, fmt, ap);
	va_end(ap);
	return -1;
}

int tgi_conf_fail(const tgi_conf_ctx *x, const char *ptr, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tgi_conf_vfail_at(x, ptr, ptr, fmt, ap);
	va_end(ap);
	return -1;
}

int tgi_conf_fail_type(const tgi_conf_ctx *x, const char *ptr, const json_t *v,
                       const char *expected)
{
	char got[96];
	return tgi_conf_fail(x, ptr, "expected %s, got %s", expected,
	                     tgi_json_describe(v, got, sizeof got));
}

const char *tgi_conf_join(const char *const *names, size_t n, char *out, size_t cap)
{
	tgi_buf b;
	tgi_buf_init(&b, cap ? cap - 1 : 0);
	for (size_t i = 0; i < n && names[i]; i++)
		tgi_buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
	tgi_snprintf(out, cap, "%s", b.p ? b.p : "");
	tgi_buf_free(&b);
	return out;
}

/* ---- the rows ---- */

static void *field(void *st, const tgi_conf_key *k)
{
	return (char *)st + k->offset;
}

static void set_int(void *f, size_t size, long long n)
{
	if (size == sizeof(int)) {
		int i = (int)n;
		memcpy(f, &i, sizeof i);
	} else {
		memcpy(f, &n, sizeof n);
	}
}

static int check_string(const tgi_conf_ctx *x, const json_t *v, const char *ptr, long long max)
{
	if (!json_is_string(v))
		return tgi_conf_fail_type(x, ptr, v, "a string");
	if (!json_string_length(v))
		return tgi_conf_fail(x, ptr, "expected a non-empty string, got \"\"");
	if (max > 0 && json_string_length(v) > (size_t)max)
		return tgi_conf_fail(x, ptr, "expected a string of at most %lld bytes, got one of %zu",
		                     max, json_string_length(v));
	if (strlen(json_string_value(v)) != json_string_length(v))
		return tgi_conf_fail(x, ptr, "contains a NUL character");
	return 0;
}

static int get_strings(const tgi_conf_ctx *x, const json_t *v, const char *ptr, long long max,
                       tgi_strv *out)
{
	size_t i;
	const json_t *s;
	if (!json_is_null(v) && !json_is_array(v))
		return tgi_conf_fail_type(x, ptr, v, "a list of strings");
	if (max > 0 && json_array_size(v) > (size_t)max)
		return tgi_conf_fail(x, ptr, "expected at most %lld entries, got %zu", max,
		                     json_array_size(v));
	json_array_foreach(v, i, s) {
		char ip[PTR_MAX], tok[24];
		snprintf(tok, sizeof tok, "%zu", i);
		tgi_json_pointer_join(ip, sizeof ip, ptr, tok);
		if (check_string(x, s, ip, 0) < 0)
			return -1;
	}
	tgi_strv_free(out);
	out->v = tgi_xcalloc(json_array_size(v) + 1, sizeof(char *));
	json_array_foreach(v, i, s)
		out->v[out->n++] = tgi_strdup(json_string_value(s));
	return 0;
}

/* A duration: whole seconds, or a string "N" and a unit s, m, h or d
 * ("7d", "12h"), from lo to hi seconds. */
static int get_duration(const tgi_conf_ctx *x, const json_t *v, const char *ptr, long long lo,
                        long long hi, long long *out)
{
	char want[128];
	snprintf(want, sizeof want, "a duration (seconds, or N and s, m, h or d, as in 7d) from "
	         "%llds to %lldd", lo, hi / 86400);
	long long n = 0;
	if (json_is_integer(v)) {
		n = (long long)json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *t = json_string_value(v);
		size_t len = json_string_length(v), i = 0;
		for (; i < len && t[i] >= '0' && t[i] <= '9' && n <= hi; i++)
			n = n * 10 + (t[i] - '0');
		static const struct { char u; long long s; } units[] = {
			{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400} };
		long long mult = 0;
		for (size_t u = 0; i > 0 && i + 1 == len && u < TGI_ARRAY_LEN(units); u++)
			if (t[i] == units[u].u)
				mult = units[u].s;
		if (!mult || n > hi)
			return tgi_conf_fail_type(x, ptr, v, want);
		n *= mult;
	} else {
		return tgi_conf_fail_type(x, ptr, v, want);
	}
	if (n < lo || n > hi)
		return tgi_conf_fail_type(x, ptr, v, want);
	*out = n;
	return 0;
}

int tgi_conf_enum(const tgi_conf_ctx *x, const json_t *v, const char *ptr,
                  const char *const *names, size_t n, int *out)
{
	char want[256], list[200];
	for (size_t i = 0; json_is_string(v) && i < n && names[i]; i++)
		if (!strcmp(json_string_value(v), names[i])) {
			*out = (int)i;
			return 0;
		}
	snprintf(want, sizeof want, "one of %s", tgi_conf_join(names, n, list, sizeof list));
	return tgi_conf_fail_type(x, ptr, v, want);
}

static int apply_row(const tgi_conf_ctx *x, const tgi_conf_key *k, const json_t *v,
                     const char *ptr, void *st)
{
	char want[256];
	void *f = field(st, k);
	switch (k->type) {
	case TGI_CONF_OWN:
		return 0;
	case TGI_CONF_BOOL:
		if (!json_is_boolean(v))
			return tgi_conf_fail_type(x, ptr, v, "true or false");
		*(int *)f = json_is_true(v);
		return 0;
	case TGI_CONF_INT:
		if (!json_is_integer(v) || json_integer_value(v) < k->lo ||
		    json_integer_value(v) > k->hi) {
			snprintf(want, sizeof want, "an integer from %lld to %lld", k->lo, k->hi);
			return tgi_conf_fail_type(x, ptr, v, want);
		}
		set_int(f, k->size, (long long)json_integer_value(v));
		return 0;
	case TGI_CONF_DOUBLE:
		if (!json_is_number(v) || json_number_value(v) < k->dlo ||
		    json_number_value(v) > k->dhi) {
			snprintf(want, sizeof want, "a number from %g to %g", k->dlo, k->dhi);
			return tgi_conf_fail_type(x, ptr, v, want);
		}
		*(double *)f = json_number_value(v);
		return 0;
	case TGI_CONF_STRING:
		if (check_string(x, v, ptr, k->hi) < 0)
			return -1;
		free(*(char **)f);
		*(char **)f = tgi_strdup(json_string_value(v));
		return 0;
	case TGI_CONF_ENUM:
		return tgi_conf_enum(x, v, ptr, k->names, k->nnames, f);
	case TGI_CONF_STRINGS:
		return get_strings(x, v, ptr, k->hi, f);
	case TGI_CONF_DURATION:
		return get_duration(x, v, ptr, k->lo, k->hi, f);
	case TGI_CONF_SECTION:
		return tgi_conf_section_apply(x, k->sub, k->nsub, v, ptr, f);
	case TGI_CONF_CUSTOM:
		return k->set(x, v, ptr, st);
	}
	return tgi_conf_fail(x, ptr, "has a row of unknown type %d", (int)k->type);
}

int tgi_conf_known_keys(const tgi_conf_ctx *x, const tgi_conf_key *table, size_t n,
                        const json_t *obj, const char *ptr)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		size_t i = 0;
		while (i < n && strcmp(key, table[i].key))
			i++;
		if (i < n)
			continue;
		char kp[PTR_MAX], k[72], names[512];
		tgi_buf b;
		tgi_buf_init(&b, sizeof names - 1);
		for (i = 0; i < n; i++)
			tgi_buf_printf(&b, "%s%s", i ? ", " : "", table[i].key);
		tgi_snprintf(names, sizeof names, "%s", b.p ? b.p : "");
		tgi_buf_free(&b);
		tgi_json_pointer_join(kp, sizeof kp, ptr, key);
		tgi_sanitize(k, sizeof k, key);
		return tgi_conf_fail_at(x, kp, ptr, "unknown key \"%s\"; expected one of %s", k, names);
	}
	return 0;
}

int tgi_conf_section_apply(const tgi_conf_ctx *x, const tgi_conf_key *table, size_t n,
                           const json_t *obj, const char *ptr, void *st)
{
	if (!obj || json_is_null(obj))
		obj = NULL;
	else if (!json_is_object(obj))
		return tgi_conf_fail_type(x, ptr, obj, "a mapping");
	if (obj && tgi_conf_known_keys(x, table, n, obj, ptr) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char kp[PTR_MAX];
		const json_t *v = obj ? json_object_get(obj, table[i].key) : NULL;
		if (!v && (table[i].flags & TGI_CONF_REQUIRED))
			return tgi_conf_fail(x, ptr, "missing required key \"%s\"", table[i].key);
		if (!v)
			continue;
		tgi_json_pointer_join(kp, sizeof kp, ptr, table[i].key);
		if (apply_row(x, &table[i], v, kp, st) < 0)
			return -1;
	}
	return 0;
}
