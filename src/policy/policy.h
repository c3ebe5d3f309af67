/*
 * policy.h — permission rules, the hard floor, modes (DESIGN §3).
 *
 * Order, first match wins: hard floor > deny > ask > allow > mode default.
 * Rules are compiled once at config load.  Rule grammar (Claude Code's,
 * extended; docs/RULES.md): `Tool` or `Tool(specifier)`; the tool part may
 * be a glob (`*`, `server__*`) or one of Claude Code's names (`Read`,
 * `Edit`, `Write`, `Bash`, `Glob`, `Grep`, `mcp__server__tool`, ...),
 * which stand for toolgate's tools that do that work (rules.c).
 *   - file tools (the call has paths): a gitignore-style path glob
 *     (`./.env`, `src/` + `**`, `*.pem`; `/x` from the configuration's
 *     directory, `~/x` from home, `//x` from the filesystem root);
 *     matched against every path the call touches, as written and as
 *     resolved inside the workspace: a match on either form counts.
 *   - other tools: comma-separated `key=glob` pairs, key a top-level
 *     property name or a JSON pointer; all pairs must match.  Strings match
 *     as text; numbers, booleans and null as their JSON text.
 *   - shell (and Bash): a command prefix (`shell(git status)` exact,
 *     `shell(npm run test:*)`, `shell(git push *)`, `shell(git push*)`
 *     open), matched against the call's simple commands (shell.h): deny
 *     and ask when any matches, allow when every one does.
 *
 * Owns: rule parsing/matching and the floor.  Must not: read config files,
 * touch the ledger, or know about approvals.
 */
#ifndef TGI_POLICY_H
#define TGI_POLICY_H

#include <stddef.h>
#include <jansson.h>

typedef struct tgi_rule tgi_rule;
typedef struct tgi_ruleset tgi_ruleset;

/* Parse one rule; NULL with a sentence in err ("deploy_service(env=): empty
 * glob after '='"). */
tgi_rule   *tgi_rule_parse(const char *text, char *err, size_t errlen);
void        tgi_rule_free(tgi_rule *r);
const char *tgi_rule_text(const tgi_rule *r);   /* as written, for the envelope */

/* What a rule is matched against; all borrowed. */
typedef struct tgi_match_input {
	const char        *tool;
	const json_t      *args;          /* validated args */
	const char *const *paths;         /* as written, normalised, workspace-relative */
	const char *const *resolved;      /* same index: resolved inside the workspace, or NULL entries */
	size_t             npaths;
	int                has_paths;     /* the tool declares a paths() contract */
	const struct tgi_cmdline *cmds;   /* the simple commands of a command tool, or NULL */
} tgi_match_input;

/*
 * Does the rule match the call?  Two readings: tgi_rule_matches is the
 * lenient one used for deny and ask (any touched path in either form; any
 * element of an array), tgi_rule_allows the strict one used for allow
 * (every path in both forms; every element).  tgi_ruleset_first picks by
 * the list it searches.
 */
int tgi_rule_matches(const tgi_rule *r, const tgi_match_input *in);
int tgi_rule_allows(const tgi_rule *r, const tgi_match_input *in);
/* The rule's specifier is a path glob / its tool part as written. */
int         tgi_rule_is_path(const tgi_rule *r);
const char *tgi_rule_tool(const tgi_rule *r);
/* The text globs of the tool names the rule is for (the tool part, or what
 * a Claude Code name stands for here; none when toolgate has no such
 * tool); borrowed. */
size_t      tgi_rule_ntargets(const tgi_rule *r);
const char *tgi_rule_target(const tgi_rule *r, size_t i);
/* The Claude Code tool name the rule was written in ("Read"), else NULL
 * (`mcp__` names give NULL: see tgi_rule_server). */
const char *tgi_rule_claude(const tgi_rule *r);
/* The i-th of Claude Code's tool names rules accept, NULL past the last. */
const char *tgi_rule_claude_name(size_t i);
/* For `mcp__server[__tool]`: the server, else NULL. */
const char *tgi_rule_server(const tgi_rule *r);
/* Its path pattern was made absolute (tgi_ruleset_anchor) and lies wholly
 * outside the workspace: no path a call touches can match it. */
int         tgi_rule_outside(const tgi_rule *r);
/* The rule has a specifier (it is not `Tool` or `Tool(*)`). */
int         tgi_rule_has_spec(const tgi_rule *r);
/* The keys of its key=glob pairs (a property name or a JSON pointer). */
size_t      tgi_rule_nkeys(const tgi_rule *r);
const char *tgi_rule_key(const tgi_rule *r, size_t i);

/* A ruleset: three lists.  Add compiles the texts; -1 with err naming the
 * rule on failure. */
tgi_ruleset *tgi_ruleset_new(void);
void         tgi_ruleset_free(tgi_ruleset *rs);
/* The three decisions, in order of strength (a call gets the strongest that
 * applies): the gate's decision for a call, a rule's kind, an eval case's
 * expectation (as bits).  XX(NAME, "name") */
#define TGI_DECISION_MAP(XX) XX(ALLOW, "allow") XX(ASK, "ask") XX(DENY, "deny")
typedef enum {
#define XX(d, name) TGI_##d,
	TGI_DECISION_MAP(XX)
#undef XX
	TGI_NDECISIONS
} tgi_decision;
/* "allow", "ask" or "deny"; and back (-1: none of them) */
const char *tgi_decision_name(tgi_decision d);
int         tgi_decision_parse(const char *s);
/* A rule's kind is the decision it gives. */
typedef tgi_decision tgi_rule_kind;
#define TGI_RULE_ALLOW TGI_ALLOW
#define TGI_RULE_ASK   TGI_ASK
#define TGI_RULE_DENY  TGI_DENY
int          tgi_ruleset_add(tgi_ruleset *rs, tgi_rule_kind kind, const char *text, char *err, size_t errlen);
size_t          tgi_ruleset_count(const tgi_ruleset *rs, tgi_rule_kind kind);
const tgi_rule *tgi_ruleset_at(const tgi_ruleset *rs, tgi_rule_kind kind, size_t i);

/*
 * Where the path patterns of the rules added from now on start (Claude
 * Code's reading): `./x` and `x` in the workspace, `/x` in settings_dir
 * (the configuration file's directory), `~/x` in home, `//x` at the
 * filesystem root.  All absolute (copied); workspace_given is another
 * spelling of the workspace, or NULL; a NULL settings_dir or home leaves
 * that form as it is.  Without it, `/x` is anchored at the workspace root
 * and `~/x`, `//x` match nothing.
 */
typedef struct tgi_rule_env {
	const char *workspace;
	const char *workspace_given;
	const char *settings_dir;
	const char *home;
} tgi_rule_env;
void tgi_ruleset_anchor(tgi_ruleset *rs, const tgi_rule_env *env);

/* The `mcp__server…` rules of server are for the tools named prefix + the
 * tool (a server whose `prefix:` is not "server__"). */
void tgi_ruleset_mcp_prefix(tgi_ruleset *rs, const char *server, const char *prefix);
/* Does a rule of this kind name tool (its tool part matches), whatever its
 * specifier, or only with none when bare is nonzero? */
int tgi_ruleset_names(const tgi_ruleset *rs, tgi_rule_kind kind, const char *tool, int bare);
/* First matching rule of this kind, or NULL. */
const tgi_rule *tgi_ruleset_first(const tgi_ruleset *rs, tgi_rule_kind kind, const tgi_match_input *in);

/* The first rule of kind whose tool part matches tool and that could
 * match dir or a path below it (tgi_path_glob_reaches; dir NULL: any path
 * at all); a rule without a specifier (`read_file`) reaches everything.
 * NULL when none: a recursive read of dir can meet none of the list's
 * rules for tool. */
const tgi_rule *tgi_ruleset_reaches(const tgi_ruleset *rs, tgi_rule_kind kind, const char *tool,
                                    const char *dir);
/* The path globs of the rules of kind whose tool part matches tool,
 * appended to globs (copies; their rule texts to texts when not NULL).
 * Returns how many such rules have no specifier (they name every path). */
struct tgi_strv;
size_t tgi_ruleset_path_globs(const tgi_ruleset *rs, tgi_rule_kind kind, const char *tool,
                              struct tgi_strv *globs, struct tgi_strv *texts);

/*
 * gitignore-style glob: `*` within a segment, `**` across segments, `?`,
 * `[...]`; a pattern without '/' (other than a trailing one) matches the
 * basename at any depth; a leading "./" or "/" anchors at the root; a
 * trailing "/" matches a directory and everything under it.  Paths are
 * workspace-relative and normalised.
 */
int tgi_path_glob(const char *pattern, const char *path);
/* Does the pattern match dir, or could it match a path below dir (a
 * reading of everything under dir reaches what it names)?  Conservative:
 * 1 unless the pattern's leading segments rule dir out. */
int tgi_path_glob_reaches(const char *pattern, const char *dir);
/* The literal directory the pattern's matches lie under, into base
 * (workspace-relative, "" for the root): 1 when the whole pattern is that
 * literal path, 2 when it is that path followed by a final `**` (it covers
 * the path and all below), 0 when a walk below base must find its matches
 * (a pattern without '/' names an entry at any depth: base ""); -1 for an
 * absolute pattern or one too long for cap. */
int tgi_path_glob_base(const char *pattern, char *base, size_t cap);
/* Plain glob for values and tool names: `*` matches anything (incl. '/'), `?` one char. */
int tgi_text_glob(const char *pattern, const char *text);
/* The same over len bytes of text, which may hold NUL bytes (JSON strings). */
int tgi_text_glob_n(const char *pattern, const char *text, size_t len);
/* Check a path glob when a rule is parsed: 0, or -1 with *at set to the
 * byte offset of the first problem and *what to a phrase naming it
 * ("unclosed '['").  tgi_path_glob itself never fails: it reads such a
 * pattern literally. */
int tgi_path_glob_check(const char *pattern, size_t *at, const char **what);

/*
 * The hard floor, compiled in; nothing lifts it.  For file tools: reads or
 * writes of ~/.ssh, /etc/shadow, /etc/gshadow, /etc/sudoers and block
 * devices, judged on the absolute resolved path (the workspace may be $HOME
 * or /).  Returns 1 and a reason if the call is floored.
 */
int tgi_floor_paths(const char *workspace, const char *const *resolved, size_t n,
                    char *reason, size_t cap);

#endif
