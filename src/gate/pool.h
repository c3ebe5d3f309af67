/*
 * pool.h — a small fixed pool of worker threads (src/gate/pool.c).
 *
 * One pool per gate.  Its workers (a fixed number, started together on the
 * first submit, joined by tgi_pool_free) take tasks from one FIFO queue.
 * Tasks are submitted in groups; tgi_pool_wait returns once every task of
 * a group has run.  While it waits, the calling thread runs queued tasks
 * of its own group itself: so one batch on a pool of n workers runs up to
 * n + 1 tasks at once, a pool of 0 workers runs everything in the caller,
 * in submit order, and a group always finishes even if no worker could be
 * started.
 *
 * Owns: the worker threads and the queue.  Must not: know what a task
 * does; a task must not wait on the pool it runs on.
 */
#ifndef TGI_POOL_H
#define TGI_POOL_H

#include <stddef.h>

typedef struct tgi_pool tgi_pool;

/* What tgi_pool_wait waits for: zero-initialise it before the first
 * submit ({0}); it may be used again once its wait has returned. */
typedef struct tgi_pool_group {
	size_t pending;   /* submitted and not yet finished (under the pool's lock) */
} tgi_pool_group;

/* One task; the caller's storage, borrowed by the pool from submit until
 * the group's wait returns.  Only fn and arg are the caller's to set. */
typedef struct tgi_pool_task {
	void                 (*fn)(void *arg);
	void                  *arg;
	tgi_pool_group        *group;  /* the pool's */
	struct tgi_pool_task  *next;   /* the pool's */
} tgi_pool_task;

/* A pool of nthreads workers (0 is allowed: callers run their own tasks).
 * No thread starts before the first submit.  Free with tgi_pool_free. */
tgi_pool *tgi_pool_new(size_t nthreads);

/* Stop and join the workers.  No group may be waiting or have tasks
 * queued.  NULL is a no-op. */
void tgi_pool_free(tgi_pool *p);

/* The number of workers the pool was made with. */
size_t tgi_pool_size(const tgi_pool *p);

/* Queue t (fn, arg set) as a task of group g. */
void tgi_pool_submit(tgi_pool *p, tgi_pool_group *g, tgi_pool_task *t);

/* Return once every task submitted to g has run; runs g's queued tasks in
 * the calling thread meanwhile. */
void tgi_pool_wait(tgi_pool *p, tgi_pool_group *g);

#endif
