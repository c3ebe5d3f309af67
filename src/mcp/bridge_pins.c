/*
 * bridge_pins.c — the pins of bridged tools (see bridge.c): the digest of
 * what a tool's definition says, its check against the ledger's pin at a
 * listing, the approval a changed definition waits for under pin: true,
 * and whether a row may be used now.
 *
 * Owns: a row's pin state (under b->mu).  Must not: put or drop rows (the
 * listing does, bridge_rows.c) or decide a call (the pipeline does).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/bridge_int.h"
#include "gate/gate.h"
#include "store/store.h"

/* ---- pins ---- */

/*
 * The pin of a tool: sha256 of the canonical JSON of what changes its
 * contract or what the model reads -- its description, input and output
 * schema, annotations and title (NULL: absent).  An object with named
 * members, so no change can pass for another.
 */
void tgi_br_pin_digest(const char *description, const char *title, const json_t *in,
                       const json_t *outs, const json_t *ann, char out[65])
{
	json_t *v = json_pack("{s:s, s:s?, s:O, s:O?, s:O?}", "description", description, "title",
	                      title, "inputSchema", in, "outputSchema", outs, "annotations", ann);
	char *text = tgi_json_canonical(v); /* the strings are jansson's own: only OOM fails */
	tgi_sha256_hex(text, strlen(text), out);
	free(text);
	json_decref(v);
}

/* Queue the approval of t's change. */
static int pin_queue(tgi_bridge *b, btool *t, char id[37], char *err, size_t errlen)
{
	tgi_approval_row row;
	memset(&row, 0, sizeof row);
	tgi_snprintf(row.tool, sizeof row.tool, "%s", t->name);
	tgi_snprintf(row.principal, sizeof row.principal, PIN_PRINCIPAL);
	tgi_snprintf(row.binding, sizeof row.binding, "%s", t->binding);
	size_t dlen = strlen(t->description);
	size_t cut = tgi_utf8_offset(t->description, dlen, PIN_ARGS_DESC_MAX);
	json_t *ann = NULL;
	if (t->annotations && strlen(t->annotations) <= PIN_ARGS_ANN_MAX)
		ann = json_loads(t->annotations, 0, NULL);
	else if (t->annotations)
		ann = json_sprintf("(%zu bytes; too long to show here)", strlen(t->annotations));
	json_t *args = json_pack("{s:s, s:s, s:o, s:s?, s:o?}", "pinned_sha256", t->pinned,
	                         "new_sha256", t->digest, "description",
	                         tgi_json_text(t->description, cut), "title", t->title,
	                         "annotations", ann);
	row.args = tgi_json_canonical(args);
	json_decref(args);
	char reason[TOOL_NAME_MAX + 160];
	tgi_snprintf(reason, sizeof reason,
	             "the definition of %s (description, schemas, annotations, title) changed since "
	             "it was first seen; approve to accept it", t->name);
	row.reason = reason;
	row.created_ms = tgi_unix_ms();
	row.expires_ms = row.created_ms + (int64_t)(b->g->cfg->approval_ttl_s > 0
	                                            ? b->g->cfg->approval_ttl_s : 3600) * 1000;
	int rc = tgi_store_approval_add(b->g->store, &row, err, errlen);
	free(row.args);
	if (rc == 0)
		tgi_snprintf(id, 37, "%s", row.id);
	return rc;
}

/*
 * A changed tool of a pinned server: take its approval if one was decided,
 * or see that one is pending (queueing it, once per digest).  Approved: the
 * pin moves and the tool is usable.  Returns 1 when an approval was queued
 * now.
 */
static int pin_review(tgi_bridge *b, btool *t)
{
	char err[512] = "", id[37] = "";
	int found = 0, queued = 0;

	/* three store calls, not one transaction, as for another gate on the
	 * ledger doing the same review: the take spends the approval alone,
	 * and moving the pin or queueing an approval again is harmless */
	int rc = tgi_store_approval_take(b->g->store, t->binding, PIN_PRINCIPAL, &found, id, err,
	                                 sizeof err);
	if (rc == 0 && found == 1)
		rc = tgi_store_pin_set(b->g->store, t->name, t->digest, err, sizeof err);
	if (rc == 0 && found == 0 && (rc = pin_queue(b, t, id, err, sizeof err)) == 0)
		queued = 1;

	lock(b);
	if (rc < 0) {
		t->pin = PIN_BROKEN;
		tgi_sanitize(t->pin_error, sizeof t->pin_error, err);
	} else if (found == 1) {
		t->pin = PIN_OK;
		tgi_snprintf(t->pinned, sizeof t->pinned, "%s", t->digest);
	} else if (found == -1) {
		t->pin = PIN_DENIED;
	} else {
		t->pin = PIN_WAITING;
		tgi_snprintf(t->approval_id, sizeof t->approval_id, "%s", id);
	}
	unlock(b);
	if (found == 1)
		say("the change to the definition of %s was approved; it is enabled", t->name);
	return queued;
}

/* Check a new row's digest against its pin (at a listing, before the row
 * is put).  A change is an event; under pin: true the row waits for an
 * approval, else the pin moves to it (so the change is reported once). */
void tgi_br_pin_check(tgi_bridge *b, btool *t)
{
	char err[512] = "";
	tgi_pin_state st = TGI_PIN_SAME;
	srv *s = t->s;

	int rc = tgi_store_pin_check(b->g->store, t->name, t->digest, &st, t->pinned, err, sizeof err);
	if (rc < 0) {
		say("cannot check the pin of %s: %s", t->name, err);
		t->pin = s->pin ? PIN_BROKEN : PIN_OK;
		tgi_sanitize(t->pin_error, sizeof t->pin_error, err);
		return;
	}
	if (st != TGI_PIN_CHANGED) {
		t->pin = PIN_OK;
		return;
	}
	const char *parts[3] = { "pin", t->name, t->digest };
	tgi_sha256_lines(parts, 3, t->binding);
	int report = 1;
	if (s->pin) {
		report = pin_review(b, t);
	} else {
		if (tgi_store_pin_set(b->g->store, t->name, t->digest, err, sizeof err) < 0)
			say("cannot move the pin of %s: %s", t->name, err);
		t->pin = PIN_OK;
	}
	if (t->pin == PIN_WAITING)
		say("the definition of %s (description, schemas, annotations, title) changed since it "
		    "was first seen; it is disabled until approval %s is approved (toolgate approvals "
		    "approve %s)", t->name, t->approval_id, t->approval_id);
	else if (t->pin == PIN_DENIED)
		say("the definition of %s changed and the change was denied; it stays disabled",
		    t->name);
	else if (!s->pin)
		say("the definition of %s (description, schemas, annotations, title) changed since it "
		    "was first seen (the server is not pinned: it stays enabled)", t->name);
	if (report)
		tgi_br_record_event(b, "mcp.tool.changed",
		                    json_pack("{s:s, s:s, s:s, s:s, s:b, s:s?}", "tool", t->name, "server",
		                              s->name, "pinned", t->pinned, "now", t->digest, "pin", s->pin,
		                              "approval_id", t->pin == PIN_WAITING ? t->approval_id : NULL));
}

/* registry row: is the tool usable now? */
int tgi_br_tool_available(const void *data, char *reason, size_t cap)
{
	btool *t = (btool *)data; /* its mutable state is under b->mu */
	srv *s = t->s;
	tgi_bridge *b = s->b;

	lock(b);
	if (b->stopping || s->state != SRV_UP || s->closed) {
		tgi_br_down_sentence(s, reason, cap);
		int restarting = !b->stopping; /* back soon: worth a retry */
		unlock(b);
		return restarting ? -1 : 0;
	}
	if (!t->current) {
		tgi_snprintf(reason, cap, "the MCP server \"%s\" no longer offers \"%s\"", s->name,
		             t->remote);
		unlock(b);
		return 0;
	}
	pin_state pin = t->pin;
	unlock(b);
	if (pin == PIN_WAITING)
		pin_review(b, t); /* decided since? */
	lock(b);
	tgi_br_pin_sentence(t, reason, cap);
	int ok = t->pin == PIN_OK;
	unlock(b);
	return ok;
}

