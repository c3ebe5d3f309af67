/*
 * batch.c — parallel batches: the segment planner and the runner (see
 * batch.h for the rules).
 *
 * The planner keeps, for the segment being filled, the paths its readers
 * and its writers touch and the idempotency scopes of its calls, each in a
 * hash set.  A path set holds every path as a member and every proper
 * ancestor directory of one ("a", "a/b" for "a/b/c") as a prefix, so
 * whether a new path overlaps the set (equal, an ancestor or a descendant
 * of a member) takes one lookup per component.  "." is the workspace
 * itself: it overlaps every path.
 *
 * The runner admits each call in the calling thread, in call order, and
 * flushes the segment (runs it and waits) when a call cannot join it or
 * when it holds a barrier, so a call's policy (decide resolves its paths)
 * always sees every earlier barrier's effects.  Calls sharing a segment
 * cannot change how each other's paths resolve: their writers' paths are
 * disjoint from everything else there, and a write replaces a file, it
 * never makes a link.
 *
 * Owns: segments, and the order calls run in.  Must not: run a stage
 * itself, or share a call's state between threads (each call is touched by
 * one thread at a time; the pool's lock orders the hand-offs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gate/batch.h"
#include "gate/pool.h"
#include "gate/gate.h"
#include "util/util.h"

/* ---- path sets ---- */

enum { P_MEMBER = 1, P_PREFIX = 2 };

typedef struct pentry {
	const char *s;      /* borrowed; NULL: an empty slot */
	size_t      len;    /* bytes of s that are the key */
	unsigned    flags;  /* P_* */
} pentry;

typedef struct pathset {
	pentry *v;          /* owned: cap slots, open addressing */
	size_t  cap, n;     /* cap is 0 or a power of two; n keys in use */
	int     root;       /* "." is a member */
} pathset;

#define SET_MIN_CAP 64
#define SET_KEEP_CAP 1024   /* clearing a larger table frees it */

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;     /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static pentry *slot(const pathset *ps, const char *s, size_t len)
{
	size_t mask = ps->cap - 1;
	for (size_t i = hash(s, len) & mask;; i = (i + 1) & mask) {
		pentry *e = &ps->v[i];
		if (!e->s || (e->len == len && !memcmp(e->s, s, len)))
			return e;
	}
}

static unsigned set_find(const pathset *ps, const char *s, size_t len)
{
	if (!ps->n)
		return 0;
	const pentry *e = slot(ps, s, len);
	return e->s ? e->flags : 0;
}

static void set_put(pathset *ps, const char *s, size_t len, unsigned flags)
{
	if (2 * (ps->n + 1) > ps->cap) {           /* keep the load at most a half */
		pathset bigger = {.cap = ps->cap ? 2 * ps->cap : SET_MIN_CAP, .root = ps->root};
		bigger.v = tgi_xcalloc(bigger.cap, sizeof *bigger.v);
		for (size_t i = 0; i < ps->cap; i++)
			if (ps->v[i].s)
				*slot(&bigger, ps->v[i].s, ps->v[i].len) = ps->v[i];
		bigger.n = ps->n;
		free(ps->v);
		*ps = bigger;
	}
	pentry *e = slot(ps, s, len);
	if (!e->s) {
		*e = (pentry){.s = s, .len = len};
		ps->n++;
	}
	e->flags |= flags;
}

static void set_clear(pathset *ps)
{
	if (ps->cap > SET_KEEP_CAP) {
		free(ps->v);
		ps->v = NULL;
		ps->cap = 0;
	} else if (ps->n) {
		memset(ps->v, 0, ps->cap * sizeof *ps->v);
	}
	ps->n = 0;
	ps->root = 0;
}

static int is_root(const char *p)
{
	return !p[0] || !strcmp(p, ".");
}

/* Add path p: a member, and each of its ancestor directories a prefix. */
static void path_add(pathset *ps, const char *p)
{
	if (is_root(p)) {
		ps->root = 1;
		return;
	}
	for (const char *q = strchr(p, '/'); q; q = strchr(q + 1, '/'))
		if (q > p)
			set_put(ps, p, (size_t)(q - p), P_PREFIX);
	set_put(ps, p, strlen(p), P_MEMBER);
}

/* Does p overlap a path of ps: equal, an ancestor or a descendant? */
static int path_overlaps(const pathset *ps, const char *p)
{
	if (!ps->n && !ps->root)
		return 0;
	if (ps->root || is_root(p))
		return 1;
	if (set_find(ps, p, strlen(p)))        /* equal, or a member lies beneath p */
		return 1;
	for (const char *q = strchr(p, '/'); q; q = strchr(q + 1, '/'))
		if (q > p && (set_find(ps, p, (size_t)(q - p)) & P_MEMBER))
			return 1;                      /* a member is an ancestor of p */
	return 0;
}

/* ---- the planner ---- */

struct tgi_segment {
	size_t  n;        /* items admitted */
	int     closed;   /* holds a barrier */
	pathset reads;    /* paths of its read-only calls */
	pathset writes;   /* paths of the others */
	pathset scopes;   /* idempotency scopes (members only) */
};

tgi_segment *tgi_segment_new(void)
{
	return tgi_xcalloc(1, sizeof(tgi_segment));
}

void tgi_segment_free(tgi_segment *s)
{
	if (!s)
		return;
	free(s->reads.v);
	free(s->writes.v);
	free(s->scopes.v);
	free(s);
}

void tgi_segment_clear(tgi_segment *s)
{
	set_clear(&s->reads);
	set_clear(&s->writes);
	set_clear(&s->scopes);
	s->n = 0;
	s->closed = 0;
}

int tgi_segment_closed(const tgi_segment *s)
{
	return s->closed;
}

/* Does it conflict with something already in s? */
static int conflicts(const tgi_segment *s, const tgi_batch_item *it)
{
	if (it->scope && set_find(&s->scopes, it->scope, strlen(it->scope)))
		return 1;
	for (size_t i = 0; i < it->npaths; i++) {
		const char *forms[2] = {it->paths ? it->paths[i] : NULL,
		                        it->resolved ? it->resolved[i] : NULL};
		for (int f = 0; f < 2; f++) {
			const char *p = forms[f];
			if (p && (path_overlaps(&s->writes, p) ||
			          (it->writes && path_overlaps(&s->reads, p))))
				return 1;
		}
	}
	return 0;
}

int tgi_segment_admit(tgi_segment *s, const tgi_batch_item *it)
{
	if (s->n && (s->closed || it->alone || conflicts(s, it)))
		return 0;
	pathset *ps = it->writes ? &s->writes : &s->reads;
	for (size_t i = 0; i < it->npaths; i++) {
		if (it->paths && it->paths[i])
			path_add(ps, it->paths[i]);
		if (it->resolved && it->resolved[i])
			path_add(ps, it->resolved[i]);
	}
	if (it->scope)
		set_put(&s->scopes, it->scope, strlen(it->scope), P_MEMBER);
	s->n++;
	s->closed = it->alone;
	return 1;
}

size_t tgi_batch_plan(const tgi_batch_item *items, size_t n, size_t *seg)
{
	tgi_segment *s = tgi_segment_new();
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!tgi_segment_admit(s, &items[i])) {
			tgi_segment_clear(s);
			tgi_segment_admit(s, &items[i]);
			k++;
		}
		seg[i] = k;
	}
	tgi_segment_free(s);
	return n ? k + 1 : 0;
}

/* ---- the runner ---- */

/* One admitted call waiting for (or running in) its segment. */
typedef struct bcall {
	tgi_call       c;
	tgi_pool_task  task;
	tg_result    **out;     /* where its result goes */
	char          *scope;   /* owned: its idempotency scope, or NULL */
} bcall;

/* The scope execute would claim (execute.c make_scope), as a key only the
 * planner compares: the same principal, tool and key, or else the same
 * session and provider call id.  Read-only calls claim nothing. */
static char *scope_of(const tgi_call *c)
{
	tgi_buf b;
	if (c->contract & TGI_T_READ_ONLY)
		return NULL;
	tgi_buf_init(&b, 1024);
	if (c->idem_key[0])
		tgi_buf_printf(&b, "key\n%s\n%s\n%s", c->principal_name, c->tool, c->idem_key);
	else if (c->call_id[0])
		tgi_buf_printf(&b, "call\n%s\n%s", c->session, c->call_id);
	else
		return NULL;
	return tgi_buf_steal(&b);
}

/* What the planner needs of an admitted call.  A dry run touches nothing.
 * A command line (shell) is always alone; otherwise a call joins when it
 * is concurrency-safe or names every path it touches. */
static void item_of(bcall *b, tgi_batch_item *it)
{
	const tgi_call *c = &b->c;
	memset(it, 0, sizeof *it);
	if (c->dry_run)
		return;
	int scoped = c->entry->row->paths && c->npaths > 0;
	it->alone = c->has_cmds || !((c->contract & TGI_T_CONCURRENCY_SAFE) || scoped);
	it->writes = !(c->contract & TGI_T_READ_ONLY);
	it->paths = (const char *const *)c->paths;
	it->resolved = (const char *const *)c->resolved;
	it->npaths = c->npaths;
	it->scope = b->scope = scope_of(c);
}

static void run_call(void *arg)
{
	bcall *b = arg;
	tgi_call_run(&b->c);
	*b->out = tgi_call_finish(&b->c);
}

typedef struct runner {
	tg_gate     *g;
	tgi_segment *seg;
	bcall      **v;       /* owned: the segment's calls, in call order */
	size_t       n, cap;
} runner;

/* Run the segment's calls (on the pool when there are several and it has
 * workers; else here, in order), wait for all, and start an empty one. */
static void flush(runner *r)
{
	tgi_pool *pool = r->g->pool;
	if (r->n > 1 && pool && tgi_pool_size(pool) > 0) {
		tgi_pool_group grp = {0};
		for (size_t i = 0; i < r->n; i++) {
			r->v[i]->task.fn = run_call;
			r->v[i]->task.arg = r->v[i];
			tgi_pool_submit(pool, &grp, &r->v[i]->task);
		}
		tgi_pool_wait(pool, &grp);
	} else {
		for (size_t i = 0; i < r->n; i++)
			run_call(r->v[i]);
	}
	tgi_segment_clear(r->seg);
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i]->scope);
		free(r->v[i]);
	}
	r->n = 0;
}

size_t tgi_batch_run(tg_gate *g, const tg_request *reqs, size_t n, tg_result **out)
{
	runner r = {.g = g, .seg = tgi_segment_new()};
	for (size_t i = 0; i < n; i++) {
		bcall *b = tgi_xmalloc(sizeof *b);
		b->out = &out[i];
		b->scope = NULL;
		tgi_call_begin(&b->c, g, &reqs[i]);
		if (tgi_call_admit(&b->c) == TGI_STOP) {
			out[i] = tgi_call_finish(&b->c);   /* takes no slot */
			free(b);
			continue;
		}
		tgi_batch_item it;
		item_of(b, &it);
		if (!tgi_segment_admit(r.seg, &it)) {
			flush(&r);
			tgi_segment_admit(r.seg, &it);
		}
		if (r.n == r.cap) {
			r.cap = r.cap ? 2 * r.cap : 16;
			r.v = tgi_xrealloc(r.v, r.cap * sizeof *r.v);
		}
		r.v[r.n++] = b;
		if (tgi_segment_closed(r.seg))
			flush(&r);
	}
	flush(&r);
	free(r.v);
	tgi_segment_free(r.seg);
	return n;
}
