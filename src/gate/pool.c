/*
 * pool.c — a small fixed pool of worker threads (see pool.h).
 *
 * One mutex guards the queue, every group's pending count and the
 * stopping flag; `work` wakes workers when a task is queued (or the pool
 * stops), `idle` wakes waiters when a group's last task finishes.  A task
 * is unlinked from the queue under the lock and run without it; its
 * group's count drops under the lock after it ran, and nothing touches the
 * task after that (its storage is the caller's again).
 *
 * Workers block every signal: signals are for the program's own threads,
 * and a worker must not run a handler in the middle of a tool.
 *
 * Owns: the workers and the queue.  Must not: know what a task does, or
 * drop one: every submitted task runs exactly once.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "gate/pool.h"
#include "util/util.h"

struct tgi_pool {
	pthread_mutex_t  mu;
	pthread_cond_t   work;      /* a task was queued, or the pool is stopping */
	pthread_cond_t   idle;      /* some group's last task finished */
	tgi_pool_task   *head, *tail;
	int              started;   /* the workers were started (once, on first submit) */
	int              stopping;
	size_t           size;      /* workers asked for */
	size_t           running;   /* workers started */
	pthread_t       *threads;   /* owned: running of them */
};

/* Run t outside the lock; its group's count drops back under it.  The
 * lock is held on entry and on return. */
static void run_task(tgi_pool *p, tgi_pool_task *t)
{
	tgi_pool_group *g = t->group;
	pthread_mutex_unlock(&p->mu);
	t->fn(t->arg);
	pthread_mutex_lock(&p->mu);
	if (--g->pending == 0)
		pthread_cond_broadcast(&p->idle);
}

static void *worker(void *arg)
{
	tgi_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->work, &p->mu);
		tgi_pool_task *t = p->head;
		if (!t)
			break;              /* stopping, and nothing left to run */
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		run_task(p, t);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Start the workers, with every signal blocked (they inherit the mask).
 * A worker that cannot be started is left out: waiters run the tasks. */
static void start_workers(tgi_pool *p)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	p->threads = tgi_xcalloc(p->size ? p->size : 1, sizeof *p->threads);
	while (p->running < p->size &&
	       pthread_create(&p->threads[p->running], NULL, worker, p) == 0)
		p->running++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->started = 1;
}

tgi_pool *tgi_pool_new(size_t nthreads)
{
	tgi_pool *p = tgi_xcalloc(1, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->size = nthreads;
	return p;
}

void tgi_pool_free(tgi_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->running; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	pthread_cond_destroy(&p->idle);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

size_t tgi_pool_size(const tgi_pool *p)
{
	return p->size;
}

void tgi_pool_submit(tgi_pool *p, tgi_pool_group *g, tgi_pool_task *t)
{
	t->group = g;
	t->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (!p->started)
		start_workers(p);
	g->pending++;
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
}

/* Unlink and return the first queued task of g, or NULL. */
static tgi_pool_task *take_own(tgi_pool *p, const tgi_pool_group *g)
{
	tgi_pool_task *prev = NULL;
	for (tgi_pool_task *t = p->head; t; prev = t, t = t->next) {
		if (t->group != g)
			continue;
		if (prev)
			prev->next = t->next;
		else
			p->head = t->next;
		if (p->tail == t)
			p->tail = prev;
		return t;
	}
	return NULL;
}

void tgi_pool_wait(tgi_pool *p, tgi_pool_group *g)
{
	pthread_mutex_lock(&p->mu);
	while (g->pending) {
		tgi_pool_task *t = take_own(p, g);
		if (t)
			run_task(p, t);
		else
			pthread_cond_wait(&p->idle, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
}
