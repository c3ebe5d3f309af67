/*
 * events.c — the event sinks (mw.h, DESIGN §4): a JSONL file and a Unix
 * socket that any number of subscribers read line by line.
 *
 * Configuration, checked at open (file:line for a bad shape):
 *
 *   events:
 *     jsonl: PATH        appended, one write() per line (O_APPEND: several
 *                        processes may share the file); created 0600; a
 *                        symlink or anything but a regular file is refused
 *     fsync: always | never (default) | N   seconds between syncs
 *     socket: PATH       a Unix stream socket (a file there that is not a
 *                        socket is refused, never removed)
 *     queue: BYTES       how far one subscriber may fall behind (default
 *                        1 MiB, 4 KiB to 64 MiB)
 *
 * Relative paths are relative to the workspace.
 *
 * The socket.  One gate serves it: the first to bind it.  A gate that finds
 * a live socket (a connect succeeds) says so once and leaves it alone,
 * checking again every few seconds so that it takes over when the other
 * process is gone; a stale one (nobody accepts) is unlinked and bound.
 * One thread per gate accepts subscribers and writes to them with poll(),
 * non-blocking.  Emitting threads only append a line to each subscriber's
 * queue under the mutex and, when needed, wake the thread (an eventfd):
 * they never wait for a subscriber.
 *
 *   subscriber:  queued → (queue over `queue` bytes) overflow
 *                → dropping: the line being written is finished, then one
 *                  {"type":"sink.dropped","reason":...} line, best effort,
 *                  for at most SINK_GRACE_MS → closed
 *
 * A line is one allocation shared by every queue that holds it (counted
 * references, under the mutex).  Every queue holds the newest lines, so
 * together they hold no more than the furthest-behind one: at most `queue`
 * bytes of lines whatever the number of subscribers (at most
 * SINK_MAX_SUBS), plus a pointer per line in each queue (at most `queue` /
 * SINK_LINE_MIN lines).  Emitters wake the thread only when a queue gets
 * its first line or overflows: a socket the thread is already writing to
 * wakes it by becoming writable, so a stuck subscriber costs no wake-ups.
 * What subscribers send is read and thrown away; EOF means the subscriber
 * is gone.
 *
 * Owns: the JSONL descriptor, the socket, its thread and the subscribers.
 * Must not: write the ledger (persist does), redact anything but the lines
 * it builds from a call, or block an emitting thread on a subscriber.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

#define SINK_QUEUE_DEFAULT (1u << 20)
#define SINK_QUEUE_MIN     4096u
#define SINK_QUEUE_MAX     (64u << 20)
#define SINK_LINE_MIN      16u      /* lines one subscriber may hold: queue / this */
#define SINK_MAX_SUBS      64
#define SINK_GRACE_MS      5000     /* a dropped subscriber's time to take its last line */
#define SINK_RETRY_MS      2000     /* a gate that does not serve the socket looks again */
#define SINK_IOV           64
#define SINK_FSYNC_MAX_S   86400.0
#define SUMMARY_HEAD_CPS   160      /* "tool {args…}" */
#define SUMMARY_MSG_CPS    240      /* the error message */

typedef enum { FSYNC_NEVER, FSYNC_ALWAYS, FSYNC_EVERY } fsync_mode;

/* One line, shared by every queue that holds it. */
typedef struct sink_msg {
	size_t refs;      /* queues holding it (under mu) */
	size_t len;       /* bytes, the '\n' included */
	char   data[];
} sink_msg;

typedef struct sink_sub {
	int        fd;
	sink_msg **ring;       /* queued lines, oldest at head */
	size_t     cap, head, n;
	size_t     bytes;      /* queued bytes (the head line whole) */
	size_t     off;        /* bytes of the head line already written */
	int        overflow;   /* an emitter found the queue full */
	int        dropping;   /* the thread is sending the last line */
	double     deadline;   /* dropping: close at this monotonic ms */
	char       last[320];  /* dropping: the sink.dropped line */
	size_t     last_len, last_off;
} sink_sub;

struct tgi_sinks {
	tgi_strv   paths;          /* absolute: the JSONL file, the socket */

	/* JSONL */
	int        jsonl_fd;       /* -1: none */
	char      *jsonl_path;
	fsync_mode fsync;
	double     fsync_every_ms;
	double     synced_at;      /* monotonic ms of the last sync (jsonl_mu) */
	int        jsonl_failed;   /* the error was said (jsonl_mu) */
	pthread_mutex_t jsonl_mu;

	/* socket */
	char      *sock_path;      /* NULL: none */
	int        dir_fd;         /* the socket's directory, for a path too long for sun_path */
	char      *sock_base;
	size_t     queue_max;
	int        listen_fd;      /* -1: not serving (the thread's, and close's after join) */
	dev_t      sock_dev;       /* what we bound, to unlink only our own */
	ino_t      sock_ino;
	double     retry_at;
	int        wake_fd;
	pthread_t  thread;
	int        thread_started;

	pthread_mutex_t mu;        /* guards what follows */
	sink_sub  *subs[SINK_MAX_SUBS];
	size_t     nsubs;
	int        woken;          /* the eventfd was written since the thread last looked */
	int        stop;
	int        yield;          /* stop serving the socket for good */
};

/* ---- configuration ---- */

static int cfg_type(const tgi_config *cfg, const char *ptr, const json_t *v, const char *expected,
                    char *err, size_t errlen)
{
	char got[96];
	return tgi_config_fail(cfg, ptr, err, errlen, "expected %s, got %s", expected,
	                       tgi_json_describe(v, got, sizeof got));
}

/* The path at ptr (events/<key>), made absolute against the workspace.
 * Caller frees. */
static char *cfg_path(const tgi_config *cfg, const char *ptr, const json_t *v, char *err,
                      size_t errlen)
{
	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    json_string_length(v) >= PATH_MAX) {
		cfg_type(cfg, ptr, v, "a file path", err, errlen);
		return NULL;
	}
	const char *p = json_string_value(v);
	if (p[strlen(p) - 1] == '/') {
		tgi_config_fail(cfg, ptr, err, errlen, "expected a file path, got a directory "
		                "\"%s\"", p);
		return NULL;
	}
	size_t n = strlen(cfg->workspace) + strlen(p) + 2;
	char *abs = tgi_xmalloc(n);
	if (p[0] == '/')
		tgi_snprintf(abs, n, "%s", p);
	else
		tgi_snprintf(abs, n, "%s/%s", cfg->workspace, p);
	return abs;
}

static int cfg_fsync(tgi_sinks *s, const tgi_config *cfg, const json_t *v, char *err,
                     size_t errlen)
{
	static const char expected[] = "always, never or a number of seconds between syncs";
	if (json_is_string(v) && !strcmp(json_string_value(v), "always"))
		s->fsync = FSYNC_ALWAYS;
	else if (json_is_string(v) && !strcmp(json_string_value(v), "never"))
		s->fsync = FSYNC_NEVER;
	else if (json_is_number(v) && json_number_value(v) > 0 &&
	         json_number_value(v) <= SINK_FSYNC_MAX_S) {
		s->fsync = FSYNC_EVERY;
		s->fsync_every_ms = json_number_value(v) * 1000.0;
	} else if (json_is_number(v)) {
		return tgi_config_fail(cfg, "/events/fsync", err, errlen, "expected seconds from "
		                       "more than 0 to %.0f, got %g", SINK_FSYNC_MAX_S,
		                       json_number_value(v));
	} else {
		return cfg_type(cfg, "/events/fsync", v, expected, err, errlen);
	}
	return 0;
}

static int set_path(const tgi_conf_ctx *x, const json_t *v, const char *ptr, char **out)
{
	return (*out = cfg_path(x->user, ptr, v, x->err, x->errlen)) ? 0 : -1;
}

static int set_jsonl(const tgi_conf_ctx *x, const json_t *v, const char *ptr, void *obj)
{
	return set_path(x, v, ptr, &((tgi_sinks *)obj)->jsonl_path);
}

static int set_socket(const tgi_conf_ctx *x, const json_t *v, const char *ptr, void *obj)
{
	return set_path(x, v, ptr, &((tgi_sinks *)obj)->sock_path);
}

static int set_fsync(const tgi_conf_ctx *x, const json_t *v, const char *ptr, void *obj)
{
	tgi_sinks *s = obj;
	if (!s->jsonl_path)
		return tgi_conf_fail(x, ptr, "applies to the JSONL file; set events.jsonl too");
	return cfg_fsync(s, x->user, v, x->err, x->errlen);
}

static const tgi_conf_key sink_keys[] = {
	TGI_CONF_CUSTOM("jsonl", set_jsonl, "a file each event is appended to (workspace-relative)"),
	TGI_CONF_CUSTOM("fsync", set_fsync, "always, never (the default) or seconds between syncs"),
	TGI_CONF_CUSTOM("socket", set_socket, "a Unix socket subscribers read events from"),
	TGI_CONF_INT("queue", tgi_sinks, queue_max, SINK_QUEUE_MIN, SINK_QUEUE_MAX,
	             "bytes one subscriber may fall behind (default 1 MiB)"),
};

/* Read cfg->events into s (nothing opened yet). */
static int cfg_read(tgi_sinks *s, const tgi_config *cfg, char *err, size_t errlen)
{
	tgi_conf_doc d = tgi_config_doc(cfg);
	tgi_conf_ctx x = { &d, err, errlen, (void *)cfg };
	if (tgi_conf_section_apply(&x, sink_keys, TGI_ARRAY_LEN(sink_keys), cfg->events, "/events",
	                           s) < 0)
		return -1;
	if (s->queue_max && !s->sock_path)
		return tgi_config_fail(cfg, "/events/queue", err, errlen, "applies to socket "
		                       "subscribers; set events.socket too");
	if (s->jsonl_path && s->sock_path && !strcmp(s->jsonl_path, s->sock_path))
		return tgi_config_fail(cfg, "/events/socket", err, errlen, "is the same file as "
		                       "events.jsonl");
	return 0;
}

/* ---- JSONL ---- */

static int jsonl_open(tgi_sinks *s, const tgi_config *cfg, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO planted there must not hang the open */
	int fd = open(s->jsonl_path,
	              O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
	              0600);
	if (fd < 0 && errno == ELOOP)
		return tgi_config_fail(cfg, "/events/jsonl", err, errlen, "\"%s\" is a symbolic "
		                       "link; the event log must be a regular file", s->jsonl_path);
	if (fd < 0)
		return tgi_config_fail(cfg, "/events/jsonl", err, errlen, "cannot open \"%s\": %s",
		                       s->jsonl_path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return tgi_config_fail(cfg, "/events/jsonl", err, errlen, "\"%s\" is not a regular "
		                       "file", s->jsonl_path);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	s->jsonl_fd = fd;
	s->synced_at = tgi_now_ms();
	return 0;
}

/* Append one line with one write(), so that lines of several processes
 * never interleave.  An error is said once and never stops a call. */
static void jsonl_write(tgi_sinks *s, const char *line, size_t len)
{
	pthread_mutex_lock(&s->jsonl_mu);
	ssize_t w;
	do
		w = write(s->jsonl_fd, line, len);
	while (w < 0 && errno == EINTR);
	int bad = w != (ssize_t)len;
	const char *why = w < 0 ? strerror(errno) : "a short write (is the disk full?)";
	double now = tgi_now_ms();
	if (!bad && (s->fsync == FSYNC_ALWAYS ||
	             (s->fsync == FSYNC_EVERY && now - s->synced_at >= s->fsync_every_ms))) {
		if (fdatasync(s->jsonl_fd) < 0) {
			bad = 1;
			why = strerror(errno);
		}
		s->synced_at = now;
	}
	if (bad && !s->jsonl_failed) {
		char shown[PATH_MAX];
		tgi_sanitize(shown, sizeof shown, s->jsonl_path);
		s->jsonl_failed = 1;
		fprintf(stderr, "toolgate: events: cannot write \"%s\": %s; events still go to the "
		        "ledger\n", shown, why);
	}
	pthread_mutex_unlock(&s->jsonl_mu);
}

/* ---- the socket: binding and taking over ---- */

/* The socket's address; a path too long for sun_path goes through the
 * directory's descriptor.  -1 when even that does not fit. */
static int sock_addr(const tgi_sinks *s, struct sockaddr_un *sa, socklen_t *len)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	size_t n = strlen(s->sock_path);
	if (n < sizeof sa->sun_path) {
		memcpy(sa->sun_path, s->sock_path, n);
	} else {
		int w = snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/%s", s->dir_fd,
		                 s->sock_base);
		if (s->dir_fd < 0 || w < 0 || (size_t)w >= sizeof sa->sun_path)
			return -1;
		n = (size_t)w;
	}
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	return 0;
}

/* Does something accept on the socket file?  1 yes (or it is too busy to
 * say: its backlog is full), 0 no (stale), -1 cannot tell (errno). */
static int sock_live(const tgi_sinks *s)
{
	struct sockaddr_un sa;
	socklen_t len;
	if (sock_addr(s, &sa, &len) < 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int rc = connect(fd, (struct sockaddr *)&sa, len);
	int e = errno;
	close(fd);
	if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
		return 1;
	if (e == ECONNREFUSED)
		return 0;
	errno = e;
	return -1;
}

/* Bind and listen.  1 serving, 0 someone else got there first, -1 (err).
 *
 * Never a moment in which another user could connect, whatever the umask
 * (a process-wide setting this multithreaded gate must not touch): the
 * socket is bound inside a directory of our own, made 0700 (mkdir's mode
 * can only lose bits to the umask, and is set again to be sure), made 0600
 * there, listening, and only then given its name with link(), which fails
 * when the name exists: the first gate to link it serves it, as bind's
 * EADDRINUSE said before.  The socket's mode is also set on its
 * descriptor before bind, which Linux carries to the file it creates: one
 * more wall, not the one relied on.  The private directory is removed
 * before this returns (a crash in between leaves it, holding a dead
 * socket, named ".<socket>.bind-XXXXXXXXXXXXXXXX"). */
static int sock_bind(tgi_sinks *s, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	socklen_t len;
	struct stat st;
	char tmp[NAME_MAX + 1], hex[17];
	if (sock_addr(s, &sa, &len) < 0) {
		tgi_snprintf(err, errlen, "the socket path \"%s\" is too long", s->sock_path);
		return -1;
	}
	/* the private directory, beside the socket (the same file system) */
	int made = 0;
	for (int tries = 0; tries < 8 && !made; tries++) {
		tgi_random_hex(hex, 8);
		if (snprintf(tmp, sizeof tmp, ".%.200s.bind-%s", s->sock_base, hex) < 0)
			break;
		if (mkdirat(s->dir_fd, tmp, 0700) == 0)
			made = 1;
		else if (errno != EEXIST)
			break;
	}
	if (!made) {
		tgi_snprintf(err, errlen, "cannot make a private directory beside \"%s\": %s",
		             s->sock_path, strerror(errno));
		return -1;
	}
	int rc = -1;
	int fd = -1;
	int tfd = openat(s->dir_fd, tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* ours, and nobody else's to enter (a directory another user put in its
	 * place would not be owned by us) */
	if (tfd < 0 || fstat(tfd, &st) < 0 || fchmodat(s->dir_fd, tmp, 0700, 0) < 0 ||
	    fstat(tfd, &st) < 0) {
		tgi_snprintf(err, errlen, "cannot make a private directory beside \"%s\": %s",
		             s->sock_path, strerror(errno));
		goto out;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		tgi_snprintf(err, errlen, "the private directory made beside \"%s\" was replaced "
		             "by another; not binding there", s->sock_path);
		goto out;
	}
	struct sockaddr_un ta;
	memset(&ta, 0, sizeof ta);
	ta.sun_family = AF_UNIX;
	int w = snprintf(ta.sun_path, sizeof ta.sun_path, "/proc/self/fd/%d/s", tfd);
	size_t dn = strlen(s->sock_path) - strlen(s->sock_base);   /* "dir/" */
	if (dn + strlen(tmp) + 2 < sizeof ta.sun_path)              /* "dir/tmp/s": no /proc needed */
		w = snprintf(ta.sun_path, sizeof ta.sun_path, "%.*s%s/s", (int)dn, s->sock_path, tmp);
	socklen_t tlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)w + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		tgi_snprintf(err, errlen, "cannot make a socket: %s", strerror(errno));
		goto out;
	}
	(void)fchmod(fd, 0600);
	/* subscribers of another user have no business here */
	if (bind(fd, (struct sockaddr *)&ta, tlen) < 0 || fchmodat(tfd, "s", 0600, 0) < 0 ||
	    fstatat(tfd, "s", &st, AT_SYMLINK_NOFOLLOW) < 0 || listen(fd, SOMAXCONN) < 0) {
		tgi_snprintf(err, errlen, "cannot listen on \"%s\": %s", s->sock_path, strerror(errno));
		goto out;
	}
	if (linkat(tfd, "s", s->dir_fd, s->sock_base, 0) < 0) {
		int e = errno;
		if (e == EEXIST) {
			rc = 0;
			goto out;
		}
		/* a file system without hard links: a rename that will not replace */
		if ((e != EPERM && e != EOPNOTSUPP) ||
		    renameat2(tfd, "s", s->dir_fd, s->sock_base, RENAME_NOREPLACE) < 0) {
			if (e == EPERM || e == EOPNOTSUPP)
				e = errno;
			if (e == EEXIST) {
				rc = 0;
				goto out;
			}
			tgi_snprintf(err, errlen, "cannot bind \"%s\": %s", s->sock_path, strerror(e));
			goto out;
		}
	}
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	s->listen_fd = fd;
	fd = -1;
	rc = 1;
out:
	if (fd >= 0)
		close(fd);
	if (tfd >= 0) {
		unlinkat(tfd, "s", 0);
		close(tfd);
	}
	unlinkat(s->dir_fd, tmp, AT_REMOVEDIR);
	return rc;
}

/* Serve the socket if nobody does.  1 serving, 0 another process serves it
 * (or a file appeared there since open), -1 (err). */
static int sock_take(tgi_sinks *s, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(s->sock_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return 0;
		int live = sock_live(s);
		if (live == 1)
			return 0;
		if (live < 0) {
			tgi_snprintf(err, errlen, "cannot tell whether \"%s\" is in use: %s", s->sock_path,
			             strerror(errno));
			return -1;
		}
		if (unlink(s->sock_path) < 0 && errno != ENOENT) {
			tgi_snprintf(err, errlen, "cannot remove the stale socket \"%s\": %s",
			             s->sock_path, strerror(errno));
			return -1;
		}
	} else if (errno != ENOENT) {
		tgi_snprintf(err, errlen, "cannot stat \"%s\": %s", s->sock_path, strerror(errno));
		return -1;
	}
	return sock_bind(s, err, errlen);
}

/* Close the listening socket and remove the file if it is still ours. */
static void sock_release(tgi_sinks *s)
{
	struct stat st;
	if (s->listen_fd < 0)
		return;
	if (lstat(s->sock_path, &st) == 0 && st.st_dev == s->sock_dev && st.st_ino == s->sock_ino)
		unlink(s->sock_path);
	close(s->listen_fd);
	s->listen_fd = -1;
}

/* ---- subscribers ---- */

static void msg_unref(sink_msg *m)
{
	if (--m->refs == 0)
		free(m);
}

/* Under mu. */
static void sub_pop(sink_sub *u)
{
	sink_msg *m = u->ring[u->head];
	u->bytes -= m->len;
	u->head = (u->head + 1) % u->cap;
	u->n--;
	u->off = 0;
	msg_unref(m);
}

/* Under mu: 0, or -1 when the queue is full. */
static int sub_push(sink_sub *u, sink_msg *m, size_t max)
{
	if (u->bytes + m->len > max || u->n >= max / SINK_LINE_MIN)
		return -1;
	if (u->n == u->cap) {
		size_t ncap = u->cap ? u->cap * 2 : 64;
		sink_msg **r = tgi_xmalloc(ncap * sizeof *r);
		for (size_t i = 0; i < u->n; i++)
			r[i] = u->ring[(u->head + i) % u->cap];
		free(u->ring);
		u->ring = r;
		u->cap = ncap;
		u->head = 0;
	}
	u->ring[(u->head + u->n) % u->cap] = m;
	u->n++;
	u->bytes += m->len;
	m->refs++;
	return 0;
}

static void last_line(sink_sub *u, const char *reason)
{
	char ts[32];
	tgi_iso8601(tgi_unix_ms(), ts);
	int n = snprintf(u->last, sizeof u->last,
	                 "{\"type\":\"sink.dropped\",\"ts\":\"%s\",\"reason\":\"%s\"}\n", ts, reason);
	u->last_len = n > 0 && (size_t)n < sizeof u->last ? (size_t)n : 0;
	u->last_off = 0;
}

/* Under mu: the queue overflowed; keep only the line being written. */
static void sub_start_drop(sink_sub *u)
{
	size_t keep = u->off > 0;
	while (u->n > keep) {
		size_t last = (u->head + u->n - 1) % u->cap;
		sink_msg *m = u->ring[last];
		u->bytes -= m->len;
		u->n--;
		msg_unref(m);
	}
	last_line(u, "this subscriber fell too far behind (its queue is full); reconnect to "
	             "follow again, and use toolgate log for what was missed");
	u->dropping = 1;
	u->deadline = tgi_now_ms() + SINK_GRACE_MS;
}

/* Thread only: remove u (index i) and close it. */
static void sub_remove(tgi_sinks *s, size_t i)
{
	pthread_mutex_lock(&s->mu);
	sink_sub *u = s->subs[i];
	s->subs[i] = s->subs[--s->nsubs];
	s->subs[s->nsubs] = NULL;
	while (u->n)
		sub_pop(u);
	pthread_mutex_unlock(&s->mu);
	close(u->fd);
	free(u->ring);
	free(u);
}

/* Write what u has queued, without blocking.  0, or -1 when it is gone. */
static int sub_flush(tgi_sinks *s, sink_sub *u)
{
	for (int round = 0; round < 16; round++) {   /* then the others get a turn */
		struct iovec iov[SINK_IOV];
		int cnt = 0;
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; i < u->n && cnt < SINK_IOV; i++) {
			sink_msg *m = u->ring[(u->head + i) % u->cap];
			size_t skip = i == 0 ? u->off : 0;
			iov[cnt].iov_base = m->data + skip;
			iov[cnt++].iov_len = m->len - skip;
		}
		int drop = u->dropping;
		pthread_mutex_unlock(&s->mu);
		if (!cnt && drop && u->last_off < u->last_len) {
			iov[cnt].iov_base = u->last + u->last_off;
			iov[cnt++].iov_len = u->last_len - u->last_off;
		}
		if (!cnt)
			return 0;
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
		ssize_t w = sendmsg(u->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		size_t left = (size_t)w;
		pthread_mutex_lock(&s->mu);
		while (left && u->n) {
			sink_msg *m = u->ring[u->head];
			size_t rem = m->len - u->off;
			if (left < rem) {
				u->off += left;
				left = 0;
				break;
			}
			left -= rem;
			sub_pop(u);
		}
		pthread_mutex_unlock(&s->mu);
		u->last_off += left;   /* what went past the queue was the last line */
	}
	return 0;
}

/* Read and discard what the subscriber sent.  -1 at EOF or an error. */
static int sub_drain(sink_sub *u)
{
	char buf[4096];
	for (int i = 0; i < 16; i++) {
		ssize_t r = recv(u->fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r > 0)
			continue;
		if (r == 0)
			return -1;
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	}
	return 0;
}

/* Say one line to a connection we will not keep, and close it. */
static void refuse_sub(int fd, const char *reason)
{
	sink_sub tmp = {.fd = fd};
	last_line(&tmp, reason);
	ssize_t w = send(fd, tmp.last, tmp.last_len, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)w;
	close(fd);
}

static void sinks_accept(tgi_sinks *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		pthread_mutex_lock(&s->mu);
		int full = s->nsubs == SINK_MAX_SUBS;
		if (!full) {
			sink_sub *u = tgi_xcalloc(1, sizeof *u);
			u->fd = fd;
			s->subs[s->nsubs++] = u;
		}
		pthread_mutex_unlock(&s->mu);
		if (full)
			refuse_sub(fd, "too many subscribers");
	}
}

/* Thread only: every subscriber closed, the socket given up. */
static void sinks_unserve(tgi_sinks *s)
{
	while (s->nsubs) {
		sub_flush(s, s->subs[0]);   /* what can go without waiting */
		sub_remove(s, 0);
	}
	sock_release(s);
}

/* ---- the thread ---- */

static void *sinks_main(void *arg)
{
	tgi_sinks *s = arg;
	struct pollfd pfd[SINK_MAX_SUBS + 2];
	sink_sub *ps[SINK_MAX_SUBS];
	char err[512];

	for (;;) {
		size_t np = 0, nu = 0;
		double now = tgi_now_ms(), wait = -1;
		pthread_mutex_lock(&s->mu);
		int stop = s->stop, yield = s->yield;
		s->woken = 0;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		if (yield && s->listen_fd >= 0)
			sinks_unserve(s);
		if (!yield && s->listen_fd < 0 && now >= s->retry_at) {
			/* a failure now was not one at open: the ledger and the JSONL
			 * file still get every event, so it is not worth a line */
			sock_take(s, err, sizeof err);
			s->retry_at = now + SINK_RETRY_MS;
		}

		pfd[np++] = (struct pollfd){.fd = s->wake_fd, .events = POLLIN};
		if (s->listen_fd >= 0)
			pfd[np++] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
		else if (!yield)
			wait = s->retry_at - now;
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; i < s->nsubs; i++) {
			sink_sub *u = s->subs[i];
			if (u->overflow && !u->dropping)
				sub_start_drop(u);
			short ev = POLLIN;
			if (u->n || (u->dropping && u->last_off < u->last_len))
				ev |= POLLOUT;
			if (u->dropping) {
				double left = u->deadline - now;
				wait = wait < 0 || left < wait ? left : wait;
			}
			ps[nu++] = u;
			pfd[np++] = (struct pollfd){.fd = u->fd, .events = ev};
		}
		pthread_mutex_unlock(&s->mu);

		int timeout = wait < 0 ? -1 : wait < 1 ? 1 : (int)wait + 1;
		if (poll(pfd, (nfds_t)np, timeout) < 0) {
			if (errno != EINTR)
				usleep(10 * 1000);   /* never spin on an error that stays */
			continue;
		}
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			ssize_t r = read(s->wake_fd, &v, sizeof v);
			(void)r;
		}
		size_t base = np - nu;
		if (base == 2 && (pfd[1].revents & POLLIN))
			sinks_accept(s);
		/* from the end, so that removing one leaves the others' indexes */
		now = tgi_now_ms();
		for (size_t k = nu; k-- > 0;) {
			sink_sub *u = ps[k];
			short re = pfd[base + k].revents;
			int gone = (re & (POLLERR | POLLNVAL)) ||
			           ((re & (POLLIN | POLLHUP)) && sub_drain(u) < 0);
			if (!gone && (re & POLLOUT))
				gone = sub_flush(s, u) < 0;
			pthread_mutex_lock(&s->mu);
			int done = u->dropping && !u->n && u->last_off >= u->last_len;
			int late = u->dropping && now >= u->deadline;
			pthread_mutex_unlock(&s->mu);
			if (gone || done || late) {
				size_t i = 0;
				while (s->subs[i] != u)   /* only this thread removes: it is there */
					i++;
				sub_remove(s, i);
			}
		}
	}
	sinks_unserve(s);
	return NULL;
}

/* ---- open, close ---- */

static int sock_open(tgi_sinks *s, const tgi_config *cfg, char *err, size_t errlen)
{
	char why[512];
	struct stat st;
	if (!s->queue_max)
		s->queue_max = SINK_QUEUE_DEFAULT;
	const char *slash = strrchr(s->sock_path, '/');
	s->sock_base = tgi_strdup(slash + 1);
	char *dir = tgi_strndup(s->sock_path, (size_t)(slash - s->sock_path));
	s->dir_fd = open(*dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	free(dir);
	if (s->dir_fd < 0)
		return tgi_config_fail(cfg, "/events/socket", err, errlen, "cannot open the "
		                       "directory of \"%s\": %s", s->sock_path, strerror(e));
	if (lstat(s->sock_path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return tgi_config_fail(cfg, "/events/socket", err, errlen, "\"%s\" exists and is "
		                       "not a socket; refusing to replace it", s->sock_path);
	int rc = sock_take(s, why, sizeof why);
	if (rc < 0)
		return tgi_config_fail(cfg, "/events/socket", err, errlen, "%s", why);
	/* rc == 0: another live gate serves it (a `serve` while this is a
	 * `toolgate call` or `log`): the normal case, not worth a line; this
	 * gate's events reach subscribers through the ledger (log --follow) */
	s->retry_at = tgi_now_ms() + SINK_RETRY_MS;
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->wake_fd < 0)
		return tgi_config_fail(cfg, "/events/socket", err, errlen, "cannot make an "
		                       "eventfd: %s", strerror(errno));
	if ((e = pthread_create(&s->thread, NULL, sinks_main, s)) != 0)
		return tgi_config_fail(cfg, "/events/socket", err, errlen, "cannot start its "
		                       "thread: %s", strerror(e));
	s->thread_started = 1;
	return 0;
}

int tgi_sinks_open(const tgi_config *cfg, int closed, tgi_sinks **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!cfg->events || json_is_null(cfg->events) ||
	    (json_is_object(cfg->events) && !json_object_size(cfg->events)))
		return 0;
	tgi_sinks *s = tgi_xcalloc(1, sizeof *s);
	s->jsonl_fd = s->listen_fd = s->wake_fd = s->dir_fd = -1;
	pthread_mutex_init(&s->jsonl_mu, NULL);
	pthread_mutex_init(&s->mu, NULL);
	if (cfg_read(s, cfg, err, errlen) < 0 ||
	    (!closed && s->jsonl_path && jsonl_open(s, cfg, err, errlen) < 0) ||
	    (!closed && s->sock_path && sock_open(s, cfg, err, errlen) < 0)) {
		tgi_sinks_close(s);
		return -1;
	}
	if (s->jsonl_path)
		tgi_strv_push(&s->paths, tgi_strdup(s->jsonl_path));
	if (s->sock_path)
		tgi_strv_push(&s->paths, tgi_strdup(s->sock_path));
	*out = s;
	return 0;
}

void tgi_sinks_close(tgi_sinks *s)
{
	if (!s)
		return;
	if (s->thread_started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		uint64_t one = 1;
		ssize_t w = write(s->wake_fd, &one, sizeof one);
		(void)w;
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	sock_release(s);   /* bound, but the thread never ran */
	if (s->jsonl_fd >= 0) {
		if (s->fsync == FSYNC_EVERY)
			fdatasync(s->jsonl_fd);
		close(s->jsonl_fd);
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	pthread_mutex_destroy(&s->jsonl_mu);
	pthread_mutex_destroy(&s->mu);
	tgi_strv_free(&s->paths);
	free(s->jsonl_path);
	free(s->sock_path);
	free(s->sock_base);
	free(s);
}

const tgi_strv *tgi_sinks_paths(const tgi_sinks *s)
{
	return s ? &s->paths : NULL;
}

void tgi_sinks_yield_socket(tgi_sinks *s)
{
	if (!s || !s->thread_started)
		return;
	pthread_mutex_lock(&s->mu);
	s->yield = 1;
	uint64_t one = 1;
	ssize_t w = write(s->wake_fd, &one, sizeof one);
	(void)w;
	pthread_mutex_unlock(&s->mu);
}

/* ---- emitting ---- */

/* Hand one line (m, taken) to every sink. */
static void sinks_put(tgi_sinks *s, sink_msg *m)
{
	if (s->jsonl_fd >= 0)
		jsonl_write(s, m->data, m->len);
	if (!s->thread_started) {
		free(m);
		return;
	}
	int wake = 0;
	pthread_mutex_lock(&s->mu);
	m->refs = 1;   /* ours, until every queue has it */
	for (size_t i = 0; i < s->nsubs; i++) {
		sink_sub *u = s->subs[i];
		if (u->overflow || u->dropping)
			continue;
		/* the thread needs a word when it has something new to do: a queue
		 * that was empty (it did not wait to write there), or one that is
		 * full; a queue it is already writing wakes it when the socket can
		 * take more, so a subscriber that never reads costs no wake-ups */
		if (sub_push(u, m, s->queue_max) < 0) {
			u->overflow = 1;
			wake = 1;
		} else if (u->n == 1) {
			wake = 1;
		}
	}
	if (wake && !s->woken) {
		s->woken = 1;
		uint64_t one = 1;
		ssize_t w = write(s->wake_fd, &one, sizeof one);
		(void)w;
	}
	msg_unref(m);
	pthread_mutex_unlock(&s->mu);
}

/* json as one line ending in '\n' (NULL when it cannot be encoded). */
static sink_msg *msg_of(const json_t *json)
{
	char *text = json_dumps(json, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
	if (!text)
		return NULL;
	size_t n = strlen(text);
	sink_msg *m = tgi_xmalloc(sizeof *m + n + 1);
	m->refs = 0;
	m->len = n + 1;
	memcpy(m->data, text, n);
	m->data[n] = '\n';
	free(text);
	return m;
}

void tgi_sinks_emit(tgi_sinks *s, const json_t *event)
{
	if (!s || !event)
		return;
	sink_msg *m = msg_of(event);
	if (m)
		sinks_put(s, m);
}

/* Append s as a JSON string, or null when NULL or empty.  Text that is not
 * plain ASCII goes through tgi_sanitize first (invalid UTF-8 as U+FFFD,
 * controls as spaces); then only quotes and backslashes need escaping. */
static void put_str(tgi_buf *b, const char *s)
{
	char clean[2048];
	if (!s || !*s) {
		tgi_buf_puts(b, "null");
		return;
	}
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p >= 0x80) {
			tgi_sanitize(clean, sizeof clean, s);
			s = clean;
			break;
		}
	tgi_buf_append(b, "\"", 1);
	for (const char *run = s;; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch && ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		tgi_buf_append(b, run, (size_t)(s - run));
		if (!ch)
			break;
		if (ch == '"' || ch == '\\')
			tgi_buf_printf(b, "\\%c", ch);
		else
			tgi_buf_printf(b, "\\u%04x", ch);
		run = s + 1;
	}
	tgi_buf_append(b, "\"", 1);
}

/* Append the line of one of c's events, '\n' included.  Written by hand:
 * this runs for every event of every call while a sink listens. */
static void put_line(tgi_buf *b, const tgi_call *c, const tgi_event *ev, const char *summary)
{
	char ts[32];
	tgi_iso8601(ev->ts_ms, ts);
	tgi_buf_printf(b, "{\"seq\":%lld,\"ts\":\"%s\",\"type\":", (long long)ev->seq, ts);
	put_str(b, ev->type);
	tgi_buf_puts(b, ",\"stage\":");
	put_str(b, ev->stage);
	tgi_buf_puts(b, ",\"op_id\":");
	put_str(b, c->op_id);
	tgi_buf_puts(b, ",\"session\":");
	put_str(b, c->session);
	tgi_buf_puts(b, ",\"principal\":");
	put_str(b, c->principal_name);
	tgi_buf_puts(b, ",\"tool\":");
	put_str(b, c->tool);
	tgi_buf_printf(b, ",\"status\":\"%s\",\"summary\":", tg_status_name(c->status));
	put_str(b, summary);
	tgi_buf_puts(b, ",\"data\":");
	/* persist, which always runs just before (tgi_call_finish), replaced
	 * each event's data with its redacted copy: not walked a second time */
	char *text = ev->data ? json_dumps(ev->data, JSON_COMPACT | JSON_ENCODE_ANY |
	                                   JSON_REAL_PRECISION(6)) : NULL;
	tgi_buf_puts(b, text ? text : "null");
	free(text);
	tgi_buf_puts(b, "}\n");
}

/* Is anyone listening: the JSONL file, or a subscriber on the socket? */
static int listened(tgi_sinks *s)
{
	if (s->jsonl_fd >= 0)
		return 1;
	if (!s->thread_started)
		return 0;
	pthread_mutex_lock(&s->mu);
	int n = s->nsubs > 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Every event of the call as one message of lines: one write() to the
 * JSONL file and one queue entry per subscriber, whatever the count. */
void tgi_sinks_emit_call(tgi_sinks *s, const tgi_call *c)
{
	if (!s || !c->nevents || !listened(s))
		return;
	char *args = c->args_logged ? NULL : tgi_redacted_args(c);
	char *message = tgi_redacted_message(c);
	char *summary = tgi_event_summary(c->tool, c->args_logged ? c->args_logged : args,
	                                  tg_status_name(c->status),
	                                  c->kind ? tg_errkind_name(c->kind) : NULL, message);
	tgi_buf b;
	tgi_buf_init(&b, SIZE_MAX / 2);
	for (size_t i = 0; i < c->nevents; i++)
		put_line(&b, c, &c->events[i], summary);
	if (b.len) {
		sink_msg *m = tgi_xmalloc(sizeof *m + b.len);
		m->refs = 0;
		m->len = b.len;
		memcpy(m->data, b.p, b.len);
		sinks_put(s, m);
	}
	tgi_buf_free(&b);
	free(summary);
	free(message);
	free(args);
}

/* ---- the summary ---- */

/* Append the first max_cps code points of text, control characters as
 * spaces and invalid bytes as U+FFFD (tgi_sanitize), "…" when it went on. */
static void put_cut(tgi_buf *b, const char *text, size_t max_cps)
{
	size_t n = strlen(text);
	size_t cut = tgi_utf8_offset(text, n, max_cps);
	char *part = tgi_strndup(text, cut);
	char *clean = tgi_xmalloc(cut * 3 + 1);   /* an invalid byte becomes U+FFFD */
	tgi_sanitize(clean, cut * 3 + 1, part);
	tgi_buf_puts(b, clean);
	if (cut < n)
		tgi_buf_puts(b, "…");
	free(clean);
	free(part);
}

static int succeeded(const char *status)
{
	return !strcmp(status, "persisted") || !strcmp(status, "replayed") ||
	       !strcmp(status, "dry_run");
}

char *tgi_event_summary(const char *tool, const char *args_redacted, const char *status,
                        const char *kind, const char *message)
{
	tgi_buf head, b;
	tgi_buf_init(&head, 4096);
	tgi_buf_init(&b, 4096);
	if (tool && *tool)
		tgi_buf_puts(&head, tool);
	if (args_redacted && *args_redacted && strcmp(args_redacted, "null")) {
		if (head.len)
			tgi_buf_puts(&head, " ");
		/* cut before copying: the args may be long */
		size_t n = strlen(args_redacted);
		size_t cut = tgi_utf8_offset(args_redacted, n, SUMMARY_HEAD_CPS + 1);
		tgi_buf_append(&head, args_redacted, cut);
	}
	if (head.len)
		put_cut(&b, head.p, SUMMARY_HEAD_CPS);
	if (status && *status && !succeeded(status)) {
		tgi_buf_puts(&b, b.len ? " → " : "→ ");
		put_cut(&b, status, 32);
		if (kind && *kind) {
			tgi_buf_puts(&b, " ");
			put_cut(&b, kind, 32);
		}
		if (message && *message) {
			tgi_buf_puts(&b, ": ");
			put_cut(&b, message, SUMMARY_MSG_CPS);
		}
	}
	tgi_buf_free(&head);
	char *out = tgi_buf_steal(&b);
	return out ? out : tgi_strdup("");
}

/* ---- events of no call ---- */

int tgi_gate_event(tg_gate *g, const char *op_id, const char *type, const char *stage,
                   const json_t *data, char *err, size_t errlen)
{
	json_t *d = data ? tgi_redact_json(g->redact, (json_t *)data, NULL) : NULL;
	tgi_event ev = {.type = type, .stage = stage, .data = d, .ts_ms = tgi_unix_ms()};
	int rc = tgi_store_event(g->store, op_id, &ev, err, errlen);
	if (g->sinks) {
		char ts[32];
		tgi_iso8601(ev.ts_ms, ts);
		json_t *line = json_pack("{s:I, s:s, s:s, s:s?, s:s?, s:O?}", "seq", (json_int_t)ev.seq,
		                         "ts", ts, "type", type, "stage", stage, "op_id", op_id, "data", d);
		tgi_sinks_emit(g->sinks, line);
		json_decref(line);
	}
	json_decref(d);
	return rc;
}
