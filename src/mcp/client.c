/*
 * client.c — an MCP client connection to one downstream server (see
 * client.h for the contract): a stdio child or Streamable HTTP.
 *
 * One part is the same for both transports: the waiting table.  Every
 * request gets the next integer id and a `pending` row; whatever thread
 * reads the server's answer hands it to dispatch(), which wakes the row
 * with that id (a condition variable, on CLOCK_MONOTONIC), passes progress
 * for the row's token (the id itself) to its callback, gives other
 * notifications to handlers.notify, and runs each server request (ping
 * included) on a detached thread of its own so that an elicitation waiting
 * for a human never stops the reading.  At most SERVER_REQUESTS_MAX such
 * threads run for one client: past that a request is answered at once on
 * the reading thread (-32603 "too many requests from this server at once";
 * a ping still gets its empty result), so a server cannot make us start
 * threads without end.
 *
 *   stdio: the child runs in its own process group with two pipes (three
 *          when its stderr is passed on); our ends are close-on-exec and
 *          non-blocking.  A reader thread reads lines (tgi_linereader) and
 *          polls the pipe beside a wake pipe that close() uses, and the
 *          stderr pipe, whose pieces it hands to cfg->stderr_data (what is
 *          left there when the reader ends is passed on then, up to
 *          STDERR_DRAIN_MAX).  Writes are serialised by write_mu, with SIGPIPE
 *          blocked in the writing thread (and a pending one consumed), so a
 *          dead child is an error here, never a signal for the process.
 *   HTTP:  each message is a POST on the calling thread (libcurl, loaded
 *          by the first HTTP open, see dl.h; a multi handle driven in steps
 *          of at most POLL_MS so that cancel, the deadline and close() are
 *          seen).  A JSON reply is one message; an SSE reply is cut at
 *          blank lines as it arrives and each event is dispatched.  After
 *          initialize, a listener thread holds a GET SSE stream for the
 *          server's own messages (405: none).  Handles are pooled, so
 *          connections are reused.
 *
 * Life of a connection:
 *
 *     open ──► initialized ──► gone (EOF, broken stream, unreachable)
 *       │            │            │
 *       └────────────┴──► closing (close() was called) ──► freed
 *
 * `gone` fails every waiting request with `why`; handlers.closed hears it
 * once, and only for a connection that open() returned and that close()
 * is not already taking down.
 *
 * notify, progress and closed run on the thread that read the message (the
 * stdio reader; for HTTP the thread whose reply carried it, or the
 * listener).  They may notify, but a stdio one that makes a request gets
 * an error at once (the answer could only come through its own thread);
 * handlers.request has a thread of its own and may.  None may call close()
 * (it joins those threads and waits for their users).
 *
 * Owns: the child (or HTTP session), its pipes, the reader and listener
 * threads, ids, the waiting table, the server-request threads.  Must not:
 * know tools, policy or the gate.
 */
#include "mcp/client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/dl.h"
#include "mcp/jsonrpc.h"
#include "protocol/sse.h"
#include "toolgate.h"
#include "util/util.h"

#define PROTOCOL_VERSION       "2025-11-25"
#define DEFAULT_MAX_MESSAGE    ((size_t)16 << 20)
#define DEFAULT_INIT_TIMEOUT_S 30
#define POLL_MS                50       /* how often waits look at cancel and close */
#define GRACE_MS               2000     /* stdin closed → SIGTERM → SIGKILL */
#define SEND_TIMEOUT_MS        5000     /* a notification or reply POSTed over HTTP */
#define DELETE_TIMEOUT_MS      2000
#define SSE_SLACK              ((size_t)64 << 10) /* SSE framing around one message */
#define HTTP_ERROR_BODY_MAX    ((size_t)64 << 10)
#define SESSION_ID_MAX         256
#define LISTEN_BACKOFF_MAX_MS  30000
#define LISTEN_SETTLE_MS       1000     /* for the GET stream to open after initialize */
#define EXIT_SETTLE_MS         1000     /* for a child whose pipes broke to be seen exiting */
#define SERVER_REQUESTS_MAX    16       /* server requests answered at once, each on a thread */
#define STDERR_CHUNK           4096     /* bytes of the child's stderr read at once */
#define STDERR_DRAIN_MAX       ((size_t)1 << 20) /* passed on after the reader's end */

typedef enum { T_STDIO, T_HTTP } transport;

/* One request waiting for its answer.  Lives on the requesting thread's
 * stack; in c->waiting while registered (under c->mu). */
typedef struct pending {
	int64_t             id;
	const char         *method;    /* borrowed, for messages */
	tgi_mcp_progress_fn progress;
	void               *parg;
	int                 done;      /* an answer arrived */
	json_t             *result;    /* owned until handed out */
	json_t             *error;
	int                 busy;      /* progress callbacks running on other threads */
	struct pending     *next;
} pending;

/* A libcurl multi handle with its one easy handle; pooled per client so
 * that the connection cache (it lives in the multi handle) is reused. */
typedef struct http_conn {
	CURLM            *multi;
	CURL             *easy;
	struct http_conn *next;
} http_conn;

struct tgi_mcp_client {
	char                   *name;
	transport               kind;
	size_t                  max_message;
	tgi_mcp_client_handlers h;

	/* stdio */
	pid_t           pid;
	int             to_child;    /* its stdin; -1 once closed (under write_mu) */
	int             from_child;  /* its stdout */
	int             err_child;   /* its stderr, or -1 when it writes to ours */
	void          (*stderr_data)(void *arg, const char *data, size_t n);
	void           *stderr_arg;
	int             wake[2];     /* close() → reader: stop now */
	pthread_mutex_t write_mu;
	int             reader_started;
	pthread_t       reader;

	/* HTTP */
	char              *url;
	int                loopback; /* the url names this machine: never through a proxy */
	char             **headers;  /* extra "Name: value" lines, owned */
	size_t             nheaders;
	char               session[SESSION_ID_MAX]; /* Mcp-Session-Id; "" when none (mu) */
	http_conn         *idle;     /* under mu */
	int                listening;/* a GET stream is open: answers may come there */
	int                listener_started;
	int                listener_done;
	pthread_t          listener;

	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t  cv;          /* CLOCK_MONOTONIC */
	pending        *waiting;
	int64_t         next_id;
	int             users;       /* threads inside request/notify or answering the server */
	int             answering;   /* of them, threads answering the server (at most
	                                SERVER_REQUESTS_MAX) */
	int             opened;      /* open() returned it */
	int             closing;     /* close() has begun */
	int             gone;        /* the connection is gone; why says how */
	char            why[512];

	json_t *init_result;         /* set once, under mu, before open() returns */
	char    version[32];         /* likewise; "" until initialize answered */
};

/* ---- small helpers ---------------------------------------------------------- */

static void note(const tgi_mcp_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A line for the operator on stderr (MCP keeps stdout for messages). */
static void note(const tgi_mcp_client *c, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	fprintf(stderr, "toolgate: mcp server \"%s\": %s\n", c->name, text);
}

/* "No such file" → "no such file" for the middle of our sentences (an
 * acronym such as "SSL" keeps its case). */
static char *lower_first(char *s)
{
	if (s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z'))
		s[0] = (char)(s[0] - 'A' + 'a');
	return s;
}

static const char *errno_text(int e, char *buf, size_t cap)
{
	const char *s = strerror_r(e, buf, cap);
	if (s != buf)
		tgi_snprintf(buf, cap, "%s", s);
	return lower_first(buf);
}

/* The message of a JSON-RPC error object, fit to quote ("" when none). */
static const char *error_message(const json_t *error, char *out, size_t cap)
{
	json_t *msg = json_object_get(error, "message");
	tgi_sanitize(out, cap, json_is_string(msg) ? json_string_value(msg) : "");
	return out;
}

/* As tgi_xmalloc does. */
static void out_of_memory(void)
{
	fputs("toolgate: out of memory\n", stderr);
	abort();
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait on c->cv for at most ms milliseconds (mu held). */
static void cv_wait_ms(tgi_mcp_client *c, double ms)
{
	tgi_cond_wait_ms(&c->cv, &c->mu, ms < 1 ? 1 : (long)ms);
}

static void wait_ms_text(char *out, size_t cap, int ms)
{
	if (ms % 1000 == 0)
		tgi_snprintf(out, cap, "%d s", ms / 1000);
	else
		tgi_snprintf(out, cap, "%d ms", ms);
}

/* ---- the connection's state ----------------------------------------------- */

/*
 * The connection is gone: remember why (the first reason wins), wake every
 * waiter, and tell handlers.closed once — unless open() has not returned
 * the client yet or close() is taking it down.
 */
static void connection_lost(tgi_mcp_client *c, const char *why)
{
	int tell;

	pthread_mutex_lock(&c->mu);
	tell = !c->gone && c->opened && !c->closing;
	if (!c->gone) {
		c->gone = 1;
		tgi_snprintf(c->why, sizeof c->why, "%s", why);
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (tell && c->h.closed)
		c->h.closed(c->h.arg, c->why);
}

/* Why the connection cannot carry a request now (mu held): NULL when it can. */
static const char *unusable(tgi_mcp_client *c, char *buf, size_t cap)
{
	if (c->gone)
		return c->why;
	if (c->closing) {
		tgi_snprintf(buf, cap, "the connection to the server \"%s\" is closed", c->name);
		return buf;
	}
	return NULL;
}

/* A thread starts using c (0), or may not (-1, why in err). */
static int enter(tgi_mcp_client *c, char *err, size_t errlen)
{
	char buf[256];
	const char *why;

	pthread_mutex_lock(&c->mu);
	why = unusable(c, buf, sizeof buf);
	if (why) {
		tgi_snprintf(err, errlen, "%s", why);
		pthread_mutex_unlock(&c->mu);
		return -1;
	}
	c->users++;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static void leave(tgi_mcp_client *c)
{
	pthread_mutex_lock(&c->mu);
	c->users--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* ---- the waiting table ------------------------------------------------------ */

static void pending_add(tgi_mcp_client *c, pending *p)
{
	pthread_mutex_lock(&c->mu);
	p->id = c->next_id++;
	p->next = c->waiting;
	c->waiting = p;
	pthread_mutex_unlock(&c->mu);
}

static pending *pending_find(tgi_mcp_client *c, const json_t *id)
{
	if (!json_is_integer(id))
		return NULL;
	for (pending *p = c->waiting; p; p = p->next)
		if (p->id == json_integer_value(id))
			return p;
	return NULL;
}

/* How a wait ended. */
typedef enum {
	WAIT_ON,        /* not yet */
	WAIT_DONE,      /* the answer is in */
	WAIT_GONE,      /* the connection is gone or closing */
	WAIT_CANCELLED, /* *cancel became nonzero */
	WAIT_TIMEOUT,   /* the deadline passed */
} wait_end;

/* Should a wait for p (may be NULL) end now?  mu held.  deadline: monotonic
 * ms, 0 for none. */
static wait_end wait_check(tgi_mcp_client *c, const pending *p, volatile const int *cancel,
                           double deadline)
{
	if (p && p->done)
		return WAIT_DONE;
	if (c->gone || c->closing)
		return WAIT_GONE;
	if (tgi_flag_get(cancel))
		return WAIT_CANCELLED;
	if (deadline > 0 && tgi_now_ms() >= deadline)
		return WAIT_TIMEOUT;
	return WAIT_ON;
}

static wait_end wait_check_locked(tgi_mcp_client *c, const pending *p, volatile const int *cancel,
                                  double deadline)
{
	pthread_mutex_lock(&c->mu);
	wait_end w = wait_check(c, p, cancel, deadline);
	pthread_mutex_unlock(&c->mu);
	return w;
}

/* Wait for p's answer on the condition variable. */
static wait_end wait_answer(tgi_mcp_client *c, pending *p, volatile const int *cancel,
                            double deadline)
{
	wait_end w;

	pthread_mutex_lock(&c->mu);
	while ((w = wait_check(c, p, cancel, deadline)) == WAIT_ON) {
		double ms = POLL_MS;
		if (deadline > 0 && deadline - tgi_now_ms() < ms)
			ms = deadline - tgi_now_ms();
		cv_wait_ms(c, ms);
	}
	pthread_mutex_unlock(&c->mu);
	return w;
}

/* ---- what the server sends -------------------------------------------------- */

/*
 * Take member key out of a message (a new reference, or NULL), so that the
 * thread it goes to is the only one that touches it: jansson's reference
 * counts are not a synchronisation the thread sanitizer can see.
 */
static json_t *detach(json_t *root, const char *key)
{
	json_t *v = json_incref(json_object_get(root, key));
	json_object_del(root, key);
	return v;
}

static int send_message(tgi_mcp_client *c, json_t *msg, double deadline);

/* A request from the server, answered on a thread of its own. */
typedef struct server_request {
	tgi_mcp_client *c;
	json_t         *id;      /* owned */
	char           *method;  /* owned */
	json_t         *params;  /* owned, may be NULL */
} server_request;

/* A JSON-RPC error object as the server should see it: the handler's when
 * it is one, else an internal error. */
static json_t *error_object(json_t *given)
{
	if (json_is_object(given) && json_is_integer(json_object_get(given, "code")) &&
	    json_is_string(json_object_get(given, "message")))
		return given;
	json_decref(given);
	return json_pack("{s:i,s:s}", "code", TGI_RPC_INTERNAL_ERROR, "message",
	                 "the request could not be answered");
}

static void server_request_free(server_request *r)
{
	json_decref(r->id);
	json_decref(r->params);
	free(r->method);
	free(r);
}

/* Send the reply to a server request (reply stolen); a failure is noted. */
static void send_reply(tgi_mcp_client *c, json_t *reply, const char *method)
{
	if (send_message(c, reply, tgi_now_ms() + SEND_TIMEOUT_MS) < 0)
		note(c, "the answer to its \"%s\" request could not be sent", method);
}

/* A thread answering the server is done: its slot and its use of c. */
static void answered(tgi_mcp_client *c)
{
	pthread_mutex_lock(&c->mu);
	c->answering--;
	pthread_mutex_unlock(&c->mu);
	leave(c);
}

static void *answer_server(void *arg)
{
	server_request *r = arg;
	tgi_mcp_client *c = r->c;
	json_t *result = NULL, *error = NULL, *reply;

	if (strcmp(r->method, "ping") == 0)
		result = json_object();
	else if (!c->h.request)
		error = json_pack("{s:i,s:s}", "code", TGI_RPC_METHOD_NOT_FOUND, "message",
		                  "method not found");
	else if (c->h.request(c->h.arg, r->method, r->params, &result, &error) < 0)
		error = error_object(error);

	if (error) {
		json_decref(result);
		reply = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", r->id, "error", error);
	} else {
		json_decref(error);
		reply = tgi_rpc_result(r->id, result);
	}
	send_reply(c, reply, r->method);
	server_request_free(r);
	answered(c);
	return NULL;
}

/*
 * A request from the server: answered on a thread of its own while fewer
 * than SERVER_REQUESTS_MAX are; else at once here (a ping with its empty
 * result, anything else with -32603), so that the reading goes on and the
 * threads stay bounded.
 */
static void on_server_request(tgi_mcp_client *c, const tgi_rpc_msg *m)
{
	char ignored[64];
	server_request *r;
	pthread_attr_t attr;
	pthread_t t;
	int rc, full;

	if (enter(c, ignored, sizeof ignored) < 0)
		return; /* closing: nobody is left to answer */
	pthread_mutex_lock(&c->mu);
	full = c->answering >= SERVER_REQUESTS_MAX;
	if (!full)
		c->answering++;
	pthread_mutex_unlock(&c->mu);
	if (full) {
		send_reply(c, strcmp(m->method, "ping") == 0
		                  ? tgi_rpc_result(m->id, json_object())
		                  : tgi_rpc_error(m->id, TGI_RPC_INTERNAL_ERROR,
		                                  "too many requests from this server at once", NULL),
		           m->method);
		leave(c);
		return;
	}
	r = tgi_xcalloc(1, sizeof *r);
	r->c = c;
	r->method = tgi_strdup(m->method);
	r->params = detach(m->root, "params");
	r->id = detach(m->root, "id");
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, answer_server, r);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		send_reply(c, tgi_rpc_error(r->id, TGI_RPC_INTERNAL_ERROR,
		                            "the client has no thread left to answer", NULL),
		           r->method);
		server_request_free(r);
		answered(c);
	}
}

/* notifications/progress for one of our requests goes to its callback;
 * progress for a request no longer waiting is dropped. */
static void on_progress(tgi_mcp_client *c, const json_t *params)
{
	tgi_mcp_progress_fn fn = NULL;
	void *arg = NULL;
	pending *p;

	pthread_mutex_lock(&c->mu);
	p = pending_find(c, json_object_get(params, "progressToken"));
	if (p && p->progress && !p->done) {
		fn = p->progress;
		arg = p->parg;
		p->busy++;
	}
	pthread_mutex_unlock(&c->mu);
	if (!fn)
		return;
	fn(arg, params);
	pthread_mutex_lock(&c->mu);
	p->busy--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void on_answer(tgi_mcp_client *c, const tgi_rpc_msg *m)
{
	pending *p;

	pthread_mutex_lock(&c->mu);
	p = pending_find(c, m->id);
	if (p && !p->done) {
		p->result = detach(m->root, "result");
		p->error = detach(m->root, "error");
		p->done = 1;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	if (!p && json_is_null(m->id)) {
		char text[200];
		note(c, "it reported an error about no request: %s",
		     error_message(m->error, text, sizeof text));
	}
}

/* One message from the server (len bytes of text, not NUL-terminated). */
static void dispatch(tgi_mcp_client *c, const char *text, size_t len)
{
	tgi_rpc_msg m;
	json_t *reply;

	tgi_rpc_parse(text, len, &m, &reply);
	switch (m.kind) {
	case TGI_RPC_RESPONSE:
	case TGI_RPC_ERROR_REPLY:
		on_answer(c, &m);
		break;
	case TGI_RPC_NOTIFICATION:
		if (strcmp(m.method, "notifications/progress") == 0)
			on_progress(c, m.params);
		else if (c->h.notify)
			c->h.notify(c->h.arg, m.method, m.params);
		break;
	case TGI_RPC_REQUEST:
		on_server_request(c, &m);
		break;
	case TGI_RPC_BAD: {
		char shown[200];
		note(c, "a message was dropped: %s",
		     error_message(json_object_get(reply, "error"), shown, sizeof shown));
		break;
	}
	}
	json_decref(reply);
	tgi_rpc_msg_free(&m);
}

/* ---- stdio ------------------------------------------------------------------ */

/* What the child writes to the status pipe when it cannot exec. */
enum { CHILD_DUP, CHILD_CWD, CHILD_SETUP, CHILD_EXEC };

/* In the child, after fork: only async-signal-safe calls.  Never returns. */
static void child_exec(const tgi_mcp_client_cfg *cfg, int in_r, int out_w, int err_w,
                       int status_w)
{
	int report[2] = {CHILD_DUP, 0};
	struct sigaction dfl;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL); /* ignored dispositions survive exec */
	sigaction(SIGXFSZ, &dfl, NULL);
	setpgid(0, 0);
	/* lift the ends above 2 first, so no dup2 can clobber another (our
	 * own 0, 1 or 2 may have been closed and reused by a pipe) */
	in_r = fcntl(in_r, F_DUPFD_CLOEXEC, 3);
	out_w = fcntl(out_w, F_DUPFD_CLOEXEC, 3);
	if (err_w >= 0)
		err_w = fcntl(err_w, F_DUPFD_CLOEXEC, 3);
	if (in_r < 0 || out_w < 0 || dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0)
		goto fail;
	if (cfg->stderr_data && (err_w < 0 || dup2(err_w, 2) < 0))
		goto fail;
	report[0] = CHILD_CWD;
	if (cfg->cwd && chdir(cfg->cwd) < 0)
		goto fail;
	/* nothing of ours but stdin/stdout/stderr reaches the server */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	report[0] = CHILD_SETUP;
	if (cfg->child_setup) {         /* the sandbox: last before exec */
		int r = cfg->child_setup(cfg->child_arg);
		if (r < 0) {
			errno = -r;
			goto fail;
		}
	}
	report[0] = CHILD_EXEC;
	if (cfg->envp)
		execvpe(cfg->argv[0], cfg->argv, cfg->envp);
	else
		execvp(cfg->argv[0], cfg->argv);
fail:
	report[1] = errno;
	if (write(status_w, report, sizeof report) < 0)
		_exit(127);
	_exit(127);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int stdio_start(tgi_mcp_client *c, const tgi_mcp_client_cfg *cfg, char *err, size_t errlen)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, st[2] = {-1, -1}, er[2] = {-1, -1};
	int report[2] = {0, 0};
	char cmd[200], ebuf[512];
	ssize_t got;
	pid_t pid;

	tgi_sanitize(cmd, sizeof cmd, cfg->argv[0]);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
	    pipe2(c->wake, O_CLOEXEC) < 0 || (cfg->stderr_data && pipe2(er, O_CLOEXEC) < 0)) {
		tgi_snprintf(err, errlen, "cannot start the server \"%s\": %s", c->name,
		             errno_text(errno, ebuf, sizeof ebuf));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		tgi_snprintf(err, errlen, "cannot start the server \"%s\": %s", c->name,
		             errno_text(errno, ebuf, sizeof ebuf));
		goto fail;
	}
	if (pid == 0)
		child_exec(cfg, in[0], out[1], er[1], st[1]);
	setpgid(pid, pid); /* the child does it too; whoever is first wins */
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&st[1]);
	close_fd(&er[1]);
	do
		got = read(st[0], report, sizeof report);
	while (got < 0 && errno == EINTR);
	close_fd(&st[0]);
	if (got == (ssize_t)sizeof report) {
		char dir[200];
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno_text(report[1], ebuf, sizeof ebuf);
		if (report[0] == CHILD_CWD) {
			tgi_sanitize(dir, sizeof dir, cfg->cwd);
			tgi_snprintf(err, errlen,
			             "cannot start the server \"%s\": its directory \"%s\" cannot be "
			             "entered (%s)", c->name, dir, ebuf);
		} else if (report[0] == CHILD_SETUP) {
			tgi_snprintf(err, errlen, "cannot start the server \"%s\": its sandbox could not "
			             "be entered (%s)", c->name, ebuf);
		} else if (report[0] == CHILD_EXEC && report[1] == ENOENT) {
			tgi_snprintf(err, errlen, "cannot start the server \"%s\": \"%s\" was not found",
			             c->name, cmd);
		} else {
			tgi_snprintf(err, errlen, "cannot start the server \"%s\": \"%s\" cannot run (%s)",
			             c->name, cmd, ebuf);
		}
		goto fail;
	}
	if (cfg->started && cfg->started(cfg->started_arg, pid, ebuf, sizeof ebuf) < 0) {
		char why[400];
		tgi_sanitize(why, sizeof why, ebuf);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		tgi_snprintf(err, errlen, "cannot start the server \"%s\": %s", c->name, why);
		goto fail;
	}
	c->pid = pid;
	c->to_child = in[1];
	c->from_child = out[0];
	c->err_child = er[0];
	fcntl(c->to_child, F_SETFL, fcntl(c->to_child, F_GETFL) | O_NONBLOCK);
	fcntl(c->from_child, F_SETFL, fcntl(c->from_child, F_GETFL) | O_NONBLOCK);
	if (c->err_child >= 0)
		fcntl(c->err_child, F_SETFL, fcntl(c->err_child, F_GETFL) | O_NONBLOCK);
	return 0;
fail:
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&st[0]);
	close_fd(&st[1]);
	close_fd(&er[0]);
	close_fd(&er[1]);
	return -1;
}

/* " (it exited with status 1)" when the child has ended (not reaped:
 * close() does that), else "".  Looks for up to ms. */
static void exit_text(tgi_mcp_client *c, char *out, size_t cap, int ms)
{
	siginfo_t si;

	out[0] = '\0';
	for (int waited = 0;; waited += 10) {
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
			break;
		if (waited >= ms)
			return;
		sleep_ms(10);
	}
	if (si.si_code == CLD_EXITED)
		tgi_snprintf(out, cap, " (it exited with status %d)", si.si_status);
	else
		tgi_snprintf(out, cap, " (it was killed by signal %d)", si.si_status);
}

/*
 * Pass on what the child's stderr holds now, up to max bytes: 1 while the
 * pipe is open, 0 once it has ended (*fd is then -1; the client still
 * closes it).  The reader's thread alone.
 */
static int stderr_pass(tgi_mcp_client *c, int *fd, size_t max)
{
	char buf[STDERR_CHUNK];
	size_t done = 0;

	while (*fd >= 0 && done < max) {
		ssize_t n = read(*fd, buf, sizeof buf);
		if (n > 0) {
			c->stderr_data(c->stderr_arg, buf, (size_t)n);
			done += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return 1;
		} else {
			*fd = -1;               /* the end, or an error: nothing more comes */
		}
	}
	return *fd >= 0;
}

static void *stdio_reader(void *arg)
{
	tgi_mcp_client *c = arg;
	tgi_linereader r;
	char why[400], status[64];
	int errfd = c->err_child;

	tgi_linereader_init(&r, c->from_child, c->max_message);
	for (;;) {
		const char *line;
		size_t len;
		tgi_line_status st = tgi_linereader_next(&r, &line, &len);

		if (st == TGI_LINE_OK) {
			dispatch(c, line, len);
		} else if (st == TGI_LINE_TOO_LONG) {
			note(c, "a message over %zu bytes was dropped", c->max_message);
		} else if (st == TGI_LINE_ERROR && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd fds[3] = {{c->from_child, POLLIN, 0}, {c->wake[0], POLLIN, 0},
			                        {errfd, POLLIN, 0}};   /* -1: not polled */
			if (poll(fds, 3, -1) < 0 && errno != EINTR)
				break;
			if (fds[1].revents)
				break; /* close() is done with the child */
			if (fds[2].revents)
				stderr_pass(c, &errfd, STDERR_CHUNK * 16);
		} else {
			break; /* end of input, or a read error */
		}
	}
	tgi_linereader_free(&r);

	pthread_mutex_lock(&c->mu);
	int closing = c->closing;
	pthread_mutex_unlock(&c->mu);
	exit_text(c, status, sizeof status, closing ? 0 : EXIT_SETTLE_MS / 2);
	/* its last words (why it exited, as a rule) */
	if (errfd >= 0)
		stderr_pass(c, &errfd, STDERR_DRAIN_MAX);
	tgi_snprintf(why, sizeof why, "the server \"%s\" closed the connection%s", c->name, status);
	connection_lost(c, why);
	return NULL;
}

/*
 * Write all n bytes to the child.  SIGPIPE is blocked in this thread
 * meanwhile (a pending one is consumed), so a dead child is EPIPE here.
 * Gives up when the connection goes or, before the first byte, when the
 * deadline passes; a message cut in half breaks the stream, so a wait
 * after that ends only with the connection.
 */
static int stdio_write(tgi_mcp_client *c, const char *p, size_t n, double deadline)
{
	sigset_t pipe_set, old, pend;
	int rc = 0, was_pending, epipe = 0;
	size_t total = n;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_mutex_lock(&c->write_mu);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pend);
	was_pending = sigismember(&pend, SIGPIPE);
	while (n) {
		ssize_t w;
		if (c->to_child < 0) {
			rc = -1;
			break;
		}
		w = write(c->to_child, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {c->to_child, POLLOUT, 0};
			wait_end end = wait_check_locked(c, NULL, NULL, n == total ? deadline : 0);
			if (end != WAIT_ON) {
				rc = -1;
				break;
			}
			poll(&pfd, 1, POLL_MS);
			continue;
		}
		epipe = errno == EPIPE;
		rc = -1;
		break;
	}
	if (epipe && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&c->write_mu);
	if (rc < 0 && n != total && n) {
		char why[300];
		tgi_snprintf(why, sizeof why, "the server \"%s\" stopped reading its input", c->name);
		connection_lost(c, why);
	}
	return rc;
}

/* Close the child's stdin, then SIGTERM, then SIGKILL its group; reap it. */
static void stdio_stop(tgi_mcp_client *c)
{
	siginfo_t si;
	int waited = 0;

	pthread_mutex_lock(&c->write_mu);
	close_fd(&c->to_child);
	pthread_mutex_unlock(&c->write_mu);

	for (int round = 0; round < 3; round++) {
		if (round == 1)
			kill(-c->pid, SIGTERM);
		else if (round == 2)
			kill(-c->pid, SIGKILL);
		for (waited = 0;; waited += 20) {
			memset(&si, 0, sizeof si);
			int r = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT);
			if ((r == 0 && si.si_pid) || (r < 0 && errno == ECHILD))
				goto ended; /* (ECHILD: SIGCHLD is ignored, it reaped itself) */
			if (round < 2 && waited >= GRACE_MS)
				break;
			sleep_ms(20);
		}
	}
ended:
	/* the leader is a zombie, so its group id is still ours: whatever it
	 * left behind in the group goes too */
	kill(-c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- HTTP ------------------------------------------------------------------- */

/* libcurl's functions: an HTTP client exists only once tgi_mcp_client_open()
 * has loaded them. */
static const tgi_curl_api *const C = &tgi_curl;

static http_conn *conn_take(tgi_mcp_client *c)
{
	http_conn *hc;

	pthread_mutex_lock(&c->mu);
	hc = c->idle;
	if (hc)
		c->idle = hc->next;
	pthread_mutex_unlock(&c->mu);
	if (hc)
		return hc;
	hc = tgi_xcalloc(1, sizeof *hc);
	hc->multi = C->multi_init();
	hc->easy = C->easy_init();
	if (!hc->multi || !hc->easy)
		out_of_memory();
	return hc;
}

static void conn_give(tgi_mcp_client *c, http_conn *hc)
{
	pthread_mutex_lock(&c->mu);
	hc->next = c->idle;
	c->idle = hc;
	pthread_mutex_unlock(&c->mu);
}

static void conn_free_all(tgi_mcp_client *c)
{
	while (c->idle) {
		http_conn *hc = c->idle;
		c->idle = hc->next;
		C->easy_cleanup(hc->easy);
		C->multi_cleanup(hc->multi);
		free(hc);
	}
}

/* What came back for one HTTP exchange. */
typedef enum { RX_UNKNOWN, RX_JSON, RX_SSE, RX_OTHER } rx_kind;

typedef struct http_rx {
	tgi_mcp_client *c;
	CURL           *easy;
	rx_kind         kind;
	long            status;
	tgi_buf         buf;       /* a JSON body, an error body, or SSE not yet cut */
	tgi_sse_cutter  cutter;    /* SSE: where the complete events end */
	int             overflow;  /* a message went past the cap */
	int             listen;    /* the GET stream: open sets c->listening */
	char           *session;   /* initialize: Mcp-Session-Id goes here */
} http_rx;

static int sse_event(const tgi_sse_event *ev, void *arg)
{
	http_rx *rx = arg;

	if (ev->data_len == 0 || (ev->event[0] && strcmp(ev->event, "message") != 0))
		return 0; /* a priming event, or one that is not a message */
	if (ev->data_len > rx->c->max_message) {
		note(rx->c, "a message over %zu bytes was dropped", rx->c->max_message);
		return 0;
	}
	dispatch(rx->c, ev->data, ev->data_len);
	return 0;
}

/* Deliver the events complete in rx->buf (all of it at the end of the
 * stream) and keep the rest. */
static void sse_drain(http_rx *rx, int at_end)
{
	size_t cut = at_end ? rx->buf.len : tgi_sse_cut(&rx->cutter, rx->buf.p, rx->buf.len);
	char perr[160];
	int truncated = 0;

	if (!cut)
		return;
	if (tgi_sse_parse(rx->buf.p, cut, sse_event, rx, &truncated, perr, sizeof perr) < 0)
		note(rx->c, "an event stream was dropped: %s", perr);
	memmove(rx->buf.p, rx->buf.p + cut, rx->buf.len - cut);
	rx->buf.len -= cut;
	rx->buf.p[rx->buf.len] = '\0';
	rx->cutter.scan -= cut;
	rx->cutter.line -= cut;
}

/* The first bytes of a body: what kind is it? */
static void rx_classify(http_rx *rx)
{
	const char *ctype = NULL;

	C->easy_getinfo(rx->easy, CURLINFO_RESPONSE_CODE, &rx->status);
	C->easy_getinfo(rx->easy, CURLINFO_CONTENT_TYPE, &ctype);
	if (rx->status >= 200 && rx->status < 300 && ctype &&
	    strncasecmp(ctype, "text/event-stream", 17) == 0) {
		rx->kind = RX_SSE;
		tgi_buf_init(&rx->buf, rx->c->max_message + SSE_SLACK);
	} else if (rx->status >= 200 && rx->status < 300 && ctype &&
	           strncasecmp(ctype, "application/json", 16) == 0) {
		rx->kind = RX_JSON;
		tgi_buf_init(&rx->buf, rx->c->max_message);
	} else {
		rx->kind = RX_OTHER;
		tgi_buf_init(&rx->buf, HTTP_ERROR_BODY_MAX);
	}
}

static size_t rx_write(char *data, size_t size, size_t nmemb, void *arg)
{
	http_rx *rx = arg;
	size_t n = size * nmemb;

	if (rx->kind == RX_UNKNOWN)
		rx_classify(rx);
	if (tgi_buf_append(&rx->buf, data, n) < 0) {
		if (rx->kind == RX_OTHER)
			return n; /* an error page: its head is enough */
		rx->overflow = 1;
		return 0; /* stops the transfer */
	}
	if (rx->kind == RX_SSE)
		sse_drain(rx, 0);
	return n;
}

static size_t rx_header(char *data, size_t size, size_t nmemb, void *arg)
{
	http_rx *rx = arg;
	size_t n = size * nmemb;
	static const char name[] = "mcp-session-id:";

	if (rx->session && n > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
		const char *v = data + sizeof name - 1, *end = data + n;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
			end--;
		/* visible ASCII only (0x21-0x7E), as the transport requires */
		size_t len = (size_t)(end - v);
		int ok = len > 0 && len < SESSION_ID_MAX;
		for (size_t i = 0; ok && i < len; i++)
			ok = v[i] >= 0x21 && v[i] <= 0x7e;
		if (ok) {
			pthread_mutex_lock(&rx->c->mu);
			memcpy(rx->session, v, len);
			rx->session[len] = '\0';
			pthread_mutex_unlock(&rx->c->mu);
		}
	}
	if (rx->listen && n <= 2 && (data[0] == '\r' || data[0] == '\n')) {
		long status = 0;
		C->easy_getinfo(rx->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200) {
			pthread_mutex_lock(&rx->c->mu);
			rx->c->listening = 1;
			pthread_cond_broadcast(&rx->c->cv);
			pthread_mutex_unlock(&rx->c->mu);
		}
	}
	return n;
}

/* A request's headers: ours, then the configured ones.  Caller frees. */
static struct curl_slist *http_headers(tgi_mcp_client *c, int post)
{
	struct curl_slist *l = NULL;
	char line[SESSION_ID_MAX + 64];

	if (post) {
		l = C->slist_append(l, "Content-Type: application/json");
		l = C->slist_append(l, "Accept: application/json, text/event-stream");
	} else {
		l = C->slist_append(l, "Accept: text/event-stream");
	}
	pthread_mutex_lock(&c->mu);
	if (c->session[0]) {
		tgi_snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
		l = C->slist_append(l, line);
	}
	if (c->version[0]) {
		tgi_snprintf(line, sizeof line, "MCP-Protocol-Version: %s", c->version);
		l = C->slist_append(l, line);
	}
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < c->nheaders; i++)
		l = C->slist_append(l, c->headers[i]);
	l = C->slist_append(l, "Expect:"); /* no 100-continue round trip */
	if (!l)
		out_of_memory();
	return l;
}

typedef enum { HTTP_POST, HTTP_GET, HTTP_DELETE } http_method;

/* One HTTP exchange, driven in steps so that p's answer, cancel, the
 * deadline and close() end it early (*stopped says which). */
typedef struct http_call {
	http_method         method;
	const char         *body;      /* POST */
	size_t              len;
	pending            *p;         /* a request waiting for its answer, or NULL */
	volatile const int *cancel;
	double              deadline;  /* monotonic ms, 0: none */
	int                 ignore_closing; /* DELETE from close() */
	char               *session;   /* initialize: where Mcp-Session-Id goes */
	/* out */
	http_rx             rx;
	CURLcode            rc;
	wait_end            stopped;   /* WAIT_ON when the exchange ran to its end */
	char                errbuf[CURL_ERROR_SIZE];
} http_call;

static void http_run(tgi_mcp_client *c, http_call *hc)
{
	http_conn *conn = conn_take(c);
	CURL *e = conn->easy;
	struct curl_slist *headers = http_headers(c, hc->method == HTTP_POST);
	int running = 1;

	memset(&hc->rx, 0, sizeof hc->rx);
	hc->rx.c = c;
	hc->rx.easy = e;
	hc->rx.listen = hc->method == HTTP_GET;
	hc->rx.session = hc->session;
	hc->errbuf[0] = '\0';
	hc->rc = CURLE_OK;
	hc->stopped = WAIT_ON;

	C->easy_reset(e);
	C->easy_setopt(e, CURLOPT_URL, c->url);
	C->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	C->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->loopback)
		C->easy_setopt(e, CURLOPT_PROXY, ""); /* whatever http_proxy says */
	C->easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	C->easy_setopt(e, CURLOPT_WRITEFUNCTION, rx_write);
	C->easy_setopt(e, CURLOPT_WRITEDATA, &hc->rx);
	C->easy_setopt(e, CURLOPT_HEADERFUNCTION, rx_header);
	C->easy_setopt(e, CURLOPT_HEADERDATA, &hc->rx);
	C->easy_setopt(e, CURLOPT_ERRORBUFFER, hc->errbuf);
	if (hc->method == HTTP_POST) {
		C->easy_setopt(e, CURLOPT_POSTFIELDS, hc->body);
		C->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)hc->len);
	} else if (hc->method == HTTP_DELETE) {
		C->easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	}

	C->multi_add_handle(conn->multi, e);
	for (;;) {
		CURLMcode mrc = C->multi_perform(conn->multi, &running);
		if (mrc != CURLM_OK) {
			hc->rc = CURLE_FAILED_INIT;
			tgi_snprintf(hc->errbuf, sizeof hc->errbuf, "%s", C->multi_strerror(mrc));
			break;
		}
		if (!running) {
			int left;
			CURLMsg *msg;
			while ((msg = C->multi_info_read(conn->multi, &left)))
				if (msg->msg == CURLMSG_DONE)
					hc->rc = msg->data.result;
			break;
		}
		pthread_mutex_lock(&c->mu);
		if (hc->ignore_closing)
			hc->stopped = hc->deadline > 0 && tgi_now_ms() >= hc->deadline ? WAIT_TIMEOUT
			                                                               : WAIT_ON;
		else
			hc->stopped = wait_check(c, hc->p, hc->cancel, hc->deadline);
		pthread_mutex_unlock(&c->mu);
		if (hc->stopped != WAIT_ON)
			break;
		C->multi_poll(conn->multi, NULL, 0, POLL_MS, NULL);
	}
	C->multi_remove_handle(conn->multi, e);
	if (hc->rx.kind == RX_UNKNOWN)
		C->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &hc->rx.status);
	C->slist_free_all(headers);
	conn_give(c, conn);

	if (hc->stopped == WAIT_ON && hc->rc == CURLE_OK) {
		if (hc->rx.kind == RX_SSE)
			sse_drain(&hc->rx, 1);
		else if (hc->rx.kind == RX_JSON || (hc->rx.kind == RX_OTHER && hc->rx.buf.len &&
		                                    hc->rx.buf.p[0] == '{'))
			dispatch(c, hc->rx.buf.p, hc->rx.buf.len);
	}
}

static void http_rx_free(http_call *hc)
{
	tgi_buf_free(&hc->rx.buf);
}

/* A sentence for an exchange that failed at the transport: into out. */
static void http_failure(tgi_mcp_client *c, const http_call *hc, char *out, size_t cap)
{
	char url[200], detail[CURL_ERROR_SIZE];

	tgi_sanitize(url, sizeof url, c->url);
	tgi_sanitize(detail, sizeof detail,
	             hc->errbuf[0] ? hc->errbuf : C->easy_strerror(hc->rc));
	tgi_snprintf(out, cap, "the server \"%s\" at %s cannot be reached: %s", c->name, url,
	             lower_first(detail));
}

/* "HTTP 400: what the body said" for an unwelcome status. */
static void http_status_text(const http_call *hc, char *out, size_t cap)
{
	char said[200] = "";
	json_t *body = hc->rx.buf.len ? json_loadb(hc->rx.buf.p, hc->rx.buf.len, 0, NULL) : NULL;
	json_t *msg = json_object_get(json_object_get(body, "error"), "message");

	if (json_is_string(msg))
		tgi_sanitize(said, sizeof said, json_string_value(msg));
	else if (hc->rx.buf.len)
		tgi_sanitize_n(said, sizeof said, hc->rx.buf.p, hc->rx.buf.len, 160);
	json_decref(body);
	tgi_snprintf(out, cap, "HTTP %ld%s%s", hc->rx.status, said[0] ? ": " : "", said);
}

/*
 * After an exchange that did not bring what was wanted: is the whole
 * connection gone (the server cannot be reached, or it forgot our
 * session)?  Then say so to everyone and return 1.
 */
static int http_lost(tgi_mcp_client *c, const http_call *hc)
{
	char why[512];

	if (hc->rc != CURLE_OK && hc->rc != CURLE_WRITE_ERROR) {
		http_failure(c, hc, why, sizeof why);
		connection_lost(c, why);
		return 1;
	}
	if (hc->rc == CURLE_OK && hc->rx.status == 404 && c->session[0]) {
		tgi_snprintf(why, sizeof why, "the server \"%s\" ended the session", c->name);
		connection_lost(c, why);
		return 1;
	}
	return 0;
}

/* POST one message that needs no answer (a notification, a reply). */
static int http_send(tgi_mcp_client *c, const char *text, size_t len, double deadline)
{
	http_call hc = {.method = HTTP_POST, .body = text, .len = len, .deadline = deadline};
	int ok;

	http_run(c, &hc);
	ok = hc.stopped == WAIT_ON && hc.rc == CURLE_OK && hc.rx.status >= 200 &&
	     hc.rx.status < 300;
	if (!ok && hc.stopped == WAIT_ON && !http_lost(c, &hc)) {
		char st[300];
		http_status_text(&hc, st, sizeof st);
		note(c, "a message was refused: %s", st);
	}
	http_rx_free(&hc);
	return ok ? 0 : -1;
}

/*
 * POST a request and wait for its answer in the reply (JSON, or an SSE
 * stream that ends with it).  A 202 means the answer comes on the GET
 * stream, when there is one.  Returns how the wait ended; WAIT_GONE with a
 * sentence in err for an exchange that failed without losing the
 * connection.
 */
static wait_end http_exchange(tgi_mcp_client *c, pending *p, const char *text, size_t len,
                              volatile const int *cancel, double deadline, char *err,
                              size_t errlen)
{
	http_call hc = {.method = HTTP_POST, .body = text, .len = len, .p = p, .cancel = cancel,
	                .deadline = deadline};
	wait_end w;
	int listening;

	if (strcmp(p->method, "initialize") == 0)
		hc.session = c->session;
	http_run(c, &hc);
	w = hc.stopped;
	if (w == WAIT_ON) {
		pthread_mutex_lock(&c->mu);
		w = p->done ? WAIT_DONE : WAIT_ON;
		listening = c->listening;
		pthread_mutex_unlock(&c->mu);
		if (w == WAIT_ON) {
			if (hc.rx.overflow) {
				tgi_snprintf(err, errlen,
				             "the server \"%s\" answered \"%s\" with a message over %zu "
				             "bytes", c->name, p->method, c->max_message);
				w = WAIT_GONE;
			} else if (http_lost(c, &hc)) {
				w = WAIT_GONE;
			} else if (hc.rx.status == 202 && listening) {
				w = wait_answer(c, p, cancel, deadline);
			} else if (hc.rx.status >= 200 && hc.rx.status < 300) {
				tgi_snprintf(err, errlen,
				             "the server \"%s\" ended its reply to \"%s\" without an answer",
				             c->name, p->method);
				w = WAIT_GONE;
			} else {
				char st[300];
				http_status_text(&hc, st, sizeof st);
				tgi_snprintf(err, errlen, "the server \"%s\" answered \"%s\" with %s",
				             c->name, p->method, st);
				w = WAIT_GONE;
			}
		}
	}
	http_rx_free(&hc);
	return w;
}

/*
 * The listener: a GET SSE stream for what the server sends outside any
 * request (list_changed, its own requests).  405 (or any refusal) means
 * the server offers none; a stream that ends is opened again, after a
 * pause that doubles while streams keep ending quickly.
 */
static void *http_listener(void *arg)
{
	tgi_mcp_client *c = arg;
	int backoff = 1000;

	for (;;) {
		http_call hc = {.method = HTTP_GET};
		double started = tgi_now_ms();
		int gone;

		http_run(c, &hc);
		pthread_mutex_lock(&c->mu);
		c->listening = 0;
		pthread_mutex_unlock(&c->mu);
		gone = hc.stopped != WAIT_ON || http_lost(c, &hc) || hc.rx.status != 200;
		http_rx_free(&hc);
		if (gone)
			break;
		if (tgi_now_ms() - started > 10000)
			backoff = 1000;
		pthread_mutex_lock(&c->mu);
		double until = tgi_now_ms() + backoff;
		while (wait_check(c, NULL, NULL, until) == WAIT_ON)
			cv_wait_ms(c, until - tgi_now_ms());
		gone = c->gone || c->closing;
		pthread_mutex_unlock(&c->mu);
		if (gone)
			break;
		backoff = backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : backoff * 2;
	}
	pthread_mutex_lock(&c->mu);
	c->listener_done = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/*
 * Start the listener and give it a moment to open its stream, so that
 * what the server sends once it hears notifications/initialized (a
 * tools/list_changed, typically) has somewhere to go.
 */
static void http_listen(tgi_mcp_client *c)
{
	double until = tgi_now_ms() + LISTEN_SETTLE_MS;

	c->listener_started = pthread_create(&c->listener, NULL, http_listener, c) == 0;
	if (!c->listener_started)
		return;
	pthread_mutex_lock(&c->mu);
	while (!c->listening && !c->listener_done && tgi_now_ms() < until)
		cv_wait_ms(c, until - tgi_now_ms());
	pthread_mutex_unlock(&c->mu);
}

/* ---- sending ---------------------------------------------------------------- */

/* Send one message that needs no answer (msg stolen).  0, or -1. */
static int send_message(tgi_mcp_client *c, json_t *msg, double deadline)
{
	size_t len;
	char *text = tgi_rpc_dump(msg, &len);
	int rc;

	json_decref(msg);
	if (c->kind == T_STDIO) {
		text = tgi_xrealloc(text, len + 2);
		text[len++] = '\n';
		text[len] = '\0';
		rc = stdio_write(c, text, len, deadline);
	} else {
		rc = http_send(c, text, len, deadline);
	}
	free(text);
	return rc;
}

/* ---- requests --------------------------------------------------------------- */

static void cancel_request(tgi_mcp_client *c, const pending *p, const char *reason)
{
	json_t *params = json_pack("{s:I,s:s}", "requestId", (json_int_t)p->id, "reason", reason);
	send_message(c, tgi_rpc_notification("notifications/cancelled", params),
	             tgi_now_ms() + SEND_TIMEOUT_MS);
}

/* params with _meta.progressToken = id (params stolen, may be NULL). */
static json_t *with_progress_token(json_t *params, int64_t id)
{
	json_t *meta;

	if (!params)
		params = json_object();
	meta = json_object_get(params, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(params, "_meta", meta);
	}
	json_object_set_new(meta, "progressToken", json_integer(id));
	return params;
}

/* Take p out of the table; wait until no progress callback of it runs.
 * After this nothing else touches p. */
static void pending_unlink(tgi_mcp_client *c, pending *p)
{
	pthread_mutex_lock(&c->mu);
	for (pending **pp = &c->waiting; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	while (p->busy)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* Send the request of p (msg stolen) and wait for its answer. */
static wait_end exchange(tgi_mcp_client *c, pending *p, json_t *msg, volatile const int *cancel,
                         double deadline, char *why, size_t whylen)
{
	size_t len;
	char *text = tgi_rpc_dump(msg, &len);
	wait_end w;

	json_decref(msg);
	if (c->kind == T_HTTP) {
		w = http_exchange(c, p, text, len, cancel, deadline, why, whylen);
	} else {
		text = tgi_xrealloc(text, len + 2);
		text[len++] = '\n';
		text[len] = '\0';
		if (stdio_write(c, text, len, deadline) == 0) {
			w = wait_answer(c, p, cancel, deadline);
		} else {
			/* the child closed its input: give the reader a moment to see
			 * it go, so that the sentence can say how it ended */
			double soon = tgi_now_ms() + EXIT_SETTLE_MS;
			w = wait_answer(c, p, cancel, deadline > 0 && deadline < soon ? deadline : soon);
			if (w == WAIT_TIMEOUT && (deadline <= 0 || tgi_now_ms() < deadline))
				w = WAIT_GONE;
		}
	}
	free(text);
	return w;
}

int tgi_mcp_client_request(tgi_mcp_client *c, const char *method, json_t *params, int timeout_ms,
                           volatile const int *cancel, tgi_mcp_progress_fn progress,
                           void *parg, json_t **result, json_t **error, int *cancelled,
                           char *err, size_t errlen)
{
	pending p = {.method = method, .progress = progress, .parg = parg};
	double deadline = timeout_ms > 0 ? tgi_now_ms() + timeout_ms : 0;
	char why[512] = "", t[32];
	json_t *msg;
	wait_end w;
	int rc = -1;

	*result = NULL;
	*error = NULL;
	if (cancelled)
		*cancelled = 0;
	if (errlen)
		err[0] = '\0';
	if (c->reader_started && pthread_equal(pthread_self(), c->reader)) {
		/* its answer could only come through this very thread */
		json_decref(params);
		tgi_snprintf(err, errlen,
		             "a request to the server \"%s\" cannot be made from a handler; make it "
		             "from another thread", c->name);
		return -1;
	}
	if (params && !json_is_object(params)) {
		json_decref(params);
		tgi_snprintf(err, errlen, "the parameters of \"%s\" must be an object", method);
		return -1;
	}
	if (enter(c, err, errlen) < 0) {
		json_decref(params);
		return -1;
	}
	pending_add(c, &p);
	if (progress)
		params = with_progress_token(params, p.id);
	msg = tgi_rpc_request(NULL, method, params);
	json_object_set_new(msg, "id", json_integer(p.id));

	w = exchange(c, &p, msg, cancel, deadline, why, sizeof why);
	pending_unlink(c, &p);
	if (p.done)
		w = WAIT_DONE; /* an answer that came in while the wait was ending counts */

	switch (w) {
	case WAIT_DONE:
		if (p.error) {
			char shown[300];
			tgi_snprintf(err, errlen,
			             "the server \"%s\" answered \"%s\" with error %" JSON_INTEGER_FORMAT
			             ": %s", c->name, method,
			             json_integer_value(json_object_get(p.error, "code")),
			             error_message(p.error, shown, sizeof shown));
			*error = p.error;
		} else {
			*result = p.result ? p.result : json_object();
			rc = 0;
		}
		p.result = p.error = NULL;
		break;
	case WAIT_CANCELLED:
		cancel_request(c, &p, "cancelled by the client");
		tgi_snprintf(err, errlen, "the request \"%s\" to the server \"%s\" was cancelled",
		             method, c->name);
		if (cancelled)
			*cancelled = 1;
		break;
	case WAIT_TIMEOUT:
		cancel_request(c, &p, "timed out");
		wait_ms_text(t, sizeof t, timeout_ms);
		tgi_snprintf(err, errlen, "the server \"%s\" did not answer \"%s\" within %s", c->name,
		             method, t);
		break;
	case WAIT_GONE:
	case WAIT_ON:
		if (!why[0]) {
			pthread_mutex_lock(&c->mu);
			const char *u = unusable(c, why, sizeof why);
			if (u && u != why)
				tgi_snprintf(why, sizeof why, "%s", u);
			pthread_mutex_unlock(&c->mu);
			if (!why[0])
				tgi_snprintf(why, sizeof why, "the server \"%s\" closed the connection",
				             c->name);
		}
		tgi_snprintf(err, errlen, "%s", why);
		break;
	}
	json_decref(p.result);
	json_decref(p.error);
	leave(c);
	return rc;
}

int tgi_mcp_client_notify(tgi_mcp_client *c, const char *method, json_t *params)
{
	char err[300];
	int rc;

	if ((params && !json_is_object(params)) || enter(c, err, sizeof err) < 0) {
		json_decref(params);
		return -1;
	}
	rc = send_message(c, tgi_rpc_notification(method, params), tgi_now_ms() + SEND_TIMEOUT_MS);
	leave(c);
	return rc;
}

/* ---- open and close --------------------------------------------------------- */

/* initialize, check the answer, notifications/initialized. */
static int initialize(tgi_mcp_client *c, int timeout_s, char *err, size_t errlen)
{
	json_t *params, *result, *error;
	const char *version;

	params = json_pack("{s:s,s:{s:{},s:{}},s:{s:s,s:s}}", "protocolVersion", PROTOCOL_VERSION,
	                   "capabilities", "elicitation", "sampling", "clientInfo", "name",
	                   "toolgate", "version", tg_version());
	if (tgi_mcp_client_request(c, "initialize", params, timeout_s * 1000, NULL, NULL, NULL,
	                           &result, &error, NULL, err, errlen) < 0) {
		if (error) {
			char shown[300];
			tgi_snprintf(err, errlen, "the server \"%s\" refused to initialize: %s", c->name,
			             error_message(error, shown, sizeof shown));
			json_decref(error);
		}
		return -1;
	}
	version = json_string_value(json_object_get(result, "protocolVersion"));
	if (!version || !tgi_mcp_version_known(version)) {
		char shown[64];
		tgi_sanitize(shown, sizeof shown, version ? version : "");
		if (version)
			tgi_snprintf(err, errlen,
			             "the server \"%s\" speaks protocol %s, which toolgate does not",
			             c->name, shown);
		else
			tgi_snprintf(err, errlen,
			             "the server \"%s\" answered initialize without a \"protocolVersion\"",
			             c->name);
		json_decref(result);
		return -1;
	}
	pthread_mutex_lock(&c->mu);
	c->init_result = result;
	tgi_snprintf(c->version, sizeof c->version, "%s", version);
	pthread_mutex_unlock(&c->mu);
	if (c->kind == T_HTTP)
		http_listen(c);
	if (tgi_mcp_client_notify(c, "notifications/initialized", NULL) < 0) {
		pthread_mutex_lock(&c->mu);
		if (c->gone)
			tgi_snprintf(err, errlen, "%s", c->why);
		else
			tgi_snprintf(err, errlen,
			             "the server \"%s\" did not take notifications/initialized", c->name);
		pthread_mutex_unlock(&c->mu);
		return -1;
	}
	return 0;
}

static void client_free(tgi_mcp_client *c)
{
	json_decref(c->init_result);
	for (size_t i = 0; i < c->nheaders; i++)
		free(c->headers[i]);
	free(c->headers);
	conn_free_all(c);
	close_fd(&c->to_child);
	close_fd(&c->from_child);
	close_fd(&c->err_child);
	close_fd(&c->wake[0]);
	close_fd(&c->wake[1]);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->write_mu);
	free(c->url);
	free(c->name);
	free(c);
}

static tgi_mcp_client *client_new(const tgi_mcp_client_cfg *cfg, const tgi_mcp_client_handlers *h)
{
	tgi_mcp_client *c = tgi_xcalloc(1, sizeof *c);

	c->name = tgi_strdup(cfg->name && cfg->name[0] ? cfg->name : "mcp");
	c->max_message = cfg->max_message ? cfg->max_message : DEFAULT_MAX_MESSAGE;
	if (h)
		c->h = *h;
	c->to_child = c->from_child = c->err_child = c->wake[0] = c->wake[1] = -1;
	c->stderr_data = cfg->stderr_data;
	c->stderr_arg = cfg->stderr_arg;
	c->next_id = 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->write_mu, NULL);
	tgi_cond_init(&c->cv);
	return c;
}

int tgi_mcp_client_open(const tgi_mcp_client_cfg *cfg, const tgi_mcp_client_handlers *h,
                        tgi_mcp_client **out, char *err, size_t errlen)
{
	tgi_mcp_client *c;
	int stdio = cfg->argv && cfg->argv[0] && cfg->argv[0][0];
	int timeout_s = cfg->init_timeout_s > 0 ? cfg->init_timeout_s : DEFAULT_INIT_TIMEOUT_S;
	int rc;

	*out = NULL;
	if (stdio == !!(cfg->url && cfg->url[0])) {
		tgi_snprintf(err, errlen, "the server \"%s\" needs either a command or a url",
		             cfg->name ? cfg->name : "mcp");
		return -1;
	}
	if (!stdio && strncasecmp(cfg->url, "http://", 7) != 0 &&
	    strncasecmp(cfg->url, "https://", 8) != 0) {
		char url[200];
		tgi_sanitize(url, sizeof url, cfg->url);
		tgi_snprintf(err, errlen, "the url \"%s\" of the server \"%s\" is not http or https",
		             url, cfg->name ? cfg->name : "mcp");
		return -1;
	}
	for (size_t i = 0; !stdio && i < cfg->nheaders; i++) {
		const char *line = cfg->headers[i];
		if (!line || strpbrk(line, "\r\n") || !strchr(line, ':')) {
			tgi_snprintf(err, errlen,
			             "header %zu of the server \"%s\" is not one \"Name: value\" line",
			             i + 1, cfg->name ? cfg->name : "mcp");
			return -1;
		}
	}
	if (!stdio && tgi_curl_load(err, errlen) < 0)
		return -1;
	c = client_new(cfg, h);
	if (stdio) {
		c->kind = T_STDIO;
		if (stdio_start(c, cfg, err, errlen) < 0) {
			client_free(c);
			return -1;
		}
		rc = pthread_create(&c->reader, NULL, stdio_reader, c);
		c->reader_started = rc == 0;
	} else {
		c->kind = T_HTTP;
		c->url = tgi_strdup(cfg->url);
		c->headers = tgi_xcalloc(cfg->nheaders + 1, sizeof *c->headers);
		for (size_t i = 0; i < cfg->nheaders; i++)
			c->headers[c->nheaders++] = tgi_strdup(cfg->headers[i]);
		c->loopback = tgi_curl_url_is_loopback(c->url);
		rc = 0;
	}
	if (rc != 0) {
		tgi_snprintf(err, errlen, "cannot start a thread for the server \"%s\"", c->name);
		tgi_mcp_client_close(c);
		return -1;
	}
	if (initialize(c, timeout_s, err, errlen) < 0) {
		tgi_mcp_client_close(c);
		return -1;
	}

	pthread_mutex_lock(&c->mu);
	if (c->gone)
		tgi_snprintf(err, errlen, "%s", c->why);
	else
		c->opened = 1;
	rc = c->opened ? 0 : -1;
	pthread_mutex_unlock(&c->mu);
	if (rc < 0) {
		tgi_mcp_client_close(c);
		return -1;
	}
	*out = c;
	return 0;
}

void tgi_mcp_client_close(tgi_mcp_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->closing = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);

	if (c->kind == T_STDIO) {
		if (c->pid > 0)
			stdio_stop(c);
		if (c->reader_started) {
			if (write(c->wake[1], "x", 1) < 0)
				note(c, "the reader could not be woken");
			pthread_join(c->reader, NULL);
		}
	} else {
		if (c->listener_started)
			pthread_join(c->listener, NULL);
		if (c->session[0]) {
			http_call hc = {.method = HTTP_DELETE, .ignore_closing = 1,
			                .deadline = tgi_now_ms() + DELETE_TIMEOUT_MS};
			http_run(c, &hc);
			http_rx_free(&hc);
		}
	}

	/* requests still leaving, and the server's requests still being answered */
	pthread_mutex_lock(&c->mu);
	while (c->users)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	client_free(c);
}

/* ---- what initialize said ---------------------------------------------------- */

const json_t *tgi_mcp_client_capabilities(const tgi_mcp_client *c)
{
	return json_object_get(c->init_result, "capabilities");
}

const json_t *tgi_mcp_client_server_info(const tgi_mcp_client *c)
{
	return json_object_get(c->init_result, "serverInfo");
}

const char *tgi_mcp_client_version(const tgi_mcp_client *c)
{
	return c->version;
}

pid_t tgi_mcp_client_pid(const tgi_mcp_client *c)
{
	return c->kind == T_STDIO ? c->pid : 0;
}

int tgi_mcp_client_alive(const tgi_mcp_client *c)
{
	tgi_mcp_client *m = (tgi_mcp_client *)c; /* the lock is not part of the value */
	int alive;

	pthread_mutex_lock(&m->mu);
	alive = !m->gone && !m->closing;
	pthread_mutex_unlock(&m->mu);
	return alive;
}
