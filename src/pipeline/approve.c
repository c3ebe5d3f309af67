/*
 * approve.c — stage 5: what an `ask` becomes (DESIGN §3, approval policy).
 *
 *   deny        → denied (former name: never)
 *   ask         → a single-use approval already granted for exactly this
 *                 call (sha256 of tool + canonical args, same principal,
 *                 unexpired, its decision verifying under the ledger's
 *                 key) is found and the call goes on: execute spends it in
 *                 the transaction that claims the call, and only when the
 *                 tool will run (a replay or a call in flight leaves it
 *                 unspent); a row that does not verify is no one's
 *                 approval (the call is asked again, and says so); a denied one
 *                 denies; otherwise the caller's approver when it has one
 *                 (MCP elicitation: it allows, denies, or hands the ask
 *                 on to the queue, as approvals.via says), a terminal
 *                 prompt when the gate is interactive and stdin and
 *                 stderr are terminals, else
 *                 a durable queued approval → `pending` with approval_id.
 *   untrusted   → as ask (decide already turned more into ask).
 * (ask was on-request, as in Codex, whose on-request and never run a
 * sandboxed command unasked; config.c reads the former names.)
 *
 * A queued approval carries the call's plan, made as a dry run makes it
 * (tgi_call_plan: the diff a write would make, the argv a command would
 * run) and redacted as the ledger keeps everything, so that whoever
 * decides sees what the call would do; a plan that cannot be made is left
 * out, never a reason to fail the call.  A denial tells the call who
 * denied it and why (the decision's reason), waiting or retried.
 *
 * Owns: approval bookkeeping for this call.  Must not: loosen a decision:
 * only an `ask` reaches here, and it can only become allow or deny.
 * Stops with `denied` or `pending`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

static char *approval_plan(tgi_call *c);

/* Colour for the terminal the prompt goes to: unless $NO_COLOR is set (to
 * anything) or the terminal says it has none. */
static int prompt_color(void)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
	return !(no && *no) && !(term && !strcmp(term, "dumb"));
}

/* Ask at the terminal: who wants to run what, the plan (the diff of a
 * write or a patch, the argv, workdir and sandbox of a command; the
 * arguments when the tool has no plan), then "allow once? [y/N]". */
static int prompt_tty(tgi_call *c)
{
	char shown[300], rule[300], line[16];
	tgi_buf b;
	tgi_buf_init(&b, 1u << 22);
	tgi_sanitize(rule, sizeof rule, c->rule);
	tgi_buf_printf(&b, "toolgate: %s wants to run %s (%s)\n", c->principal->name, c->tool,
	               rule);
	char *plan_text = approval_plan(c);   /* redacted: a terminal is often a log too */
	json_t *plan = plan_text ? json_loads(plan_text, 0, NULL) : NULL;
	free(plan_text);
	if (json_is_object(plan)) {
		tgi_plan_text(&b, plan, prompt_color());
	} else {
		char *args = tgi_redacted_args(c);
		tgi_sanitize(shown, sizeof shown, args);
		tgi_buf_printf(&b, "  arguments: %s%s\n", shown,
		               strlen(args) >= sizeof shown ? "…" : "");
		free(args);
	}
	json_decref(plan);
	tgi_buf_puts(&b, "allow once? [y/N] ");
	fputs(b.p ? b.p : "", stderr);
	tgi_buf_free(&b);
	fflush(stderr);
	if (!fgets(line, sizeof line, stdin))
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

/* Who decided an approval, and why ("" when it does not say). */
typedef struct decided {
	char by[128];
	char why[TGI_APPROVAL_REASON_MAX + 1];
} decided;

static void decided_of(const tgi_approval_row *row, decided *d)
{
	tgi_sanitize(d->by, sizeof d->by, row->decided_by);
	tgi_sanitize(d->why, sizeof d->why, row->decided_reason ? row->decided_reason : "");
}

/* The owner said no to approval id (may be ""): the sentence the call
 * gets names the approval, who decided, and why. */
static tgi_verdict denied_by_owner(tgi_call *c, const char *id, const decided *d)
{
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
	if (!id[0])
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
		                "the owner denied this call; do not retry; ask the owner");
	return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
	                "the owner denied this call (approval %s%s%s)%s%s; do not retry; ask the "
	                "owner", id, d->by[0] ? ", by " : "", d->by, d->why[0] ? ": " : "", d->why);
}

/* What became of the approval the call waits on: 0 nothing yet (or the
 * store cannot say now: the deadline decides), 1 approved for this call
 * (spent by execute as the call runs), -1 denied, 2 gone (expired, or
 * used by another identical call first), 3 approved but its decision does
 * not verify under the ledger's key (no one's).  *d says who decided and
 * why. */
static int decision(tgi_call *c, const char *binding, decided *d)
{
	tg_gate *g = c->g;
	char err[512];
	tgi_approval_row row;
	int found = 0;

	int rc = tgi_store_approval_get(g->store, c->approval_id, &row, &found, err, sizeof err);
	if (rc < 0 || !found)
		return 0;
	decided_of(&row, d);
	int v = !strcmp(row.state, "pending") ? 0 : !strcmp(row.state, "denied") ? -1 : 2;
	if (!strcmp(row.state, "approved") && !strcmp(row.principal, c->principal->name) &&
	    !strcmp(row.binding, binding))   /* this one, not the newest */
		v = row.verified ? 1 : 3;
	tgi_approval_row_clear(&row);
	return v;
}

/* An approval in the ledger for this call did not verify: it is no one's,
 * and the call says so (and the ledger keeps that it was seen). */
static void unverified_seen(tgi_call *c, const char *id, int n)
{
	tgi_event_add(c, "tool.call.approval_unverified", "approve",
	              id ? json_pack("{s:s}", "approval_id", id) : json_pack("{s:i}", "rows", n));
}

static const char unverified_note[] =
	"; an approval for it in the ledger did not verify under this gate's key and was ignored";

/* The approval id found approved for this call: execute spends it as the
 * call runs (with the claim of its key, in one transaction). */
static void spend_later(tgi_call *c, const char *id, const char *binding)
{
	memcpy(c->approval_spend, id, sizeof c->approval_spend);
	memcpy(c->approval_binding, binding, sizeof c->approval_binding);
}

/*
 * approvals.wait_s: the call was queued (c->approval_id); wait for its
 * decision, woken by the store's watch (LISTEN on a shared store, the
 * ledger's files on SQLite) wherever it is made, until the deadline or the
 * caller cancels.  Approved: the approval is taken (used, so it counts
 * once) and the call runs; denied: denied; else pending as without a wait.
 */
static tgi_verdict await_decision(tgi_call *c, const char *binding)
{
	tg_gate *g = c->g;
	char err[512];
	decided d = {"", ""};
	tgi_watch *w = NULL;
	volatile const int *cancel = c->req->cancel;
	double deadline = tgi_now_ms() + g->cfg->approval_wait_s * 1000.0;
	int got = 0;

	/* opened before the first look: no decision between the two is missed */
	if (tgi_store_watch_open(g->store, TGI_WATCH_APPROVALS, &w, err, sizeof err) < 0)
		w = NULL;   /* then the looks are a second apart */
	for (;;) {
		if ((got = decision(c, binding, &d)) != 0 || (cancel && tgi_flag_get(cancel)))
			break;
		double left = deadline - tgi_now_ms();
		if (left <= 0)
			break;
		int slice = left < 1000 ? (int)left + 1 : 1000;  /* to see cancel */
		if (w)
			tgi_store_watch_wait(w, slice);
		else
			usleep((useconds_t)slice * 1000);
	}
	tgi_store_watch_close(w);

	if (got == 1) {
		spend_later(c, c->approval_id, binding);
		tgi_event_add(c, "tool.call.approved", "approve",
		              json_pack("{s:s, s:s, s:s, s:s*}", "by", "queue", "approval_id",
		                        c->approval_id, "decided_by", d.by, "reason",
		                        d.why[0] ? d.why : NULL));
		tgi_trace(c, "approve", 1,
		          json_pack("{s:s, s:s}", "approval", "granted while waiting", "approval_id",
		                    c->approval_id));
		return TGI_NEXT;
	}
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
	if (got == -1) {
		tgi_event_add(c, "tool.call.rejected", "approve",
		              json_pack("{s:s, s:s, s:s, s:s*}", "by", "queue", "approval_id",
		                        c->approval_id, "decided_by", d.by, "reason",
		                        d.why[0] ? d.why : NULL));
		tgi_trace(c, "approve", 0, json_pack("{s:s}", "approval", "denied while waiting"));
		return denied_by_owner(c, c->approval_id, &d);
	}
	tgi_trace(c, "approve", 0,
	          json_pack("{s:s, s:s}", "approval",
	                    got == 2 ? "gone" : got == 3 ? "unverified" : "pending", "approval_id",
	                    c->approval_id));
	if (got == 3) {
		unverified_seen(c, c->approval_id, 1);
		return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
		                "approval %s in the ledger did not verify under this gate's key, so it "
		                "is no one's approval and the call was not run; retry the same call to "
		                "ask again", c->approval_id);
	}
	if (got == 2)
		return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
		                "approval %s expired or was used by another identical call before this "
		                "one could use it; retry the same call to ask again", c->approval_id);
	return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
	                "this call is still waiting for approval %s (waited %d s); retry the same "
	                "call once the owner has approved it", c->approval_id,
	                g->cfg->approval_wait_s);
}

/* A call whose newest approval was denied, retried: told who and why. */
static tgi_verdict denied_retry(tgi_call *c, const char *id)
{
	tg_gate *g = c->g;
	char err[512];
	decided d = {"", ""};
	tgi_approval_row row;
	int found = 0;

	if (id[0]) {
		int rc = tgi_store_approval_get(g->store, id, &row, &found, err, sizeof err);
		if (rc == 0 && found) {
			decided_of(&row, &d);
			tgi_approval_row_clear(&row);
		}
		memcpy(c->approval_id, id, sizeof c->approval_id);
	}
	tgi_trace(c, "approve", 0, json_pack("{s:s}", "approval", "denied"));
	return denied_by_owner(c, id, &d);
}

/* The call's plan as the approval keeps it: redacted JSON text, or NULL
 * when the tool has none or it could not be made (caller frees). */
static char *approval_plan(tgi_call *c)
{
	json_t *plan = tgi_call_plan(c);
	if (!json_is_object(plan)) {
		json_decref(plan);
		return NULL;
	}
	json_t *kept = tgi_redact_json(c->g->redact, plan, c->entry ? &c->entry->sensitive : NULL);
	json_decref(plan);
	char *text = kept ? json_dumps(kept, JSON_COMPACT) : NULL;
	json_decref(kept);
	return text;
}

tgi_verdict tgi_approve(tgi_call *c)
{
	tg_gate *g = c->g;
	char err[512], binding[65], pending_id[37] = "";
	int found = 0, forged = 0;

	if (c->decision == TGI_ALLOW) {
		tgi_trace(c, "approve", 1, json_pack("{s:s}", "approval", "not needed"));
		return TGI_NEXT;
	}
	if (g->cfg->approval == TGI_APPROVAL_DENY) {
		tgi_trace(c, "approve", 0, json_pack("{s:s}", "approval", "deny"));
		tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
		                "%s needs approval and the approval policy is deny (nobody is asked); "
		                "do not retry; ask the owner", c->tool);
	}

	/* a dry run shows the plan; it neither spends nor queues an approval */
	if (c->dry_run) {
		tgi_trace(c, "approve", 1, json_pack("{s:s}", "approval", "would be asked"));
		return TGI_NEXT;
	}

	/* binding: sha256(tool "\n" canonical args) */
	const char *parts[] = {c->tool, c->args_canon};
	tgi_sha256_lines(parts, 2, binding);

	/* found, not spent: execute spends it with the claim, and only when
	 * the tool will run (not for a replay or a call still in flight) */
	int rc = tgi_store_approval_find(g->store, binding, c->principal->name, &found, pending_id,
	                                 &forged, err, sizeof err);
	if (rc < 0)
		return tgi_stop(c, TG_DENIED, TG_ERR_NEEDS_APPROVAL, NULL,
		                "the approval queue is unavailable (%s); the call was not run", err);
	if (forged)
		unverified_seen(c, NULL, forged);
	const char *note = forged ? unverified_note : "";
	if (found == 1) {
		spend_later(c, pending_id, binding);
		tgi_event_add(c, "tool.call.approved", "approve",
		              json_pack("{s:s, s:s}", "by", "queue", "approval_id", pending_id));
		tgi_trace(c, "approve", 1, json_pack("{s:s}", "approval", "granted"));
		return TGI_NEXT;
	}
	if (found == -1)
		return denied_retry(c, pending_id);
	if (found == 2) {
		memcpy(c->approval_id, pending_id, sizeof c->approval_id);
		if (g->cfg->approval_wait_s > 0)
			return await_decision(c, binding);
		tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
		tgi_trace(c, "approve", 0,
		          json_pack("{s:s, s:s}", "approval", "pending", "approval_id", c->approval_id));
		return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
		                "this call is still waiting for approval %s%s; retry the same call once "
		                "the owner has approved it", c->approval_id, note);
	}

	const tg_callbacks *cb = c->req->cb;
	char asked[256] = "";     /* what became of a question the caller put, before the queue */
	if (cb && cb->approve) {
		char why[256] = "";
		char *shown = tgi_redacted_args(c);
		int yes = cb->approve(cb->arg, c->tool, shown, c->rule, why, sizeof why);
		free(shown);
		if (yes < 0)
			tgi_sanitize(asked, sizeof asked, why);
		if (yes >= 0) {
			char reason[256];
			tgi_sanitize(reason, sizeof reason, why[0] || yes ? why : "declined");
			json_t *ev = json_pack("{s:s}", "by", "elicitation");
			if (reason[0])
				json_object_set_new(ev, "reason", json_string(reason));
			tgi_event_add(c, yes ? "tool.call.approved" : "tool.call.rejected", "approve", ev);
			tgi_trace(c, "approve", yes,
			          json_pack("{s:s}", "approval", yes ? "elicitation" : "elicitation denied"));
			if (yes)
				return TGI_NEXT;
			tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
			return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
			                "the user did not approve this call (%s); do not retry unless they "
			                "ask you to", reason);
		}
	}

	if (g->interactive && isatty(0) && isatty(2)) {
		int yes = prompt_tty(c);
		tgi_event_add(c, yes ? "tool.call.approved" : "tool.call.rejected", "approve",
		              json_pack("{s:s}", "by", "tty"));
		tgi_trace(c, "approve", yes, json_pack("{s:s}", "approval", yes ? "tty" : "tty denied"));
		if (yes)
			return TGI_NEXT;
		tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
		return tgi_stop(c, TG_DENIED, TG_ERR_NOT_PERMITTED, NULL,
		                "the owner declined this call at the terminal; do not retry");
	}

	tgi_approval_row row;
	memset(&row, 0, sizeof row);
	memcpy(row.op_id, c->op_id, sizeof row.op_id);
	tgi_snprintf(row.tool, sizeof row.tool, "%s", c->tool);
	tgi_snprintf(row.principal, sizeof row.principal, "%s", c->principal->name);
	memcpy(row.binding, binding, sizeof row.binding);
	tgi_snprintf(row.state, sizeof row.state, "pending");
	row.args = tgi_redacted_args(c);
	row.plan = approval_plan(c);
	row.reason = c->rule;
	row.created_ms = tgi_unix_ms();
	row.expires_ms = row.created_ms + (int64_t)g->cfg->approval_ttl_s * 1000;
	rc = tgi_store_approval_add(g->store, &row, err, sizeof err);
	free(row.args);
	free(row.plan);
	if (rc < 0)
		return tgi_stop(c, TG_DENIED, TG_ERR_NEEDS_APPROVAL, NULL,
		                "this call needs approval but the approval could not be queued (%s)", err);
	memcpy(c->approval_id, row.id, sizeof c->approval_id);
	tgi_event_add(c, "tool.call.approval_requested", "approve",
	              json_pack("{s:s, s:s}", "approval_id", c->approval_id, "rule", c->rule));
	if (g->cfg->approval_wait_s > 0)
		return await_decision(c, binding);
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "%s", c->rule);
	json_t *rec = json_pack("{s:s, s:s}", "approval", "queued", "approval_id", c->approval_id);
	if (asked[0])
		json_object_set_new(rec, "asked", json_string(asked));
	if (forged)
		json_object_set_new(rec, "unverified", json_integer(forged));
	tgi_trace(c, "approve", 0, rec);
	return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
	                "this call needs approval (%s); it is queued as %s%s; retry the same call once "
	                "the owner has approved it", c->rule, c->approval_id, note);
}
