/*
 * impl.h — what a ledger implementation provides (internal to src/store/).
 *
 * store.c holds the public tgi_store_* functions and calls through the
 * table of the handle's implementation, as SQLite calls a VFS: each
 * implementation's handle begins with a struct tgi_store whose impl points
 * at its table.  Every member is required except bucket_take, which only a
 * shared store has.  The contracts are those of store.h, member f being
 * tgi_store_<f>; store.c checks the arguments every implementation would
 * check alike (NULL handles, the schema number range) before calling.
 *
 * Owns: nothing.  Must not: be included outside src/store/.
 */
#ifndef TGI_STORE_IMPL_H
#define TGI_STORE_IMPL_H

#include "store/store.h"

typedef struct tgi_store_impl {
	const char *kind;    /* "sqlite", "postgres" */
	int         shared;  /* tgi_store_shared */

	void (*close)(tgi_store *s);
	int  (*transient)(const tgi_store *s);
	int  (*schema_version)(tgi_store *s, int *version, char *err, size_t errlen);
	int  (*migrate)(tgi_store *s, int to, int dry_run, void (*fn)(void *, int), void *arg,
	                char *err, size_t errlen);

	int (*record)(tgi_store *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
	              const char *idem_scope, tgi_idem_settle settle, char *err, size_t errlen);
	int (*session_manifest)(tgi_store *s, const char *session, char out[65], char *err,
	                        size_t errlen);
	int (*loop_window)(tgi_store *s, const char *session, size_t limit, tgi_strv *out, char *err,
	                   size_t errlen);
	int (*bucket_get)(tgi_store *s, const char *principal, const char *tool, double *tokens,
	                  int64_t *updated_ms, int *found, char *err, size_t errlen);
	int (*bucket_take)(tgi_store *s, const char *principal, const char *tool, double rate,
	                   double burst, int *ok, double *retry_after_s, char *err, size_t errlen);

	int (*idem_claim)(tgi_store *s, const char *scope, const char *op_id, const char *binding,
	                  int lease_s, tgi_idem_info *info, char *err, size_t errlen);
	int (*op_resolve)(tgi_store *s, const char *op_id, int applied, char *err, size_t errlen);

	int (*approval_add)(tgi_store *s, tgi_approval_row *row, char *err, size_t errlen);
	int (*approval_decide)(tgi_store *s, const char *id, int approve, const char *by, char *err,
	                       size_t errlen);
	int (*approval_take)(tgi_store *s, const char *binding, const char *principal, int *found,
	                     char pending_id[37], char *err, size_t errlen);
	int (*approval_get)(tgi_store *s, const char *id, tgi_approval_row *row, int *found,
	                    char *err, size_t errlen);
	int (*approval_list)(tgi_store *s, const char *state, tgi_approval_row **rows, size_t *n,
	                     char *err, size_t errlen);

	int (*pin_check)(tgi_store *s, const char *name, const char *digest, tgi_pin_state *st,
	                 char pinned[65], char *err, size_t errlen);
	int (*pin_set)(tgi_store *s, const char *name, const char *digest, char *err, size_t errlen);

	int (*messages_append)(tgi_store *s, const char *session, const char *api,
	                       const json_t *entries, char *err, size_t errlen);
	int (*messages)(tgi_store *s, const char *session, json_t **out, char api[32], char *err,
	                size_t errlen);

	int (*event)(tgi_store *s, const char *op_id, tgi_event *ev, char *err, size_t errlen);
	int (*ops)(tgi_store *s, const tgi_log_filter *f, json_t **out, char *err, size_t errlen);
	int (*events)(tgi_store *s, const tgi_log_filter *f, int64_t after_seq, json_t **out,
	              char *err, size_t errlen);
	int (*last_seq)(tgi_store *s, int64_t *seq, char *err, size_t errlen);
	int (*stats)(tgi_store *s, int64_t since_ms, json_t **out, char *err, size_t errlen);
	int (*export)(tgi_store *s, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
	              char *err, size_t errlen);

	int  (*watch_open)(tgi_store *s, tgi_watch_what what, tgi_watch **out, char *err,
	                   size_t errlen);
	int  (*watch_wait)(tgi_watch *w, int timeout_ms);
	void (*watch_close)(tgi_watch *w);
} tgi_store_impl;

struct tgi_store {
	const tgi_store_impl *impl;
};

/* Each implementation's watch begins with this. */
struct tgi_watch {
	const tgi_store_impl *impl;
};

int tgi_sqlite_open(const char *path, int flags, tgi_store **out, char *err, size_t errlen);
int tgi_pg_open(const char *url, int flags, tgi_store **out, char *err, size_t errlen);

#endif
