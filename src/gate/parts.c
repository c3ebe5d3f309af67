/*
 * parts.c — the one list of the chain's optional parts (mw/part.h).  The
 * gate walks this list and names no part itself; adding a part is a row in
 * its own file and a line here.  Where two parts follow the same stage,
 * their steps run in this order.
 *
 * Owns: the list.  Must not: hold anything but the list.
 */
#include "mw/part.h"

extern const tgi_part tgi_part_shell_patch, tgi_part_client_args, tgi_part_aliases,
	tgi_part_loop, tgi_part_hooks, tgi_part_ratelimit, tgi_part_bridge;

const tgi_part *const tgi_parts[] = {
	&tgi_part_shell_patch,   /* after decode: Codex's apply_patch through the shell */
	&tgi_part_client_args,   /* after decode: arguments a client adds on its own */
	&tgi_part_aliases,       /* after decode: deprecated field names */
	&tgi_part_loop,          /* after identify, and before persist */
	&tgi_part_ratelimit,     /* after decide */
	&tgi_part_hooks,         /* after identify (after loop's step), and after persist */
	&tgi_part_bridge,        /* no step: downstream MCP servers' tools (a late part) */
	NULL,
};
