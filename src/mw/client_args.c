/*
 * client_args.c — arguments a client adds on its own (mw.h, part.h): a step
 * between decode and validate, in every chain; it acts only on a request
 * that names such arguments (tg_request.client_args: toolgate serve names
 * Gemini CLI's wait_for_previous and the configuration's
 * mcp.strip_client_args).
 *
 * Some MCP clients add a property of their own to every tool's schema and
 * pass its value on in the call (Gemini CLI: wait_for_previous, which it
 * reads itself to order parallel calls).  A tool whose schema does not
 * declare the name never asked for it: the argument is removed before
 * validation (which would refuse it where additionalProperties is false,
 * and pass it to the tool where it is not), and the stage record
 * {stage: "client_args", removed: [...]} says so in the envelope and the
 * ledger.  A tool that declares the property keeps it.  The model is told
 * nothing: from where it stands the argument was part of the schema.
 *
 * Owns: the removal and its record.  Must not: validate (validate does, on
 * what is left) or remove anything the request did not name.  Never stops.
 */
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"

static tgi_verdict client_args_step(tgi_call *c, void *state)
{
	const char *const *names = c->req->client_args;
	if (!names)
		return TGI_NEXT;
	const json_t *props = json_object_get(c->entry->schema_json, "properties");
	json_t *removed = NULL;
	for (size_t i = 0; names[i]; i++) {
		if (!json_object_get(c->args, names[i]) || json_object_get(props, names[i]))
			continue;
		json_object_del(c->args, names[i]);
		if (!removed)
			removed = json_array();
		json_array_append_new(removed, json_string(names[i]));
	}
	if (removed)
		tgi_trace(c, "client_args", 1, json_pack("{s:o}", "removed", removed));
	return TGI_NEXT;
}

/* Always on: it acts only on requests that name client-added arguments (MCP). */
const tgi_part tgi_part_client_args = {
	.name = "client_args", .after = TGI_PHASE_DECODE, .judge = 1, .step = client_args_step,
};
