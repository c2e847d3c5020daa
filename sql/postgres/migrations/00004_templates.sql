-- Pipeline templates: a named, parameterised config registered in immutable
-- numbered versions, and the runs triggered from them.
--
-- A run triggered from a template records which version produced it, so
-- the history lists a template's runs; the columns are set at submit and
-- never change, and a run outlives the template it came from (no foreign
-- key).
--
-- A template's head row is its lock and its counters: every write of a
-- template locks it first, so version numbers and launch sequence numbers
-- are assigned one at a time, and a number is never handed out twice while
-- the template exists. Every other row hangs off a version (or the head)
-- with ON DELETE CASCADE, so deleting a version takes its channel pointers,
-- launch-log entries and deprecation with it in the same statement.
-- Retention never touches these tables: a template outlives its runs.

-- +goose Up
ALTER TABLE faucet_runs
    ADD COLUMN template_id text,
    ADD COLUMN template_version integer,
    ADD CONSTRAINT faucet_runs_template_check
        CHECK ((template_id IS NULL) = (template_version IS NULL) AND (template_version IS NULL OR template_version > 0));
-- A template's runs, newest first.
CREATE INDEX faucet_runs_template_idx ON faucet_runs (template_id, submitted_at, run_id) WHERE template_id IS NOT NULL;

CREATE TABLE faucet_template_heads (
    template_id     text        NOT NULL PRIMARY KEY,
    last_version    integer     NOT NULL CHECK (last_version > 0),
    last_launch_seq integer     NOT NULL DEFAULT 0 CHECK (last_launch_seq >= 0),
    created_at      timestamptz NOT NULL
);

-- One row per version; body is the config document exactly as registered
-- (its ${env:…} references unresolved), params the declarations read from it.
CREATE TABLE faucet_templates (
    template_id text        NOT NULL REFERENCES faucet_template_heads ON DELETE CASCADE,
    version     integer     NOT NULL CHECK (version > 0),
    name        text,
    description text,
    format      text        NOT NULL CHECK (format IN ('yaml', 'json')),
    body        text        NOT NULL,
    params      jsonb       NOT NULL CHECK (jsonb_typeof(params) = 'object'),
    created_at  timestamptz NOT NULL,
    created_by  text,
    PRIMARY KEY (template_id, version)
);

-- Assignable channels, each pointing at one version. The derived channels
-- (stable, previous, newest) are computed and never stored.
CREATE TABLE faucet_template_tags (
    template_id text        NOT NULL,
    tag         text        NOT NULL CHECK (tag IN ('dev', 'test', 'staging', 'pre-prod', 'canary', 'prod')),
    version     integer     NOT NULL,
    updated_at  timestamptz NOT NULL,
    updated_by  text,
    PRIMARY KEY (template_id, tag),
    FOREIGN KEY (template_id, version) REFERENCES faucet_templates ON DELETE CASCADE
);
CREATE INDEX faucet_template_tags_version_idx ON faucet_template_tags (template_id, version);

-- The launch log: the newest entry is the live (stable) version.
CREATE TABLE faucet_template_launches (
    template_id text        NOT NULL,
    seq         integer     NOT NULL CHECK (seq > 0),
    version     integer     NOT NULL,
    launched_at timestamptz NOT NULL,
    launched_by text,
    PRIMARY KEY (template_id, seq),
    FOREIGN KEY (template_id, version) REFERENCES faucet_templates ON DELETE CASCADE
);
CREATE INDEX faucet_template_launches_version_idx ON faucet_template_launches (template_id, version);

-- Deprecations: of the template as a whole (version NULL) or of one version.
CREATE TABLE faucet_template_deprecations (
    template_id   text        NOT NULL REFERENCES faucet_template_heads ON DELETE CASCADE,
    version       integer,
    deprecated_at timestamptz NOT NULL,
    deprecated_by text,
    reason        text,
    FOREIGN KEY (template_id, version) REFERENCES faucet_templates ON DELETE CASCADE
);
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
ALTER TABLE faucet_runs
    DROP CONSTRAINT faucet_runs_template_check,
    DROP COLUMN template_version,
    DROP COLUMN template_id;
