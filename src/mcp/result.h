/*
 * result.h — what an MCP client gets for a tools/call, and the outputSchema
 * that describes it (docs/MCP.md, "tools/call").
 *
 * Claude Code and Codex give the model structuredContent whenever a result
 * has one (Codex on errors too); Gemini CLI gives it the text of content
 * (and, on an error, the whole result).  So structuredContent holds what
 * the model should read and nothing else:
 *
 *   the call persisted, the gate adds nothing, the output is an object
 *       -> the output itself (a bridged tool: its server's structuredContent,
 *          if any, with its content blocks passed through)
 *   the call persisted, the gate adds nothing, the output is not an object
 *       -> none, the output as text (a tool with an outputSchema: as below)
 *   anything else (invalid, denied, pending, failed, committed, replayed,
 *   dry_run, or notes the model must read: warnings, the loop hint)
 *       -> the status object {status, output?, error?, warnings?, hint?}
 *
 * content is the serialization of structuredContent (the spec's
 * backward-compatible text block), or the output's text when there is
 * none; for an error (isError: invalid, denied, pending, failed) it is the
 * sentence, "denied: ...", as the spec words tool execution errors, with
 * the command that approves a queued call.  The whole envelope, for
 * clients and operators, is _meta["toolgate/envelope"], unless the client
 * shows the model the whole result (tgi_mcp_client_shows_meta).
 *
 * Owns: the shape of a tools/call result and of outputSchema.  Must not:
 * change what the gate decided or recorded (the envelope is passed on
 * whole).
 */
#ifndef TGI_MCP_RESULT_H
#define TGI_MCP_RESULT_H

#include <jansson.h>

#include "registry.h"

/* The _meta key of the envelope. */
#define TGI_MCP_ENVELOPE_KEY "toolgate/envelope"

/* The CallToolResult for a call whose envelope is env (borrowed); e is the
 * tool's registry entry, or NULL (an unknown tool); with_envelope: put env
 * in _meta.  A new reference. */
json_t *tgi_mcp_result(const tgi_entry *e, const json_t *env, int with_envelope);

/* Does the client named client_name (initialize's clientInfo.name; NULL:
 * unknown) give the model a result's _meta?  Gemini CLI does, on an error:
 * the whole result, as JSON text.  Such a client gets no envelope in
 * _meta: the gate's record (rule, trace, principal) is for the ledger, and
 * a denial is terse to the model. */
int tgi_mcp_client_shows_meta(const char *client_name);

/* The outputSchema tools/list gives for e: NULL when the tool has no output
 * schema, else {type: object, anyOf: [the tool's schema, the status
 * object's]} with the tool's $schema, $id, $defs and definitions moved to
 * the top (so that its "#/$defs/..." references still resolve).  A bridged
 * tool's schema is its server's outputSchema (the registry holds the
 * schema of the server's whole result around it).  A new reference. */
json_t *tgi_mcp_output_schema(const tgi_entry *e);

#endif
