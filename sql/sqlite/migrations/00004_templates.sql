-- Pipeline templates: a named, parameterised config registered in immutable
-- numbered versions, and the runs triggered from them.
--
-- A run triggered from a template records which version produced it, so
-- the history lists a template's runs; the columns are set at submit and
-- never change, and a run outlives the template it came from (no foreign
-- key).
--
-- A template's head row holds its counters: every write of a template runs
-- in one IMMEDIATE transaction, so version numbers and launch sequence
-- numbers are assigned one at a time, and a number is never handed out
-- twice while the template exists. Every other row hangs off a version (or
-- the head) with ON DELETE CASCADE (foreign keys are on for every
-- connection), so deleting a version takes its channel pointers, launch-log
-- entries and deprecation with it in the same statement. Retention never
-- touches these tables: a template outlives its runs.

-- +goose Up
ALTER TABLE faucet_runs ADD COLUMN template_id TEXT;
ALTER TABLE faucet_runs ADD COLUMN template_version INTEGER
    CHECK ((template_id IS NULL) = (template_version IS NULL) AND (template_version IS NULL OR template_version > 0));
-- A template's runs, newest first.
CREATE INDEX faucet_runs_template_idx ON faucet_runs (template_id, submitted_at, run_id) WHERE template_id IS NOT NULL;

CREATE TABLE faucet_template_heads (
    template_id     TEXT    NOT NULL PRIMARY KEY,
    last_version    INTEGER NOT NULL CHECK (last_version > 0),
    last_launch_seq INTEGER NOT NULL DEFAULT 0 CHECK (last_launch_seq >= 0),
    created_at      INTEGER NOT NULL
) STRICT;

-- One row per version; body is the config document exactly as registered
-- (its ${env:…} references unresolved), params the declarations read from it.
CREATE TABLE faucet_templates (
    template_id TEXT    NOT NULL REFERENCES faucet_template_heads ON DELETE CASCADE,
    version     INTEGER NOT NULL CHECK (version > 0),
    name        TEXT,
    description TEXT,
    format      TEXT    NOT NULL CHECK (format IN ('yaml', 'json')),
    body        TEXT    NOT NULL,
    params      TEXT    NOT NULL CHECK (json_type(params) = 'object'),
    created_at  INTEGER NOT NULL,
    created_by  TEXT,
    PRIMARY KEY (template_id, version)
) STRICT;

-- Assignable channels, each pointing at one version. The derived channels
-- (stable, previous, newest) are computed and never stored.
CREATE TABLE faucet_template_tags (
    template_id TEXT    NOT NULL,
    tag         TEXT    NOT NULL CHECK (tag IN ('dev', 'test', 'staging', 'pre-prod', 'canary', 'prod')),
    version     INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT,
    PRIMARY KEY (template_id, tag),
    FOREIGN KEY (template_id, version) REFERENCES faucet_templates ON DELETE CASCADE
) STRICT;
CREATE INDEX faucet_template_tags_version_idx ON faucet_template_tags (template_id, version);

-- The launch log: the newest entry is the live (stable) version.
CREATE TABLE faucet_template_launches (
    template_id TEXT    NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    version     INTEGER NOT NULL,
    launched_at INTEGER NOT NULL,
    launched_by TEXT,
    PRIMARY KEY (template_id, seq),
    FOREIGN KEY (template_id, version) REFERENCES faucet_templates ON DELETE CASCADE
) STRICT;
CREATE INDEX faucet_template_launches_version_idx ON faucet_template_launches (template_id, version);

-- Deprecations: of the template as a whole (version NULL) or of one version.
CREATE TABLE faucet_template_deprecations (
    template_id   TEXT    NOT NULL REFERENCES faucet_template_heads ON DELETE CASCADE,
    version       INTEGER,
    deprecated_at INTEGER NOT NULL,
    deprecated_by TEXT,
    reason        TEXT,
    FOREIGN KEY (template_id, version) REFERENCES faucet_templates ON DELETE CASCADE
) STRICT;
-- One deprecation of each: a template-level one counts as version 0, which
-- no version has.
CREATE UNIQUE INDEX faucet_template_deprecations_idx ON faucet_template_deprecations (template_id, coalesce(version, 0));

-- +goose Down
DROP TABLE faucet_template_deprecations;
DROP TABLE faucet_template_launches;
DROP TABLE faucet_template_tags;
DROP TABLE faucet_templates;
DROP TABLE faucet_template_heads;
DROP INDEX faucet_runs_template_idx;
ALTER TABLE faucet_runs DROP COLUMN template_version;
ALTER TABLE faucet_runs DROP COLUMN template_id;
