/*
 * bridge_int.h — what the files of the MCP bridge share (bridge.c,
 * bridge_config.c, bridge_pins.c, bridge_rows.c, bridge_server.c): a server's and a row's
 * state, the limits, the small helpers, and the functions one file calls
 * in another (tgi_br_*).  Private to those files; the bridge's contract is
 * bridge.h, its design the comment at the top of bridge.c.
 *
 * Owns: the bridge's types.  Must not: be included outside src/mcp/bridge*.c.
 */
#ifndef TGI_MCP_BRIDGE_INT_H
#define TGI_MCP_BRIDGE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "mcp/bridge.h"
#include "mcp/client.h"
#include "config.h"
#include "exec/sandbox.h"
#include "registry.h"
#include "util/util.h"

#define SERVERS_MAX         64
#define SERVER_NAME_MAX     64
#define PREFIX_MAX          64
#define TOOL_NAME_MAX       128        /* exposed names, as the pipeline holds them */
#define TOOLS_MAX           1024       /* tools of one server */
#define PAGES_MAX           256        /* tools/list pages of one listing */
#define RELIST_MIN_MS       1000.0     /* re-list a server at most this often */
#define DESCRIPTION_MAX     (64 << 10) /* bytes of one tool's description */
#define URL_MAX             2048
#define TIMEOUT_MAX_S       86400
#define STARTUP_MAX_S       3600
#define BACKOFF_MIN_S       1.0
#define BACKOFF_MAX_S       60.0
#define STABLE_S            60.0       /* up this long: the next crash backs off from 1 s */
#define PIN_PRINCIPAL       "(bridge)"
#define PIN_ARGS_DESC_MAX   4000       /* characters of a new description shown in its approval */
#define PIN_ARGS_ANN_MAX    4000       /* bytes of new annotations shown in full there */
#define LOG_LINE_MAX        500
#define LOG_MAX             ((size_t)1 << 20) /* bytes of a server's log before it is moved */
#define LAST_LINE_MAX       300        /* bytes kept of the last line of its stderr */

typedef enum { SRV_STARTING, SRV_UP, SRV_DOWN } srv_state;

typedef enum {
	PIN_OK,       /* pinned, or its change accepted */
	PIN_WAITING,  /* changed under pin: true: an approval is pending */
	PIN_DENIED,   /* that approval was denied */
	PIN_BROKEN,   /* the ledger could not be asked */
} pin_state;

typedef struct srv srv;

/* A bridged tool: its registry row and what the row's strings point at. */
typedef struct btool {
	tgi_tool   row;             /* row.data is this */
	srv       *s;
	char      *name;            /* exposed: prefix + remote */
	char      *remote;
	char      *title;           /* or NULL */
	char      *description;
	char      *annotations;     /* canonical, or NULL; shown in a pin's approval */
	char      *def;             /* canonical downstream definition: same text, same row */
	json_t    *aliases;         /* owned or NULL: the configured ones its schema allows;
	                               the registry entry borrows it */
	char       digest[65];      /* the pin: see tgi_br_pin_digest */
	/* under b->mu */
	int        current;         /* the registry finds this row under its name */
	pin_state  pin;
	char       pinned[65];      /* the digest the ledger holds */
	char       binding[65];     /* of this change's approval */
	char       approval_id[37];
	char       pin_error[200];
} btool;

/* A tool the server listed that is not offered, and why (for explain). */
typedef struct skipped {
	char *remote;
	char  why[200];
} skipped;

struct tgi_bridge_call {
	srv                 *s;
	const tgi_exec_ctx  *ctx;
	int                  refs;     /* relays using ctx->cb now */
	tgi_bridge_call     *next;     /* older calls */
};

struct srv {
	tgi_bridge *b;
	char        name[SERVER_NAME_MAX + 1];
	char        prefix[PREFIX_MAX + 1];
	char       *category;
	char      **argv;               /* stdio: NULL-terminated */
	json_t     *env;                /* owned or NULL: its configured variables */
	char       *cwd;
	tgi_sb_profile sb;              /* stdio: its sandbox (tgi_bridge_profile) */
	char       *url;                /* or Streamable HTTP */
	char       *token_env;
	tgi_strv    include, exclude;
	json_t     *aliases;            /* owned or NULL: {remote tool: {old_field: new_field}} */
	int         trusted, pin;
	int         timeout_s, startup_timeout_s;

	pthread_t   thread;

	/* its log (stdio): under log_mu */
	pthread_mutex_t log_mu;
	int         log_dir, log_fd;    /* -1 until opened */
	size_t      log_size;
	int         log_said;           /* a log that cannot be written was said, once */
	char        err_line[LAST_LINE_MAX]; /* the line of stderr being written */
	size_t      err_len;
	char        last_line[LAST_LINE_MAX];

	/* under b->mu */
	int         thread_started;     /* spawn made its thread */
	double      spawned_ms;         /* monotonic: when */
	srv_state   state;
	int         ever_up;
	int         ready;              /* listed once, or failed to start once */
	int         closed;             /* the connection ended (handler) */
	int         relist;             /* tools/list_changed (handler) */
	char        why[512];           /* why it is down */
	double      next_start_ms;      /* monotonic */
	double      backoff_s;
	tgi_mcp_client *client;         /* while UP */
	int         users;              /* calls holding client */
	tgi_bridge_call *calls;         /* running calls, newest first */
	btool     **cur;                /* rows offered now */
	size_t      ncur;
	skipped    *skips;
	size_t      nskips;
	int         listed;             /* skips and cur hold a listing */

	/* the server's thread alone */
	tgi_sb_exec sbx;                /* the sandbox of the running child */
	struct tgi_netrun *net;         /* its network by host (netgate.h), or NULL */
	int         have_sbx;
	char        tmpdir[PATH_MAX];   /* its private tmp dir ("" when none) */
	btool     **all;                /* every row made, kept until free */
	size_t      nall, capall;
	tgi_strv    unlisted;           /* aliased tools said to be unlisted (once each) */
};

struct tgi_bridge {
	tg_gate         *g;
	srv             *v;
	size_t           n;
	pthread_mutex_t  mu;
	pthread_cond_t   cv;            /* any state change; CLOCK_MONOTONIC */
	pthread_mutex_t  list_mu;       /* one listing at a time claims names */
	volatile int     stopping;
	int              stopped;
	void           (*on_change)(void *);
	void            *on_change_arg;
	int              notifying;     /* calls of on_change in progress */
};

/* ---- small helpers ---- */

__attribute__((format(printf, 1, 2)))
static inline void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "toolgate: %s\n", line);
}

static inline void lock(tgi_bridge *b)
{
	pthread_mutex_lock(&b->mu);
}

static inline void unlock(tgi_bridge *b)
{
	pthread_mutex_unlock(&b->mu);
}

/* Wait on b->cv until the monotonic time until_ms (<= 0: no limit). */
static inline void wait_until(tgi_bridge *b, double until_ms)
{
	if (until_ms <= 0) {
		pthread_cond_wait(&b->cv, &b->mu);
		return;
	}
	tgi_cond_wait_until(&b->cv, &b->mu, until_ms);
}

static inline int name_char(char ch, int dot)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-' || (dot && ch == '.');
}

/* Are the n bytes of s all [A-Za-z0-9_-] (and '.' when dot)? */
static inline int name_ok(const char *s, size_t n, int dot)
{
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i], dot))
			return 0;
	return 1;
}

static inline int env_name_ok(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9') || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!name_char(*s, 0) || *s == '-')
			return 0;
	return 1;
}

static inline char *join_path(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = tgi_xmalloc(n);
	snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

static inline void push_ptr(void ***v, size_t *n, size_t *cap, void *p)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*v = tgi_xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*n)++] = p;
}

/* ---- across the files ---- */

/* bridge.c */
/* The environment of a stdio server's child (NULL-terminated; free each
 * string and the array). */
char **tgi_br_child_env(const json_t *env, const char *home, const char *tmpdir,
                        const char *const *sb_env);
/* An event of no call into the ledger and the sinks (data stolen). */
void   tgi_br_record_event(tgi_bridge *b, const char *type, json_t *data);
/* The bridged tools changed: tell the listener (b->mu not held). */
void   tgi_br_changed(tgi_bridge *b);
/* Seconds until a down server is started again (under b->mu). */
double tgi_br_restart_in_s(const srv *s);
/* Why a server or a tool cannot be used (under b->mu). */
void   tgi_br_down_sentence(const srv *s, char *out, size_t cap);
void   tgi_br_pin_sentence(const btool *t, char *out, size_t cap);

/* bridge_config.c */
/*
 * A problem in server `name`'s entry at sub ("command", "tools/include/0",
 * "" for the entry itself): "toolgate.yaml:LINE:COL: mcp_servers.fs.command:
 * <message>".  Returns -1.
 */
int    tgi_bridge_bad(const tgi_config *cfg, const char *name, const char *sub, char *err,
                      size_t errlen, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Server name's entry v into s (its b set by the caller): every key
 * checked.  0, or -1 with tgi_bridge_bad's sentence. */
int    tgi_bridge_parse_server(const tgi_config *cfg, const char *name, const json_t *v, srv *s,
                               char *err, size_t errlen);
/* bridge_pins.c */
void   tgi_br_pin_digest(const char *description, const char *title, const json_t *in,
                         const json_t *outs, const json_t *ann, char out[65]);
void   tgi_br_pin_check(tgi_bridge *b, btool *t);
int    tgi_br_tool_available(const void *data, char *reason, size_t cap);

/* bridge_rows.c */
void   tgi_br_btool_free(btool *t);
void   tgi_br_skips_free(skipped *v, size_t n);
int    tgi_br_apply_listing(srv *s, const json_t *tools);

/* bridge_server.c */
void   tgi_br_free_list(char **v);
void  *tgi_br_srv_main(void *arg);   /* a server's thread */

#endif
