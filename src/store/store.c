/*
 * store.c — the ledger interface's one front (DESIGN §5): picks the
 * implementation at open by where the ledger is, and passes each call to
 * the handle's table (impl.h) under the handle's own lock.  No SQL here.
 *
 * The lock: every call through the table runs between enter() and leave()
 * (SQLite's FULLMUTEX, for a handle of either store), so threads share a
 * handle with no lock of their own.  It is not recursive, and need not be:
 * nothing under it calls back into a public function of the handle (the
 * callbacks of migrate and export are the caller's, told so in store.h;
 * identity.c runs under it through tgi_identity_*).  A watch has its own
 * connection: opening one reads only what the handle fixed at open, and
 * its wait and close never take the lock (a PostgreSQL watch connecting
 * does not hold up the handle's calls).  Two calls are two: what must
 * hold across them is made one call in the store (approval_take finds
 * and spends, the claim spends its approval), because other processes
 * write the ledger between any two calls whatever lock this one holds.
 *
 * Owns: the choice of implementation, the handle's lock, the migrations'
 * titles (one numbering for both stores), and the checks every
 * implementation would make alike (and a decision's reason, kept alike by
 * both; an eval run's row and a list's limit).  Must not: know either
 * database.
 */
#include "store/impl.h"
#include "util/util.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

/* ---- the handle's lock ---- */

/* A thread's name for tgi_store_held: the address of a thread-local,
 * unique among the live threads. */
static _Thread_local char self_mark;
#define SELF ((uintptr_t)&self_mark)

/* What tgi_store_transient says to this thread: whether its own last call
 * on the handle numbered serial met a database out of reach (another
 * thread's success since then does not answer for it). */
static _Thread_local struct { uint64_t serial; int transient; } last_call;
static atomic_uint_least64_t serials;

void tgi_store_init(tgi_store *s, const tgi_store_impl *impl)
{
	s->impl = impl;
	s->serial = atomic_fetch_add(&serials, 1) + 1;
	tgi_group_init(&s->group);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_lock(&s->mu);
	atomic_store_explicit(&s->holder, SELF, memory_order_relaxed);
}

void tgi_store_fini(tgi_store *s)
{
	TGI_STORE_HELD(s);
	if (last_call.serial == s->serial)
		last_call.serial = 0;
	atomic_store_explicit(&s->holder, 0, memory_order_relaxed);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_destroy(&s->mu);
	tgi_group_fini(&s->group);
}

int tgi_store_held(const tgi_store *s)
{
	return atomic_load_explicit(&s->holder, memory_order_relaxed) == SELF;
}

void tgi_store_enter(tgi_store *s)
{
	pthread_mutex_lock(&s->mu);
	atomic_store_explicit(&s->holder, SELF, memory_order_relaxed);
}

/* Leave with the call's answer rc (returned). */
int tgi_store_leave(tgi_store *s, int rc)
{
	TGI_STORE_HELD(s);
	tgi_store_note(s, s->impl->transient(s));
	atomic_store_explicit(&s->holder, 0, memory_order_relaxed);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void tgi_store_note(const tgi_store *s, int transient)
{
	last_call.serial = s->serial;
	last_call.transient = transient;
}

static inline void enter(tgi_store *s)
{
	tgi_store_enter(s);
}

static inline int leave(tgi_store *s, int rc)
{
	return tgi_store_leave(s, rc);
}

int tgi_store_is_url(const char *where)
{
	return where && (!strncasecmp(where, "postgres://", 11) ||
	                 !strncasecmp(where, "postgresql://", 13));
}

int tgi_store_open(const char *where, int flags, tgi_store **out, char *err, size_t errlen)
{
	return tgi_store_open_keyed(where, flags, NULL, out, err, errlen);
}

int tgi_store_open_keyed(const char *where, int flags, const tgi_key_source *key,
                         tgi_store **out, char *err, size_t errlen)
{
	tgi_store *s = NULL;
	int v = 0;
	*out = NULL;
	if (!where || !*where) {
		tgi_snprintf(err, errlen, "the ledger is empty: give a file path or a postgres:// URL");
		return -1;
	}
	/* made held (tgi_store_init): the opener's until the checks are done */
	if ((tgi_store_is_url(where) ? tgi_pg_open(where, flags, &s, err, errlen)
	                             : tgi_sqlite_open(where, flags, &s, err, errlen)) < 0)
		return -1;
	/* a schema left behind has no identity table yet: identified after
	 * its migration (tgi_store_identify) */
	if (!(flags & TGI_STORE_MEMORY) &&
	    (s->impl->schema_version(s, &v, err, errlen) < 0 ||
	     (v == TGI_STORE_SCHEMA_VERSION &&
	      tgi_identity_check(s, key, flags, err, errlen) < 0))) {
		s->impl->close(s);
		return -1;
	}
	if (flags & TGI_STORE_MEMORY)
		tgi_identity_check(s, NULL, flags, err, errlen);
	*out = s;
	return leave(s, 0);
}

int tgi_store_identify(tgi_store *s, const tgi_key_source *key, int flags, char *err,
                       size_t errlen)
{
	enter(s);
	return leave(s, tgi_identity_check(s, key, flags, err, errlen));
}

int tgi_store_adopt(tgi_store *s, const tgi_key_source *key, tgi_ledger_rows *rows, char *err,
                    size_t errlen)
{
	enter(s);
	return leave(s, tgi_identity_adopt(s, key, rows, err, errlen));
}

/* A write to a foreign ledger (opened to be read) is refused. */
int tgi_store_read_only(const tgi_store *s, char *err, size_t errlen)
{
	TGI_STORE_HELD(s);
	if (!s->foreign[0])
		return 0;
	tgi_snprintf(err, errlen, "nothing is written to a foreign ledger: %s", s->foreign);
	return -1;
}

static int read_only(const tgi_store *s, char *err, size_t errlen)
{
	return tgi_store_read_only(s, err, errlen);
}

/* The last call: it waits for one running, then the implementation
 * closes the handle held and frees it (tgi_store_fini). */
void tgi_store_close(tgi_store *s)
{
	if (!s)
		return;
	enter(s);
	s->impl->close(s);
}

const char *tgi_store_kind(const tgi_store *s)
{
	return s->impl->kind;
}

int tgi_store_shared(const tgi_store *s)
{
	return s->impl->shared;
}

int tgi_store_transient(const tgi_store *s)
{
	if (last_call.serial == s->serial)
		return last_call.transient;
	/* no call of this thread on s yet: what the handle says (its lock is
	 * the handle's, not part of the value asked for) */
	tgi_store *h = (tgi_store *)s;
	enter(h);
	return leave(h, h->impl->transient(h));
}

/* ---- schema ---- */

static const char *const titles[TGI_STORE_SCHEMA_VERSION] = {
	"ops, idempotency claims, events, approvals and sessions",
	"pinned descriptions of bridged MCP tools",
	"middleware: loop entries, session manifests, rate-limit buckets, ops indexes",
	"agent conversations (messages)",
	"approvals: the call's dry-run plan and the decision's reason",
	"eval runs (toolgate eval)",
	"the ledger's identity, MACs on the rows that carry authority, idempotency scopes kept as their sha256 and keys in kept rows masked",
	"a record of a few pages: a call's events in its row (SQLite), fewer indexes",
};

const char *tgi_store_migration_title(int n)
{
	return n >= 1 && n <= TGI_STORE_SCHEMA_VERSION ? titles[n - 1] : NULL;
}

int tgi_store_schema_version(tgi_store *s, int *version, char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->schema_version(s, version, err, errlen));
}

int tgi_store_migrate(tgi_store *s, int to, int dry_run, void (*fn)(void *arg, int n), void *arg,
                      char *err, size_t errlen)
{
	if (to < 0 || to > TGI_STORE_SCHEMA_VERSION) {
		tgi_snprintf(err, errlen, "there is no schema version %d; this program knows 1 to %d",
		             to, TGI_STORE_SCHEMA_VERSION);
		return -1;
	}
	enter(s);
	return leave(s, s->impl->migrate(s, to ? to : TGI_STORE_SCHEMA_VERSION, dry_run, fn, arg,
	                                 err, errlen));
}

/* ---- rate-limit buckets ---- */

int tgi_store_bucket_take(tgi_store *s, const char *principal, const char *tool, double rate,
                          double burst, int want, int *took, double *left, double *retry_after_s,
                          char *err, size_t errlen)
{
	*took = 0;
	*left = 0;
	*retry_after_s = 0;
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	if (!isfinite(rate) || rate <= 0 || !isfinite(burst) || burst < 1 || want < 1) {
		tgi_snprintf(err, errlen, "a rate-limit bucket needs a rate above 0, a burst of at "
		             "least 1 token and a take of at least one");
		return leave(s, -1);
	}
	return leave(s, s->impl->bucket_take(s, principal, tool, rate, burst, want, took, left,
	                                     retry_after_s, err, errlen));
}

/* ---- watches ---- */

int tgi_store_watch_open(tgi_store *s, tgi_watch_what what, tgi_watch **out, char *err,
                         size_t errlen)
{
	*out = NULL;
	/* not under the lock: see the top of this file */
	return s->impl->watch_open(s, what, out, err, errlen);
}

int tgi_store_watch_wait(tgi_watch *w, int timeout_ms)
{
	return w->impl->watch_wait(w, timeout_ms);
}

void tgi_store_watch_close(tgi_watch *w)
{
	if (w)
		w->impl->watch_close(w);
}

/* ---- idempotency scopes: only their digest reaches a ledger ---- */

int tgi_scope_is_digest(const char *scope)
{
	if (!scope || strncmp(scope, "sha256:", 7) || strlen(scope) != TGI_SCOPE_DIGEST_LEN)
		return 0;
	for (const char *p = scope + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

void tgi_scope_digest(const char *scope, char out[TGI_SCOPE_DIGEST_LEN + 1])
{
	if (tgi_scope_is_digest(scope)) {
		memcpy(out, scope, TGI_SCOPE_DIGEST_LEN + 1);
		return;
	}
	memcpy(out, "sha256:", 7);
	tgi_sha256_hex(scope, strlen(scope), out + 7);
}

int tgi_store_record(tgi_store *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle settle, char *err, size_t errlen)
{
	char d1[TGI_SCOPE_DIGEST_LEN + 1], d2[TGI_SCOPE_DIGEST_LEN + 1];
	tgi_op_record kept;
	if (op) {
		kept = *op;
		if (op->idem_scope && *op->idem_scope) {
			tgi_scope_digest(op->idem_scope, d1);
			kept.idem_scope = d1;
		}
		if (idem_scope && *idem_scope) {
			tgi_scope_digest(idem_scope, d2);
			idem_scope = d2;
		}
	}
	/* no op: refused by the implementation, with its sentence; the lock
	 * and the foreign check are the group's (group.c) */
	return tgi_group_record(s, op ? &kept : NULL, ev, nev, idem_scope, settle, err, errlen);
}

int tgi_store_session_manifest(tgi_store *s, const char *session, char out[65], char *err,
                               size_t errlen)
{
	enter(s);
	return leave(s, s->impl->session_manifest(s, session, out, err, errlen));
}

int tgi_store_loop_window(tgi_store *s, const char *session, size_t limit, tgi_strv *out,
                          char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->loop_window(s, session, limit, out, err, errlen));
}

int tgi_store_bucket_get(tgi_store *s, const char *principal, const char *tool, double *tokens,
                         int64_t *updated_ms, int *found, char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->bucket_get(s, principal, tool, tokens, updated_ms, found, err,
	                                    errlen));
}

int tgi_store_idem_claim(tgi_store *s, const char *scope, const char *op_id, const char *binding,
                         int lease_s, tgi_idem_info *info, char *err, size_t errlen)
{
	return tgi_store_idem_claim_spend(s, scope, op_id, binding, lease_s, NULL, info, err,
	                                  errlen);
}

int tgi_store_idem_claim_spend(tgi_store *s, const char *scope, const char *op_id,
                               const char *binding, int lease_s,
                               const tgi_approval_spend *spend, tgi_idem_info *info, char *err,
                               size_t errlen)
{
	char d[TGI_SCOPE_DIGEST_LEN + 1];
	memset(info, 0, sizeof *info);
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	if (spend && tgi_check_approval_use(spend->id, spend->principal, spend->binding, err,
	                                    errlen) < 0)
		return leave(s, -1);
	if (scope && *scope) {
		tgi_scope_digest(scope, d);
		scope = d;
	}
	return leave(s, s->impl->idem_claim(s, scope, op_id, binding, lease_s, spend, info, err,
	                                    errlen));
}

int tgi_store_op_resolve(tgi_store *s, const char *op_id, int applied, char *err, size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->op_resolve(s, op_id, applied, err, errlen));
}

int tgi_store_unknown(tgi_store *s, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	enter(s);
	return leave(s, s->impl->unknown(s, out, err, errlen));
}

int tgi_store_approval_add(tgi_store *s, tgi_approval_row *row, char *err, size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->approval_add(s, row, err, errlen));
}

int tgi_store_approval_decide(tgi_store *s, const char *id, int approve, const char *by,
                              const char *reason, char *err, size_t errlen)
{
	char kept[TGI_APPROVAL_REASON_MAX + 1];
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	if (tgi_approval_reason(reason, kept, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->approval_decide(s, id, approve, by, kept[0] ? kept : NULL, err,
	                                         errlen));
}

int tgi_store_approval_find(tgi_store *s, const char *binding, const char *principal,
                            int *found, char id[37], int *forged, char *err, size_t errlen)
{
	int none = 0;
	*found = 0;
	if (id)
		id[0] = '\0';
	if (!forged)
		forged = &none;
	*forged = 0;
	if (tgi_check_approval_take(binding, principal, err, errlen) < 0)
		return -1;
	enter(s);
	return leave(s, s->impl->approval_find(s, binding, principal, found, id, forged, err,
	                                       errlen));
}

/* Another process (or thread) may use the approval found before this one
 * does: then the next one answers (a few times; more is a busy binding).
 * The find and the use are two calls, each under the lock: the use is the
 * one that counts, in one transaction of its own. */
int tgi_store_approval_take(tgi_store *s, const char *binding, const char *principal,
                            int *found, char pending_id[37], char *err, size_t errlen)
{
	char id[37];
	for (int tries = 0; tries < 8; tries++) {
		int used = 0;
		if (tgi_store_approval_find(s, binding, principal, found, id, NULL, err, errlen) < 0)
			return -1;
		if (*found != 1) {
			if (pending_id)
				memcpy(pending_id, id, 37);
			return 0;
		}
		if (tgi_store_approval_use(s, id, principal, binding, &used, err, errlen) < 0)
			return -1;
		if (used == 1) {
			if (pending_id)
				pending_id[0] = '\0';
			return 0;
		}
	}
	tgi_snprintf(err, errlen, "cannot take an approval: others took each one found first");
	return -1;
}

int tgi_store_approval_use(tgi_store *s, const char *id, const char *principal,
                           const char *binding, int *used, char *err, size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	*used = 0;
	if (tgi_check_approval_use(id, principal, binding, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->approval_use(s, id, principal, binding, used, err, errlen));
}

int tgi_store_approval_get(tgi_store *s, const char *id, tgi_approval_row *row, int *found,
                           char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->approval_get(s, id, row, found, err, errlen));
}

int  tgi_store_approval_list(tgi_store *s, const char *state, tgi_approval_row **rows, size_t *n,
                             char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->approval_list(s, state, rows, n, err, errlen));
}

int tgi_store_pin_check(tgi_store *s, const char *name, const char *digest, tgi_pin_state *st,
                        char pinned[65], char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->pin_check(s, name, digest, st, pinned, err, errlen));
}

int tgi_store_pin_set(tgi_store *s, const char *name, const char *digest, char *err,
                      size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->pin_set(s, name, digest, err, errlen));
}

int tgi_store_messages_append(tgi_store *s, const char *session, const char *api,
                              const json_t *entries, char *err, size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->messages_append(s, session, api, entries, err, errlen));
}

int tgi_store_messages(tgi_store *s, const char *session, json_t **out, char api[32],
                       char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->messages(s, session, out, api, err, errlen));
}

int tgi_store_eval_put(tgi_store *s, const tgi_eval_row *r, char *err, size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	if (tgi_check_eval_row(r, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->eval_put(s, r, err, errlen));
}

int tgi_store_eval_list(tgi_store *s, const char *model, int64_t limit, json_t **out, char *err,
                        size_t errlen)
{
	*out = NULL;
	if (!tgi_eval_text_ok(model)) {   /* no run was kept with it: none, in either store */
		*out = json_array();
		return 0;
	}
	enter(s);
	return leave(s, s->impl->eval_list(s, model, tgi_eval_limit(limit), out, err, errlen));
}

int tgi_store_event(tgi_store *s, const char *op_id, tgi_event *ev, char *err, size_t errlen)
{
	enter(s);
	if (read_only(s, err, errlen) < 0)
		return leave(s, -1);
	return leave(s, s->impl->event(s, op_id, ev, err, errlen));
}

int tgi_store_ops(tgi_store *s, const tgi_log_filter *f, json_t **out, char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->ops(s, f, out, err, errlen));
}

int tgi_store_events(tgi_store *s, const tgi_log_filter *f, int64_t after_seq, json_t **out,
                     char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->events(s, f, after_seq, out, err, errlen));
}

int tgi_store_last_seq(tgi_store *s, int64_t *seq, char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->last_seq(s, seq, err, errlen));
}

int tgi_store_stats(tgi_store *s, int64_t since_ms, json_t **out, char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->stats(s, since_ms, out, err, errlen));
}

int tgi_store_export(tgi_store *s, int64_t since_ms, int (*fn)(void *arg, json_t *row), void *arg,
                     char *err, size_t errlen)
{
	enter(s);
	return leave(s, s->impl->export(s, since_ms, fn, arg, err, errlen));
}
