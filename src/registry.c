/*
 * registry.c — the table of tools one gate knows: built-in rows plus the
 * configured command tools, each with its compiled input schema.
 *
 * Owns: tgi_entry runtime facts (schemas, availability cache) and the heap
 * rows of configured tools.  Must not: decide policy or run tools for a
 * call (only availability check commands, once).
 */
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exec/sandbox.h"
#include "exec/spawn.h"
#include "schema/schema.h"
#include "util/util.h"

struct tgi_registry {
	tgi_entry     **v;        /* owned: the tools that can be found, in order */
	size_t          n, cap;
	size_t          nfixed;   /* v[0..nfixed) are built-in and configured: never replaced */
	tgi_entry     **retired;  /* owned: replaced or dropped run-time entries (still held) */
	size_t          nretired, retired_cap;
	tgi_tool       *cfg_rows; /* owned rows of configured tools */
	pthread_rwlock_t mu;      /* guards v, n, retired */
	pthread_mutex_t avail_mu; /* guards the availability cache */
	tgi_tool_source source;   /* what offers tools that come and go (zero: none) */
	void          (*listed_fn)(void *arg, const char *name);  /* set before calls run */
	void           *listed_arg;
	char          manifest[65];   /* sha256 of the gate's profile's definitions */
	int           manifest_fresh; /* manifest is for the tools as they are now */
	unsigned      manifest_gen;   /* counts changes of the tools */
	pthread_mutex_t manifest_mu;  /* guards the three above */
};

static const tgi_tool *const builtin_rows[] = {
	&tgi_tool_read_file,
	&tgi_tool_list_dir,
	&tgi_tool_search_files,
	&tgi_tool_write_file,
	&tgi_tool_apply_patch,
	&tgi_tool_shell,
};

/* The schema as exported: for REQUIRES_KEY tools it gains a required
 * string `idempotency_key`. */
static json_t *export_schema(const tgi_tool *t, const json_t *given, char *err, size_t errlen)
{
	json_t *s;
	if (given) {
		s = json_deep_copy(given);
	} else {
		json_error_t je;
		s = json_loads(t->input_schema, JSON_REJECT_DUPLICATES, &je);
		if (!s) {
			tgi_snprintf(err, errlen, "tool \"%s\": built-in schema: %s", t->name, je.text);
			return NULL;
		}
	}
	if (!json_is_object(s)) {
		tgi_snprintf(err, errlen, "tool \"%s\": input_schema must be an object", t->name);
		json_decref(s);
		return NULL;
	}
	if (t->flags & TGI_T_REQUIRES_KEY) {
		json_t *props = json_object_get(s, "properties");
		if (!props) {
			props = json_object();
			json_object_set_new(s, "properties", props);
		}
		json_t *req = json_object_get(s, "required");
		if (!req) {
			req = json_array();
			json_object_set_new(s, "required", req);
		}
		if (!json_is_object(props) || !json_is_array(req)) {
			tgi_snprintf(err, errlen, "tool \"%s\": input_schema properties/required malformed",
			             t->name);
			json_decref(s);
			return NULL;
		}
		json_object_set_new(props, "idempotency_key",
		                    json_pack("{s:s, s:i, s:i, s:s}", "type", "string", "minLength", 1,
		                              "maxLength", 256, "description",
		                              "A key unique to this intended action; a retry with the "
		                              "same key returns the first result instead of acting again."));
		int have = 0;
		size_t i;
		json_t *v;
		json_array_foreach(req, i, v)
			if (json_is_string(v) && !strcmp(json_string_value(v), "idempotency_key"))
				have = 1;
		if (!have)
			json_array_append_new(req, json_string("idempotency_key"));
	}
	return s;
}

static void entry_free(tgi_entry *e);

/* A new entry for t with its schemas compiled; NULL with err. */
static tgi_entry *make_entry(const tgi_tool *t, const json_t *given_schema,
                             const json_t *output_schema, int assert_formats, char *err,
                             size_t errlen)
{
	char serr[512];
	tgi_entry *e = tgi_xcalloc(1, sizeof *e);
	e->row = t;
	e->schema_json = export_schema(t, given_schema, err, errlen);
	if (!e->schema_json) {
		free(e);
		return NULL;
	}
	e->schema = tgi_schema_compile(e->schema_json, assert_formats ? TGI_SCHEMA_ASSERT_FORMATS : 0,
	                               serr, sizeof serr);
	if (!e->schema) {
		tgi_snprintf(err, errlen, "tool \"%s\": input_schema does not compile: %s", t->name, serr);
		json_decref(e->schema_json);
		free(e);
		return NULL;
	}
	e->output_schema = json_is_object(output_schema) ? json_deep_copy(output_schema) : NULL;
	/* a command tool's output is held to it (a bridged tool's is its server's
	 * to keep, and the schema its server's to write) */
	if (e->output_schema && t->handler == tgi_command_run) {
		e->output_check = tgi_schema_compile(e->output_schema,
		                                     assert_formats ? TGI_SCHEMA_ASSERT_FORMATS : 0,
		                                     serr, sizeof serr);
		if (!e->output_check) {
			tgi_snprintf(err, errlen, "tool \"%s\": output_schema does not compile: %s",
			             t->name, serr);
			entry_free(e);
			return NULL;
		}
	}
	tgi_schema_sensitive_keys(e->schema_json, &e->sensitive);
	return e;
}

static void entry_free(tgi_entry *e)
{
	json_decref(e->schema_json);
	json_decref(e->output_schema);
	tgi_schema_free(e->schema);
	tgi_schema_free(e->output_check);
	tgi_strv_free(&e->sensitive);
	free(e);
}

static void push(tgi_entry ***v, size_t *n, size_t *cap, tgi_entry *e)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = tgi_xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*n)++] = e;
}

static int add_entry(tgi_registry *r, const tgi_tool *t, const json_t *given_schema,
                     const json_t *output_schema, const tgi_config *cfg, char *err,
                     size_t errlen)
{
	tgi_entry *e = make_entry(t, given_schema, output_schema, cfg->assert_formats, err, errlen);
	if (!e)
		return -1;
	push(&r->v, &r->n, &r->cap, e);
	return 0;
}

int tgi_registry_build(const tgi_config *cfg, tgi_registry **out, char *err, size_t errlen)
{
	size_t nb = TGI_ARRAY_LEN(builtin_rows);
	tgi_registry *r = tgi_xcalloc(1, sizeof *r);
	r->cfg_rows = tgi_xcalloc(cfg->ntools ? cfg->ntools : 1, sizeof *r->cfg_rows);
	pthread_rwlock_init(&r->mu, NULL);
	pthread_mutex_init(&r->avail_mu, NULL);
	pthread_mutex_init(&r->manifest_mu, NULL);

	for (size_t i = 0; i < nb; i++)
		if (add_entry(r, builtin_rows[i], NULL, NULL, cfg, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < cfg->ntools; i++) {
		const tgi_tool_cfg *tc = &cfg->tools[i];
		tgi_tool *t = &r->cfg_rows[i];
		t->name = tc->name;
		t->description = tc->description;
		t->category = tc->category ? tc->category : "runtime";
		t->flags = tc->flags;
		t->handler = tgi_command_run;
		t->plan = tgi_command_plan;
		t->max_result_chars = tc->max_result_chars;
		t->timeout_s = tc->timeout_s;
		t->data = tc;
		if (add_entry(r, t, tc->input_schema, tc->output_schema, cfg, err, errlen) < 0) {
			char where[128];
			size_t len = strlen(err);
			tgi_snprintf(where, sizeof where, " (%s)", tc->where);
			if (len + strlen(where) < errlen)
				strcat(err, where);
			goto fail;
		}
		r->v[r->n - 1]->aliases = tc->aliases;
	}
	r->nfixed = r->n;
	*out = r;
	return 0;
fail:
	tgi_registry_free(r);
	return -1;
}

void tgi_registry_free(tgi_registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		entry_free(r->v[i]);
	for (size_t i = 0; i < r->nretired; i++)
		entry_free(r->retired[i]);
	free(r->v);
	free(r->retired);
	free(r->cfg_rows);
	pthread_rwlock_destroy(&r->mu);
	pthread_mutex_destroy(&r->avail_mu);
	pthread_mutex_destroy(&r->manifest_mu);
	free(r);
}

/* Index of the entry named name, or -1; under r->mu. */
static long find_locked(const tgi_registry *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i]->row->name, name))
			return (long)i;
	return -1;
}

const tgi_entry *tgi_registry_find(tgi_registry *r, const char *name)
{
	pthread_rwlock_rdlock(&r->mu);
	long i = find_locked(r, name);
	const tgi_entry *e = i < 0 ? NULL : r->v[i];
	pthread_rwlock_unlock(&r->mu);
	return e;
}

size_t tgi_registry_count(const tgi_registry *cr)
{
	tgi_registry *r = (tgi_registry *)cr; /* the lock is ours to take */
	pthread_rwlock_rdlock(&r->mu);
	size_t n = r->n;
	pthread_rwlock_unlock(&r->mu);
	return n;
}

const tgi_entry *tgi_registry_at(tgi_registry *r, size_t i)
{
	pthread_rwlock_rdlock(&r->mu);
	const tgi_entry *e = i < r->n ? r->v[i] : NULL;
	pthread_rwlock_unlock(&r->mu);
	return e;
}

int tgi_registry_put(tgi_registry *r, const tgi_tool *row, const json_t *input_schema,
                     const json_t *output_schema, const json_t *aliases, int assert_formats,
                     char *err, size_t errlen)
{
	tgi_entry *e = make_entry(row, input_schema, output_schema, assert_formats, err, errlen);
	if (!e)
		return -1;
	e->aliases = aliases; /* set before the entry is published under r->mu */
	pthread_rwlock_wrlock(&r->mu);
	long i = find_locked(r, row->name);
	if (i >= 0 && (size_t)i < r->nfixed) {
		pthread_rwlock_unlock(&r->mu);
		entry_free(e);
		tgi_snprintf(err, errlen, "tool \"%s\" is already a built-in or configured tool",
		             row->name);
		return -1;
	}
	if (i >= 0) {
		push(&r->retired, &r->nretired, &r->retired_cap, r->v[i]);
		r->v[i] = e;
	} else {
		push(&r->v, &r->n, &r->cap, e);
	}
	pthread_rwlock_unlock(&r->mu);
	return 0;
}

void tgi_registry_drop(tgi_registry *r, const char *name)
{
	pthread_rwlock_wrlock(&r->mu);
	long i = find_locked(r, name);
	if (i >= 0 && (size_t)i >= r->nfixed) {
		push(&r->retired, &r->nretired, &r->retired_cap, r->v[i]);
		memmove(&r->v[i], &r->v[i + 1], (r->n - (size_t)i - 1) * sizeof *r->v);
		r->n--;
	}
	pthread_rwlock_unlock(&r->mu);
}

void tgi_tool_title(const tgi_tool *t, char *out, size_t cap)
{
	if (t->title) {
		tgi_snprintf(out, cap, "%s", t->title);
		return;
	}
	tgi_snprintf(out, cap, "%s", t->name);
	for (char *p = out; *p; p++)
		if (*p == '_')
			*p = ' ';
	if (out[0] >= 'a' && out[0] <= 'z')
		out[0] = (char)(out[0] - 'a' + 'A');
}

/* Availability: every requires_env variable set and non-empty, and the
 * check command (if any) exits 0 within 10 s.  Anything else — including a
 * check that cannot start — is unavailable (fail closed). */
static void check_available(tgi_entry *e)
{
	const tgi_tool_cfg *tc = e->row->handler == tgi_command_run ? e->row->data : NULL;
	e->available = 1;
	if (!tc)
		return;
	/* no backend that can hold its sandbox: it cannot run (fail closed);
	 * hosts without the gate's proxy are refused when it runs */
	char why[sizeof e->unavailable_reason - 64];
	if (!tgi_sandbox_usable(&tc->sandbox, 1, why, sizeof why)) {
		e->available = 0;
		tgi_snprintf(e->unavailable_reason, sizeof e->unavailable_reason,
		             "tool \"%s\" is unavailable: %s", e->row->name, why);
		return;
	}
	for (size_t i = 0; i < tc->requires_env.n; i++) {
		const char *v = getenv(tc->requires_env.v[i]);
		if (!v || !*v) {
			e->available = 0;
			tgi_snprintf(e->unavailable_reason, sizeof e->unavailable_reason,
			             "tool \"%s\" is unavailable: environment variable %s is not set",
			             e->row->name, tc->requires_env.v[i]);
			return;
		}
	}
	if (tc->check.n) {
		tgi_spawn_result res;
		char *envp[] = {NULL, NULL, NULL};
		char path[4096], home[4096];
		tgi_snprintf(path, sizeof path, "PATH=%s",
		             getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
		tgi_snprintf(home, sizeof home, "HOME=%s", getenv("HOME") ? getenv("HOME") : "/");
		envp[0] = path;
		envp[1] = home;
		int rc = tgi_spawn(tc->check.v, NULL, envp, NULL, 0, 10, 4096, &res);
		if (rc < 0 || !res.exited || res.exit_code != 0) {
			e->available = 0;
			tgi_snprintf(e->unavailable_reason, sizeof e->unavailable_reason,
			             "tool \"%s\" is unavailable: its check command %s", e->row->name,
			             rc < 0 || res.spawn_errno ? "could not start"
			             : res.timed_out           ? "timed out"
			                                       : "failed");
		}
		if (rc == 0)
			tgi_spawn_result_free(&res);
	}
}

int tgi_registry_available(tgi_registry *r, const tgi_entry *ce, char *reason, size_t cap)
{
	tgi_entry *e = (tgi_entry *)ce; /* the cache is ours; entries live in r->v */
	char why[sizeof e->unavailable_reason] = "";
	int ok;
	if (e->row->available) {
		/* asked every time, outside the lock: it may talk to the ledger */
		ok = e->row->available(e->row->data, why, sizeof why);
	} else {
		pthread_mutex_lock(&r->avail_mu);
		if (!e->avail_checked) {
			check_available(e);
			e->avail_checked = 1;
		}
		ok = e->available;
		memcpy(why, e->unavailable_reason, sizeof why);
		pthread_mutex_unlock(&r->avail_mu);
	}
	if (reason && cap)
		tgi_snprintf(reason, cap, "%s", ok == 1 ? "" : why);
	return ok;
}

int tgi_registry_in_profile(const tgi_config *cfg, const char *profile, const tgi_entry *e)
{
	for (size_t i = 0; i < cfg->nprofiles; i++) {
		const tgi_profile_cfg *p = &cfg->profiles[i];
		if (strcmp(p->name, profile))
			continue;
		if (p->read_only_only && !(e->row->flags & TGI_T_READ_ONLY))
			return 0;
		for (size_t j = 0; j < p->categories.n; j++)
			if (!strcmp(p->categories.v[j], "*") ||
			    !strcmp(p->categories.v[j], e->row->category))
				return 1;
		return 0;
	}
	return -1;
}

unsigned tgi_contract(const tgi_tool *t, const json_t *args)
{
	return t->flags_for ? t->flags_for(t->flags, args) : t->flags;
}

/* ---- a source of tools, and what is listed ---- */

void tgi_registry_set_source(tgi_registry *r, const tgi_tool_source *src)
{
	r->source = *src;
}

const tgi_entry *tgi_registry_need(tgi_registry *r, const char *name)
{
	const tgi_entry *e = tgi_registry_find(r, name);
	if (!e && r->source.need && r->source.need(r->source.arg, name))
		e = tgi_registry_find(r, name);
	return e;
}

void tgi_registry_need_all(tgi_registry *r)
{
	if (r->source.need_all)
		r->source.need_all(r->source.arg);
}

int tgi_registry_all_listed(tgi_registry *r)
{
	return !r->source.all_listed || r->source.all_listed(r->source.arg);
}

int tgi_registry_explain(tgi_registry *r, const char *name, char *out, size_t cap)
{
	return r->source.explain && r->source.explain(r->source.arg, name, out, cap);
}

void tgi_registry_on_change(tgi_registry *r, void (*fn)(void *arg), void *arg)
{
	if (r->source.on_change)
		r->source.on_change(r->source.arg, fn, arg);
}

void tgi_registry_on_listed(tgi_registry *r, void (*fn)(void *arg, const char *name), void *arg)
{
	r->listed_fn = fn;
	r->listed_arg = arg;
}

void tgi_registry_listed(tgi_registry *r, const char *name)
{
	if (r->listed_fn)
		r->listed_fn(r->listed_arg, name);
}

void tgi_registry_changed(tgi_registry *r)
{
	pthread_mutex_lock(&r->manifest_mu);
	r->manifest_gen++;
	r->manifest_fresh = 0;
	pthread_mutex_unlock(&r->manifest_mu);
}

json_t *tgi_tool_def(const tgi_entry *e)
{
	unsigned f = e->row->flags;
	char title[160];
	tgi_tool_title(e->row, title, sizeof title);
	/* read-only is never destructive; anything else may be, as MCP reads a missing hint.
	 * The schemas are copied, not shared: calls on several threads list the
	 * tools at once (the manifest, tools/list), and a shared reference count
	 * would be touched by all of them */
	json_t *d = json_pack("{s:s, s:s, s:s, s:o, s:s, s:{s:b, s:b, s:b, s:b}}", "name",
	                      e->row->name, "title", title, "description",
	                      e->row->description ? e->row->description : "", "input_schema",
	                      json_deep_copy(e->schema_json), "category", e->row->category, "annotations",
	                      "readOnlyHint", (f & TGI_T_READ_ONLY) != 0, "destructiveHint",
	                      (f & TGI_T_DESTRUCTIVE) != 0, "idempotentHint",
	                      (f & (TGI_T_IDEMPOTENT | TGI_T_READ_ONLY)) != 0, "openWorldHint",
	                      e->row->handler == tgi_command_run || e->row->mcp_result);
	if (e->output_schema)
		json_object_set_new(d, "output_schema", json_deep_copy(e->output_schema));
	return d;
}

json_t *tgi_registry_defs(tgi_registry *r, const tgi_config *cfg, const char *profile,
                          char **errmsg)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < tgi_registry_count(r); i++) {
		const tgi_entry *e = tgi_registry_at(r, i);
		int in = tgi_registry_in_profile(cfg, profile, e);
		if (in < 0) {
			json_decref(arr);
			char names[512];
			tgi_fail(errmsg, "unknown profile \"%s\"; the profiles are %s", profile,
			         tgi_profile_names(cfg, names, sizeof names));
			return NULL;
		}
		if (!in || tgi_registry_available(r, e, NULL, 0) != 1)
			continue;
		json_array_append_new(arr, tgi_tool_def(e));
	}
	return arr;
}

int tgi_registry_digest(tgi_registry *r, const tgi_config *cfg, const char *profile,
                        char out[65], char **errmsg)
{
	json_t *defs = tgi_registry_defs(r, cfg, profile, errmsg);
	if (!defs)
		return -1;
	char *text = tgi_json_canonical(defs);
	tgi_sha256_hex(text, strlen(text), out);
	free(text);
	json_decref(defs);
	return 0;
}

void tgi_registry_manifest(tgi_registry *r, const tgi_config *cfg, const char *profile,
                           char out[65])
{
	char d[65];
	if (!tgi_registry_all_listed(r)) {
		out[0] = '\0';                 /* a source has not listed yet: not known */
		return;
	}
	pthread_mutex_lock(&r->manifest_mu);
	int fresh = r->manifest_fresh;
	unsigned gen = r->manifest_gen;
	memcpy(out, r->manifest, sizeof d);
	pthread_mutex_unlock(&r->manifest_mu);
	if (fresh || tgi_registry_digest(r, cfg, profile, d, NULL) < 0)
		return;
	pthread_mutex_lock(&r->manifest_mu);
	if (r->manifest_gen == gen) {
		memcpy(r->manifest, d, sizeof d);
		r->manifest_fresh = 1;
	}
	pthread_mutex_unlock(&r->manifest_mu);
	memcpy(out, d, sizeof d);
}
