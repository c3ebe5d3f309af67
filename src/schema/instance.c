/*
 * instance.c — the validator's entry points for instances that are not yet
 * a tgi_jv: JSON text, and jansson values (the pipeline's path).
 *
 * Each validating thread has one tgi_jv document, made on first use,
 * reset at the start of every call (so a warm thread parses and validates
 * without malloc) and freed by a pthread key destructor when the thread
 * exits.  A call never keeps a value in it past its return.  After a call
 * whose text was larger than KEEP_MAX the document is freed at once, so a
 * thread does not hold a big arena for the small calls that follow; a
 * jansson instance gives no cheap size, so its arena stays (at most
 * TGI_SCHEMA_DOC_MAX) until the thread's next large text or its exit.
 *
 * Defaults are applied on the jansson side (defaults.c) after the DOM copy
 * validated: the DOM is read-only and only the jansson value goes on down
 * the pipeline.
 *
 * Owns: the per-thread documents and the key that frees them.  Must not:
 * hand out a value of a per-thread document, or validate anything itself
 * (evaluate.c does).
 */
#include <pthread.h>
#include <string.h>

#include "schema/node.h"
#include "util/util.h"

#define KEEP_MAX (256u << 10) /* bytes of text after which the arena is dropped */

static pthread_key_t doc_key;
static pthread_once_t doc_once = PTHREAD_ONCE_INIT;
static int doc_key_ok;

static void doc_destroy(void *d)
{
	tgi_jv_doc_free(d);
}

static void doc_key_make(void)
{
	doc_key_ok = pthread_key_create(&doc_key, doc_destroy) == 0;
}

/* The calling thread's document, reset; NULL only if no key could be
 * made (then the caller uses a document of its own). */
static tgi_jv_doc *thread_doc(void)
{
	pthread_once(&doc_once, doc_key_make);
	if (!doc_key_ok)
		return NULL;
	tgi_jv_doc *d = pthread_getspecific(doc_key);
	if (d) {
		tgi_jv_doc_reset(d);
		return d;
	}
	d = tgi_jv_doc_new(TGI_SCHEMA_DOC_MAX);
	if (pthread_setspecific(doc_key, d) != 0) {
		tgi_jv_doc_free(d);
		return NULL;
	}
	return d;
}

/* Give back a document thread_doc() (or the fallback) handed out. */
static void thread_doc_done(tgi_jv_doc *d, int own, int drop)
{
	if (own) {
		tgi_jv_doc_free(d);
	} else if (drop) {
		pthread_setspecific(doc_key, NULL);
		tgi_jv_doc_free(d);
	}
}

static tgi_jv_doc *doc_acquire(int *own)
{
	tgi_jv_doc *d = thread_doc();
	*own = d == NULL;
	return d ? d : tgi_jv_doc_new(TGI_SCHEMA_DOC_MAX);
}

static void one_error(tgi_schema_result *res, const char *pointer, const char *message)
{
	if (!res)
		return;
	res->nerrors = 1;
	res->truncated = 0;
	tgi_sanitize(res->errors[0].pointer, sizeof res->errors[0].pointer, pointer);
	tgi_sanitize(res->errors[0].message, sizeof res->errors[0].message, message);
	tgi_utf8_trim(res->errors[0].pointer);
	tgi_utf8_trim(res->errors[0].message);
}

int tgi_schema_validate_text(const tgi_schema *s, const char *text, size_t len,
                             tgi_schema_result *res, char *err, size_t errlen)
{
	char local[256];
	if (!err || !errlen)
		err = local, errlen = sizeof local;
	err[0] = '\0';
	if (!s || !text)
		return tgi_schema_validate_jv(s, NULL, res);
	int own;
	tgi_jv_doc *d = doc_acquire(&own);
	const tgi_jv *v = tgi_jv_parse(d, text, len, err, errlen);
	int ok;
	if (v) {
		ok = tgi_schema_validate_jv(s, v, res);
	} else {
		one_error(res, "", err);
		ok = -1;
	}
	thread_doc_done(d, own, len > KEEP_MAX);
	return ok;
}

/* ---- jansson instances ---------------------------------------------------- */

/* Append "/" + the escaped token to ptr (cap bytes, *len used), cutting at
 * the cap. */
static void ptr_push(char *ptr, size_t cap, size_t *len, const char *tok, size_t n)
{
	size_t at = *len;
	if (at + 1 < cap)
		ptr[at++] = '/';
	for (size_t i = 0; i < n && at + 1 < cap; i++) {
		if (tok[i] == '~' || tok[i] == '/') {
			if (at + 2 >= cap)
				break;
			ptr[at++] = '~';
			ptr[at++] = tok[i] == '~' ? '0' : '1';
		} else {
			ptr[at++] = tok[i];
		}
	}
	ptr[at] = '\0';
	*len = at;
}

enum { FAULT_NONE, FAULT_DEEP, FAULT_NUL_KEY };

/*
 * Why tgi_jv_from_json() refused j: the first value nested past
 * TGI_JV_MAX_DEPTH or object with a NUL in a property name, with its
 * pointer in ptr.  FAULT_NONE when neither (then the DOM was too large).
 */
static int fault(const json_t *j, int depth, char *ptr, size_t cap, size_t len)
{
	int container = json_is_array(j) || json_is_object(j);
	if (container && depth >= TGI_JV_MAX_DEPTH)
		return FAULT_DEEP;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++) {
			char num[24];
			size_t at = len;
			tgi_snprintf(num, sizeof num, "%zu", i);
			ptr_push(ptr, cap, &at, num, strlen(num));
			int why = fault(json_array_get(j, i), depth + 1, ptr, cap, at);
			if (why)
				return why;
			ptr[len] = '\0';
		}
	} else if (json_is_object(j)) {
		json_t *o = (json_t *)j; /* iteration does not modify it */
		for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
			const char *key = json_object_iter_key(it);
			size_t klen = json_object_iter_key_len(it), at = len;
			if (memchr(key, '\0', klen))
				return FAULT_NUL_KEY;
			ptr_push(ptr, cap, &at, key, klen);
			int why = fault(json_object_iter_value(it), depth + 1, ptr, cap, at);
			if (why)
				return why;
			ptr[len] = '\0';
		}
	}
	return FAULT_NONE;
}

__attribute__((noinline, cold))
static void report_unheld(const json_t *instance, tgi_schema_result *res)
{
	char ptr[sizeof res->errors[0].pointer] = "", msg[128];
	if (!res)
		return;
	switch (fault(instance, 0, ptr, sizeof ptr, 0)) {
	case FAULT_DEEP:
		tgi_snprintf(msg, sizeof msg, "is nested too deeply (more than %d levels)",
		             TGI_JV_MAX_DEPTH);
		break;
	case FAULT_NUL_KEY:
		tgi_snprintf(msg, sizeof msg, "has a property name holding a NUL byte");
		break;
	default:
		ptr[0] = '\0';
		tgi_snprintf(msg, sizeof msg, "is too large to validate (over %u bytes as a document)",
		             TGI_SCHEMA_DOC_MAX);
	}
	one_error(res, ptr, msg);
}

int tgi_schema_validate(const tgi_schema *s, json_t *instance, int apply_defaults,
                        tgi_schema_result *res)
{
	if (!s || !instance)
		return tgi_schema_validate_jv(s, NULL, res);
	int own;
	tgi_jv_doc *d = doc_acquire(&own);
	const tgi_jv *v = tgi_jv_from_json(d, instance);
	int ok = 0;
	if (v)
		ok = tgi_schema_validate_jv(s, v, res);
	else
		report_unheld(instance, res);
	thread_doc_done(d, own, 0);
	if (ok && apply_defaults && s->root->has_defaults) {
		tgi_rscratch rx;
		tgi_rscratch_init(&rx);
		tgi_schema_apply_defaults(s->root, instance, &rx);
		tgi_rscratch_fini(&rx);
	}
	return ok;
}
