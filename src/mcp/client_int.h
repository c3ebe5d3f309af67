/*
 * client_int.h — what the MCP client's protocol (client.c) shares with its
 * transports (client_stdio.c, client_http.c).  Private to those files.
 *
 * A transport is one const row of tgi_mcpc_transport, as the store's
 * backends are rows of store/impl.h: client.c starts, sends, exchanges,
 * closes and frees through the row and names no transport; a transport
 * hands what it reads to tgi_mcpc_dispatch and reports a lost connection
 * with tgi_mcpc_connection_lost.  The client's state is one struct with a
 * part for each transport (only the chosen one's part is used).
 *
 * Owns: the client's struct, the waiting row, the transport row.  Must
 * not: be included outside src/mcp/client*.c.
 */
#ifndef TGI_MCP_CLIENT_INT_H
#define TGI_MCP_CLIENT_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "mcp/client.h"

#define POLL_MS                50       /* how often waits look at cancel and close */
#define SESSION_ID_MAX         256

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

/* How a wait ended. */
typedef enum {
	WAIT_ON,        /* not yet */
	WAIT_DONE,      /* the answer is in */
	WAIT_GONE,      /* the connection is gone or closing */
	WAIT_CANCELLED, /* *cancel became nonzero */
	WAIT_TIMEOUT,   /* the deadline passed */
} wait_end;

/* A libcurl multi handle with its one easy handle (client_http.c). */
typedef struct http_conn http_conn;

typedef struct tgi_mcpc_transport tgi_mcpc_transport;

struct tgi_mcp_client {
	char                   *name;
	const tgi_mcpc_transport *t; /* how it reaches the server */
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

/*
 * How a client reaches its server.  Every member but reader and
 * initialized is set; c is the client, mu not held.
 */
struct tgi_mcpc_transport {
	const char *name;
	/* Set c up from cfg (the child started; the url and headers kept): 0, or
	 * -1 with a sentence in err and nothing to stop (open() frees c). */
	int (*start)(tgi_mcp_client *c, const tgi_mcp_client_cfg *cfg, char *err, size_t errlen);
	/* The thread that reads the server (open() starts it, on c->reader),
	 * or NULL when each exchange reads its own reply. */
	void *(*reader)(void *c);
	/* Send one message that needs no answer (len bytes of JSON text,
	 * borrowed): 0, or -1. */
	int (*send)(tgi_mcp_client *c, const char *text, size_t len, double deadline);
	/* Send p's request (text borrowed) and wait for its answer; WAIT_GONE
	 * with a sentence in why for an exchange that failed without losing
	 * the connection. */
	wait_end (*exchange)(tgi_mcp_client *c, pending *p, const char *text, size_t len,
	                     volatile const int *cancel, double deadline, char *why,
	                     size_t whylen);
	/* initialize was answered (NULL: nothing to do). */
	void (*initialized)(tgi_mcp_client *c);
	/* close() has begun: stop the child or end the session, join the
	 * transport's threads (the users are waited out after). */
	void (*close)(tgi_mcp_client *c);
	/* Free what is left of the transport (descriptors, pooled handles). */
	void (*release)(tgi_mcp_client *c);
};

extern const tgi_mcpc_transport tgi_mcpc_stdio;   /* client_stdio.c */
extern const tgi_mcpc_transport tgi_mcpc_http;    /* client_http.c */

/* ---- client.c, for the transports ---- */

/* A line for the operator on stderr (MCP keeps stdout for messages). */
void tgi_mcpc_note(const tgi_mcp_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "No such file" → "no such file" for the middle of our sentences. */
char *tgi_mcpc_lower_first(char *s);
/* Wait on c->cv for at most ms milliseconds (mu held). */
void tgi_mcpc_cv_wait_ms(tgi_mcp_client *c, double ms);
/* The connection is gone: why (the first reason wins) to every waiter and
 * to handlers.closed, once. */
void tgi_mcpc_connection_lost(tgi_mcp_client *c, const char *why);
/* Should a wait for p (may be NULL) end now?  mu held.  deadline:
 * monotonic ms, 0 for none. */
wait_end tgi_mcpc_wait_check(tgi_mcp_client *c, const pending *p, volatile const int *cancel,
                             double deadline);
/* Wait for p's answer on the condition variable. */
wait_end tgi_mcpc_wait_answer(tgi_mcp_client *c, pending *p, volatile const int *cancel,
                              double deadline);
/* One message from the server (len bytes of text, not NUL-terminated). */
void tgi_mcpc_dispatch(tgi_mcp_client *c, const char *text, size_t len);

#endif
