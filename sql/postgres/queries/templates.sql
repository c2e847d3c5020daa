-- name: TemplateNextVersion :one
-- Takes the template's next version number, creating its head row for a
-- new template. The row stays locked until the transaction ends, so
-- concurrent registers of one template are numbered one after another.
INSERT INTO faucet_template_heads (template_id, last_version, created_at)
VALUES (@template_id, 1, @now)
ON CONFLICT (template_id) DO UPDATE SET last_version = faucet_template_heads.last_version + 1
RETURNING last_version;

-- name: TemplateLock :one
SELECT template_id FROM faucet_template_heads WHERE template_id = @template_id FOR UPDATE;

-- name: TemplateDelete :exec
-- Deletes a template: its versions, and what hangs off them, cascade.
DELETE FROM faucet_template_heads WHERE template_id = @template_id;

-- name: TemplateVersionInsert :exec
INSERT INTO faucet_templates (template_id, version, name, description, format, body, params, created_at, created_by)
VALUES (@template_id, @version, sqlc.narg(name), sqlc.narg(description), @format, @body, @params, @created_at, sqlc.narg(created_by));

-- name: TemplateVersionGet :one
SELECT * FROM faucet_templates WHERE template_id = @template_id AND version = @version;

-- name: TemplateVersionDelete :exec
-- Deletes a version: its channels, launch-log entries and deprecation
-- cascade.
DELETE FROM faucet_templates WHERE template_id = @template_id AND version = @version;

-- name: TemplateListNewest :many
-- The newest version of each template, without its body.
SELECT DISTINCT ON (template_id) template_id, version, name, description, format, params, created_at, created_by
FROM faucet_templates
ORDER BY template_id, version DESC;

-- name: TemplateTagSet :exec
INSERT INTO faucet_template_tags (template_id, tag, version, updated_at, updated_by)
VALUES (@template_id, @tag, @version, @updated_at, sqlc.narg(updated_by))
ON CONFLICT (template_id, tag) DO UPDATE SET
    version = excluded.version, updated_at = excluded.updated_at, updated_by = excluded.updated_by;

-- name: TemplateLaunchAppend :one
-- Appends a launch numbered by the template's launch counter, in one
-- statement.
WITH head AS (
    UPDATE faucet_template_heads h SET last_launch_seq = h.last_launch_seq + 1
    WHERE h.template_id = @template_id
    RETURNING h.template_id, h.last_launch_seq
)
INSERT INTO faucet_template_launches (template_id, seq, version, launched_at, launched_by)
SELECT head.template_id, head.last_launch_seq, @version, @launched_at, sqlc.narg(launched_by) FROM head
RETURNING seq;

-- name: TemplateLaunchTrim :exec
DELETE FROM faucet_template_launches WHERE template_id = @template_id AND seq < @seq;

-- name: TemplateDeprecationClear :exec
DELETE FROM faucet_template_deprecations
WHERE template_id = @template_id AND coalesce(version, 0) = coalesce(sqlc.narg(version)::integer, 0);

-- name: TemplateDeprecationInsert :exec
INSERT INTO faucet_template_deprecations (template_id, version, deprecated_at, deprecated_by, reason)
VALUES (@template_id, sqlc.narg(version), @deprecated_at, sqlc.narg(deprecated_by), sqlc.narg(reason));


-- name: TemplateFacts :one
-- Every fact of one template in one statement, so in one snapshot: each
-- kind as a JSON array, in no particular order.
SELECT
    coalesce((SELECT jsonb_agg(t.version) FROM faucet_templates t
              WHERE t.template_id = @template_id), '[]')::jsonb AS versions,
    coalesce((SELECT jsonb_agg(jsonb_build_object('seq', l.seq, 'version', l.version, 'at', l.launched_at, 'by', l.launched_by))
              FROM faucet_template_launches l WHERE l.template_id = @template_id), '[]')::jsonb AS launches,
    coalesce((SELECT jsonb_agg(jsonb_build_object('tag', g.tag, 'version', g.version)) FROM faucet_template_tags g
              WHERE g.template_id = @template_id), '[]')::jsonb AS tags,
    coalesce((SELECT jsonb_agg(jsonb_build_object('version', d.version, 'at', d.deprecated_at, 'by', d.deprecated_by, 'reason', d.reason))
              FROM faucet_template_deprecations d WHERE d.template_id = @template_id), '[]')::jsonb AS deprecations;

-- name: TemplateFactsAll :many
-- TemplateFacts of every template, in one statement that reads each table
-- once, whatever its size or statistics.
WITH v AS (
    SELECT t.template_id, jsonb_agg(t.version) AS versions FROM faucet_templates t GROUP BY t.template_id
), l AS (
    SELECT l.template_id, jsonb_agg(jsonb_build_object('seq', l.seq, 'version', l.version, 'at', l.launched_at, 'by', l.launched_by)) AS launches
    FROM faucet_template_launches l GROUP BY l.template_id
), g AS (
    SELECT g.template_id, jsonb_agg(jsonb_build_object('tag', g.tag, 'version', g.version)) AS tags
    FROM faucet_template_tags g GROUP BY g.template_id
), d AS (
    SELECT d.template_id, jsonb_agg(jsonb_build_object('version', d.version, 'at', d.deprecated_at, 'by', d.deprecated_by, 'reason', d.reason)) AS deprecations
    FROM faucet_template_deprecations d GROUP BY d.template_id
)
SELECT h.template_id,
    coalesce(v.versions, '[]')::jsonb AS versions,
    coalesce(l.launches, '[]')::jsonb AS launches,
    coalesce(g.tags, '[]')::jsonb AS tags,
    coalesce(d.deprecations, '[]')::jsonb AS deprecations
FROM faucet_template_heads h
LEFT JOIN v ON v.template_id = h.template_id
LEFT JOIN l ON l.template_id = h.template_id
LEFT JOIN g ON g.template_id = h.template_id
LEFT JOIN d ON d.template_id = h.template_id;
