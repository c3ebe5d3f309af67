/*
 * ratelimit.c — rate limits: a token bucket per (principal, tool).
 *
 * `rate_limits: {"tool-glob": "N/sec|min|hour"}`.  A tool's rate is the
 * first entry, in file order, whose glob (tgi_text_glob) matches its name;
 * a tool no glob matches is not limited.  Its bucket holds at most N
 * tokens and refills continuously, N per unit of wall time; a call takes
 * one token or is denied `rate_limited` with the seconds until one is back.
 *
 * Buckets live in memory, in a hash map behind one lock, bounded: when it
 * is full, buckets that have refilled completely are dropped (a full bucket
 * is what a fresh one would be), and if none has, the least recently used.
 * The first time this process uses a bucket it starts from the ledger
 * (the state the last call's row saved, in this or another process), so a
 * restart does not reset it; a call hands its bucket's state to persist
 * (c->bucket), which saves it with the call's row, whenever the tokens
 * taken since the last save reach 1% of N — that is every call for a limit
 * under 100, and a write saved on most calls of a generous limit (60,000
 * a minute) — and on the first token a process takes from a bucket, so
 * that one-call processes (`toolgate call`) each leave their mark; what
 * a crash can give back is under 1% of a limit and never a whole call of
 * a small one.  A clock that goes backwards refills nothing and never
 * empties a bucket.
 *
 *   lookup (map lock) ─ miss ─▶ ledger read (store lock, map lock not held)
 *        │                          │
 *        ▼                          ▼
 *   refill, take or refuse (map lock) ◀─ insert unless another thread did
 *
 * A shared store (PostgreSQL, several gates: tgi_store_shared) keeps no
 * bucket here: every gate draws from the one bucket in the store, a token
 * taken in one statement on the store's clock (tgi_store_bucket_take).
 *
 * Dry runs are checked but take nothing.  Calls without a rate take the
 * step's only cost: walking the globs.
 *
 * Owns: the parsed limits, the buckets and their lock.  Must not: decide
 * permission (a call decide denied never gets here), write the ledger
 * (persist does), or hold its lock while it waits for the store.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mw/mw.h"
#include "util/util.h"

#define RATE_N_MAX       1000000  /* calls per unit: more is no limit at all */
#define RATE_GLOB_MAX    256      /* bytes of one glob */
#define RATE_SLOTS       1024     /* hash chains */
#define RATE_BUCKETS_MAX 4096     /* buckets kept in memory at once */
#define RATE_EPSILON     1e-9     /* tokens: float noise, not a part of a call */

/* One configured limit: N calls per period. */
typedef struct rate_limit {
	char       *glob;     /* owned */
	long        n;        /* capacity and refill per period */
	int64_t     period_ms;
	const char *unit;     /* "sec", "min", "hour" */
	const char *per;      /* "a second", ... for people */
} rate_limit;

/* One (principal, tool) bucket. */
typedef struct bucket {
	struct bucket    *next;      /* chain */
	char             *principal; /* owned */
	char             *tool;      /* owned */
	const rate_limit *limit;     /* borrowed from the tgi_ratelimit */
	double            tokens;    /* 0..limit->n at updated_ms */
	int64_t           updated_ms;
	double            unsaved;   /* tokens taken since a call's row last saved it */
	int               loaded;    /* read from the ledger, nothing taken from it yet */
} bucket;

struct tgi_ratelimit {
	rate_limit     *limits;     /* in file order */
	size_t          nlimits;
	pthread_mutex_t mu;         /* guards everything below */
	bucket         *slots[RATE_SLOTS];
	size_t          nbuckets;
};

/* ---- the configuration ---- */

static const struct {
	const char *names[4];   /* accepted spellings, case-insensitive */
	const char *unit, *per;
	int64_t     period_ms;
} units[] = {
	{{"sec", "s", "second", "seconds"}, "sec",  "a second", 1000},
	{{"min", "m", "minute", "minutes"}, "min",  "a minute", 60000},
	{{"hour", "h", "hours", "hr"},      "hour", "an hour",  3600000},
};

static int unit_find(const char *s, size_t len)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(units); i++)
		for (size_t j = 0; j < TGI_ARRAY_LEN(units[i].names); j++)
			if (strlen(units[i].names[j]) == len && !strncasecmp(units[i].names[j], s, len))
				return (int)i;
	return -1;
}

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* "60/min" (spaces around the parts allowed) into l.  -1 when it is not
 * N/unit at all, -2 when N is out of range. */
static int rate_parse(const char *s, rate_limit *l)
{
	const char *p = skip_blanks(s);
	long n = 0;
	int digits = 0, big = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (n > RATE_N_MAX)
			big = 1;
		else
			n = n * 10 + (*p - '0');
	}
	if (!digits)
		return -1;
	p = skip_blanks(p);
	if (*p++ != '/')
		return -1;
	p = skip_blanks(p);
	const char *u = p;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
		p++;
	int k = unit_find(u, (size_t)(p - u));
	if (k < 0 || *skip_blanks(p) != '\0')
		return -1;
	if (big || n < 1 || n > RATE_N_MAX)
		return -2;
	l->n = n;
	l->period_ms = units[k].period_ms;
	l->unit = units[k].unit;
	l->per = units[k].per;
	return 0;
}

/* A glob names tools: non-empty, not too long, no blanks or controls. */
static int glob_ok(const char *g)
{
	size_t len = strlen(g);
	if (!len || len > RATE_GLOB_MAX)
		return 0;
	for (const unsigned char *p = (const unsigned char *)g; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return 0;
	return 1;
}

static int limit_add(tgi_ratelimit *r, const tgi_config *cfg, const char *key, const json_t *v,
                     char *err, size_t errlen)
{
	char ptr[RATE_GLOB_MAX * 2 + 32], got[96];
	rate_limit l = {0};
	tgi_json_pointer_join(ptr, sizeof ptr, "/rate_limits", key);
	if (!glob_ok(key)) {
		json_t *k = tgi_json_text(key, strlen(key));
		tgi_config_fail(cfg, ptr, err, errlen, "expected a tool name or glob (1 to 256 "
		                "characters, no spaces) as the key, got %s",
		                tgi_json_describe(k, got, sizeof got));
		json_decref(k);
		return -1;
	}
	int rc = -1;   /* a string without NUL bytes, or not a rate at all */
	if (json_is_string(v) && !memchr(json_string_value(v), '\0', json_string_length(v)))
		rc = rate_parse(json_string_value(v), &l);
	if (rc == -1)
		return tgi_config_fail(cfg, ptr, err, errlen, "expected N/sec, N/min or N/hour, "
		                       "got %s", tgi_json_describe(v, got, sizeof got));
	if (rc == -2)
		return tgi_config_fail(cfg, ptr, err, errlen, "expected N/sec, N/min or N/hour "
		                       "with N from 1 to 1000000, got %s",
		                       tgi_json_describe(v, got, sizeof got));
	l.glob = tgi_strdup(key);
	r->limits[r->nlimits++] = l;
	return 0;
}

int tgi_ratelimit_new(const tgi_config *cfg, tgi_ratelimit **out, char *err, size_t errlen)
{
	const char *key;
	json_t *v;
	*out = NULL;
	if (!cfg->rate_limits || json_is_null(cfg->rate_limits))
		return 0;
	if (!json_is_object(cfg->rate_limits)) {
		char got[96];
		return tgi_config_fail(cfg, "/rate_limits", err, errlen, "expected a mapping, "
		                       "got %s",
		                       tgi_json_describe(cfg->rate_limits, got, sizeof got));
	}
	if (!json_object_size(cfg->rate_limits))
		return 0;
	tgi_ratelimit *r = tgi_xcalloc(1, sizeof *r);
	r->limits = tgi_xcalloc(json_object_size(cfg->rate_limits), sizeof *r->limits);
	pthread_mutex_init(&r->mu, NULL);
	/* jansson iterates in insertion order, and the loaders insert in file order */
	json_object_foreach(cfg->rate_limits, key, v) {
		if (limit_add(r, cfg, key, v, err, errlen) < 0) {
			tgi_ratelimit_free(r);
			return -1;
		}
	}
	*out = r;
	return 0;
}

static void bucket_free(bucket *b)
{
	free(b->principal);
	free(b->tool);
	free(b);
}

void tgi_ratelimit_free(tgi_ratelimit *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < RATE_SLOTS; i++) {
		for (bucket *b = r->slots[i], *next; b; b = next) {
			next = b->next;
			bucket_free(b);
		}
	}
	for (size_t i = 0; i < r->nlimits; i++)
		free(r->limits[i].glob);
	free(r->limits);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* The first limit whose glob matches tool, or NULL. */
static const rate_limit *limit_for(const tgi_ratelimit *r, const char *tool)
{
	for (size_t i = 0; i < r->nlimits; i++)
		if (tgi_text_glob(r->limits[i].glob, tool))
			return &r->limits[i];
	return NULL;
}

/* ---- the buckets (callers hold r->mu) ---- */

static size_t slot_of(const char *principal, const char *tool)
{
	uint64_t h = 1469598103934665603ull;             /* FNV-1a, principal NUL tool */
	for (const unsigned char *p = (const unsigned char *)principal;; p++) {
		h = (h ^ *p) * 1099511628211ull;
		if (!*p)
			break;
	}
	for (const unsigned char *p = (const unsigned char *)tool; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (size_t)(h % RATE_SLOTS);
}

static bucket *bucket_find(tgi_ratelimit *r, const char *principal, const char *tool)
{
	for (bucket *b = r->slots[slot_of(principal, tool)]; b; b = b->next)
		if (!strcmp(b->principal, principal) && !strcmp(b->tool, tool))
			return b;
	return NULL;
}

/* Bring b to now: refill for the time that passed (none when the clock
 * went backwards), capped at the limit. */
static void bucket_refill(bucket *b, int64_t now)
{
	const rate_limit *l = b->limit;
	if (now > b->updated_ms)
		b->tokens += (double)(now - b->updated_ms) * (double)l->n / (double)l->period_ms;
	b->updated_ms = now;
	if (!(b->tokens >= 0))      /* also NaN */
		b->tokens = 0;
	if (b->tokens > (double)l->n)
		b->tokens = (double)l->n;
}

static int bucket_full_at(const bucket *b, int64_t now)
{
	bucket t = *b;
	bucket_refill(&t, now);
	return t.tokens >= (double)t.limit->n - RATE_EPSILON;
}

static void bucket_unlink(tgi_ratelimit *r, bucket **at)
{
	bucket *b = *at;
	*at = b->next;
	bucket_free(b);
	r->nbuckets--;
}

/* Make room for one more: drop every bucket that is full by now (nothing
 * is lost: a fresh one, or the ledger's, refills to the same), and if none
 * is, the one used longest ago (the ledger has its state). */
static void buckets_trim(tgi_ratelimit *r, int64_t now)
{
	bucket **oldest = NULL;
	for (size_t i = 0; i < RATE_SLOTS; i++) {
		for (bucket **at = &r->slots[i]; *at;) {
			if (bucket_full_at(*at, now)) {
				bucket_unlink(r, at);
				continue;
			}
			if (!oldest || (*at)->updated_ms < (*oldest)->updated_ms)
				oldest = at;
			at = &(*at)->next;
		}
	}
	if (r->nbuckets >= RATE_BUCKETS_MAX && oldest)
		bucket_unlink(r, oldest);
}

static bucket *bucket_insert(tgi_ratelimit *r, const char *principal, const char *tool,
                             const rate_limit *l, double tokens, int64_t updated_ms, int64_t now)
{
	if (r->nbuckets >= RATE_BUCKETS_MAX)
		buckets_trim(r, now);
	bucket *b = tgi_xcalloc(1, sizeof *b);
	b->principal = tgi_strdup(principal);
	b->tool = tgi_strdup(tool);
	b->limit = l;
	b->tokens = isfinite(tokens) ? tokens : 0;
	b->updated_ms = updated_ms;
	b->loaded = 1;
	size_t s = slot_of(principal, tool);
	b->next = r->slots[s];
	r->slots[s] = b;
	r->nbuckets++;
	return b;
}

/* ---- the step ---- */

/* The bucket's state as the ledger has it (a full bucket when it has
 * none).  -1 with err when the ledger cannot be read. */
static int ledger_state(tgi_call *c, const rate_limit *l, double *tokens, int64_t *updated_ms,
                        char *err, size_t errlen)
{
	int found = 0;
	tgi_store_lock(c->g);
	int rc = tgi_store_bucket_get(c->g->store, c->principal_name, c->tool, tokens, updated_ms,
	                              &found, err, errlen);
	tgi_store_unlock(c->g);
	if (rc < 0)
		return -1;
	if (!found) {
		*tokens = (double)l->n;
		*updated_ms = tgi_unix_ms();
	}
	return 0;
}

typedef enum { TAKE_OK, TAKE_EMPTY, TAKE_ERROR } take_result;

/* Refill the call's bucket and take a token from it (a dry run only looks).
 * *left is what the bucket holds afterwards, at *now.  The time is read
 * under the lock, so that the threads' refills follow one another. */
static take_result take(tgi_ratelimit *r, tgi_call *c, const rate_limit *l, int64_t *now,
                        double *left, int *save, char *err, size_t errlen)
{
	pthread_mutex_lock(&r->mu);
	bucket *b = bucket_find(r, c->principal_name, c->tool);
	if (!b) {
		double tokens;
		int64_t updated;
		pthread_mutex_unlock(&r->mu);
		if (ledger_state(c, l, &tokens, &updated, err, errlen) < 0)
			return TAKE_ERROR;
		pthread_mutex_lock(&r->mu);
		b = bucket_find(r, c->principal_name, c->tool);   /* another thread may have */
		if (!b)
			b = bucket_insert(r, c->principal_name, c->tool, l, tokens, updated,
			                  tgi_unix_ms());
	}
	*now = tgi_unix_ms();
	bucket_refill(b, *now);
	int ok = b->tokens >= 1 - RATE_EPSILON;
	*save = 0;
	if (ok && !c->dry_run) {
		b->tokens = b->tokens >= 1 ? b->tokens - 1 : 0;
		b->unsaved += 1;
		/* the first take of a process saves, whatever N: a process that
		 * makes one call (`toolgate call`) would otherwise save nothing */
		if (b->loaded || b->unsaved >= (l->n < 100 ? 1 : (double)l->n / 100)) {
			b->loaded = 0;
			b->unsaved = 0;
			*save = 1;
		}
	}
	*left = b->tokens;
	pthread_mutex_unlock(&r->mu);
	return ok ? TAKE_OK : TAKE_EMPTY;
}

/* The same in a shared store.  *left is what refuse() needs to say the
 * store's wait (or -1 after a take: the store does not say what is left).
 * A dry run looks at the saved bucket, refilled by this host's clock. */
static take_result take_shared(tgi_call *c, const rate_limit *l, double *left, char *err,
                               size_t errlen)
{
	double rate = (double)l->n * 1000 / (double)l->period_ms;   /* tokens a second */
	double retry = 0, tokens = 0;
	int64_t updated = 0;
	int ok = 0, found = 0, rc;

	tgi_store_lock(c->g);
	if (c->dry_run)
		rc = tgi_store_bucket_get(c->g->store, c->principal_name, c->tool, &tokens, &updated,
		                          &found, err, errlen);
	else
		rc = tgi_store_bucket_take(c->g->store, c->principal_name, c->tool, rate,
		                           (double)l->n, &ok, &retry, err, errlen);
	tgi_store_unlock(c->g);
	if (rc < 0)
		return TAKE_ERROR;
	if (c->dry_run) {
		bucket b = {.limit = l, .tokens = found ? tokens : (double)l->n, .updated_ms = updated};
		bucket_refill(&b, tgi_unix_ms());
		*left = b.tokens;
		return b.tokens >= 1 - RATE_EPSILON ? TAKE_OK : TAKE_EMPTY;
	}
	*left = ok ? -1 : 1 - retry * rate;
	return ok ? TAKE_OK : TAKE_EMPTY;
}

/* Seconds until the bucket holds a whole token again, up to the next
 * millisecond (a caller that waits this long finds one). */
static double retry_after(const rate_limit *l, double left)
{
	double need = left < 1 ? 1 - left : 0;
	double ms = ceil(need * (double)l->period_ms / (double)l->n);
	return (ms < 1 ? 1 : ms) / 1000;
}

static tgi_verdict refuse(tgi_call *c, const rate_limit *l, double left)
{
	char text[48], wait[32];
	double s = retry_after(l, left);
	tgi_snprintf(text, sizeof text, "%ld/%s", l->n, l->unit);
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "rate_limits: %s %s", l->glob, text);
	c->retry_after_s = s;
	if (s < 100)
		tgi_snprintf(wait, sizeof wait, "%.1f s", ceil(s * 10) / 10);
	else
		tgi_snprintf(wait, sizeof wait, "%.0f s", ceil(s));
	tgi_trace(c, "rate_limit", 0, json_pack("{s:s, s:s, s:f}", "limit", text, "rule",
	                                        c->error_rule, "retry_after_s", s));
	return tgi_stop(c, TG_DENIED, TG_ERR_RATE_LIMITED, NULL,
	                "%s is limited to %ld call%s %s for you; wait %s and retry", c->tool, l->n,
	                l->n == 1 ? "" : "s", l->per, wait);
}

tgi_verdict tgi_ratelimit_step(tgi_call *c)
{
	tgi_ratelimit *r = c->g->rate;
	const rate_limit *l = r ? limit_for(r, c->tool) : NULL;
	char err[512], text[48];
	double left;
	if (!l)
		return TGI_NEXT;
	int64_t now = 0;
	int save = 0;
	take_result t = tgi_store_shared(c->g->store)
	                        ? take_shared(c, l, &left, err, sizeof err)
	                        : take(r, c, l, &now, &left, &save, err, sizeof err);
	if (t == TAKE_ERROR) {
		/* fail closed: an unknown bucket may be empty */
		char clean[256];
		tgi_sanitize(clean, sizeof clean, err);
		tgi_trace(c, "rate_limit", 0, json_pack("{s:s}", "error", clean));
		c->retry_after_s = 1;
		return tgi_stop(c, TG_DENIED, TG_ERR_TRANSIENT, NULL,
		                "the rate limit of %s cannot be checked right now; retry in a second",
		                c->tool);
	}
	if (save)
		c->bucket = (tgi_bucket){.principal = c->principal_name, .tool = c->tool,
		                         .tokens = left, .updated_ms = now};
	if (t == TAKE_EMPTY)
		return refuse(c, l, left);
	tgi_snprintf(text, sizeof text, "%ld/%s", l->n, l->unit);
	json_t *trace = json_pack("{s:s}", "limit", text);
	if (left >= 0)
		json_object_set_new(trace, "remaining", json_integer((json_int_t)floor(left + RATE_EPSILON)));
	tgi_trace(c, "rate_limit", 1, trace);
	return TGI_NEXT;
}
