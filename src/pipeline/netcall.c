/*
 * netcall.c — network by host for the gate's own processes: a call's run
 * at the gate's proxy (exec/netgate.h), begun before the handler and ended
 * after it, and a bridged server's, whose refusals its owner records; what
 * the proxy refused becomes `tool.network.denied` events and, for a call,
 * warnings the model reads.
 *
 * Event data: {"host", "port", "why", "op_id", "method", "status", "count"}
 * (host and port null when the request named none; "more" when a run kept
 * no more distinct records).
 *
 * Owns: turning denial records into events and warnings.
 * Must not: attach or detach sandboxes itself (netgate.c), or decide
 * anything about the call.
 */
#include <stdio.h>
#include <string.h>

#include "exec/netgate.h"
#include "gate/gate.h"
#include "mw/mw.h"

#define WARN_MAX 3   /* denial sentences one call's warnings carry; the rest counted */

tgi_netrun *tgi_net_call_begin(tgi_call *c)
{
	return tgi_netrun_new(c->g->net);
}

static json_t *event_data(const json_t *d, const char *op_id)
{
	json_t *o = json_deep_copy(d);
	json_object_set_new(o, "op_id", op_id ? json_string(op_id) : json_null());
	return o;
}

void tgi_net_call_end(tgi_call *c, tgi_netrun *r)
{
	json_t *denials = tgi_netrun_end(r);
	size_t i, more = 0;
	json_t *d;
	json_array_foreach(denials, i, d) {
		tgi_event_add(c, "tool.network.denied", "execute", event_data(d, c->op_id));
		if (i >= WARN_MAX) {
			more++;
			continue;
		}
		char msg[600];
		tgi_netdenial_text(d, msg, sizeof msg);
		if (!c->warnings)
			c->warnings = json_array();
		json_array_append_new(c->warnings, json_string(msg));
	}
	if (more) {
		char msg[160];
		tgi_snprintf(msg, sizeof msg, "the sandbox's network refused %zu more destinations "
		             "(the call's tool.network.denied events name them)", more);
		json_array_append_new(c->warnings, json_string(msg));
	}
	json_decref(denials);
}

tgi_netrun *tgi_gate_net_run(tg_gate *g)
{
	return tgi_netrun_new(g->net);
}

void tgi_gate_net_record(tg_gate *g, const char *op_id, json_t *denials)
{
	size_t i;
	json_t *d;
	json_array_foreach(denials, i, d) {
		char err[256];
		json_t *data = event_data(d, op_id);
		if (tgi_gate_event(g, op_id, "tool.network.denied", "execute", data, err,
		                   sizeof err) < 0)
			fprintf(stderr, "toolgate: a network denial could not be recorded: %s\n", err);
		json_decref(data);
	}
	json_decref(denials);
}
