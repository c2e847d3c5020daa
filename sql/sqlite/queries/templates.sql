-- name: TemplateNextVersion :one
-- Takes the template's next version number, creating its head row for a
-- new template. Writes run in IMMEDIATE transactions, so concurrent
-- registers of one template are numbered one after another.
INSERT INTO faucet_template_heads (template_id, last_version, created_at)
VALUES (sqlc.arg(template_id), 1, sqlc.arg(now))
ON CONFLICT (template_id) DO UPDATE SET last_version = faucet_template_heads.last_version + 1
RETURNING last_version;

-- name: TemplateLock :one
-- The transaction holds SQLite's write lock already: this only checks
-- that the template exists.
SELECT template_id FROM faucet_template_heads WHERE template_id = sqlc.arg(template_id);

-- name: TemplateDelete :exec
-- Deletes a template: its versions, and what hangs off them, cascade.
DELETE FROM faucet_template_heads WHERE template_id = sqlc.arg(template_id);

-- name: TemplateVersionInsert :exec
INSERT INTO faucet_templates (template_id, version, name, description, format, body, params, created_at, created_by)
VALUES (sqlc.arg(template_id), sqlc.arg(version), sqlc.narg(name), sqlc.narg(description), sqlc.arg(format),
        sqlc.arg(body), sqlc.arg(params), sqlc.arg(created_at), sqlc.narg(created_by));

-- name: TemplateVersionGet :one
SELECT * FROM faucet_templates WHERE template_id = sqlc.arg(template_id) AND version = sqlc.arg(version);

-- name: TemplateVersionDelete :exec
-- Deletes a version: its channels, launch-log entries and deprecation
-- cascade.
DELETE FROM faucet_templates WHERE template_id = sqlc.arg(template_id) AND version = sqlc.arg(version);

-- name: TemplateListNewest :many
-- The newest version of each template, without its body (the primary key
-- answers the max).
SELECT t.template_id, t.version, t.name, t.description, t.format, t.params, t.created_at, t.created_by
FROM faucet_templates t
WHERE t.version = (SELECT max(m.version) FROM faucet_templates m WHERE m.template_id = t.template_id);

-- name: TemplateTagSet :exec
INSERT INTO faucet_template_tags (template_id, tag, version, updated_at, updated_by)
VALUES (sqlc.arg(template_id), sqlc.arg(tag), sqlc.arg(version), sqlc.arg(updated_at), sqlc.narg(updated_by))
ON CONFLICT (template_id, tag) DO UPDATE SET
    version = excluded.version, updated_at = excluded.updated_at, updated_by = excluded.updated_by;

-- name: TemplateLaunchAppend :one
-- Appends a launch numbered by the template's launch counter
-- (TemplateLaunchCount then moves the counter, in the same transaction).
INSERT INTO faucet_template_launches (template_id, seq, version, launched_at, launched_by)
SELECT h.template_id, h.last_launch_seq + 1, sqlc.arg(version), sqlc.arg(launched_at), sqlc.narg(launched_by)
FROM faucet_template_heads h WHERE h.template_id = sqlc.arg(template_id)
RETURNING seq;

-- name: TemplateLaunchCount :exec
UPDATE faucet_template_heads SET last_launch_seq = sqlc.arg(seq) WHERE template_id = sqlc.arg(template_id);

-- name: TemplateLaunchTrim :exec
DELETE FROM faucet_template_launches WHERE template_id = sqlc.arg(template_id) AND seq < sqlc.arg(seq);

-- name: TemplateDeprecationClear :exec
DELETE FROM faucet_template_deprecations
WHERE template_id = sqlc.arg(template_id) AND coalesce(version, 0) = coalesce(CAST(sqlc.narg(version) AS INTEGER), 0);

-- name: TemplateDeprecationInsert :exec
INSERT INTO faucet_template_deprecations (template_id, version, deprecated_at, deprecated_by, reason)
VALUES (sqlc.arg(template_id), sqlc.narg(version), sqlc.arg(deprecated_at), sqlc.narg(deprecated_by), sqlc.narg(reason));


-- name: TemplateFacts :one
-- Every fact of one template in one statement, so in one snapshot: each
-- kind as a JSON array, in no particular order.
SELECT
    CAST((SELECT json_group_array(t.version) FROM faucet_templates t
     WHERE t.template_id = sqlc.arg(template_id)) AS TEXT) AS versions,
    CAST((SELECT json_group_array(json_object('seq', l.seq, 'version', l.version, 'at', l.launched_at, 'by', l.launched_by))
     FROM faucet_template_launches l WHERE l.template_id = sqlc.arg(template_id)) AS TEXT) AS launches,
    CAST((SELECT json_group_array(json_object('tag', g.tag, 'version', g.version)) FROM faucet_template_tags g
     WHERE g.template_id = sqlc.arg(template_id)) AS TEXT) AS tags,
    CAST((SELECT json_group_array(json_object('version', d.version, 'at', d.deprecated_at, 'by', d.deprecated_by, 'reason', d.reason))
     FROM faucet_template_deprecations d WHERE d.template_id = sqlc.arg(template_id)) AS TEXT) AS deprecations;

-- name: TemplateFactsAll :many
-- TemplateFacts of every template, in one statement that reads each table
-- once.
WITH v AS (
    SELECT t.template_id, json_group_array(t.version) AS versions FROM faucet_templates t GROUP BY t.template_id
), l AS (
    SELECT l.template_id, json_group_array(json_object('seq', l.seq, 'version', l.version, 'at', l.launched_at, 'by', l.launched_by)) AS launches
    FROM faucet_template_launches l GROUP BY l.template_id
), g AS (
    SELECT g.template_id, json_group_array(json_object('tag', g.tag, 'version', g.version)) AS tags
    FROM faucet_template_tags g GROUP BY g.template_id
), d AS (
    SELECT d.template_id, json_group_array(json_object('version', d.version, 'at', d.deprecated_at, 'by', d.deprecated_by, 'reason', d.reason)) AS deprecations
    FROM faucet_template_deprecations d GROUP BY d.template_id
)
SELECT h.template_id,
    CAST(coalesce(v.versions, '[]') AS TEXT) AS versions,
    CAST(coalesce(l.launches, '[]') AS TEXT) AS launches,
    CAST(coalesce(g.tags, '[]') AS TEXT) AS tags,
    CAST(coalesce(d.deprecations, '[]') AS TEXT) AS deprecations
FROM faucet_template_heads h
LEFT JOIN v ON v.template_id = h.template_id
LEFT JOIN l ON l.template_id = h.template_id
LEFT JOIN g ON g.template_id = h.template_id
LEFT JOIN d ON d.template_id = h.template_id;
