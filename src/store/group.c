/*
 * group.c — group commit of records (issue 24): threads sharing one handle
 * whose records come at the same time share one transaction and one sync.
 *
 * A record joins the handle's queue (impl.h tgi_group).  The first thread
 * to find no leader leads: it takes the whole queue, its own record in it,
 * and under the handle's lock writes each record in the one transaction
 * (the implementation's batch_record, a savepoint each, so that a record
 * that fails -- a duplicate op id, a bad argument -- fails alone), commits
 * once, and then, with the group's lock, marks each record answered and
 * wakes the waiting threads.  Records that come while it writes and syncs
 * queue up and are the next leader's batch: the more threads wait on the
 * disk, the more records each sync carries, and a thread alone pays what
 * it paid before (a batch of one is the plain record).  No thread is
 * answered before the commit that holds its record returned: a record is
 * on disk, at the handle's synchronous level, when its call returns.
 *
 * When the batch's transaction is lost as a whole (a record whose failure
 * undid it, a commit that failed: disk full, I/O error, a lock held too
 * long), nothing of it was written: the leader then writes each record not
 * yet failed on its own, so each gets its own answer and its own error.
 *
 * Locks: the group's lock is never held while the handle's is wanted (the
 * leader lets go of it before writing), so a leader and the threads that
 * queue behind it never wait on each other's locks, only on the condition.
 *
 * Owns: the queue and who leads.  Must not: know either database (the
 * batch is the implementation's, impl.h batch_*).
 */
#include "store/impl.h"
#include "util/util.h"

#include <string.h>

struct tgi_group_job {
	const tgi_op_record *op;
	tgi_event           *ev;
	size_t               nev;
	const char          *scope;
	tgi_idem_settle      how;
	char                *err;
	size_t               errlen;
	int                  rc;        /* the answer */
	int                  alone;     /* it failed alone: its answer stands */
	int                  transient; /* what tgi_store_transient says after it */
	int                  done;      /* answered (the group's lock) */
	tgi_group_job       *next;
};

void tgi_group_init(tgi_group *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->head = NULL;
	g->tail = &g->head;
	g->leading = 0;
	g->batches = g->grouped = 0;
}

void tgi_group_fini(tgi_group *g)
{
	assert(!g->head && !g->leading);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

size_t tgi_group_queued(tgi_store *s)
{
	size_t n = 0;
	pthread_mutex_lock(&s->group.mu);
	for (tgi_group_job *j = s->group.head; j; j = j->next)
		n++;
	pthread_mutex_unlock(&s->group.mu);
	return n;
}

static int record_alone(tgi_store *s, tgi_group_job *j)
{
	return s->impl->record(s, j->op, j->ev, j->nev, j->scope, j->how, j->err, j->errlen);
}

/* Write the batch (n jobs from j) in one transaction, with s's lock held:
 * each job's rc set. */
static void write_batch(tgi_store *s, tgi_group_job *batch, size_t n)
{
	const tgi_store_impl *im = s->impl;
	char err[1024];
	int lost = 0;

	if (n == 1 || !im->batch_begin) {
		for (tgi_group_job *j = batch; j; j = j->next)
			j->rc = record_alone(s, j);
		return;
	}
	if (im->batch_begin(s, err, sizeof err) < 0) {
		lost = 1;
	} else {
		for (tgi_group_job *j = batch; j && !lost; j = j->next) {
			int rc = im->batch_record(s, j->op, j->ev, j->nev, j->scope, j->how, j->err,
			                          j->errlen);
			j->rc = rc < 0 ? -1 : 0;
			j->alone = rc == -1;
			lost = rc == -2;
		}
		if (!lost && im->batch_commit(s, err, sizeof err) < 0)
			lost = 1;
	}
	if (!lost) {
		pthread_mutex_lock(&s->group.mu);
		s->group.batches++;
		s->group.grouped += n;
		pthread_mutex_unlock(&s->group.mu);
	}
	if (!lost)
		return;
	/* nothing of the batch was written: each on its own, for its own answer */
	for (tgi_group_job *j = batch; j; j = j->next) {
		if (j->alone)
			continue;
		for (size_t i = 0; i < j->nev; i++)
			j->ev[i].seq = 0;
		j->rc = record_alone(s, j);
	}
}

/* Lead: write the batch under s's lock, with the foreign check every write
 * makes; each job gets its answer and the transient that goes with it. */
static void lead(tgi_store *s, tgi_group_job *batch)
{
	size_t n = 0;
	for (tgi_group_job *j = batch; j; j = j->next)
		n++;
	tgi_store_enter(s);
	if (tgi_store_read_only(s, batch->err, batch->errlen) < 0) {
		for (tgi_group_job *j = batch; j; j = j->next) {
			if (j != batch)
				tgi_store_read_only(s, j->err, j->errlen);
			j->rc = -1;
		}
	} else {
		write_batch(s, batch, n);
	}
	int transient = s->impl->transient(s);
	for (tgi_group_job *j = batch; j; j = j->next)
		j->transient = transient;
	tgi_store_leave(s, 0);
}

int tgi_group_record(tgi_store *s, const tgi_op_record *op, tgi_event *ev, size_t nev,
                     const char *idem_scope, tgi_idem_settle settle, char *err, size_t errlen)
{
	tgi_group *g = &s->group;
	tgi_group_job me = { .op = op, .ev = ev, .nev = nev, .scope = idem_scope, .how = settle,
	                     .err = err, .errlen = errlen };

	pthread_mutex_lock(&g->mu);
	*g->tail = &me;
	g->tail = &me.next;
	while (!me.done) {
		if (g->leading) {
			pthread_cond_wait(&g->cv, &g->mu);
			continue;
		}
		/* lead: the whole queue, this thread's record in it */
		tgi_group_job *batch = g->head;
		g->head = NULL;
		g->tail = &g->head;
		g->leading = 1;
		pthread_mutex_unlock(&g->mu);
		lead(s, batch);
		pthread_mutex_lock(&g->mu);
		for (tgi_group_job *j = batch, *next; j; j = next) {
			next = j->next;   /* j's thread may return once done is set and we let go */
			j->done = 1;
		}
		g->leading = 0;
		pthread_cond_broadcast(&g->cv);
	}
	pthread_mutex_unlock(&g->mu);
	tgi_store_note(s, me.transient);
	return me.rc;
}
