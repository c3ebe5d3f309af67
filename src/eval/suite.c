/*
 * suite.c — eval files into cases (tgi_eval_suite_*, eval.h): the YAML
 * format of docs/EVAL.md, checked key by key, and the built-in suite (the
 * files of evals/, compiled in by scripts/embed-evals as tgi_eval_builtin[]).
 *
 * A file is a list of cases, or {profile?, cases: [...]}.  A case:
 *
 *   id           optional; default "<file stem>#<n>" (n from 1); unique in the suite
 *   request      the user's message: a non-empty string of at most 64 KiB,
 *                kept as written (it is data)
 *   expect       {tool: NAME, args?: SUBSET, decision?: allow|ask|deny|[...]}
 *                or {no_tool: true}
 *   profile      optional; else the file's
 *   setup_files  optional {relative path: content}: at most 256 files of
 *                1 MiB; a path is relative, without ".." or control
 *                characters, not under .toolgate, names a file (not "."
 *                nor "dir/"), and no path is both a file and another's
 *                directory
 *
 * Every unknown key is an error: a typo must not silently pass.  Errors
 * read "name:line:col: /cases/3/expect: sentence", the pointer that of the
 * node at fault and line:col from the YAML source map (an unknown key: the
 * key's line:col, its mapping's pointer, as config/section.c says it).
 *
 * Owns: the cases and the names of the files loaded.  Must not: read a
 * file (callers give the text), or run anything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "eval/eval.h"
#include "util/fs.h"
#include "util/util.h"

#define CASES_MAX        10000           /* cases in one suite */
#define REQUEST_MAX      (64u << 10)     /* bytes of a request */
#define SETUP_FILE_MAX   (1u << 20)      /* bytes of a setup file */
#define SETUP_FILES_MAX  256             /* setup files of a case */
#define LABEL_MAX        128             /* bytes of an id, a tool or a profile name */
#define PTR_MAX          512             /* bytes of a JSON pointer */

/* The keys of a file, a case and an expect (docs/EVAL.md), read below. */
static const tgi_conf_key file_keys[] = {
	TGI_CONF_OWN("profile", "the cases' profile unless a case names its own"),
	TGI_CONF_OWN("cases", "the list of cases"),
};
static const tgi_conf_key case_keys[] = {
	TGI_CONF_OWN("id", "unique in the suite (default <file stem>#<n>)"),
	TGI_CONF_OWN("request", "the user's message"),
	TGI_CONF_OWN("expect", "{tool, args?, decision?} or {no_tool: true}"),
	TGI_CONF_OWN("profile", "the tools offered"),
	TGI_CONF_OWN("setup_files", "{relative path: content} written first"),
};
static const tgi_conf_key expect_keys[] = {
	TGI_CONF_OWN("tool", "the tool the model should call"),
	TGI_CONF_OWN("args", "a subset of its arguments"),
	TGI_CONF_OWN("decision", "allow, ask, deny or a list of them"),
	TGI_CONF_OWN("no_tool", "true: the model should answer without a call"),
};

/* One file being loaded. */
typedef struct ld {
	const char *name;      /* as messages and `where` name it */
	const char *stem;      /* for default ids */
	tgi_srcmap *map;
	const json_t *root;    /* the document */
	char       *err;
	size_t      errlen;
} ld;

/* v, which only running out of memory leaves NULL: every string given to
 * JSON here is valid UTF-8 (from the YAML, or made so), so nothing built
 * is ever silently lost. */
static json_t *must(json_t *v)
{
	if (!v) {
		fputs("toolgate: out of memory\n", stderr);
		abort();
	}
	return v;
}

static void must_ok(int rc)
{
	if (rc < 0)
		must(NULL);
}

/* ---- messages ---- */

/* line:col of ptr, or of its nearest mapped parent. */
static void locate(const ld *x, const char *ptr, int *line, int *col)
{
	char p[PTR_MAX];
	tgi_snprintf(p, sizeof p, "%s", ptr);
	*line = *col = 1;
	for (;;) {
		if (tgi_srcmap_lookup(x->map, p, line, col) == 0)
			return;
		char *slash = strrchr(p, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
}

/* "name:line:col" of ptr into out. */
static void where_of(const ld *x, const char *ptr, char *out, size_t cap)
{
	char name[256];
	int line, col;
	locate(x, ptr, &line, &col);
	tgi_sanitize(name, sizeof name, x->name);
	tgi_snprintf(out, cap, "%s:%d:%d", name, line, col);
}

__attribute__((format(printf, 3, 4)))
static int fail(const ld *x, const char *ptr, const char *fmt, ...)
{
	char where[320], msg[768], p[PTR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	where_of(x, ptr, where, sizeof where);
	tgi_sanitize(p, sizeof p, ptr);
	tgi_snprintf(x->err, x->errlen, "%s: %s%s%s", where, p, *p ? ": " : "", msg);
	return -1;
}

static int fail_type(const ld *x, const char *ptr, const json_t *v, const char *expected)
{
	char got[96];
	return fail(x, ptr, "expected %s, got %s", expected, tgi_json_describe(v, got, sizeof got));
}

/* Every key of obj (at base) is one of table's: said at the key. */
static int check_keys(const ld *x, const json_t *obj, const char *base,
                      const tgi_conf_key *table, size_t n)
{
	tgi_conf_doc d = { .file = x->name, .root = x->root, .map = x->map, .pointers = 1 };
	tgi_conf_ctx cx = { &d, x->err, x->errlen, NULL };
	return tgi_conf_known_keys(&cx, table, n, obj, base);
}

/* ---- values ---- */

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* An id, tool or profile: 1 to LABEL_MAX bytes, no control character. */
static int check_label(const ld *x, const json_t *v, const char *ptr, const char *what)
{
	char want[96];
	tgi_snprintf(want, sizeof want, "%s (a string)", what);
	if (!json_is_string(v))
		return fail_type(x, ptr, v, want);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (!n)
		return fail(x, ptr, "expected %s, got \"\"", what);
	if (n > LABEL_MAX || strlen(s) != n || has_control(s))
		return fail(x, ptr, "expected %s of at most %d characters and no control character",
		            what, LABEL_MAX);
	return 0;
}

/* A tool name as the configuration allows it: letters, digits, '_' and '-'. */
static int check_tool(const ld *x, const json_t *v, const char *ptr)
{
	if (check_label(x, v, ptr, "a tool name") < 0)
		return -1;
	for (const char *s = json_string_value(v); *s; s++)
		if (!(*s == '_' || *s == '-' || (*s >= '0' && *s <= '9') ||
		      ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z'))) {
			char got[96];
			return fail(x, ptr, "expected a tool name of letters, digits, '_' or '-', got %s",
			            tgi_json_describe(v, got, sizeof got));
		}
	return 0;
}

static int check_request(const ld *x, const json_t *v, const char *ptr)
{
	if (!json_is_string(v))
		return fail_type(x, ptr, v, "the user's message (a string)");
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (strspn(s, " \t\r\n") == n)
		return fail(x, ptr, "expected the user's message, got %s",
		            n ? "only white space" : "\"\"");
	if (n > REQUEST_MAX)
		return fail(x, ptr, "the request is %zu bytes; at most %u", n, REQUEST_MAX);
	if (strlen(s) != n)
		return fail(x, ptr, "the request holds a NUL character");
	return 0;
}

/* ---- expect ---- */

static int decision_bit(const ld *x, const json_t *v, const char *ptr, unsigned *bits)
{
	int d = tgi_decision_parse(json_string_value(v));
	if (d >= 0) {
		*bits |= TGI_EVAL_BIT(d);
		return 0;
	}
	return fail_type(x, ptr, v, "allow, ask or deny");
}

static int load_decision(const ld *x, const json_t *v, const char *ptr, unsigned *bits)
{
	*bits = 0;
	if (!json_is_array(v))
		return decision_bit(x, v, ptr, bits);
	if (!json_array_size(v))
		return fail(x, ptr, "expected allow, ask, deny or a list of them, got an empty list");
	for (size_t i = 0; i < json_array_size(v); i++) {
		char p[PTR_MAX], idx[24];
		snprintf(idx, sizeof idx, "%zu", i);
		tgi_json_pointer_join(p, sizeof p, ptr, idx);
		if (decision_bit(x, json_array_get(v, i), p, bits) < 0)
			return -1;
	}
	return 0;
}

static int load_args(const ld *x, json_t *v, const char *ptr, tgi_eval_case *c)
{
	char err[640];
	if (!json_is_object(v))
		return fail_type(x, ptr, v, "a mapping of the expected arguments");
	c->match = tgi_match_compile(v, err, sizeof err);
	if (!c->match) {
		/* err is "/pointer: sentence" inside args */
		char p[PTR_MAX];
		const char *sep = err[0] == '/' ? strstr(err, ": ") : NULL;
		if (!sep)
			return fail(x, ptr, "%s", err);
		tgi_snprintf(p, sizeof p, "%s%.*s", ptr, (int)(sep - err), err);
		return fail(x, p, "%s", sep + 2);
	}
	c->args = json_incref(v);
	return 0;
}

/* expect: {tool, args?, decision?} or {no_tool: true}. */
static int load_expect(const ld *x, json_t *v, const char *ptr, tgi_eval_case *c)
{
	char p[PTR_MAX];
	if (!json_is_object(v))
		return fail_type(x, ptr, v, "a mapping: {tool: NAME, args?, decision?} or "
		                 "{no_tool: true}");
	if (check_keys(x, v, ptr, expect_keys, TGI_ARRAY_LEN(expect_keys)) < 0)
		return -1;
	json_t *tool = json_object_get(v, "tool"), *no_tool = json_object_get(v, "no_tool");
	json_t *args = json_object_get(v, "args"), *decision = json_object_get(v, "decision");
	if (!tool == !no_tool)
		return fail(x, ptr, "expected exactly one of tool or no_tool");
	if (no_tool) {
		tgi_json_pointer_join(p, sizeof p, ptr, "no_tool");
		if (!json_is_true(no_tool))
			return fail_type(x, p, no_tool, "true (to expect a call, name its tool instead)");
		if (args || decision) {
			tgi_json_pointer_join(p, sizeof p, ptr, args ? "args" : "decision");
			return fail(x, p, "not allowed with no_tool: a reply without a call has no %s",
			            args ? "arguments" : "decision");
		}
		return 0;
	}
	tgi_json_pointer_join(p, sizeof p, ptr, "tool");
	if (check_tool(x, tool, p) < 0)
		return -1;
	c->tool = tgi_strdup(json_string_value(tool));
	c->decisions = TGI_EVAL_ALLOW;
	tgi_json_pointer_join(p, sizeof p, ptr, "decision");
	if (decision && load_decision(x, decision, p, &c->decisions) < 0)
		return -1;
	tgi_json_pointer_join(p, sizeof p, ptr, "args");
	return args ? load_args(x, args, p, c) : 0;
}

/* ---- setup_files ---- */

/* A setup path: relative, no "..", not under .toolgate, a file, no control
 * characters. */
static int check_setup_path(const ld *x, const char *key, const char *ptr, char *norm,
                            size_t cap)
{
	char err[256], k[72];
	tgi_sanitize(k, sizeof k, key);
	if (!*key)
		return fail(x, ptr, "a setup file needs a path, got \"\"");
	if (has_control(key))
		return fail(x, ptr, "setup file \"%s\": a path may not hold control characters", k);
	if (tgi_path_check(key, strlen(key), norm, cap, err, sizeof err) < 0)
		return fail(x, ptr, "setup file \"%s\": %s", k, err);
	size_t n = strlen(key);
	if (!strcmp(norm, ".") || key[n - 1] == '/')
		return fail(x, ptr, "setup file \"%s\" names a directory; setup_files holds files", k);
	for (const char *s = norm; s; s = strchr(s, '/') ? strchr(s, '/') + 1 : NULL)
		if (!strncmp(s, "..", 2) && (s[2] == '/' || !s[2]))
			return fail(x, ptr, "setup file \"%s\": a path may not contain \"..\"", k);
	if (tgi_path_protected(norm) & TGI_PROTECTED_STATE)
		return fail(x, ptr, "setup file \"%s\": a path may not be under .toolgate "
		            "(the gate's own state)", k);
	return 0;
}

/* No path of files is also a directory of another ("a" and "a/b"). */
static int check_setup_tree(const ld *x, const json_t *files, const char *ptr)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)files, key, v) {
		for (const char *s = strchr(key, '/'); s; s = strchr(s + 1, '/')) {
			if (!json_object_getn(files, key, (size_t)(s - key)))
				continue;
			char k[72], d[72];
			tgi_sanitize(k, sizeof k, key);
			tgi_sanitize_n(d, sizeof d, key, (size_t)(s - key), 64);
			return fail(x, ptr, "\"%s\" is a setup file and the directory of \"%s\"", d, k);
		}
	}
	return 0;
}

static int load_setup(const ld *x, const json_t *v, const char *ptr, tgi_eval_case *c)
{
	const char *key;
	const json_t *content;
	if (!json_is_object(v))
		return fail_type(x, ptr, v, "a mapping of relative path to content");
	if (json_object_size(v) > SETUP_FILES_MAX)
		return fail(x, ptr, "%zu setup files; at most %d", json_object_size(v),
		            SETUP_FILES_MAX);
	json_t *files = must(json_object());
	json_object_foreach((json_t *)v, key, content) {
		char p[PTR_MAX], norm[PATH_MAX], k[72];
		tgi_json_pointer_join(p, sizeof p, ptr, key);
		tgi_sanitize(k, sizeof k, key);
		if (check_setup_path(x, key, p, norm, sizeof norm) < 0)
			goto fail;
		if (!json_is_string(content)) {
			fail_type(x, p, content, "the file's content (a string)");
			goto fail;
		}
		if (json_string_length(content) > SETUP_FILE_MAX) {
			fail(x, p, "setup file \"%s\" is %zu bytes; at most %u", k,
			     json_string_length(content), SETUP_FILE_MAX);
			goto fail;
		}
		if (json_object_get(files, norm)) {
			fail(x, p, "setup file \"%s\" is the same file as another one", k);
			goto fail;
		}
		must_ok(json_object_set(files, norm, (json_t *)content));
	}
	if (check_setup_tree(x, files, ptr) < 0)
		goto fail;
	if (json_object_size(files))
		c->setup_files = files;
	else
		json_decref(files);
	return 0;
fail:
	json_decref(files);
	return -1;
}

/* ---- cases ---- */

static void case_free(tgi_eval_case *c)
{
	free(c->id);
	free(c->where);
	free(c->request);
	free(c->tool);
	json_decref(c->args);
	tgi_match_free(c->match);
	free(c->profile);
	json_decref(c->setup_files);
	memset(c, 0, sizeof *c);
}

/* An optional string member: absent is fine, otherwise checked. */
static json_t *member(json_t *obj, const char *base, const char *key, char *ptr)
{
	tgi_json_pointer_join(ptr, PTR_MAX, base, key);
	return json_object_get(obj, key);
}

static int load_case(const ld *x, json_t *v, const char *ptr, size_t index,
                     const char *file_profile, tgi_eval_case *c)
{
	char p[PTR_MAX], where[320];
	json_t *f;
	if (!json_is_object(v))
		return fail_type(x, ptr, v, "a case (a mapping with request and expect)");
	if (check_keys(x, v, ptr, case_keys, TGI_ARRAY_LEN(case_keys)) < 0)
		return -1;
	where_of(x, ptr, where, sizeof where);
	c->where = tgi_strdup(where);

	if ((f = member(v, ptr, "id", p)) && check_label(x, f, p, "an id") < 0)
		return -1;
	if (f) {
		c->id = tgi_strdup(json_string_value(f));
	} else {
		char id[LABEL_MAX + 32];
		tgi_snprintf(id, sizeof id, "%s#%zu", x->stem, index + 1);
		c->id = tgi_strdup(id);
	}

	if (!(f = member(v, ptr, "request", p)))
		return fail(x, ptr, "missing request (the user's message)");
	if (check_request(x, f, p) < 0)
		return -1;
	c->request = tgi_strdup(json_string_value(f));

	if (!(f = member(v, ptr, "expect", p)))
		return fail(x, ptr, "missing expect ({tool: NAME, args?, decision?} or "
		            "{no_tool: true})");
	if (load_expect(x, f, p, c) < 0)
		return -1;

	if ((f = member(v, ptr, "profile", p)) && check_label(x, f, p, "a profile name") < 0)
		return -1;
	c->profile = f ? tgi_strdup(json_string_value(f)) : tgi_strdup(file_profile);

	if ((f = member(v, ptr, "setup_files", p)) && load_setup(x, f, p, c) < 0)
		return -1;
	return 0;
}

/* ---- duplicate ids ---- */

typedef struct id_ref {
	const char *id;
	size_t      at;       /* index in the suite, then in the file's new cases */
} id_ref;

static int id_cmp(const void *a, const void *b)
{
	const id_ref *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : x->at < y->at ? -1 : x->at > y->at;
}

/*
 * The new cases' ids against each other and the suite's (already unique):
 * the earliest new case whose id was seen before is the error, naming
 * where it was first.
 */
static int check_ids(const ld *x, const tgi_eval_suite *s, const tgi_eval_case *nv, size_t nn,
                     const json_t *cases, const char *base)
{
	size_t n = s->n + nn, dup = (size_t)-1, first = 0;
	id_ref *r = tgi_xcalloc(n ? n : 1, sizeof *r);
	for (size_t i = 0; i < n; i++)
		r[i] = (id_ref){i < s->n ? s->v[i].id : nv[i - s->n].id, i};
	qsort(r, n, sizeof *r, id_cmp);
	for (size_t i = 1, g = 0; i < n; i++) {
		if (strcmp(r[i].id, r[g].id)) {
			g = i;
			continue;
		}
		if (i == g + 1 && r[i].at < dup) {
			dup = r[i].at;
			first = r[g].at;
		}
	}
	free(r);
	if (dup == (size_t)-1)
		return 0;

	const tgi_eval_case *d = &nv[dup - s->n];
	const tgi_eval_case *f = first < s->n ? &s->v[first] : &nv[first - s->n];
	char ptr[PTR_MAX], idp[PTR_MAX], idx[24], id[LABEL_MAX + 40];
	snprintf(idx, sizeof idx, "%zu", dup - s->n);
	tgi_json_pointer_join(ptr, sizeof ptr, base, idx);
	tgi_sanitize(id, sizeof id, d->id);
	if (json_object_get(json_array_get(cases, dup - s->n), "id")) {
		tgi_json_pointer_join(idp, sizeof idp, ptr, "id");
		return fail(x, idp, "duplicate id \"%s\", first at %s", id, f->where);
	}
	return fail(x, ptr, "duplicate id \"%s\" (its default id), first at %s", id, f->where);
}

/* ---- files ---- */

/* The cases array of a document, with its pointer, and the file's profile. */
static json_t *file_cases(const ld *x, json_t *root, char *base, const char **profile)
{
	*profile = NULL;
	base[0] = '\0';
	if (json_is_array(root))
		return root;
	if (json_is_null(root)) {
		fail(x, "", "the file holds no case");
		return NULL;
	}
	if (!json_is_object(root)) {
		fail_type(x, "", root, "a list of cases or a mapping {profile?, cases}");
		return NULL;
	}
	if (check_keys(x, root, "", file_keys, TGI_ARRAY_LEN(file_keys)) < 0)
		return NULL;
	json_t *p = json_object_get(root, "profile");
	if (p && check_label(x, p, "/profile", "a profile name") < 0)
		return NULL;
	*profile = json_string_value(p);
	json_t *cases = json_object_get(root, "cases");
	if (!cases) {
		fail(x, "", "missing cases (the list of cases)");
		return NULL;
	}
	strcpy(base, "/cases");
	if (!json_is_array(cases)) {
		fail_type(x, base, cases, "a list of cases");
		return NULL;
	}
	return cases;
}

/* The cases of a parsed file into nv (n of them).  0 or -1. */
static int load_cases(const ld *x, const tgi_eval_suite *s, json_t *cases, const char *base,
                      const char *profile, tgi_eval_case *nv)
{
	size_t n = json_array_size(cases);
	for (size_t i = 0; i < n; i++) {
		char ptr[PTR_MAX], idx[24];
		snprintf(idx, sizeof idx, "%zu", i);
		tgi_json_pointer_join(ptr, sizeof ptr, base, idx);
		if (load_case(x, json_array_get(cases, i), ptr, i, profile, &nv[i]) < 0)
			return -1;
	}
	return check_ids(x, s, nv, n, cases, base);
}

static int load_text(tgi_eval_suite *s, ld *x, const char *text, size_t len)
{
	char err[512], name[256], base[16];
	const char *profile;
	tgi_sanitize(name, sizeof name, x->name);
	if (len > TGI_EVAL_FILE_MAX) {
		tgi_snprintf(x->err, x->errlen, "%s: %zu bytes; an eval file holds at most %u",
		             name, len, TGI_EVAL_FILE_MAX);
		return -1;
	}
	json_t *root = tgi_yaml_parse(text, len, &x->map, err, sizeof err);
	x->root = root;
	if (!root) {
		tgi_snprintf(x->err, x->errlen, "%s:%s", name, err);
		return -1;
	}
	json_t *cases = file_cases(x, root, base, &profile);
	size_t n = json_array_size(cases);
	int rc = -1;
	if (!cases)
		goto out;
	if (!n) {
		fail(x, base, "the file holds no case");
		goto out;
	}
	if (n > CASES_MAX || s->n + n > CASES_MAX) {
		fail(x, base, "%zu cases; a suite holds at most %d", s->n + n, CASES_MAX);
		goto out;
	}
	tgi_eval_case *nv = tgi_xcalloc(n, sizeof *nv);
	if (load_cases(x, s, cases, base, profile, nv) == 0) {
		s->v = tgi_xrealloc(s->v, (s->n + n) * sizeof *s->v);
		memcpy(s->v + s->n, nv, n * sizeof *nv);
		s->n += n;
		must_ok(json_array_append_new(s->files, must(tgi_json_text(x->name, strlen(x->name)))));
		rc = 0;
	} else {
		for (size_t i = 0; i < n; i++)
			case_free(&nv[i]);
	}
	free(nv);
out:
	json_decref(root);
	tgi_srcmap_free(x->map);
	x->map = NULL;
	return rc;
}

/* The file's name without its directory and last extension, as a label:
 * at most LABEL_MAX bytes of whole characters, an invalid byte (a file name
 * need not be UTF-8) as U+FFFD and a control character as a space. */
static char *stem_of(const char *name)
{
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	const char *dot = strrchr(b, '.');
	size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
	char *raw = tgi_strndup(b, n > LABEL_MAX ? LABEL_MAX : n);
	char *stem = tgi_xmalloc(LABEL_MAX + 1);
	tgi_sanitize(stem, LABEL_MAX + 1, raw);
	free(raw);
	return stem;
}

static int load_named(tgi_eval_suite *s, const char *name, const char *stem_from,
                      const char *text, size_t len, char *err, size_t errlen)
{
	char *stem = stem_of(stem_from);
	ld x = {.name = name, .stem = stem, .err = err, .errlen = errlen};
	if (!s->files)
		s->files = must(json_array());
	if (!text)
		text = "";
	int rc = load_text(s, &x, text, len);
	free(stem);
	return rc;
}

int tgi_eval_suite_load(tgi_eval_suite *s, const char *name, const char *text, size_t len,
                        char *err, size_t errlen)
{
	return load_named(s, name ? name : "(eval file)", name ? name : "eval", text, len, err,
	                  errlen);
}

/* Drop the cases and names added since (n, files). */
static void truncate_suite(tgi_eval_suite *s, size_t n, size_t files)
{
	while (s->n > n)
		case_free(&s->v[--s->n]);
	while (json_array_size(s->files) > files)
		json_array_remove(s->files, json_array_size(s->files) - 1);
}

int tgi_eval_suite_builtin(tgi_eval_suite *s, char *err, size_t errlen)
{
	if (!tgi_eval_nbuiltin) {
		tgi_snprintf(err, errlen, "no built-in suite was compiled in");
		return -1;
	}
	if (!s->files)
		s->files = must(json_array());
	size_t n0 = s->n, f0 = json_array_size(s->files);
	for (size_t i = 0; i < tgi_eval_nbuiltin; i++) {
		const tgi_eval_file *f = &tgi_eval_builtin[i];
		char name[256];
		tgi_snprintf(name, sizeof name, "builtin:%s", f->name);
		if (load_named(s, name, f->name, f->text, f->len, err, errlen) < 0) {
			truncate_suite(s, n0, f0);
			return -1;
		}
	}
	return 0;
}

/* ---- digest ---- */

json_t *tgi_eval_decisions_json(unsigned decisions)
{
	json_t *a = must(json_array());
	for (int d = 0; d < TGI_NDECISIONS; d++)
		if (decisions & TGI_EVAL_BIT(d))
			must_ok(json_array_append_new(a, must(json_string(tgi_decision_name(d)))));
	return a;
}

/* o[key] = s as a JSON string, or null when s is NULL. */
static void set_text(json_t *o, const char *key, const char *s)
{
	must_ok(json_object_set_new(o, key, s ? must(tgi_json_text(s, strlen(s))) : json_null()));
}

/* o[key] = v, or null when v is NULL. */
static void set_value(json_t *o, const char *key, json_t *v)
{
	must_ok(json_object_set(o, key, v ? v : json_null()));
}

/* A case as the digest reads it: every key there, null when not given. */
static json_t *case_json(const tgi_eval_case *c)
{
	json_t *expect = must(json_object()), *v = must(json_object());
	set_text(expect, "tool", c->tool);
	set_value(expect, "args", c->args);
	must_ok(json_object_set_new(expect, "decision", c->tool ? tgi_eval_decisions_json(c->decisions)
	                                                        : must(json_array())));
	set_text(v, "id", c->id);
	set_text(v, "request", c->request);
	must_ok(json_object_set_new(v, "expect", expect));
	set_text(v, "profile", c->profile);
	set_value(v, "setup_files", c->setup_files);
	return v;
}

void tgi_eval_suite_digest(const tgi_eval_suite *s, char out[65])
{
	json_t *all = must(json_array());
	for (size_t i = 0; i < s->n; i++)
		must_ok(json_array_append_new(all, case_json(&s->v[i])));
	char *text = tgi_json_canonical(all);
	tgi_sha256_hex(text, strlen(text), out);
	free(text);
	json_decref(all);
}

void tgi_eval_suite_free(tgi_eval_suite *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		case_free(&s->v[i]);
	free(s->v);
	json_decref(s->files);
	memset(s, 0, sizeof *s);
}
