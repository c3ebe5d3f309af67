/*
 * impl.h — what a ledger implementation provides (internal to src/store/).
 *
 * store.c holds the public tgi_store_* functions and calls through the
 * table of the handle's implementation, as SQLite calls a VFS: each
 * implementation's handle begins with a struct tgi_store whose impl points
 * at its table.  Every member is required but the batch_* ones.  The contracts are those of store.h, member f being
 * tgi_store_<f>; store.c checks the arguments every implementation would
 * check alike (NULL handles, the schema number range) before calling.
 *
 * Below the table, the helpers both implementations share (common.c).
 *
 * Owns: nothing.  Must not: be included outside src/store/.
 */
#ifndef TGI_STORE_IMPL_H
#define TGI_STORE_IMPL_H

#include "store/store.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* A ledger's identity row (table ledger; identity.c). */
typedef struct tgi_ledger_ident {
	char    id[37];
	char    bound[4200];
	int64_t created_ms;
	char    mac[65];
} tgi_ledger_ident;

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
	/* Group commit (group.c), optional: an implementation without it
	 * leaves all three NULL and each record commits alone.  batch_begin
	 * opens one transaction; batch_record writes one op as record would,
	 * inside it, so that it fails alone: 0, -1 with err (that op's rows
	 * are undone, the others stay), or -2 when its failure undid the
	 * whole transaction; batch_commit commits (one sync for them all), or
	 * fails with err, having rolled back.  Each -1 with err otherwise. */
	int (*batch_begin)(tgi_store *s, char *err, size_t errlen);
	int (*batch_record)(tgi_store *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
	                    const char *idem_scope, tgi_idem_settle settle, char *err,
	                    size_t errlen);
	int (*batch_commit)(tgi_store *s, char *err, size_t errlen);
	int (*session_manifest)(tgi_store *s, const char *session, char out[65], char *err,
	                        size_t errlen);
	int (*loop_window)(tgi_store *s, const char *session, size_t limit, tgi_strv *out, char *err,
	                   size_t errlen);
	int (*bucket_get)(tgi_store *s, const char *principal, const char *tool, double *tokens,
	                  int64_t *updated_ms, int *found, char *err, size_t errlen);
	int (*bucket_take)(tgi_store *s, const char *principal, const char *tool, double rate,
	                   double burst, int want, int *took, double *left, double *retry_after_s, char *err,
	                   size_t errlen);

	int (*idem_claim)(tgi_store *s, const char *scope, const char *op_id, const char *binding,
	                  int lease_s, const tgi_approval_spend *spend, tgi_idem_info *info,
	                  char *err, size_t errlen);
	int (*op_resolve)(tgi_store *s, const char *op_id, int applied, char *err, size_t errlen);

	int (*approval_add)(tgi_store *s, tgi_approval_row *row, char *err, size_t errlen);
	int (*approval_decide)(tgi_store *s, const char *id, int approve, const char *by,
	                       const char *reason, char *err, size_t errlen);
	int (*approval_find)(tgi_store *s, const char *binding, const char *principal, int *found,
	                     char id[37], int *forged, char *err, size_t errlen);
	int (*approval_use)(tgi_store *s, const char *id, const char *principal, const char *binding,
	                    int *used, char *err, size_t errlen);
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

	int (*eval_put)(tgi_store *s, const tgi_eval_row *r, char *err, size_t errlen);
	int (*eval_list)(tgi_store *s, const char *model, int64_t limit, json_t **out, char *err,
	                 size_t errlen);

	int (*event)(tgi_store *s, const char *op_id, tgi_event *ev, char *err, size_t errlen);
	int (*ops)(tgi_store *s, const tgi_log_filter *f, json_t **out, char *err, size_t errlen);
	int (*events)(tgi_store *s, const tgi_log_filter *f, int64_t after_seq, json_t **out,
	              char *err, size_t errlen);
	int (*last_seq)(tgi_store *s, int64_t *seq, char *err, size_t errlen);
	int (*stats)(tgi_store *s, int64_t since_ms, json_t **out, char *err, size_t errlen);
	int (*export)(tgi_store *s, int64_t since_ms, int (*fn)(void *, json_t *), void *arg,
	              char *err, size_t errlen);
	int (*unknown)(tgi_store *s, json_t **out, char *err, size_t errlen);

	/* The identity (identity.c): the ledger's name fit for a sentence;
	 * what a ledger here is bound to (SQLite: the file's real path;
	 * PostgreSQL: "postgresql database NAME"); the identity row
	 * (*found 0: none).  ident_put, in one transaction, counts the rows
	 * into *rows (may be NULL) and, with adopt, replaces the identity with
	 * id (*made 1); without, inserts id only when there is no identity
	 * (else *made 0) and no records (else *made -1, nothing written). */
	const char *(*shown)(const tgi_store *s);
	int (*ident_bound)(tgi_store *s, char *out, size_t cap, char *err, size_t errlen);
	int (*ident_get)(tgi_store *s, tgi_ledger_ident *id, int *found, char *err, size_t errlen);
	int (*ident_put)(tgi_store *s, const tgi_ledger_ident *id, int adopt, int *made,
	                 tgi_ledger_rows *rows, char *err, size_t errlen);

	int  (*watch_open)(tgi_store *s, tgi_watch_what what, tgi_watch **out, char *err,
	                   size_t errlen);
	int  (*watch_wait)(tgi_watch *w, int timeout_ms);
	void (*watch_close)(tgi_watch *w);
} tgi_store_impl;

#define TGI_KEY_BYTES 32

/* Load the machine key into key: 0, or -1 with a sentence in err. */
int tgi_key_load(const tgi_key_source *src, unsigned char key[TGI_KEY_BYTES], char *err,
                 size_t errlen);

/*
 * Group commit (group.c).  A record waits in the handle's queue; the first
 * thread to find no leader leads: it takes every record queued, writes
 * them in one transaction under the handle's lock (batch_*), commits them
 * with one sync, and wakes their threads, each with its own answer.
 * Records that come while it commits queue for the next leader.
 */
typedef struct tgi_group_job tgi_group_job;
typedef struct tgi_group {
	pthread_mutex_t mu;     /* guards the rest; never held with the handle's lock wanted */
	pthread_cond_t  cv;     /* a batch was answered */
	tgi_group_job  *head;   /* queued, oldest first */
	tgi_group_job **tail;
	int             leading; /* a leader is writing a batch */
	uint64_t        batches; /* batches of more than one record written */
	uint64_t        grouped; /* the records in them */
} tgi_group;

void tgi_group_init(tgi_group *g);
void tgi_group_fini(tgi_group *g);
/* tgi_store_record's call, after its arguments are made ready (scopes
 * as digests): through the batch when s's implementation has one. */
int  tgi_group_record(tgi_store *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
                      const char *idem_scope, tgi_idem_settle settle, char *err,
                      size_t errlen);
/* Records queued for the next leader now (what a test waits on). */
size_t tgi_group_queued(tgi_store *s);

struct tgi_store {
	const tgi_store_impl *impl;
	tgi_group             group;
	/* the handle's lock (store.c): every function of impl runs holding it,
	 * and holder names the thread that holds it (tgi_store_held); serial
	 * tells this handle apart from every other one made by the process */
	pthread_mutex_t       mu;
	_Atomic uintptr_t     holder;
	uint64_t              serial;
	/* the ledger's identity and the keys derived for it from the machine
	 * key (mac.c); keyed 0 until tgi_store_keys_derive */
	int           keyed;
	char          ledger_id[37];
	unsigned char row_key[TGI_KEY_BYTES];   /* MACs of rows that carry authority */
	unsigned char mask_key[TGI_KEY_BYTES];  /* redaction's masks */
	/* "" for this machine's ledger; else why it is foreign (identity.c):
	 * opened only with TGI_STORE_FOREIGN_OK, unkeyed, writes refused */
	char          foreign[1024];
};

/*
 * The handle's lock (store.c).  store.c takes it around each call through
 * the table, so an implementation runs one call of a handle at a time, as
 * on a connection of its own, whatever the callers' threads.  A handle is
 * made held: an implementation's open calls tgi_store_init first (the
 * opener holds it through the checks of tgi_store_open), and its close
 * calls tgi_store_fini last, holding it, before it frees the handle.  A
 * function that needs the lock begins with TGI_STORE_HELD(s): kept in
 * every build, it costs a load and a compare.  Watches have connections
 * of their own: a watch's wait and close never take it.
 */
void tgi_store_init(tgi_store *s, const tgi_store_impl *impl);
void tgi_store_fini(tgi_store *s);
/* Take s's lock; give it back with the call's answer rc (returned),
 * noting for the calling thread what tgi_store_transient says.  For a
 * call made on the thread's behalf by another (group.c), the thread
 * notes the answer's transient itself. */
void tgi_store_enter(tgi_store *s);
int  tgi_store_leave(tgi_store *s, int rc);
void tgi_store_note(const tgi_store *s, int transient);
/* With s's lock held: 0, or -1 with a sentence when s is a foreign
 * ledger, opened to be read (nothing is written to it). */
int  tgi_store_read_only(const tgi_store *s, char *err, size_t errlen);
/* Does the calling thread hold s's lock? */
int  tgi_store_held(const tgi_store *s);
#define TGI_STORE_HELD(s) assert(tgi_store_held(s))

/* The identity (identity.c), with s's lock held: tgi_store_identify and
 * tgi_store_adopt are these under the lock. */
int tgi_identity_check(tgi_store *s, const tgi_key_source *key, int flags, char *err,
                       size_t errlen);
int tgi_identity_adopt(tgi_store *s, const tgi_key_source *key, tgi_ledger_rows *rows,
                       char *err, size_t errlen);

/* The identity's MAC under the machine key (mac.c): HMAC over its own
 * domain and the id, bound and created_ms, each length-prefixed. */
void tgi_ident_mac(const unsigned char machine[TGI_KEY_BYTES], const tgi_ledger_ident *id,
                   char out[65]);

/* ---- MACs under the machine key (mac.c) ---- */

/* Derive s's row and mask keys from the machine key and ledger_id (a
 * UUID); s is keyed from then on. */
void tgi_store_keys_derive(tgi_store *s, const unsigned char machine[TGI_KEY_BYTES],
                           const char *ledger_id);

/* The MAC (64 hex digits + NUL) of a row: HMAC-SHA256 under s's row key of
 * the domain (the kind of row: "approval", "idem", ...) and the n fields,
 * each length-prefixed (a NULL field differs from ""), so that no two
 * different rows share an input.  An unkeyed store gives "" (verifies
 * nothing). */
void tgi_store_mac(const tgi_store *s, const char *domain, const char *const *fields, size_t n,
                   char out[65]);

/* Does mac (may be NULL) verify for these fields?  1 yes; 0 no (also for
 * an unkeyed store, a NULL or malformed mac). */
int tgi_store_mac_ok(const tgi_store *s, const char *domain, const char *const *fields,
                     size_t n, const char *mac);

/* ---- the fields each kind of row's MAC covers (rowmac.c) ---- */

/* An approval's MAC as if its state were state (row->state is not read). */
void tgi_mac_approval(const tgi_store *s, const tgi_approval_row *r, const char *state,
                      char out[65]);
/* Does mac verify for r as it is (its state included)? */
int  tgi_mac_approval_ok(const tgi_store *s, const tgi_approval_row *r, const char *mac);
/* envelope: the op's stored envelope for a `done` row, else NULL. */
void tgi_mac_idem(const tgi_store *s, const char *scope, const char *op_id, const char *binding,
                  const char *state, const char *envelope, char out[65]);
int  tgi_mac_idem_ok(const tgi_store *s, const char *scope, const char *op_id,
                     const char *binding, const char *state, const char *envelope,
                     const char *mac);
void tgi_mac_bucket(const tgi_store *s, const char *principal, const char *tool, double tokens,
                    int64_t updated_ms, char out[65]);
int  tgi_mac_bucket_ok(const tgi_store *s, const char *principal, const char *tool,
                       double tokens, int64_t updated_ms, const char *mac);
void tgi_mac_pin(const tgi_store *s, const char *name, const char *digest, char out[65]);
int  tgi_mac_pin_ok(const tgi_store *s, const char *name, const char *digest, const char *mac);

/* A MAC for a column: NULL when s is not keyed (tgi_store_mac gave ""). */
static inline const char *tgi_mac_col(const char *mac)
{
	return mac && *mac ? mac : NULL;
}

/* Can approval r (read back, state as stored) be spent by principal for
 * binding at now?  Approved with its decision recorded, unexpired, of
 * that principal and binding. */
int tgi_approval_spendable(const tgi_approval_row *r, const char *principal,
                           const char *binding, int64_t now);

/* Each implementation's watch begins with this. */
struct tgi_watch {
	const tgi_store_impl *impl;
};

int tgi_sqlite_open(const char *path, int flags, tgi_store **out, char *err, size_t errlen);
int tgi_pg_open(const char *url, int flags, tgi_store **out, char *err, size_t errlen);

/* ---- shared by the implementations (common.c) ---- */

#define TGI_SCOPE_MAX   1024 /* bytes of an idempotency scope */
#define TGI_MSG_API_MAX 32   /* bytes of a conversation's API name, with its NUL */

/* A copy of s fit for a sentence (no control characters, at most cap-1);
 * NULL is "".  Returns buf. */
const char *tgi_quoted(char *buf, size_t cap, const char *s);

/* The checks both stores make on their arguments: 0, or -1 with err set. */
int tgi_check_op_id(const char *op_id, char *err, size_t errlen);
int tgi_check_scope(const char *scope, char *err, size_t errlen);
/* record's arguments: an op with an id, a status and an envelope, typed
 * events, the scope when a settle is asked. */
int tgi_check_record(const tgi_op_record *op, const tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle how, char *err, size_t errlen);
int tgi_check_loop_window(const char *session, char *err, size_t errlen);
int tgi_check_bucket(const char *principal, const char *tool, char *err, size_t errlen);

/*
 * The one take of a rate-limit bucket, alike in both stores (inside a
 * transaction that holds the row): the bucket as the ledger has it
 * (found 0: none, or one whose MAC does not verify, which is a new one,
 * full: a forged row cannot lend tokens the ledger never gave), refilled
 * at rate a second since at, capped at burst; a token taken if there is
 * a whole one (to float noise), up to want (>= 1) as there are whole
 * ones, their number in *took (0: empty).  A clock that went backwards refills
 * nothing and takes nothing away: the bucket's time moves back to now.  A
 * damaged count (negative, NaN) is an empty bucket.  *left: the tokens
 * after, at now.  Returns 1 when the row must be written (tokens *left at
 * now): a take, a new bucket, a moved-back clock or a mended count.
 */
#define TGI_BUCKET_EPSILON 1e-9 /* tokens: float noise */
int tgi_bucket_step(double stored, int64_t at, int found, int64_t now, double rate,
                    double burst, int want, int *took, double *left);
/* decide's id: a UUID, else "no approval". */
int tgi_check_approval_id(const char *id, char *err, size_t errlen);
/* A decision's reason as it is kept (store.h tgi_store_approval_decide)
 * into out: "" for none.  -1 with err when it is too long. */
int tgi_approval_reason(const char *reason, char out[TGI_APPROVAL_REASON_MAX + 1], char *err,
                        size_t errlen);
int tgi_check_approval_take(const char *binding, const char *principal, char *err, size_t errlen);
/* use's arguments: an approval id, a principal and a binding. */
int tgi_check_approval_use(const char *id, const char *principal, const char *binding, char *err,
                           size_t errlen);
int tgi_check_pin(const char *name, const char *digest, char *err, size_t errlen);
/* api NULL: not checked (reading). */
int tgi_check_messages(const char *session, const char *api, char *err, size_t errlen);

/* eval_put's row, as store.h says (store.c checks it before the
 * implementation sees it). */
int tgi_check_eval_row(const tgi_eval_row *r, char *err, size_t errlen);
/* Could t be an eval run's text (NULL, or UTF-8 of at most
 * TGI_EVAL_TEXT_MAX bytes)? */
int tgi_eval_text_ok(const char *t);
/* eval_list's limit as a LIMIT: below 1 (all) is INT64_MAX. */
int64_t tgi_eval_limit(int64_t limit);
/* One kept run as eval_list gives it, from its columns read back into r
 * (texts NULL for NULL, scores NAN for NULL, report the kept text). */
json_t *tgi_eval_json(const tgi_eval_row *r);

/* Check a new approval (a plan, if any, is a JSON object's text) and
 * fill what the store sets: id (UUIDv7), state pending, no decision,
 * created_ms (now, unless given). */
int tgi_approval_new(tgi_approval_row *row, char *err, size_t errlen);
/* find's answer from the state of the row found ("" for none): *found 1
 * approved, -1 denied, 2 pending (its id into pending_id, if not NULL),
 * else left as it is. */
void tgi_approval_answer(const char *state, const char *id, int *found, char pending_id[37]);

/* A conversation's entries (a JSON array) as *n compact texts in *text,
 * caller frees with tgi_texts_free; *n 0 and *text NULL for none. */
int  tgi_messages_encode(const json_t *entries, char ***text, size_t *n, char *err,
                         size_t errlen);
void tgi_texts_free(char **v, size_t n);

/* Check an event written on its own (a type; op_id, if any, a UUID), set
 * its seq to 0, and encode its data into *data (NULL for none; caller
 * frees). */
int tgi_event_encode(const char *op_id, tgi_event *ev, char **data, char *err, size_t errlen);

/*
 * This process as a claim's owner: its host and its start time (clock
 * ticks since boot, -1 unknown), read again when the pid changes (a fork).
 * The host is "<hostname>/<boot id>/<pid namespace inode>": a pid means
 * something only in its pid namespace of one boot of one kernel, and gates
 * of one hostname in two containers (a shared UTS namespace, pids apart)
 * are two hosts.  A row whose host is a bare hostname (written before the
 * host carried the other two) is another host's: its pid is never looked
 * up here; the lease (and, for PostgreSQL, the backend) decide.
 */
typedef struct tgi_self {
	char    host[256];
	int     known;    /* boot id and pid namespace were read: host is whole */
	pid_t   pid;      /* the process start and host belong to */
	int64_t start;
} tgi_self;

void    tgi_self_init(tgi_self *me);
/* The start time; renews me->host too when the pid changed, so call it
 * before reading me->host for a claim. */
int64_t tgi_self_start(tgi_self *me);
/* Is host (a claim's owner_host) this very host and pid namespace?  Only
 * when this process knows its whole identity and host is exactly it. */
int     tgi_owner_same_host(tgi_self *me, const char *host);
/* host as a sentence shows it: the hostname, without boot id and pid
 * namespace.  Returns buf. */
const char *tgi_owner_host_shown(const char *host, char *buf, size_t cap);
/* Is the owner pid on this host still running its claim?  The pid exists
 * and has the recorded start (so a reused pid is not mistaken for the
 * owner; a zombie is dead).  Where that cannot be read, lease_live (the
 * lease has not run out) decides. */
int     tgi_owner_here_alive(int64_t pid, int64_t start, int lease_live);
/* An in_flight answer's retry_after_s: what is left of the lease, within
 * 1 to 30 seconds. */
double  tgi_retry_after(int64_t lease_until, int64_t now);

/* The envelope of an op an operator settled as applied: the stored one
 * (had_row) marked so, or a minimal one when its process left no row.
 * 1 with *out (caller frees), 0 to leave a stored text that is not an
 * object as it is, -1 out of memory. */
int tgi_applied_envelope(const char *op_id, int had_row, const char *stored, char **out);

/* The smallest UUIDv7 made at unix ms `ms` (its 48-bit time, then zeros):
 * the lower bound of the op ids of calls started since then. */
void    tgi_uuid_floor(int64_t ms, char out[37]);
/* The unix ms a UUIDv7 was made at, or -1 when id is not a version 7 UUID. */
int64_t tgi_uuid_ms(const char *id);

/* A column's text as JSON: a string (NULL: null; not UTF-8: a string that
 * says so), parsed JSON (NULL or not JSON: null), an ISO 8601 time. */
json_t *tgi_val_string(const char *t);
json_t *tgi_val_parsed(const char *t);
json_t *tgi_val_time(int64_t ms);

/* tgi_store_stats: are a and b the same tool (NULL: none)?  v by calls
 * descending, then by name, calls without a tool last.  The result
 * object, taking tools and denials. */
int     tgi_same_tool(const char *a, const char *b);
void    tgi_tools_sort(json_t **v, size_t n);
json_t *tgi_stats_json(int64_t since_ms, json_int_t calls, json_t *tools, json_t *denials);

/* tgi_store_unknown: which calls are listed, one query both stores make
 * (ops that ran, failed or committed, whose envelope says error.applied
 * "unknown" and that no operator settled -- not a `pending` answer naming
 * another op's unknown outcome -- and every claim in_flight or unknown),
 * and one row as listed from its columns (any text may be NULL; claim is
 * the claim's state). */
#define TGI_UNKNOWN_OPS_WHERE(applied)                                                   \
	"status <> 'persisted' AND status IN ('failed', 'committed') AND " applied           \
	" = 'unknown' AND NOT EXISTS (SELECT 1 FROM"                                          \
	" events e WHERE e.op_id = ops.op_id AND e.type = 'tool.call.resolved')"
json_t *tgi_unknown_row(const char *op_id, const char *tool, const char *principal,
                        const char *session, const char *status, int64_t started_ms,
                        const char *message, const char *claim, const char *scope);

#endif
