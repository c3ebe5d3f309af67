/*
 * decode.c — stage 1: bytes in, a tg_call out.
 *
 * Owns: the op id (UUIDv7), the tool lookup (registry + active profile),
 * parsing the argument text (size cap, duplicate keys refused, must be an
 * object), and the idempotency key's source.  Must not: look at what the
 * arguments mean (validate), who is calling (identify) or what is allowed
 * (decide).  Stops with `invalid`.
 */
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

/* Copy an optional caller-supplied label (call id, session, key): at most
 * cap-1 bytes of printable UTF-8.  A label is refused rather than rewritten,
 * so two different labels never become one. */
static int copy_label(char *out, size_t cap, const char *in)
{
	if (!in)
		return 0;
	size_t n = strlen(in);
	if (n >= cap)
		return -1;
	tgi_sanitize(out, cap, in);
	return strcmp(out, in) ? -1 : 0;
}

/* The client's own id of the tool use (tg_request.client_call_id): data
 * the client chose, kept for people and hooks, never a key.  ASCII control
 * characters are dropped, other unsafe ones (tgi_sanitize) become spaces,
 * and it is cut at cap-1 bytes on a UTF-8 boundary; "" when nothing is
 * left. */
static void copy_client_id(char *out, size_t cap, const char *in)
{
	char kept[1024];
	size_t j = 0;
	out[0] = '\0';
	for (size_t i = 0; in && in[i] && j + 1 < sizeof kept && i < 4 * sizeof kept; i++)
		if ((unsigned char)in[i] >= 0x20 && in[i] != 0x7f)
			kept[j++] = in[i];
	kept[j] = '\0';
	tgi_sanitize(out, cap, kept);
	size_t n = strlen(out);
	while (n && out[n - 1] == ' ')
		out[--n] = '\0';
	size_t start = 0;
	while (out[start] == ' ')
		start++;
	memmove(out, out + start, n - start + 1);
}

/* A name that names no tool is the model's text: the message (to the
 * model) has said it as it was; what is kept of the call (the ledger's tool
 * column, events, the loop window) gets it with its secrets masked. */
static tgi_verdict unknown_tool(tgi_call *c)
{
	char *kept = tgi_redact_text(c->g->redact, c->tool, strlen(c->tool));
	tgi_sanitize(c->tool, sizeof c->tool, kept);
	free(kept);
	return TGI_STOP;
}

/* The tools of the gate's profile, "read_file, write_file, ...", into out:
 * as many as fit, then how many more there are. */
static const char *profile_tools(tg_gate *g, char *out, size_t cap)
{
	size_t n = tgi_registry_count(g->reg), k = 0;
	const char **v = tgi_xcalloc(n + 1, sizeof *v);
	for (size_t i = 0; i < n; i++) {
		const tgi_entry *e = tgi_registry_at(g->reg, i);
		if (e && tgi_registry_in_profile(g->cfg, g->profile, e) == 1)
			v[k++] = e->row->name;
	}
	tgi_names_join(out, cap, v, k);
	free(v);
	return out;
}

static int tool_name_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++) {
		char ch = s[n];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || ch == '-' || ch == '.'))
			return 0;
	}
	return n > 0 && n <= 128;
}

tgi_verdict tgi_decode(tgi_call *c)
{
	const tg_request *req = c->req;
	tg_gate *g = c->g;

	tgi_uuidv7(c->op_id);
	tgi_event_add(c, "tool.call.received", "decode", NULL);

	copy_client_id(c->client_call_id, sizeof c->client_call_id, req->client_call_id);
	if (copy_label(c->call_id, sizeof c->call_id, req->call_id) < 0 ||
	    copy_label(c->session, sizeof c->session, req->session) < 0)
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
		                "call id and session must be at most 256 bytes of printable UTF-8");

	if (!req->tool || !*req->tool)
		return tgi_stop(c, TG_INVALID, TG_ERR_UNKNOWN_TOOL, NULL, "no tool name was given");
	if (!tool_name_ok(req->tool)) {
		tgi_sanitize(c->tool, 64, req->tool);
		tgi_stop(c, TG_INVALID, TG_ERR_UNKNOWN_TOOL, NULL, "\"%s\" is not a valid tool name",
		         c->tool);
		return unknown_tool(c);
	}
	tgi_snprintf(c->tool, sizeof c->tool, "%s", req->tool);

	const tgi_entry *e = tgi_registry_need(g->reg, c->tool);
	char why[1024];
	if (!e && tgi_registry_explain(g->reg, c->tool, why, sizeof why)) {
		tgi_stop(c, TG_INVALID, TG_ERR_UNKNOWN_TOOL, NULL, "%s", why);
		return unknown_tool(c);
	}
	if (!e || tgi_registry_in_profile(g->cfg, g->profile, e) != 1) {
		char names[640];
		tgi_stop(c, TG_INVALID, TG_ERR_UNKNOWN_TOOL, NULL,
		         "unknown tool \"%s\"%s; use one of the tools you were given (%s)", c->tool,
		         e ? " in this profile" : "", profile_tools(g, names, sizeof names));
		return unknown_tool(c);
	}
	c->entry = e;

	if (req->invalid)       /* the caller could not decode the call: data, never run */
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL, "%s", req->invalid);

	const char *text = req->args ? req->args : "{}";
	size_t len = req->args ? (req->args_len ? req->args_len : strlen(req->args)) : 2;
	if (len > g->cfg->max_args_bytes)
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
		                "the arguments are %zu bytes, over the limit of %zu (limits.max_args_bytes); "
		                "send less data",
		                len, g->cfg->max_args_bytes);
	json_error_t je;
	c->args = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!c->args)
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
		                "the arguments are not valid JSON (at byte %d: %s); send one JSON object",
		                je.position, je.text);
	if (!json_is_object(c->args))
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, NULL,
		                "the arguments must be a JSON object");

	/* The key may come from the transport (--key) or from the args; two
	 * different keys for one call are ambiguous. */
	json_t *k = json_object_get(c->args, "idempotency_key");
	if (k && !json_is_string(k))
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, "/idempotency_key",
		                "idempotency_key must be a string");
	const char *akey = k ? json_string_value(k) : NULL;
	if (k && strlen(akey) != json_string_length(k))
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, "/idempotency_key",
		                "idempotency_key must not contain NUL bytes");
	if (req->idempotency_key && akey && strcmp(req->idempotency_key, akey))
		return tgi_stop(c, TG_INVALID, TG_ERR_AMBIGUOUS, "/idempotency_key",
		                "two different idempotency keys were given; send one");
	const char *key = akey ? akey : req->idempotency_key;
	if (key && (!*key || copy_label(c->idem_key, sizeof c->idem_key, key) < 0))
		return tgi_stop(c, TG_INVALID, TG_ERR_INVALID_INPUT, "/idempotency_key",
		                "idempotency_key must be 1 to 256 printable characters");
	/* A key given by the transport is part of the args for tools whose
	 * schema asks for one, so validation sees it. */
	if (key && !akey && (e->row->flags & TGI_T_REQUIRES_KEY))
		json_object_set_new(c->args, "idempotency_key", json_string(key));

	/* mode dryRun makes every call a dry run */
	c->dry_run = req->dry_run || g->cfg->mode == TGI_MODE_DRY_RUN;
	tgi_trace(c, "decode", 1, NULL);
	return TGI_NEXT;
}
