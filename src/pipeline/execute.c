/*
 * execute.c — stage 6: run the tool, exactly once for side effects.
 *
 * Idempotency sits around the handler (DESIGN §1, §5).  The scope is
 * principal:tool:idempotency_key when the call has a key, else
 * session:call_id when the provider gave a call id (held and kept only as
 * its digest, tgi_scope_digest: a key may hold a secret), else none — except
 * in a shared store (several gates), where such a call claims its own op
 * id, so that no side effect runs while the ledger cannot record it;
 * read-only calls need none.  Before a side-effecting tool runs, its scope
 * is claimed `in_flight` durably (synchronous=FULL); a claim that cannot
 * be written refuses the call (`failed`, transient, applied no).  Then:
 *   done       → `replayed`, the original result, nothing runs
 *   in flight  → `pending` (transient, retry_after_s)
 *   owner gone → `pending` (unknown_outcome): never re-run silently
 * A dry run stops here with `dry_run` and the plan.
 *
 * A command tool's output is checked against its output_schema: one that
 * does not fit is the tool's error (failed, naming the mismatch).
 *
 * Owns: the claim, the handler call and its timing, the output's check
 * against the tool's output_schema.  Must not: decide
 * permission, shape output, or write the ops row (persist settles the
 * claim in the same transaction as the row).  Stops with `failed`,
 * `pending`, `replayed` or `dry_run`.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/netgate.h"
#include "gate/gate.h"
#include "schema/schema.h"
#include "util/util.h"

/* An in_flight claim's lease is the tool's timeout plus ledger.lease_grace_s.
 * Only owners on other hosts are judged by it; on this host the owner
 * process itself is checked. */

static char *make_scope(tgi_call *c)
{
	tgi_buf b;
	tgi_buf_init(&b, 1024);
	/* each part length-prefixed: no choice of names can make two scopes equal */
	if (c->idem_key[0])
		tgi_buf_printf(&b, "key:%zu:%s:%zu:%s:%s", strlen(c->principal->name),
		               c->principal->name, strlen(c->tool), c->tool, c->idem_key);
	else if (c->call_id[0])
		tgi_buf_printf(&b, "call:%zu:%s:%s", strlen(c->session), c->session, c->call_id);
	else if (tgi_store_shared(c->g->store))
		tgi_buf_printf(&b, "op:%s", c->op_id);
	else
		return NULL;
	/* the ledger keeps, and this call holds, only the scope's digest */
	char *text = tgi_buf_steal(&b);
	char *d = tgi_xmalloc(TGI_SCOPE_DIGEST_LEN + 1);
	tgi_scope_digest(text, d);
	free(text);
	return d;
}

/* What the call is, for its claim: sha256(tool "\n" principal "\n" args). */
static void binding_of(const tgi_call *c, char out[65])
{
	const char *parts[] = {c->tool, c->principal->name, c->args_canon};
	tgi_sha256_lines(parts, 3, out);
}

static tgi_verdict replay(tgi_call *c, const tgi_idem_info *info)
{
	json_t *env = info->envelope ? json_loads(info->envelope, 0, NULL) : NULL;
	json_t *out = env ? json_object_get(env, "output") : NULL;
	json_t *tr = env ? json_object_get(env, "truncated") : NULL;
	c->output = json_incref(out ? out : json_null());
	if (json_is_object(tr))
		c->truncated = json_incref(tr);
	json_decref(env);
	memcpy(c->replayed_from, info->op_id, sizeof c->replayed_from);
	c->status = TG_REPLAYED;
	tgi_event_add(c, "tool.call.replayed", "execute",
	              json_pack("{s:s}", "original_op_id", c->replayed_from));
	tgi_trace(c, "execute", 1, json_pack("{s:s}", "replayed_from", c->replayed_from));
	return TGI_STOP;
}

/* The approval found for the call could not be spent: another identical
 * call used it first (or it expired, or, forged, did not verify).  Nothing
 * ran and nothing was claimed: the call is pending, as if asked again. */
static tgi_verdict approval_gone(tgi_call *c, int forged)
{
	char id[37];
	memcpy(id, c->approval_spend, sizeof id);
	c->approval_spend[0] = '\0';
	memcpy(c->approval_id, id, sizeof c->approval_id);
	tgi_trace(c, "execute", 0, json_pack("{s:s, s:s}", "approval", forged ? "unverified" : "gone",
	                                     "approval_id", id));
	if (forged)
		return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
		                "approval %s in the ledger did not verify under this gate's key, so it "
		                "is no one's approval; nothing was run; retry the same call to ask again",
		                id);
	return tgi_stop(c, TG_PENDING, TG_ERR_NEEDS_APPROVAL, NULL,
	                "approval %s was used by another call (or expired) before this one could "
	                "run; nothing was run; retry the same call to ask again", id);
}

/* The signal a cancel names (toolgate.h TG_CANCEL_SIGNAL), or 0: the
 * client cancelled. */
static int cancel_signal(const tgi_call *c)
{
	int v = tgi_flag_value(c->req->cancel);
	return (v & ~0xff) == TG_CANCEL_SIGNAL(0) && (v & 0xff) ? v & 0xff : 0;
}

/* Whether the call was cancelled, and why, as the start of a sentence:
 * "toolgate received SIGTERM and stopped the call" (the process making or
 * serving the call got a signal) or "the client cancelled the call". */
static int cancel_cause(const tgi_call *c, char *out, size_t cap)
{
	if (!tgi_flag_get(c->req->cancel))
		return 0;
	int sig = cancel_signal(c);
	const char *name = sig ? sigabbrev_np(sig) : NULL;
	if (sig)
		tgi_snprintf(out, cap, "toolgate received SIG%s and stopped the call",
		             name ? name : "?");
	else
		tgi_snprintf(out, cap, "the client cancelled the call");
	return 1;
}

/* The data of a tool.call.cancelled event: {"signal": "SIGTERM"} or
 * {"by": "client"}. */
static json_t *cancel_data(const tgi_call *c)
{
	int sig = cancel_signal(c);
	char name[16];
	if (!sig)
		return json_pack("{s:s}", "by", "client");
	tgi_snprintf(name, sizeof name, "SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
	return json_pack("{s:s}", "signal", name);
}

/* Does the output fit the tool's output_schema (a command tool's: MCP
 * clients validate what it advertises)?  1; or 0 with out made the tool's
 * error (the output dropped): it ran, and what it did is as unknown as
 * its answer is wrong -- unless it is read-only. */
static int output_fits(const tgi_call *c, tgi_tool_out *out)
{
	tgi_schema_result res;
	if (tgi_schema_validate(c->entry->output_check, out->output ? out->output : json_null(), 0,
	                        &res))
		return 1;
	tgi_buf b;
	tgi_buf_init(&b, sizeof out->message - 1);
	tgi_buf_printf(&b, "%s returned output that does not match its output_schema:", c->tool);
	for (int i = 0; i < res.nerrors; i++)
		if (tgi_buf_printf(&b, " %s %s.", *res.errors[i].pointer ? res.errors[i].pointer
		                                                         : "the output",
		                   res.errors[i].message) < 0)
			break;
	tgi_buf_puts(&b, " Ask the owner to fix the tool");
	tgi_snprintf(out->message, sizeof out->message, "%s", b.p ? b.p : "");
	tgi_buf_free(&b);
	json_decref(out->output);
	out->output = NULL;
	out->kind = TG_ERR_TOOL_ERROR;
	out->applied = (c->contract & TGI_T_READ_ONLY) ? TGI_APPLIED_NO : TGI_APPLIED_UNKNOWN;
	return 0;
}

/* The events a handler may report (an event's type is a static string). */
static const char *const handler_events[] = {"tool.sandbox.removed"};

/* The warnings and events a handler reported: the call's now. */
static void take_notes(tgi_call *c, tgi_tool_out *out)
{
	size_t i;
	json_t *v;
	json_array_foreach(out->warnings, i, v) {
		if (!json_is_string(v))
			continue;
		if (!c->warnings)
			c->warnings = json_array();
		json_array_append(c->warnings, v);
	}
	json_array_foreach(out->events, i, v) {
		const char *type = json_string_value(json_object_get(v, "type"));
		json_t *data = json_object_get(v, "data");
		for (size_t k = 0; type && k < TGI_ARRAY_LEN(handler_events); k++)
			if (!strcmp(type, handler_events[k]))
				tgi_event_add(c, handler_events[k], "execute", data ? json_incref(data) : NULL);
	}
	json_decref(out->warnings);
	json_decref(out->events);
	out->warnings = out->events = NULL;
}

/* What the handler (or, in a dry run, the plan) gets for this call; net:
 * the call's network run (NULL for a plan: it attaches nothing). */
static void exec_ctx_of(tgi_call *c, tgi_exec_ctx *ctx, struct tgi_netrun *net)
{
	tg_gate *g = c->g;
	const tgi_tool *t = c->entry->row;
	*ctx = (tgi_exec_ctx){
		.ws_fd = g->ws_fd,
		.workspace = g->cfg->workspace,
		.state_dir = g->state_dir,
		.op_id = c->op_id,
		.tool = c->tool,
		.principal = c->principal->name,
		.session = c->session,
		.idempotency_key = c->idem_key[0] ? c->idem_key : NULL,
		.cfg = g->cfg,
		.data = t->data,
		.timeout_s = t->timeout_s ? t->timeout_s : g->cfg->timeout_s,
		.max_result_chars = t->max_result_chars ? t->max_result_chars
		                                        : g->cfg->max_result_chars,
		.may_read = tgi_may_read,
		.policy = c,
		.read_masks = tgi_read_masks,
		.protect = (const char *const *)g->protected,
		.nprotect = g->nprotected,
		.checked = (const char *const *)c->resolved,
		.nchecked = c->resolved ? c->npaths : 0,
		.cancel = c->req->cancel,
		.cb = c->req->cb,
		.net_attach = tgi_netrun_attach,
		.net_attach_arg = net,
	};
	ctx->deadline_ms = tgi_now_ms() + ctx->timeout_s * 1000.0;
}

/* The plan a dry run shows (also queued with an approval, approve.c): it
 * may read, and shows a file's current content only where read_file could
 * read it (tgi_may_read_file). */
json_t *tgi_call_plan(tgi_call *c)
{
	const tgi_tool *t = c->entry ? c->entry->row : NULL;
	if (!t || !t->plan)
		return NULL;
	tgi_exec_ctx ctx;
	exec_ctx_of(c, &ctx, NULL);
	ctx.may_read = tgi_may_read_file;
	return t->plan(&ctx, c->args);
}

/*
 * A dry run stops here: no claim, no handler.  The output keeps what was
 * decided {would_run, args (as they may be logged), decision, decided_by,
 * read_only} and adds the tool's plan (registry.h tgi_plan_fn; null for a
 * tool without one).  The plan may read, and shows a file's current
 * content only where read_file could read it (tgi_may_read_file): a file
 * the call may write but not read does not leak through a diff.  A plan
 * that says the handler would fail ("would_fail") is still a dry run: the
 * stages up to execute passed, and nothing ran.
 */
static tgi_verdict dry_run(tgi_call *c)
{
	json_t *plan = tgi_call_plan(c);
	json_t *fails = plan ? json_object_get(plan, "would_fail") : NULL;

	char *shown = tgi_redacted_args(c);
	json_t *args = shown ? json_loads(shown, 0, NULL) : NULL;
	free(shown);
	c->status = TG_DRY_RUN;
	json_t *o = c->output = json_object();
	json_object_set_new(o, "would_run", json_string(c->tool));
	json_object_set_new(o, "args", args ? args : json_null());
	json_object_set_new(o, "decision", json_string(c->decision == TGI_ASK ? "ask" : "allow"));
	json_object_set_new(o, "decided_by", tgi_json_text(c->rule, strlen(c->rule)));
	json_object_set_new(o, "read_only", json_boolean(c->contract & TGI_T_READ_ONLY));
	json_object_set_new(o, "plan", plan ? plan : json_null());
	tgi_event_add(c, "tool.call.dry_run", "execute",
	              fails ? json_pack("{s:b}", "would_fail", 1) : NULL);
	tgi_trace(c, "execute", 1, json_pack("{s:b}", "dry_run", 1));
	return TGI_STOP;
}

tgi_verdict tgi_execute(tgi_call *c)
{
	tg_gate *g = c->g;
	const tgi_tool *t = c->entry->row;
	char err[512];

	if (c->dry_run)
		return dry_run(c);

	if (!(c->contract & TGI_T_READ_ONLY) && (c->idem_scope = make_scope(c))) {
		tgi_idem_info info;
		memset(&info, 0, sizeof info);
		int lease = (t->timeout_s ? t->timeout_s : g->cfg->timeout_s) + g->cfg->lease_grace_s;
		char binding[65];
		binding_of(c, binding);
		tgi_approval_spend spend = {c->approval_spend, c->principal->name, c->approval_binding};
		int rc = tgi_store_idem_claim_spend(g->store, c->idem_scope, c->op_id, binding, lease,
		                                    c->approval_spend[0] ? &spend : NULL, &info, err,
		                                    sizeof err);
		if (rc == 0 && info.state != TGI_IDEM_UNAPPROVED)
			memcpy(c->idem_binding, binding, sizeof c->idem_binding);
		if (rc < 0) {
			free(c->idem_scope);
			c->idem_scope = NULL; /* not ours: persist must not settle it */
			if (tgi_store_transient(g->store))
				c->retry_after_s = 1;   /* the database is out of reach, for now */
			tgi_trace(c, "execute", 0, NULL);
			return tgi_stop(c, TG_FAILED, TG_ERR_TRANSIENT, NULL,
			                "the ledger could not record the call before running it (%s); "
			                "nothing was run", err);
		}
		tgi_verdict v = TGI_NEXT;
		switch (info.state) {
		case TGI_IDEM_CLAIMED:
		case TGI_IDEM_RETRYABLE:
			c->approval_spend[0] = '\0';   /* spent with the claim */
			break;
		case TGI_IDEM_UNAPPROVED:
			v = approval_gone(c, 0);
			break;
		case TGI_IDEM_DONE:
			v = replay(c, &info);
			break;
		case TGI_IDEM_CONFLICT:
			tgi_trace(c, "execute", 0, json_pack("{s:s}", "conflict", info.op_id));
			v = tgi_stop(c, TG_INVALID, TG_ERR_AMBIGUOUS, c->idem_key[0] ? "/idempotency_key" : NULL,
			             "%s was already used for a different call (op %s); nothing was run; "
			             "use a new key for a new action",
			             c->idem_key[0] ? "this idempotency_key" : "this call id", info.op_id);
			break;
		case TGI_IDEM_IN_FLIGHT:
			tgi_trace(c, "execute", 0, json_pack("{s:s}", "in_flight", info.op_id));
			v = tgi_stop(c, TG_PENDING, TG_ERR_TRANSIENT, NULL,
			             "the same call (op %s) is still running; retry shortly to get its "
			             "result", info.op_id);
			/* the owner's lease can be long; a short poll is the useful hint */
			c->retry_after_s = info.retry_after_s < 2 ? info.retry_after_s : 2;
			break;
		case TGI_IDEM_UNKNOWN:
			tgi_trace(c, "execute", 0,
			          json_pack("{s:s, s:b}", "unknown_outcome", info.op_id, "unverified",
			                    info.unverified));
			if (info.unverified)
				v = tgi_stop(c, TG_PENDING, TG_ERR_UNKNOWN_OUTCOME, NULL,
				             "the ledger's record of this call (op %s) did not verify under "
				             "this gate's key, so whether it ran is not known and its result "
				             "is not replayed; do not retry; ask the owner to settle it "
				             "(toolgate ops resolve %s --applied yes|no)", info.op_id,
				             info.op_id);
			else
			v = tgi_stop(c, TG_PENDING, TG_ERR_UNKNOWN_OUTCOME, NULL,
			             "an earlier attempt of this call (op %s) stopped without a result, so "
			             "it may or may not have taken effect; do not retry; ask the owner to "
			             "settle it (toolgate ops resolve %s --applied yes|no)", info.op_id,
			             info.op_id);
			c->applied = TGI_APPLIED_UNKNOWN;
			break;
		}
		free(info.envelope);
		if (v == TGI_STOP) {
			/* the claim belongs to another op: leave it alone */
			free(c->idem_scope);
			c->idem_scope = NULL;
			return v;
		}
		c->settle = TGI_SETTLE_RELEASE; /* until the handler says otherwise */
	}

	tgi_exec_ctx ctx;
	char cause[64];
	if (cancel_cause(c, cause, sizeof cause)) {    /* cancelled while it waited: nothing ran */
		tgi_trace(c, "execute", 0, json_pack("{s:b}", "cancelled", 1));
		tgi_event_add(c, "tool.call.cancelled", "execute", cancel_data(c));
		return tgi_stop(c, TG_FAILED, TG_ERR_TOOL_ERROR, NULL,
		                "%s before %s ran; nothing was run", cause, c->tool);
	}
	if (c->approval_spend[0]) {
		/* no claim to spend it with (read-only, or no scope): spent now,
		 * right before the handler */
		int used = 0;
		int rc = tgi_store_approval_use(g->store, c->approval_spend, c->principal->name,
		                                c->approval_binding, &used, err, sizeof err);
		if (rc < 0) {
			tgi_trace(c, "execute", 0, NULL);
			return tgi_stop(c, TG_FAILED, TG_ERR_TRANSIENT, NULL,
			                "the ledger could not spend the call's approval before running it "
			                "(%s); nothing was run", err);
		}
		if (used != 1)
			return approval_gone(c, used < 0);
		c->approval_spend[0] = '\0';
	}
	tgi_tool_out out;
	memset(&out, 0, sizeof out);
	tgi_event_add(c, "tool.call.started", "execute", NULL);
	struct tgi_netrun *net = tgi_net_call_begin(c);
	exec_ctx_of(c, &ctx, net);
	double t0 = tgi_now_ms();
	int rc = t->handler(&ctx, c->args, &out);
	double ms = tgi_now_ms() - t0;
	if (rc == 0 && c->entry->output_check && !output_fits(c, &out))
		rc = -1;
	take_notes(c, &out);
	tgi_net_call_end(c, net);        /* its sandboxes are gone: what the proxy refused */

	/* a tool stopped by a cancel failed part-way: whatever it says, a side
	 * effect may have begun (a tool that finished anyway keeps its result:
	 * it is known, and only the caller stopped listening) */
	if (rc < 0 && cancel_cause(c, cause, sizeof cause)) {
		int ro = (c->contract & TGI_T_READ_ONLY) != 0;
		out.kind = TG_ERR_TOOL_ERROR;
		out.applied = ro ? TGI_APPLIED_NO : TGI_APPLIED_UNKNOWN;
		tgi_snprintf(out.message, sizeof out.message, "%s while %s ran%s", cause, c->tool,
		             ro ? "" : "; it may have taken effect in part");
		tgi_event_add(c, "tool.call.cancelled", "execute", cancel_data(c));
	}

	if (rc < 0) {
		json_decref(out.output);
		json_decref(out.truncated);
		c->settle = out.applied == TGI_APPLIED_NO ? TGI_SETTLE_RELEASE : TGI_SETTLE_UNKNOWN;
		tgi_trace(c, "execute", 0, json_pack("{s:f}", "ms", ms));
		tgi_verdict v = tgi_stop(c, TG_FAILED, out.kind ? out.kind : TG_ERR_TOOL_ERROR, NULL,
		                         "%s", out.message[0] ? out.message : "the tool failed");
		c->applied = out.applied;
		if (out.kind == TG_ERR_TRANSIENT)
			c->retry_after_s = out.retry_after_s > 0 ? out.retry_after_s : 1;
		tgi_event_add(c, "tool.call.failed", "execute",
		              json_pack("{s:s}", "kind", tg_errkind_name(c->kind)));
		return v;
	}
	c->output = out.output ? out.output : json_null();
	c->truncated = out.truncated;  /* the tool cut and spilled its output itself */
	c->settle = TGI_SETTLE_DONE;
	c->status = TG_PERSISTED; /* persist turns this into committed if the ledger fails */
	tgi_trace(c, "execute", 1, json_pack("{s:f}", "ms", ms));
	return TGI_NEXT;
}
