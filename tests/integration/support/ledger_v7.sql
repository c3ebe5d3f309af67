-- ledger_v7.sql: a version 8 SQLite ledger turned back into the shape
-- version 7 wrote (for the tests that fake a ledger from before): every
-- event a row of events again, ops keyed by op_id with ops_tool, idem a
-- rowid table with idem_op.  Run with sqlite3 on a ledger no one has open.
BEGIN;
DROP VIEW events;
ALTER TABLE event_rows RENAME TO events;
INSERT INTO events(seq, ts_ms, op_id, type, stage, data)
  SELECT o.seq - json_array_length(o.events) + 1 + j.key, j.value ->> 0, o.op_id,
    j.value ->> 1, j.value ->> 2, nullif(j.value -> 3, 'null')
  FROM ops o, json_each(o.events) j WHERE o.events IS NOT NULL;
CREATE TABLE ops_v7(
  op_id TEXT PRIMARY KEY, tool TEXT, status TEXT NOT NULL, started_ms INTEGER NOT NULL,
  duration_ms REAL, call_id TEXT, session TEXT, principal TEXT, error_kind TEXT,
  idem_scope TEXT, args_sha256 TEXT, args_redacted TEXT, envelope TEXT NOT NULL, loop TEXT);
INSERT INTO ops_v7 SELECT op_id, tool, status, started_ms, duration_ms, call_id, session,
  principal, error_kind, idem_scope, args_sha256, args_redacted, envelope, loop
  FROM ops ORDER BY op_id;
DROP TABLE ops;
ALTER TABLE ops_v7 RENAME TO ops;
CREATE INDEX ops_tool ON ops(tool, op_id, status, started_ms, duration_ms);
CREATE INDEX ops_status ON ops(status, op_id) WHERE status <> 'persisted';
CREATE INDEX ops_session ON ops(session, op_id, loop) WHERE session IS NOT NULL;
CREATE TABLE idem_v7(
  scope TEXT PRIMARY KEY, op_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('in_flight', 'done', 'unknown')),
  owner_host TEXT, owner_pid INTEGER, owner_start INTEGER, lease_until_ms INTEGER,
  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, binding TEXT, mac TEXT);
INSERT INTO idem_v7 SELECT * FROM idem;
DROP TABLE idem;
ALTER TABLE idem_v7 RENAME TO idem;
CREATE INDEX idem_op ON idem(op_id);
PRAGMA user_version = 7;
COMMIT;
