/*
 * netgate.h — network by host, wired to the gate (src/exec/netgate.c):
 * the gate's one filtering proxy (netproxy.h), started on first need, and
 * "runs": the sandboxes one owner attaches to it -- a call (execute.c makes
 * one per call and ends it when the handler returns) or a bridged server
 * (one for the server's whole life) -- with what the proxy refused for
 * them.
 *
 * tgi_netrun_attach is the tgi_sb_attach_fn (exec/sandbox.h) a handler
 * puts into tgi_sb_spec.attach with the run as attach_arg (it reaches
 * handlers as tgi_exec_ctx.net_attach/net_attach_arg).  It compiles the
 * profile's hosts (tgi_netallow_new: an entry the proxy cannot read refuses
 * the run, naming it), starts the proxy if none runs yet, and attaches the
 * sandbox's pid.  The proxy reports every request on its own thread; the
 * run keeps the refused ones (status 4xx, or 503 busy), one record per
 * (why, method, host, port) with a count, at most TGI_NETRUN_MAX records
 * (more are counted in the last one's "more").  Denials are collected, not
 * recorded: the run's owner turns them into events and warnings when the
 * command has ended (tgi_netrun_end) or now and then (tgi_netrun_take).
 *
 * A denial record: {"why": "host_denied", "status": 403, "method":
 * "CONNECT", "host": "evil.example" | null, "port": 443 | null,
 * "count": N}.
 *
 * Owns: the proxy (one per gate), the runs' attachments and records.
 * Must not: record events or warnings (the owner does: netcall.c for calls
 * and bridged servers), decide which hosts a profile allows (configuration)
 * or start any process but the proxy's forwarders (netproxy.c).
 */
#ifndef TGI_NETGATE_H
#define TGI_NETGATE_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

#include "config.h"
#include "exec/netproxy.h"

#define TGI_NETRUN_MAX 32     /* denial records one run keeps between takes */

typedef struct tgi_netgate tgi_netgate;
typedef struct tgi_netrun  tgi_netrun;

/* A gate's network: nothing runs until the first attach.  o (copied; NULL:
 * the defaults) is what the proxy will get.  Never NULL. */
tgi_netgate *tgi_netgate_new(const tgi_netproxy_opts *o);
/* After every run has ended: stops the proxy.  NULL is a no-op. */
void tgi_netgate_free(tgi_netgate *ng);
/* The proxy's counters (all 0 while none runs). */
void tgi_netgate_stats(tgi_netgate *ng, tgi_netproxy_stats *st);

/* A new run at ng (borrowed: it must outlive the run).  Ended (and freed)
 * by tgi_netrun_end.  NULL ng: a run whose attach refuses (a plan's). */
tgi_netrun *tgi_netrun_new(tgi_netgate *ng);

/* tgi_sb_attach_fn: attach the sandbox whose first process is pid (its own
 * network namespace) to the proxy with the hosts of profile.  0, or -1
 * with a sentence in err (the sandbox then stops its command).  arg: a
 * tgi_netrun.  Thread-safe. */
int tgi_netrun_attach(void *arg, pid_t pid, const tgi_sb_profile *profile, char *err,
                      size_t errlen);

/* The denial records so far, taken out of the run (new reference), or NULL
 * when there are none.  Thread-safe. */
json_t *tgi_netrun_take(tgi_netrun *r);

/* After the sandboxes' commands are gone: detach them all (their
 * forwarders stopped, their connections closed), then take what is left
 * and free the run.  NULL is a no-op (NULL). */
json_t *tgi_netrun_end(tgi_netrun *r);

/* The i-th sandbox the run attached (NULL past the last), for tests: one
 * attached with pid 0 takes connections by tgi_netproxy_hand. */
tgi_netsb *tgi_netrun_sandbox(tgi_netrun *r, size_t i);

/* A sentence for the model about one denial record ("the sandbox's network
 * refused evil.example:443 (CONNECT, 2 times): the sandbox's network policy
 * does not allow this host"), into out (cap bytes). */
void tgi_netdenial_text(const json_t *d, char *out, size_t cap);

#endif
