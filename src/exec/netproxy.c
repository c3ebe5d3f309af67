/*
 * netproxy.c — the filtering proxy: one thread per gate, serving every
 * sandbox with a host list, in the gate's own network namespace.
 *
 * Connections arrive as fds on each sandbox's socketpair (SCM_RIGHTS, one
 * per message: from its forwarder, netforward.c, or tgi_netproxy_hand).  The
 * thread runs one epoll loop over those sockets, every connection's two
 * sockets, a wake-up eventfd (attach, detach, stop) and the resolver's
 * eventfd.  A connection goes
 *
 *   HEAD ──refused──▶ REPLY ──▶ LINGER ──▶ closed
 *    │ allowed
 *    ▼
 *   RESOLVE ──▶ CONNECT ──▶ RELAY ──▶ closed
 *   (resolver    (non-blocking   (both ways, half-closes passed on,
 *    threads)     connect, each   until both directions are done)
 *                 address in turn)
 *
 * A name allowed only by a wildcard entry does not reach loopback,
 * link-local, multicast or metadata addresses (tgi_netaddr_special): those
 * it resolves to are skipped, and a name with nothing else is refused.
 *
 * Every state has a deadline: the head (head_timeout), resolve and
 * connect together (connect_timeout, shared among the addresses), a tunnel
 * with no byte either way (idle_timeout), a reply and the lingering read
 * after it (2 s each).  Buffers are fixed: the head (max_head bytes) until
 * the relay starts, then two of RELAY_BUF; reading stops while a buffer is
 * full, so a slow or stopped peer holds only its own connection.  Caps:
 * max_tunnels connections in all, max_per_sandbox per sandbox (503 past
 * them).  Every request ends in one callback: refused, failed or opened.
 *
 * Names are resolved by getaddrinfo on detached resolver threads (at most
 * opts.resolvers, started when needed), so that a slow lookup delays only
 * the connection that asked; they share a reference-counted queue, and a
 * thread still in getaddrinfo when the proxy is freed frees it last.
 *
 * Owns: the thread, the connections and upstream sockets, each sandbox's
 * end of its socketpair while attached.  Must not: judge hosts (netallow.c)
 * or parse heads (nethead.c) itself, block on anything but epoll_wait, or
 * call a callback for a sandbox after its detach returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/netproxy.h"
#include "exec/netforward.h"
#include "util/util.h"

#define DEF_MAX_HEAD     16384
#define RELAY_BUF        (32 * 1024)    /* >= max_head + TGI_NETREQ_REWRITE_EXTRA */
#define REPLY_MAX        640
#define REPLY_MS         2000           /* to write a reply; then as long to linger */
#define LINGER_BYTES     (64 * 1024)
#define MAX_EVENTS       64
#define SCAN_MS          1000           /* deadlines are checked at least this often */

/* ---- the resolver ---- */

typedef struct conn conn;

typedef struct job {
	char             host[TGI_NETHOST_MAX];
	char             port[8];
	struct addrinfo *res;
	int              err;        /* getaddrinfo's, 0: res */
	int              abandoned;  /* atomic: its connection is gone, skip the lookup */
	conn            *c;          /* the proxy thread's; NULL once abandoned */
	struct job      *next;
} job;

typedef struct resolver {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	job            *head, *tail;  /* queued */
	job            *done;         /* resolved, for the proxy thread */
	int             threads, idle, max, stop;
	int             refs;         /* the proxy's, and one per thread */
	int             efd;          /* eventfd: something in done */
} resolver;

static void free_jobs(job *j)
{
	while (j) {
		job *n = j->next;
		if (j->res)
			freeaddrinfo(j->res);
		free(j);
		j = n;
	}
}

/* Drop one reference (called with mu held; unlocks it). */
static void resolver_put_locked(resolver *r)
{
	int last = --r->refs == 0;
	pthread_mutex_unlock(&r->mu);
	if (!last)
		return;
	free_jobs(r->head);
	free_jobs(r->done);
	close(r->efd);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

static void *resolver_main(void *arg)
{
	resolver *r = arg;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->head && !r->stop) {
			r->idle++;
			pthread_cond_wait(&r->cv, &r->mu);
			r->idle--;
		}
		if (r->stop)
			break;
		job *j = r->head;
		r->head = j->next;
		if (!r->head)
			r->tail = NULL;
		pthread_mutex_unlock(&r->mu);

		if (__atomic_load_n(&j->abandoned, __ATOMIC_ACQUIRE))
			j->err = EAI_CANCELED;
		else {
			struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
			                         .ai_flags = AI_NUMERICSERV};
			j->err = getaddrinfo(j->host, j->port, &hints, &j->res);
			if (j->err)
				j->res = NULL;
		}

		pthread_mutex_lock(&r->mu);
		j->next = r->done;
		r->done = j;
		uint64_t one = 1;
		if (write(r->efd, &one, sizeof one) < 0) {
			/* the counter cannot overflow here; nothing to do */
		}
	}
	r->threads--;
	resolver_put_locked(r);
	return NULL;
}

static resolver *resolver_new(int max)
{
	resolver *r = tgi_xcalloc(1, sizeof *r);
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->efd < 0) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->max = max;
	r->refs = 1;
	return r;
}

/* Queue j; start a thread when none is idle and fewer than max run.  0, or
 * -1 when no thread runs at all (j is then not queued). */
static int resolver_submit(resolver *r, job *j)
{
	pthread_mutex_lock(&r->mu);
	if (r->idle == 0 && r->threads < r->max) {
		pthread_attr_t at;
		pthread_t t;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		/* every signal blocked in the thread: the gate's handlers run elsewhere */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&t, &at, resolver_main, r) == 0) {
			r->threads++;
			r->refs++;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&at);
	}
	if (r->threads == 0) {
		pthread_mutex_unlock(&r->mu);
		return -1;
	}
	j->next = NULL;
	if (r->tail)
		r->tail->next = j;
	else
		r->head = j;
	r->tail = j;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

static job *resolver_take(resolver *r)
{
	uint64_t v;
	if (read(r->efd, &v, sizeof v) < 0) {
		/* EAGAIN: nothing counted; the list may still hold work */
	}
	pthread_mutex_lock(&r->mu);
	job *d = r->done;
	r->done = NULL;
	pthread_mutex_unlock(&r->mu);
	return d;
}

static void resolver_release(resolver *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_broadcast(&r->cv);
	resolver_put_locked(r);
}

/* ---- connections ---- */

enum tag { TAG_WAKE = 1, TAG_RESOLVED, TAG_SB, TAG_CLIENT, TAG_UP };

typedef enum { S_HEAD, S_RESOLVE, S_CONNECT, S_RELAY, S_REPLY, S_LINGER } cstate;

typedef struct end {
	int       tag;        /* TAG_CLIENT or TAG_UP: first, so epoll data points at it */
	int       fd;         /* -1: none */
	uint32_t  mask;       /* registered events; 0: not registered */
	int       eof;        /* read returned 0 */
	int       shut;       /* we shut our write side */
	conn     *c;
} end;

typedef struct rbuf {
	char  *p;
	size_t off, len;
} rbuf;

struct conn {
	end              cl, up;
	tgi_netsb       *sb;
	cstate           st;
	char            *head;       /* S_HEAD..S_CONNECT: max_head bytes */
	size_t           hlen;
	tgi_netreq       req;
	char             reply[REPLY_MAX];
	size_t           rlen, roff;
	size_t           lingered;
	rbuf             c2u, u2c;   /* S_RELAY: RELAY_BUF each */
	double           deadline;   /* of the current state (an attempt's, in S_CONNECT) */
	double           overall;    /* S_RESOLVE, S_CONNECT: resolve + connect */
	job             *job;
	struct addrinfo *ai, *next_ai;
	int              wild;       /* allowed by a wildcard only: special addresses skipped */
	int              tried;      /* addresses tried */
	int              skipped;    /* addresses skipped as special */
	int              dead;
	conn            *prev, *next, *grave;
};

struct tgi_netsb {
	int             tag;         /* TAG_SB: first, so epoll data points at it */
	tgi_netproxy   *p;
	tgi_netallow   *allow;       /* a reference */
	tgi_netevent_fn fn;
	void           *arg;
	int             fd;          /* the proxy's end of the socketpair */
	int             hand_fd;     /* the other end, kept only without a forwarder */
	pid_t           fwd;         /* the forwarder, 0: none */
	int             nconn;       /* proxy thread */
	int             registered;  /* proxy thread: fd in epoll */
	int             state;       /* under p->mu */
	tgi_netsb      *next;        /* p->sbs, under p->mu */
};

enum { SB_ADD, SB_LIVE, SB_DETACH, SB_DETACHED };

struct tgi_netproxy {
	tgi_netproxy_opts o;
	pthread_t         thread;
	int               ep;
	int               wake;        /* eventfd */
	int               wake_tag, res_tag;
	resolver         *res;
	pthread_mutex_t   mu;
	pthread_cond_t    cv;
	tgi_netsb        *sbs;         /* under mu */
	int               stop;        /* under mu */
	/* the proxy thread's own */
	conn             *conns;
	int               nconn;
	conn             *grave;
	double            next_scan;
	/* counters (atomic) */
	int               st_sandboxes, st_conns;
	size_t            st_accepted, st_opened, st_refused, st_failed;
};

static void set_mask(tgi_netproxy *p, end *e, uint32_t want)
{
	if (e->fd < 0 || want == e->mask)
		return;
	struct epoll_event ev = {.events = want, .data.ptr = e};
	int op = !want ? EPOLL_CTL_DEL : !e->mask ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
	if (epoll_ctl(p->ep, op, e->fd, &ev) == 0 || op == EPOLL_CTL_DEL)
		e->mask = want;
}

static size_t room(const rbuf *b)
{
	return RELAY_BUF - b->off - b->len;
}

static void update(tgi_netproxy *p, conn *c)
{
	uint32_t cw = 0, uw = 0;
	switch (c->st) {
	case S_HEAD:
	case S_LINGER:
		cw = EPOLLIN;
		break;
	case S_REPLY:
		cw = EPOLLOUT;
		break;
	case S_CONNECT:
		uw = EPOLLOUT;
		break;
	case S_RELAY:
		if (!c->cl.eof && (room(&c->c2u) || (c->c2u.off && c->c2u.len < RELAY_BUF)))
			cw |= EPOLLIN;
		if (c->u2c.len && !c->cl.shut)
			cw |= EPOLLOUT;
		if (!c->up.eof && (room(&c->u2c) || (c->u2c.off && c->u2c.len < RELAY_BUF)))
			uw |= EPOLLIN;
		if (c->c2u.len && !c->up.shut)
			uw |= EPOLLOUT;
		break;
	case S_RESOLVE:
		break;
	}
	set_mask(p, &c->cl, cw);
	set_mask(p, &c->up, uw);
}

static void close_end(tgi_netproxy *p, end *e)
{
	if (e->fd < 0)
		return;
	set_mask(p, e, 0);
	close(e->fd);
	e->fd = -1;
}

static void abandon_job(conn *c)
{
	if (!c->job)
		return;
	c->job->c = NULL;
	__atomic_store_n(&c->job->abandoned, 1, __ATOMIC_RELEASE);
	c->job = NULL;
}

/* Close both sides and put c in the grave (freed after this batch of
 * events: the batch may still name it). */
static void kill_conn(tgi_netproxy *p, conn *c)
{
	if (c->dead)
		return;
	c->dead = 1;
	close_end(p, &c->cl);
	close_end(p, &c->up);
	abandon_job(c);
	if (c->ai)
		freeaddrinfo(c->ai);
	c->ai = c->next_ai = NULL;
	free(c->head);
	free(c->c2u.p);
	free(c->u2c.p);
	c->head = c->c2u.p = c->u2c.p = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->nconn--;
	c->sb->nconn--;
	__atomic_sub_fetch(&p->st_conns, 1, __ATOMIC_RELAXED);
	c->grave = p->grave;
	p->grave = c;
}

static void bury(tgi_netproxy *p)
{
	while (p->grave) {
		conn *c = p->grave;
		p->grave = c->grave;
		free(c);
	}
}

static void tell(tgi_netsb *sb, tgi_netwhy why, const char *method, const char *host,
                 unsigned port)
{
	tgi_netproxy *p = sb->p;
	int status = tgi_netwhy_status(why);
	if (why == TGI_NETWHY_OK)
		__atomic_add_fetch(&p->st_opened, 1, __ATOMIC_RELAXED);
	else if (status >= 500 && why != TGI_NETWHY_BUSY)
		__atomic_add_fetch(&p->st_failed, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&p->st_refused, 1, __ATOMIC_RELAXED);
	if (!sb->fn)
		return;
	tgi_netevent ev = {.why = why, .status = status, .method = method ? method : "",
	                   .host = host ? host : "", .port = port};
	sb->fn(sb->arg, &ev);
}

static const char *reason_phrase(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default:  return "Error";
	}
}

/* The error reply for why into out (cap bytes): its length. */
static size_t error_reply(char *out, size_t cap, tgi_netwhy why, const tgi_netreq *r)
{
	char body[TGI_NETHOST_MAX + 256];
	int v6 = r && r->host_kind == TGI_NETHOST_IPV6;
	if (r && r->host[0] && r->port)
		tgi_snprintf(body, sizeof body, "toolgate: %s: %s%s%s:%u.\n", tgi_netwhy_text(why),
		             v6 ? "[" : "", r->host, v6 ? "]" : "", r->port);
	else
		tgi_snprintf(body, sizeof body, "toolgate: %s.\n", tgi_netwhy_text(why));
	int status = tgi_netwhy_status(why);
	tgi_snprintf(out, cap,
	             "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	             "Content-Length: %zu\r\nConnection: close\r\nX-Toolgate-Refused: %s\r\n\r\n%s",
	             status, reason_phrase(status), strlen(body), tgi_netwhy_code(why), body);
	return strlen(out);
}

/* Refuse or fail c: one callback, the reply, then a lingering close. */
static void refuse(tgi_netproxy *p, conn *c, tgi_netwhy why)
{
	abandon_job(c);
	close_end(p, &c->up);
	tell(c->sb, why, c->req.method, c->req.host, c->req.port);
	c->rlen = error_reply(c->reply, sizeof c->reply, why, &c->req);
	c->roff = 0;
	c->st = S_REPLY;
	c->deadline = tgi_now_ms() + REPLY_MS;
	update(p, c);
}

static void write_reply(tgi_netproxy *p, conn *c)
{
	while (c->roff < c->rlen) {
		ssize_t n = send(c->cl.fd, c->reply + c->roff, c->rlen - c->roff, MSG_NOSIGNAL);
		if (n > 0) {
			c->roff += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		kill_conn(p, c);
		return;
	}
	/* all written: say so, then read what the client still sends for a while,
	 * so that closing does not reset the connection before it reads the reply */
	shutdown(c->cl.fd, SHUT_WR);
	c->st = S_LINGER;
	c->deadline = tgi_now_ms() + REPLY_MS;
	update(p, c);
}

static void linger(tgi_netproxy *p, conn *c)
{
	char sink[4096];
	ssize_t n = recv(c->cl.fd, sink, sizeof sink, 0);
	if (n > 0 && (c->lingered += (size_t)n) < LINGER_BYTES)
		return;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	kill_conn(p, c);
}

/* ---- connecting ---- */

static void start_relay(tgi_netproxy *p, conn *c)
{
	c->c2u.p = tgi_xmalloc(RELAY_BUF);
	c->u2c.p = tgi_xmalloc(RELAY_BUF);
	size_t extra = c->hlen - c->req.head_len;
	if (c->req.kind == TGI_NETREQ_CONNECT) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		memcpy(c->u2c.p, ok, sizeof ok - 1);
		c->u2c.len = sizeof ok - 1;
	} else {
		long w = tgi_netreq_rewrite(c->head, &c->req, c->c2u.p, RELAY_BUF - extra);
		if (w < 0) {                         /* cannot happen: RELAY_BUF is large enough */
			refuse(p, c, TGI_NETWHY_TOO_LARGE);
			return;
		}
		c->c2u.len = (size_t)w;
	}
	memcpy(c->c2u.p + c->c2u.len, c->head + c->req.head_len, extra);
	c->c2u.len += extra;
	free(c->head);
	c->head = NULL;
	if (c->ai)
		freeaddrinfo(c->ai);
	c->ai = c->next_ai = NULL;
	c->st = S_RELAY;
	c->deadline = tgi_now_ms() + p->o.idle_timeout_ms;
	tell(c->sb, TGI_NETWHY_OK, c->req.method, c->req.host, c->req.port);
	update(p, c);
}

/* Try the next address; S_CONNECT with a deadline, the relay when it
 * connected at once, or the failure when none is left. */
static void try_next(tgi_netproxy *p, conn *c)
{
	close_end(p, &c->up);
	while (c->next_ai) {
		struct addrinfo *a = c->next_ai;
		c->next_ai = a->ai_next;
		if (c->wild && tgi_netaddr_special(a->ai_addr)) {
			c->skipped++;
			continue;
		}
		c->tried++;
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int r = connect(fd, a->ai_addr, a->ai_addrlen);
		if (r < 0 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		c->up.fd = fd;
		c->up.mask = 0;
		if (r == 0) {
			start_relay(p, c);
			return;
		}
		/* the time left, shared evenly among the addresses still to try */
		int left = 1;
		for (struct addrinfo *b = c->next_ai; b; b = b->ai_next)
			left += !(c->wild && tgi_netaddr_special(b->ai_addr));
		double now = tgi_now_ms();
		c->deadline = now + (c->overall - now) / left;
		if (c->deadline < p->next_scan)
			p->next_scan = c->deadline;
		c->st = S_CONNECT;
		update(p, c);
		return;
	}
	if (!c->tried && c->skipped)
		refuse(p, c, TGI_NETWHY_ADDRESS);
	else
		refuse(p, c, tgi_now_ms() >= c->overall ? TGI_NETWHY_CONNECT_TIMEOUT
		                                        : TGI_NETWHY_CONNECT);
}

static void connected(tgi_netproxy *p, conn *c)
{
	int err = 0;
	socklen_t el = sizeof err;
	if (getsockopt(c->up.fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return;
	if (err) {
		try_next(p, c);
		return;
	}
	start_relay(p, c);
}

static void resolved(tgi_netproxy *p, conn *c, job *j)
{
	c->job = NULL;
	if (j->err || !j->res) {
		refuse(p, c, TGI_NETWHY_RESOLVE);
		return;
	}
	c->ai = c->next_ai = j->res;
	j->res = NULL;
	try_next(p, c);
}

/* The head was accepted: resolve (an address literal at once) and connect. */
static void go(tgi_netproxy *p, conn *c)
{
	c->st = S_RESOLVE;
	c->overall = tgi_now_ms() + p->o.connect_timeout_ms;
	c->deadline = c->overall;
	if (c->deadline < p->next_scan)
		p->next_scan = c->deadline;
	update(p, c);
	job *j = tgi_xcalloc(1, sizeof *j);
	tgi_snprintf(j->host, sizeof j->host, "%s", c->req.host);
	tgi_snprintf(j->port, sizeof j->port, "%u", c->req.port);
	if (c->req.host_kind != TGI_NETHOST_NAME) {
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		                         .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
		j->err = getaddrinfo(j->host, j->port, &hints, &j->res);
		if (j->err)
			j->res = NULL;
		resolved(p, c, j);
		free_jobs(j);
		return;
	}
	j->c = c;
	c->job = j;
	if (resolver_submit(p->res, j) < 0) {
		c->job = NULL;
		free(j);
		refuse(p, c, TGI_NETWHY_RESOLVE);
	}
}

/* ---- events ---- */

static void head_in(tgi_netproxy *p, conn *c)
{
	ssize_t n = recv(c->cl.fd, c->head + c->hlen, p->o.max_head - c->hlen, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* closed (or reset) before a whole head: a request cut short is malformed;
		 * a connection that said nothing is no request at all */
		if (c->hlen) {
			tgi_netreq_kind k = tgi_netreq_parse(c->head, c->hlen, p->o.max_head, &c->req);
			refuse(p, c, k == TGI_NETREQ_BAD ? c->req.why : TGI_NETWHY_MALFORMED);
		} else
			kill_conn(p, c);
		return;
	}
	c->hlen += (size_t)n;
	switch (tgi_netreq_parse(c->head, c->hlen, p->o.max_head, &c->req)) {
	case TGI_NETREQ_MORE:
		return;
	case TGI_NETREQ_BAD:
		refuse(p, c, c->req.why);
		return;
	default:
		break;
	}
	switch (tgi_netallow_match(c->sb->allow, c->req.host, c->req.host_kind, c->req.port)) {
	case TGI_NETALLOW_YES:
		go(p, c);
		return;
	case TGI_NETALLOW_WILDCARD:
		c->wild = 1;
		go(p, c);
		return;
	case TGI_NETALLOW_NO_PORT:
		refuse(p, c, TGI_NETWHY_PORT);
		return;
	default:
		refuse(p, c, TGI_NETWHY_HOST);
		return;
	}
}

/* One pass of the relay: read what fits, write what is buffered, pass
 * half-closes on; close when both directions are done or on an error. */
static void relay(tgi_netproxy *p, conn *c, uint32_t cev, uint32_t uev)
{
	struct { end *from, *to; rbuf *b; uint32_t in, out; } dir[2] = {
		{&c->cl, &c->up, &c->c2u, cev, uev},
		{&c->up, &c->cl, &c->u2c, uev, cev},
	};
	int moved = 0;
	for (int d = 0; d < 2; d++) {
		end *from = dir[d].from, *to = dir[d].to;
		rbuf *b = dir[d].b;
		if ((dir[d].in & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) && !from->eof) {
			if (!room(b) && b->off) {
				memmove(b->p, b->p + b->off, b->len);
				b->off = 0;
			}
			if (room(b)) {
				ssize_t n = recv(from->fd, b->p + b->off + b->len, room(b), 0);
				if (n > 0) {
					b->len += (size_t)n;
					moved = 1;
				} else if (n == 0) {
					from->eof = 1;
				} else if (errno != EAGAIN && errno != EINTR) {
					kill_conn(p, c);
					return;
				}
			}
		}
		if (b->len && !to->shut) {
			ssize_t n = send(to->fd, b->p + b->off, b->len, MSG_NOSIGNAL);
			if (n > 0) {
				b->off += (size_t)n;
				b->len -= (size_t)n;
				if (!b->len)
					b->off = 0;
				moved = 1;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				kill_conn(p, c);
				return;
			}
		}
		if (from->eof && !b->len && !to->shut) {
			shutdown(to->fd, SHUT_WR);
			to->shut = 1;
		}
	}
	if (c->cl.shut && c->up.shut) {
		kill_conn(p, c);
		return;
	}
	if (moved)
		c->deadline = tgi_now_ms() + p->o.idle_timeout_ms;
	update(p, c);
}

static void on_end(tgi_netproxy *p, end *e, uint32_t ev)
{
	conn *c = e->c;
	if (c->dead)
		return;
	int client = e == &c->cl;
	if ((ev & EPOLLERR) && c->st != S_CONNECT) {
		kill_conn(p, c);
		return;
	}
	switch (c->st) {
	case S_HEAD:
		head_in(p, c);
		break;
	case S_REPLY:
		write_reply(p, c);
		break;
	case S_LINGER:
		linger(p, c);
		break;
	case S_CONNECT:
		if (!client)
			connected(p, c);
		break;
	case S_RELAY:
		relay(p, c, client ? ev : 0, client ? 0 : ev);
		break;
	case S_RESOLVE:
		break;
	}
}

/* A connection handed over: a new conn, or 503 past the caps. */
static void adopt(tgi_netproxy *p, tgi_netsb *sb, int fd)
{
	__atomic_add_fetch(&p->st_accepted, 1, __ATOMIC_RELAXED);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		close(fd);
		return;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		close(fd);
		return;
	}
	if (p->nconn >= p->o.max_tunnels || sb->nconn >= p->o.max_per_sandbox) {
		char busy[REPLY_MAX];
		size_t n = error_reply(busy, sizeof busy, TGI_NETWHY_BUSY, NULL);
		tell(sb, TGI_NETWHY_BUSY, "", "", 0);
		if (send(fd, busy, n, MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
			shutdown(fd, SHUT_WR);
		close(fd);
		return;
	}
	conn *c = tgi_xcalloc(1, sizeof *c);
	c->cl = (end){.tag = TAG_CLIENT, .fd = fd, .c = c};
	c->up = (end){.tag = TAG_UP, .fd = -1, .c = c};
	c->sb = sb;
	c->head = tgi_xmalloc(p->o.max_head);
	c->st = S_HEAD;
	c->deadline = tgi_now_ms() + p->o.head_timeout_ms;
	if (c->deadline < p->next_scan)
		p->next_scan = c->deadline;
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->nconn++;
	sb->nconn++;
	__atomic_add_fetch(&p->st_conns, 1, __ATOMIC_RELAXED);
	update(p, c);
	if (c->cl.mask == 0)                 /* could not watch it */
		kill_conn(p, c);
}

static void sb_unregister(tgi_netproxy *p, tgi_netsb *sb)
{
	if (!sb->registered)
		return;
	epoll_ctl(p->ep, EPOLL_CTL_DEL, sb->fd, NULL);
	sb->registered = 0;
}

/* Fds arriving on a sandbox's socketpair. */
static void on_sb(tgi_netproxy *p, tgi_netsb *sb, uint32_t ev)
{
	for (int i = 0; i < 16; i++) {
		char byte;
		struct iovec iov = {.iov_base = &byte, .iov_len = 1};
		union {
			struct cmsghdr h;
			char           b[CMSG_SPACE(sizeof(int) * 4)];
		} cm;
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
		                   .msg_controllen = sizeof cm.b};
		ssize_t n = recvmsg(sb->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* the forwarder is gone (or the socket failed): no more connections */
			sb_unregister(p, sb);
			return;
		}
		int fds[4], nfd = 0;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
			if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t j = 0; j < k && nfd < 4; j++)
				memcpy(&fds[nfd++], CMSG_DATA(h) + j * sizeof(int), sizeof(int));
		}
		/* one connection per message; anything more is closed unread */
		for (int j = 0; j < nfd; j++) {
			if (j == 0)
				adopt(p, sb, fds[j]);
			else
				close(fds[j]);
		}
	}
	(void)ev;
}

/* Every connection of sb closed (detach). */
static void sb_drop_conns(tgi_netproxy *p, tgi_netsb *sb)
{
	for (conn *c = p->conns, *n; c; c = n) {
		n = c->next;
		if (c->sb == sb)
			kill_conn(p, c);
	}
}

/* Attach, detach and stop requests (under mu). */
static int commands(tgi_netproxy *p)
{
	int stop;
	pthread_mutex_lock(&p->mu);
	for (tgi_netsb **pp = &p->sbs; *pp;) {
		tgi_netsb *sb = *pp;
		if (sb->state == SB_ADD) {
			struct epoll_event ev = {.events = EPOLLIN, .data.ptr = sb};
			sb->registered = epoll_ctl(p->ep, EPOLL_CTL_ADD, sb->fd, &ev) == 0;
			sb->state = SB_LIVE;
		} else if (sb->state == SB_DETACH) {
			sb_unregister(p, sb);
			sb_drop_conns(p, sb);
			sb->state = SB_DETACHED;
			*pp = sb->next;
			pthread_cond_broadcast(&p->cv);
			continue;
		}
		pp = &sb->next;
	}
	stop = p->stop;
	pthread_mutex_unlock(&p->mu);
	return stop;
}

static void expire(tgi_netproxy *p, conn *c, double now)
{
	switch (c->st) {
	case S_HEAD:
		refuse(p, c, TGI_NETWHY_HEAD_TIMEOUT);
		break;
	case S_RESOLVE:
		refuse(p, c, TGI_NETWHY_CONNECT_TIMEOUT);
		break;
	case S_CONNECT:
		if (now >= c->overall)
			refuse(p, c, TGI_NETWHY_CONNECT_TIMEOUT);
		else
			try_next(p, c);
		break;
	default:
		kill_conn(p, c);
		break;
	}
}

static void scan(tgi_netproxy *p)
{
	double now = tgi_now_ms();
	if (now < p->next_scan)
		return;
	double next = now + SCAN_MS;
	for (conn *c = p->conns, *n; c; c = n) {
		n = c->next;
		if (c->deadline <= now)
			expire(p, c, now);
		if (!c->dead && c->deadline < next)
			next = c->deadline;
	}
	p->next_scan = next;
}

static void *proxy_main(void *arg)
{
	tgi_netproxy *p = arg;
	struct epoll_event evs[MAX_EVENTS];
	for (;;) {
		double wait = p->next_scan - tgi_now_ms();
		int timeout = wait <= 0 ? 0 : wait > SCAN_MS ? SCAN_MS : (int)wait + 1;
		int n = epoll_wait(p->ep, evs, MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR)
			n = 0;
		for (int i = 0; i < n; i++) {
			int tag = *(int *)evs[i].data.ptr;
			if (tag == TAG_WAKE) {
				uint64_t v;
				if (read(p->wake, &v, sizeof v) < 0) {
					/* EAGAIN: woken already */
				}
			} else if (tag == TAG_RESOLVED) {
				for (job *j = resolver_take(p->res), *nj; j; j = nj) {
					nj = j->next;
					j->next = NULL;
					if (j->c && !j->c->dead)
						resolved(p, j->c, j);
					free_jobs(j);
				}
			} else if (tag == TAG_SB) {
				on_sb(p, evs[i].data.ptr, evs[i].events);
			} else {
				on_end(p, evs[i].data.ptr, evs[i].events);
			}
		}
		bury(p);
		int stop = commands(p);
		scan(p);
		bury(p);
		if (stop)
			break;
	}
	while (p->conns)
		kill_conn(p, p->conns);
	bury(p);
	return NULL;
}

/* ---- the public side ---- */

tgi_netproxy *tgi_netproxy_new(const tgi_netproxy_opts *o, char *err, size_t errlen)
{
	tgi_netproxy *p = tgi_xcalloc(1, sizeof *p);
	if (o)
		p->o = *o;
	if (!p->o.max_head || p->o.max_head > DEF_MAX_HEAD)
		p->o.max_head = DEF_MAX_HEAD;
	if (p->o.max_head < 64)
		p->o.max_head = 64;
	if (p->o.head_timeout_ms <= 0)
		p->o.head_timeout_ms = 10000;
	if (p->o.connect_timeout_ms <= 0)
		p->o.connect_timeout_ms = 10000;
	if (p->o.idle_timeout_ms <= 0)
		p->o.idle_timeout_ms = 300000;
	if (p->o.max_tunnels <= 0)
		p->o.max_tunnels = 256;
	if (p->o.max_per_sandbox <= 0)
		p->o.max_per_sandbox = 64;
	if (p->o.resolvers <= 0)
		p->o.resolvers = 4;
	p->ep = epoll_create1(EPOLL_CLOEXEC);
	p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->res = resolver_new(p->o.resolvers);
	p->wake_tag = TAG_WAKE;
	p->res_tag = TAG_RESOLVED;
	p->next_scan = tgi_now_ms() + SCAN_MS;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	struct epoll_event w = {.events = EPOLLIN, .data.ptr = &p->wake_tag};
	struct epoll_event r = {.events = EPOLLIN, .data.ptr = &p->res_tag};
	int ok = p->ep >= 0 && p->wake >= 0 && p->res &&
	         epoll_ctl(p->ep, EPOLL_CTL_ADD, p->wake, &w) == 0 &&
	         epoll_ctl(p->ep, EPOLL_CTL_ADD, p->res->efd, &r) == 0;
	if (ok) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		ok = pthread_create(&p->thread, NULL, proxy_main, p) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (!ok) {
		tgi_snprintf(err, errlen, "cannot start the network proxy: %s", strerror(errno));
		if (p->ep >= 0)
			close(p->ep);
		if (p->wake >= 0)
			close(p->wake);
		resolver_release(p->res);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p);
		return NULL;
	}
	return p;
}

static void wake(tgi_netproxy *p)
{
	uint64_t one = 1;
	if (write(p->wake, &one, sizeof one) < 0) {
		/* EAGAIN: the counter is full, it is awake anyway */
	}
}

void tgi_netproxy_free(tgi_netproxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	pthread_join(p->thread, NULL);
	/* sandboxes not detached yet: orphaned, their detach frees them alone */
	for (tgi_netsb *sb = p->sbs; sb; sb = sb->next) {
		sb_unregister(p, sb);
		sb->p = NULL;
		sb->state = SB_DETACHED;
	}
	close(p->ep);
	close(p->wake);
	resolver_release(p->res);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

static void sb_free(tgi_netsb *sb)
{
	if (!sb)
		return;
	if (sb->fd >= 0)
		close(sb->fd);
	if (sb->hand_fd >= 0)
		close(sb->hand_fd);
	tgi_netallow_unref(sb->allow);
	free(sb);
}

tgi_netsb *tgi_netproxy_attach(tgi_netproxy *p, pid_t pid, tgi_netallow *allow,
                               tgi_netevent_fn fn, void *arg, char *err, size_t errlen)
{
	int sv[2];
	if (!p || !allow || pid < 0) {
		tgi_snprintf(err, errlen, "internal: attach needs a proxy, an allow-list and a pid");
		return NULL;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		tgi_snprintf(err, errlen, "cannot make the proxy's socket pair: %s", strerror(errno));
		return NULL;
	}
	tgi_netsb *sb = tgi_xcalloc(1, sizeof *sb);
	sb->tag = TAG_SB;
	sb->p = p;
	sb->allow = tgi_netallow_ref(allow);
	sb->fn = fn;
	sb->arg = arg;
	sb->fd = sv[0];
	sb->hand_fd = sv[1];
	if (pid > 0) {
		/* the forwarder holds the other end alone, so that the proxy's end
		 * shows when it is gone */
		pid_t f = tgi_netfwd_start(pid, sb->hand_fd, sb->fd, err, errlen);
		sb->hand_fd = -1;
		if (f < 0) {
			sb_free(sb);
			return NULL;
		}
		sb->fwd = f;
	}
	pthread_mutex_lock(&p->mu);
	sb->state = SB_ADD;
	sb->next = p->sbs;
	p->sbs = sb;
	pthread_mutex_unlock(&p->mu);
	__atomic_add_fetch(&p->st_sandboxes, 1, __ATOMIC_RELAXED);
	wake(p);
	return sb;
}

int tgi_netproxy_hand(tgi_netsb *sb, int fd)
{
	if (!sb || sb->hand_fd < 0) {
		close(fd);
		return -EBADF;
	}
	char byte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr h;
		char           b[CMSG_SPACE(sizeof(int))];
	} cm;
	memset(&cm, 0, sizeof cm);
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
	                   .msg_controllen = sizeof cm.b};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof fd);
	ssize_t n;
	while ((n = sendmsg(sb->hand_fd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e;
}

pid_t tgi_netproxy_forwarder(const tgi_netsb *sb)
{
	return sb ? sb->fwd : 0;
}

void tgi_netproxy_detach(tgi_netsb *sb)
{
	if (!sb)
		return;
	tgi_netproxy *p = sb->p;
	/* the forwarder first: no new connections */
	if (sb->fwd > 0) {
		kill(sb->fwd, SIGKILL);
		while (waitpid(sb->fwd, NULL, 0) < 0 && errno == EINTR)
			;
		sb->fwd = 0;
	}
	if (p) {                     /* NULL: the proxy was freed first (orphaned) */
		pthread_mutex_lock(&p->mu);
		sb->state = SB_DETACH;
		pthread_mutex_unlock(&p->mu);
		wake(p);
		pthread_mutex_lock(&p->mu);
		while (sb->state != SB_DETACHED)
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
		__atomic_sub_fetch(&p->st_sandboxes, 1, __ATOMIC_RELAXED);
	}
	sb_free(sb);
}

void tgi_netproxy_get_stats(tgi_netproxy *p, tgi_netproxy_stats *st)
{
	memset(st, 0, sizeof *st);
	if (!p)
		return;
	st->sandboxes = __atomic_load_n(&p->st_sandboxes, __ATOMIC_RELAXED);
	st->connections = __atomic_load_n(&p->st_conns, __ATOMIC_RELAXED);
	st->accepted = __atomic_load_n(&p->st_accepted, __ATOMIC_RELAXED);
	st->opened = __atomic_load_n(&p->st_opened, __ATOMIC_RELAXED);
	st->refused = __atomic_load_n(&p->st_refused, __ATOMIC_RELAXED);
	st->failed = __atomic_load_n(&p->st_failed, __ATOMIC_RELAXED);
}

pid_t tgi_netproxy_info_pid(const char *text, size_t n)
{
	static const char key[] = "\"child-pid\"";
	for (size_t i = 0; i + sizeof key - 1 <= n; i++) {
		if (memcmp(text + i, key, sizeof key - 1))
			continue;
		size_t j = i + sizeof key - 1;
		while (j < n && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r'))
			j++;
		if (j >= n || text[j++] != ':')
			return -1;
		while (j < n && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r'))
			j++;
		long v = 0;
		size_t d = 0;
		for (; j < n && text[j] >= '0' && text[j] <= '9' && d < 10; j++, d++)
			v = v * 10 + (text[j] - '0');
		if (!d || v <= 0 || v > 0x3fffffff)
			return -1;
		return (pid_t)v;
	}
	return -1;
}
