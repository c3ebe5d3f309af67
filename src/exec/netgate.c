/*
 * netgate.c — network by host, wired to the gate (netgate.h): the gate's
 * one proxy, started on the first attach, and the runs that attach
 * sandboxes to it and keep what it refused for them.
 *
 * Locks: ng->mu guards the proxy pointer (made once, freed with the gate);
 * r->mu guards a run's attachments and records.  The proxy calls on_event
 * on its own thread, which takes r->mu only: tgi_netrun_end detaches with
 * no lock held (a detach waits for the proxy thread, which may be waiting
 * for r->mu).
 *
 * Owns: the proxy, each run's attachments and records.
 * Must not: record events (the run's owner does), or keep a profile past
 * the attach (the allow-list is compiled from it and held by the proxy).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/netgate.h"
#include "util/util.h"

#define ATTACH_MAX 64   /* sandboxes one run holds at once */

struct tgi_netgate {
	pthread_mutex_t   mu;
	tgi_netproxy     *proxy;   /* NULL until the first attach */
	tgi_netproxy_opts opts;
};

typedef struct denial {
	tgi_netwhy why;
	int        status;
	char       method[16];
	char       host[TGI_NETHOST_MAX];
	unsigned   port;
	size_t     count;
} denial;

struct tgi_netrun {
	tgi_netgate    *ng;        /* borrowed; NULL: attach refuses */
	pthread_mutex_t mu;
	tgi_netsb      *sb[ATTACH_MAX];
	size_t          nsb;
	denial          d[TGI_NETRUN_MAX];
	size_t          nd;
	size_t          more;      /* refusals past TGI_NETRUN_MAX distinct records */
};

tgi_netgate *tgi_netgate_new(const tgi_netproxy_opts *o)
{
	tgi_netgate *ng = tgi_xcalloc(1, sizeof *ng);
	pthread_mutex_init(&ng->mu, NULL);
	if (o)
		ng->opts = *o;
	return ng;
}

void tgi_netgate_free(tgi_netgate *ng)
{
	if (!ng)
		return;
	tgi_netproxy_free(ng->proxy);
	pthread_mutex_destroy(&ng->mu);
	free(ng);
}

void tgi_netgate_stats(tgi_netgate *ng, tgi_netproxy_stats *st)
{
	tgi_netproxy *p = NULL;
	if (ng) {
		pthread_mutex_lock(&ng->mu);
		p = ng->proxy;
		pthread_mutex_unlock(&ng->mu);
	}
	tgi_netproxy_get_stats(p, st);
}

/* The proxy, started now if none runs.  NULL with err. */
static tgi_netproxy *proxy_of(tgi_netgate *ng, char *err, size_t errlen)
{
	pthread_mutex_lock(&ng->mu);
	if (!ng->proxy) {
		char why[256] = "";
		ng->proxy = tgi_netproxy_new(&ng->opts, why, sizeof why);
		if (!ng->proxy)
			tgi_snprintf(err, errlen, "the gate's filtering proxy could not start (%s)",
			             why[0] ? why : "no reason given");
	}
	tgi_netproxy *p = ng->proxy;
	pthread_mutex_unlock(&ng->mu);
	return p;
}

tgi_netrun *tgi_netrun_new(tgi_netgate *ng)
{
	tgi_netrun *r = tgi_xcalloc(1, sizeof *r);
	r->ng = ng;
	pthread_mutex_init(&r->mu, NULL);
	return r;
}

/* On the proxy thread, for every request of the run's sandboxes: keep the
 * refusals. */
static void on_event(void *arg, const tgi_netevent *ev)
{
	tgi_netrun *r = arg;
	if (ev->why == TGI_NETWHY_OK || (ev->status >= 500 && ev->why != TGI_NETWHY_BUSY))
		return;
	pthread_mutex_lock(&r->mu);
	size_t i = 0;
	for (; i < r->nd; i++) {
		const denial *d = &r->d[i];
		if (d->why == ev->why && d->port == ev->port && !strcmp(d->host, ev->host) &&
		    !strcmp(d->method, ev->method))
			break;
	}
	if (i < r->nd) {
		r->d[i].count++;
	} else if (r->nd < TGI_NETRUN_MAX) {
		denial *d = &r->d[r->nd++];
		d->why = ev->why;
		d->status = ev->status;
		d->port = ev->port;
		d->count = 1;
		tgi_snprintf(d->method, sizeof d->method, "%s", ev->method);
		tgi_snprintf(d->host, sizeof d->host, "%s", ev->host);
	} else {
		r->more++;
	}
	pthread_mutex_unlock(&r->mu);
}

int tgi_netrun_attach(void *arg, pid_t pid, const tgi_sb_profile *profile, char *err,
                      size_t errlen)
{
	tgi_netrun *r = arg;
	char why[512] = "";
	if (!r || !r->ng) {
		tgi_snprintf(err, errlen, "no network run was given for this sandbox");
		return -1;
	}
	if (!profile || profile->net != TGI_NET_HOSTS) {
		tgi_snprintf(err, errlen, "the sandbox's profile has no list of hosts");
		return -1;
	}
	tgi_netproxy *p = proxy_of(r->ng, err, errlen);
	if (!p)
		return -1;
	tgi_netallow *allow;
	if (tgi_netallow_new((const char *const *)profile->hosts.v, profile->hosts.n, &allow, why,
	                     sizeof why) < 0) {
		tgi_snprintf(err, errlen, "the sandbox's list of hosts: %s", why);
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	int full = r->nsb == ATTACH_MAX;
	pthread_mutex_unlock(&r->mu);
	tgi_netsb *sb = NULL;
	if (full)
		tgi_snprintf(err, errlen, "%d sandboxes of this call (or server) are on the "
		             "network already", ATTACH_MAX);
	else if (!(sb = tgi_netproxy_attach(p, pid, allow, on_event, r, why, sizeof why)))
		tgi_snprintf(err, errlen, "the gate's filtering proxy could not reach the sandbox (%s)",
		             why[0] ? why : "no reason given");
	tgi_netallow_unref(allow);       /* the proxy holds its own reference */
	if (!sb)
		return -1;
	pthread_mutex_lock(&r->mu);
	full = r->nsb == ATTACH_MAX;     /* another attach of the same run took the last slot */
	if (!full)
		r->sb[r->nsb++] = sb;
	pthread_mutex_unlock(&r->mu);
	if (full) {
		tgi_netproxy_detach(sb);
		tgi_snprintf(err, errlen, "%d sandboxes of this call (or server) are on the "
		             "network already", ATTACH_MAX);
		return -1;
	}
	return 0;
}

static json_t *records(tgi_netrun *r)
{
	pthread_mutex_lock(&r->mu);
	json_t *a = r->nd ? json_array() : NULL;
	for (size_t i = 0; i < r->nd; i++) {
		const denial *d = &r->d[i];
		json_t *o = json_pack("{s:s,s:i,s:s,s:o,s:o,s:I}", "why", tgi_netwhy_code(d->why),
		                      "status", d->status, "method", d->method,
		                      "host", d->host[0] ? json_string(d->host) : json_null(),
		                      "port", d->port ? json_integer(d->port) : json_null(),
		                      "count", (json_int_t)d->count);
		if (i + 1 == r->nd && r->more)
			json_object_set_new(o, "more", json_integer((json_int_t)r->more));
		json_array_append_new(a, o);
	}
	r->nd = r->more = 0;
	pthread_mutex_unlock(&r->mu);
	return a;
}

json_t *tgi_netrun_take(tgi_netrun *r)
{
	return r ? records(r) : NULL;
}

json_t *tgi_netrun_end(tgi_netrun *r)
{
	if (!r)
		return NULL;
	tgi_netsb *sb[ATTACH_MAX];
	pthread_mutex_lock(&r->mu);
	size_t n = r->nsb;
	memcpy(sb, r->sb, n * sizeof *sb);
	r->nsb = 0;
	pthread_mutex_unlock(&r->mu);
	for (size_t i = 0; i < n; i++)   /* no lock: the proxy thread may want r->mu */
		tgi_netproxy_detach(sb[i]);
	json_t *a = records(r);
	pthread_mutex_destroy(&r->mu);
	free(r);
	return a;
}

tgi_netsb *tgi_netrun_sandbox(tgi_netrun *r, size_t i)
{
	pthread_mutex_lock(&r->mu);
	tgi_netsb *sb = i < r->nsb ? r->sb[i] : NULL;
	pthread_mutex_unlock(&r->mu);
	return sb;
}

void tgi_netdenial_text(const json_t *d, char *out, size_t cap)
{
	static const tgi_netwhy all[] = {
#define X(e, status, code, text) TGI_NETWHY_##e,
		TGI_NETWHY_MAP(X)
#undef X
	};
	const char *why = json_string_value(json_object_get(d, "why"));
	const char *host = json_string_value(json_object_get(d, "host"));
	const char *method = json_string_value(json_object_get(d, "method"));
	json_int_t port = json_integer_value(json_object_get(d, "port"));
	json_int_t count = json_integer_value(json_object_get(d, "count"));
	const char *text = "refused";
	for (size_t i = 0; why && i < TGI_ARRAY_LEN(all); i++)
		if (!strcmp(why, tgi_netwhy_code(all[i])))
			text = tgi_netwhy_text(all[i]);
	char where[TGI_NETHOST_MAX + 32] = "", how[64] = "";
	int v6 = host && strchr(host, ':');
	if (host && port)
		tgi_snprintf(where, sizeof where, "%s%s%s:%lld", v6 ? "[" : "", host, v6 ? "]" : "",
		             (long long)port);
	else if (host)
		tgi_snprintf(where, sizeof where, "%s", host);
	if (method && *method && count > 1)
		tgi_snprintf(how, sizeof how, " (%s, %lld times)", method, (long long)count);
	else if (method && *method)
		tgi_snprintf(how, sizeof how, " (%s)", method);
	else if (count > 1)
		tgi_snprintf(how, sizeof how, " (%lld times)", (long long)count);
	tgi_snprintf(out, cap, "the sandbox's network refused %s%s%s: %s",
	             where[0] ? where : "a connection", how,
	             json_integer_value(json_object_get(d, "more")) ? " (and more)" : "", text);
}
