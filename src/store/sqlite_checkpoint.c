/*
 * sqlite_checkpoint.c — the SQLite ledger's checkpoints (sqlite.c says how
 * the backend works): the WAL hook that counts frames, the checkpointer
 * thread of a handle with its own connection, and the commits that copy
 * a short tail themselves.
 *
 * Owns: the checkpointer thread, its connection and its lock (struct
 * ckpt).  Must not: write a row, or make a commit wait for a checkpoint
 * the thread runs.
 */
#include "store/sqlite_int.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

/* ---- checkpoints ----
 *
 * SQLite's automatic checkpoint runs on the connection that commits: one
 * call in a few hundred would copy the WAL into the database and wait for
 * two fsyncs (milliseconds).  So the handle turns it off (its WAL hook
 * replaces it) and only counts the frames in the WAL.  A commit that leaves
 * TGI_CKPT_FRAMES or more wakes the checkpointer: a thread of the handle,
 * started on first need by a handle that has made TGI_CKPT_COMMITS commits
 * (a short process never starts one), with its own connection, running
 * PASSIVE checkpoints, which never wait for or block a writer or a reader.
 *
 * The WAL starts over from its beginning only when a write transaction
 * begins with every frame copied, and under a steady stream of commits a
 * checkpoint running beside them never sees that moment: each round ends
 * with the frames committed meanwhile still to copy.  So the thread copies
 * in rounds, each shorter than the one before (it copies what was appended
 * during the last); once they stop shrinking it writes the files out and
 * leaves the rest to the next commit, which copies that short tail itself
 * (what commits append during one round, tens to hundreds of pages while the
 * disk keeps up, and two fsyncs of little data; once per TGI_CKPT_FRAMES)
 * so that the following one starts the WAL over.
 *
 * A commit also checkpoints itself when no thread can be started, and when
 * the WAL passes TGI_CKPT_HARD_FRAMES anyway (the thread cannot keep up, or
 * the handle was carried through fork(), which, as for an SQLite connection,
 * is not supported); a PASSIVE checkpoint that finds another at work
 * returns at once.  tgi_store_close stops and joins the thread (between two
 * rounds), then checkpoints a WAL still past TGI_CKPT_FRAMES, so that short
 * processes each adding a row while others hold the ledger open do not grow
 * it without bound.  The last connection to close, in any process, has
 * SQLite checkpoint and remove the WAL.
 */

/* The WAL hook: runs in the committing thread after each commit. */
int tgi_sq_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	sq *s = arg;
	unsigned n = frames > 0 ? (unsigned)frames : 0;
	if (n < s->wal_frames)
		s->wal_gen++; /* it started over */
	s->wal_frames = n;
	return SQLITE_OK;
}

/* A checkpoint on the handle's own connection, by the committing call. */
void tgi_sq_ckpt_here(sq *s)
{
	sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

/* The checkpointer's connection: the ledger file opened again, read once
 * so that it has the WAL open (a checkpoint on a connection that never read
 * does nothing).  NULL when it cannot be opened now; the next wake retries. */
static sqlite3 *ckpt_connect(const sq *s)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(s->file, &db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(db, TGI_BUSY_MS);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, s->ckpt.sync_full ? "PRAGMA synchronous = FULL; PRAGMA user_version"
		                                        : "PRAGMA synchronous = NORMAL; PRAGMA user_version",
		                  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close_v2(db);
		return NULL;
	}
	return db;
}

static int ckpt_stopping(struct ckpt *k)
{
	pthread_mutex_lock(&k->mu);
	int stop = k->stop;
	pthread_mutex_unlock(&k->mu);
	return stop;
}

/* Copy the WAL in PASSIVE rounds.  Each round copies what was appended
 * during the one before, so they shrink, down to what commits append while
 * a round syncs.  1 once a round had fewer than TGI_CKPT_TAIL frames to
 * copy or no longer shrank (caught up); 0 when the WAL started over
 * meanwhile (nothing left to hand over), when a reader holds every new
 * frame back, on an error (the next wake tries again), on close, or after
 * TGI_CKPT_ROUNDS.  (A commit ending just then may hold back its own
 * frames for a moment: that is only a shorter round.) */
static int ckpt_rounds(struct ckpt *k, sqlite3 *db)
{
	int copied = 0, last = INT_MAX;
	for (int i = 0; i < TGI_CKPT_ROUNDS && !ckpt_stopping(k); i++) {
		int frames = 0, done = 0;
		if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &done) != SQLITE_OK)
			return 0;
		int fresh = done - copied;
		if (fresh < 0 || (fresh == 0 && done < frames))
			return 0; /* it started over meanwhile, or a reader holds it */
		if (fresh < TGI_CKPT_TAIL || fresh > last - last / 8)
			return 1;
		last = fresh;
		copied = done;
	}
	return 0;
}

/* Write the database and WAL files out to disk now, so that the fsyncs of
 * the checkpoint the committing call ends the cycle with find little left
 * to write.  (A round that ends with frames still to copy leaves the
 * database file unsynced: safe, since the WAL keeps those frames until a
 * complete checkpoint has synced it.) */
static void ckpt_presync(sqlite3 *db)
{
	static const int which[] = { SQLITE_FCNTL_FILE_POINTER, SQLITE_FCNTL_JOURNAL_POINTER };
	for (size_t i = 0; i < TGI_ARRAY_LEN(which); i++) {
		sqlite3_file *f = NULL;
		if (sqlite3_file_control(db, NULL, which[i], &f) == SQLITE_OK && f && f->pMethods)
			f->pMethods->xSync(f, SQLITE_SYNC_NORMAL);
	}
}

/* The thread reads only s->file and s->ckpt: the handle's own connection
 * belongs to whoever holds the handle. */
static void *ckpt_main(void *arg)
{
	sq *s = arg;
	struct ckpt *k = &s->ckpt;
	sqlite3 *db = NULL;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		while (!k->due && !k->stop)
			pthread_cond_wait(&k->cv, &k->mu);
		if (k->stop)
			break;
		k->due = 0;
		atomic_store(&k->phase, CKPT_COPYING);
		pthread_mutex_unlock(&k->mu);
		if (!db)
			db = ckpt_connect(s);
		int caught_up = db && ckpt_rounds(k, db);
		if (caught_up)
			ckpt_presync(db);
		pthread_mutex_lock(&k->mu);
		atomic_store(&k->phase, caught_up ? CKPT_CAUGHT_UP : CKPT_WAITING);
	}
	pthread_mutex_unlock(&k->mu);
	sqlite3_close_v2(db);
	return NULL;
}

/* Wake the thread, starting it on first need (with every signal blocked:
 * signals are the caller's).  0 when none can be started. */
static int ckpt_wake(sq *s)
{
	struct ckpt *k = &s->ckpt;

	if (k->failed)
		return 0;
	if (!k->started) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		k->failed = pthread_create(&k->thread, NULL, ckpt_main, s) != 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (k->failed)
			return 0;
		pthread_setname_np(k->thread, TGI_CKPT_THREAD_NAME); /* for ps, top, gdb */
		k->started = 1;
		k->pid = getpid();
	}
	pthread_mutex_lock(&k->mu);
	if (atomic_load(&k->phase) == CKPT_WAITING && !k->due) {
		k->due = 1;
		k->woken_gen = s->wal_gen;
		pthread_cond_signal(&k->cv);
	}
	pthread_mutex_unlock(&k->mu);
	return 1;
}

/* After each commit: does the WAL need copying, and by whom? */
void tgi_sq_ckpt_after_commit(sq *s)
{
	struct ckpt *k = &s->ckpt;

	if (s->commits < UINT_MAX)
		s->commits++;
	if (s->wal_frames < TGI_CKPT_FRAMES)
		k->wake_at = TGI_CKPT_FRAMES; /* short, or it started over */
	if (atomic_load(&k->phase) == CKPT_CAUGHT_UP) {
		atomic_store(&k->phase, CKPT_WAITING);
		if (k->woken_gen == s->wal_gen) /* else it started over: no tail */
			tgi_sq_ckpt_here(s);
	} else if (s->wal_frames >= k->wake_at) {
		/* not again before another eighth, if the WAL has not started over by then */
		k->wake_at = s->wal_frames + TGI_CKPT_FRAMES / 8;
		/* a short process (a `toolgate call`) leaves it to tgi_store_close */
		if (s->wal_frames >= TGI_CKPT_HARD_FRAMES ||
		    (s->commits >= TGI_CKPT_COMMITS && !ckpt_wake(s)))
			tgi_sq_ckpt_here(s);
	}
}

void tgi_sq_ckpt_stop(sq *s)
{
	struct ckpt *k = &s->ckpt;

	if (!k->started || k->pid != getpid())
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	k->started = 0;
}
