/*
 * ratelimit.c — rate limits: a token bucket per (principal, tool).
 *
 * `rate_limits: {"tool-glob": "N/sec|min|hour"}`.  A tool's rate is the
 * first entry, in file order, whose glob (tgi_text_glob) matches its name;
 * a tool no glob matches is not limited.  Its bucket holds at most N
 * tokens and refills continuously, N per unit of wall time; a call takes
 * one token or is denied `rate_limited` with the seconds until one is back.
 *
 * Buckets live in the ledger, not in this process: every call that takes
 * a token takes it in the store, in one atomic step (tgi_store_bucket_take:
 * a BEGIN IMMEDIATE transaction on SQLite, one statement on PostgreSQL's
 * clock), so processes and gates that share a ledger draw from one bucket
 * and together pass no more than the limit, and a restart or a crash gives
 * nothing back.  A clock that goes backwards refills nothing and never
 * empties a bucket.  When the ledger cannot be read or written the call is
 * denied `transient` (fail closed: an unknown bucket may be empty).
 *
 * A high rate is drawn in leases: when a limit refills at least two
 * tokens in RATE_LEASE_MS (20 a second and up), one take draws as many
 * tokens as that refills (at most RATE_LEASE_MAX, at most a tenth of the
 * limit) and the process spends them on its next calls of that principal
 * and tool; what is left after RATE_LEASE_MS is dropped, never put back.
 * Every call still spends a token the ledger gave, so the processes
 * together never pass more than the ledger handed out; a token may be
 * spent up to RATE_LEASE_MS after it was drawn, and a process may hold a
 * few tokens another process then waits for.  A lower rate takes one
 * token a call, as it always did.  This keeps a busy gate from writing
 * the ledger for the bucket on every call.
 *
 * Dry runs take nothing: they look at the bucket as the ledger has it,
 * refilled by this host's clock.  Calls without a rate take the step's
 * only cost: walking the globs.
 *
 * Owns: the parsed limits and the leases.  Must not: decide permission (a call decide
 * denied never gets here), keep a bucket of its own, or write the ledger
 * other than through tgi_store_bucket_take.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"
#include "util/util.h"

#define RATE_N_MAX    1000000 /* calls per unit: more is no limit at all */
#define RATE_GLOB_MAX 256     /* bytes of one glob */
#define RATE_EPSILON  1e-9    /* tokens: float noise, not a part of a call */
#define RATE_LEASE_MS  100    /* a lease: this long's refill, spent within this long */
#define RATE_LEASE_MAX 64     /* tokens one take draws at most */
#define RATE_LEASES    64     /* (principal, tool) pairs holding a lease at once */

/* One configured limit: N calls per period. */
typedef struct rate_limit {
	char       *glob;     /* owned */
	long        n;        /* capacity and refill per period */
	int64_t     period_ms;
	const char *unit;     /* "sec", "min", "hour" */
	const char *per;      /* "a second", ... for people */
} rate_limit;

/* Tokens drawn from the ledger for (principal, tool), not yet spent. */
typedef struct lease {
	char  *principal, *tool;  /* owned; NULL: a free place */
	int    tokens;
	double left;              /* what the ledger's bucket held after the draw */
	double until_ms;          /* tgi_now_ms: the tokens are dropped then */
} lease;

struct tgi_ratelimit {
	rate_limit     *limits;     /* in file order */
	size_t          nlimits;
	pthread_mutex_t mu;         /* the leases: calls run on many threads */
	lease           leases[RATE_LEASES];
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
	pthread_mutex_init(&r->mu, NULL);
	r->limits = tgi_xcalloc(json_object_size(cfg->rate_limits), sizeof *r->limits);
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

void tgi_ratelimit_free(tgi_ratelimit *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nlimits; i++)
		free(r->limits[i].glob);
	for (size_t i = 0; i < RATE_LEASES; i++) {
		free(r->leases[i].principal);
		free(r->leases[i].tool);
	}
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

/* ---- the step ---- */

typedef enum { TAKE_OK, TAKE_EMPTY, TAKE_ERROR } take_result;

/* A dry run's look: the bucket as the ledger has it (full when there is
 * none), refilled by this host's clock for the time since it was written
 * (none when the clock went back), capped at the limit. */
static take_result look(tgi_call *c, const rate_limit *l, double *left, char *err,
                        size_t errlen)
{
	double tokens = 0;
	int64_t updated = 0, now = tgi_unix_ms();
	int found = 0;
	int rc = tgi_store_bucket_get(c->g->store, c->principal_name, c->tool, &tokens, &updated,
	                              &found, err, errlen);
	if (rc < 0)
		return TAKE_ERROR;
	if (!found || !(tokens >= 0))   /* also NaN */
		tokens = found ? 0 : (double)l->n;
	if (found && now > updated)
		tokens += (double)(now - updated) * (double)l->n / (double)l->period_ms;
	*left = tokens < (double)l->n ? tokens : (double)l->n;
	return *left >= 1 - RATE_EPSILON ? TAKE_OK : TAKE_EMPTY;
}

/* How many tokens one take of l draws: RATE_LEASE_MS of its refill, at
 * most RATE_LEASE_MAX and a tenth of the limit; 1 (no lease) below two. */
static int lease_size(const rate_limit *l)
{
	double k = floor((double)l->n * RATE_LEASE_MS / (double)l->period_ms);
	if (k > RATE_LEASE_MAX)
		k = RATE_LEASE_MAX;
	if (k > (double)(l->n / 10))
		k = (double)(l->n / 10);
	return k < 2 ? 1 : (int)k;
}

/* The lease of (principal, tool), or with make a place for one (a free
 * or run-out place; NULL when every place holds a live lease).  r->mu held. */
static lease *lease_at(tgi_ratelimit *r, const char *principal, const char *tool, double now,
                       int make)
{
	lease *spare = NULL;
	for (size_t i = 0; i < RATE_LEASES; i++) {
		lease *ls = &r->leases[i];
		if (ls->tool && !strcmp(ls->tool, tool) && !strcmp(ls->principal, principal))
			return ls;
		if (!spare && (!ls->tool || now >= ls->until_ms))
			spare = ls;
	}
	if (!make || !spare)
		return NULL;
	free(spare->principal);
	free(spare->tool);
	*spare = (lease){.principal = tgi_strdup(principal), .tool = tgi_strdup(tool)};
	return spare;
}

/* Spend a token of the call's lease: 1 with *left what the bucket and the
 * lease hold after it, 0 when there is none to spend. */
static int lease_spend(tgi_ratelimit *r, const tgi_call *c, double *left)
{
	double now = tgi_now_ms();
	pthread_mutex_lock(&r->mu);
	lease *ls = lease_at(r, c->principal_name, c->tool, now, 0);
	int ok = ls && ls->tokens > 0 && now < ls->until_ms;
	if (ok) {
		ls->tokens--;
		*left = ls->left + ls->tokens;
	}
	pthread_mutex_unlock(&r->mu);
	return ok;
}

/* Keep the tokens of a draw the call did not spend (none are put back
 * when there is no place: they are dropped). */
static void lease_keep(tgi_ratelimit *r, const tgi_call *c, int tokens, double *left)
{
	double now = tgi_now_ms();
	pthread_mutex_lock(&r->mu);
	lease *ls = lease_at(r, c->principal_name, c->tool, now, 1);
	if (ls) {
		if (now >= ls->until_ms)
			ls->tokens = 0;
		ls->tokens += tokens;
		ls->left = *left;
		ls->until_ms = now + RATE_LEASE_MS;
		*left += ls->tokens;
	}
	pthread_mutex_unlock(&r->mu);
}

/* Take a token for the call: from its lease, else from its bucket in the
 * store (a lease's worth for a high rate); *left is what the bucket (and
 * the lease) hold afterwards. */
static take_result take(tgi_ratelimit *r, tgi_call *c, const rate_limit *l, double *left,
                        char *err, size_t errlen)
{
	double rate = (double)l->n * 1000 / (double)l->period_ms;   /* tokens a second */
	double retry = 0;
	int want = lease_size(l), took = 0;
	if (want > 1 && lease_spend(r, c, left))
		return TAKE_OK;
	int rc = tgi_store_bucket_take(c->g->store, c->principal_name, c->tool, rate, (double)l->n,
	                               want, &took, left, &retry, err, errlen);
	if (rc < 0)
		return TAKE_ERROR;
	if (took > 1)
		lease_keep(r, c, took - 1, left);
	return took ? TAKE_OK : TAKE_EMPTY;
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

static tgi_verdict ratelimit_step(tgi_call *c, void *state)
{
	tgi_ratelimit *r = state;
	const rate_limit *l = r ? limit_for(r, c->tool) : NULL;
	char err[512], text[48];
	double left = 0;
	if (!l)
		return TGI_NEXT;
	take_result t = c->dry_run ? look(c, l, &left, err, sizeof err)
	                           : take(r, c, l, &left, err, sizeof err);
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
	if (t == TAKE_EMPTY)
		return refuse(c, l, left);
	tgi_snprintf(text, sizeof text, "%ld/%s", l->n, l->unit);
	tgi_trace(c, "rate_limit", 1, json_pack("{s:s, s:I}", "limit", text, "remaining",
	                                        (json_int_t)floor(left + RATE_EPSILON)));
	return TGI_NEXT;
}

static int ratelimit_open(tg_gate *g, const tg_options *o, void **state, char *err,
                          size_t errlen)
{
	return tgi_ratelimit_new(g->cfg, (tgi_ratelimit **)state, err, errlen);
}

static void ratelimit_close(void *state)
{
	tgi_ratelimit_free(state);
}

const tgi_part tgi_part_ratelimit = {
	.name = "rate_limit", .after = TGI_PHASE_DECIDE, .open = ratelimit_open,
	.close = ratelimit_close, .step = ratelimit_step,
};
