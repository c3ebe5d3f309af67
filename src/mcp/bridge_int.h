/*
 * bridge_int.h — the bridge's own types (bridge.c, bridge_config.c): a
 * server, its tools' rows, the bridge; and what the two files share.
 *
 * Owns: nothing.  Must not: be included outside src/mcp/bridge*.c.
 */
#ifndef TGI_MCP_BRIDGE_INT_H
#define TGI_MCP_BRIDGE_INT_H

#include "mcp/bridge.h"
#include "mcp/client.h"
#include "config.h"
#include "exec/sandbox.h"
#include "registry.h"
#include "util/util.h"

#include <limits.h>
#include <pthread.h>

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
	char       digest[65];      /* the pin: see pin_digest */
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

/* ---- bridge_config.c ---- */

/* Are the n bytes of s all [A-Za-z0-9_-] (and '.' when dot)? */
int tgi_bridge_name_ok(const char *s, size_t n, int dot);

/*
 * A problem in server `name`'s entry at sub ("command", "tools/include/0",
 * "" for the entry itself): "toolgate.yaml:LINE:COL: mcp_servers.fs.command:
 * <message>".  Returns -1.
 */
int tgi_bridge_bad(const tgi_config *cfg, const char *name, const char *sub, char *err,
                   size_t errlen, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Server name's entry v into s (its b set by the caller): every key
 * checked.  0, or -1 with tgi_bridge_bad's sentence. */
int tgi_bridge_parse_server(const tgi_config *cfg, const char *name, const json_t *v, srv *s,
                            char *err, size_t errlen);

#endif
