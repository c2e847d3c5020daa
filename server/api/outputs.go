package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/plugins/sdk"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/outputs"
)

// LocalOutput is a file a run of this server wrote, as the ledger keeps it.
type LocalOutput struct {
	ID             string     `json:"id" doc:"The entry's id (a time-ordered UUIDv7)."`
	Path           string     `json:"path" doc:"The file's absolute path on the server."`
	SizeBytes      int64      `json:"size_bytes" doc:"Its size after the last write."`
	RunID          string     `json:"run_id" doc:"The run that wrote it last."`
	FirstRunID     string     `json:"first_run_id" doc:"The run that wrote it first."`
	FirstWrittenAt time.Time  `json:"first_written_at"`
	LastWrittenAt  time.Time  `json:"last_written_at"`
	ExistedBefore  bool       `json:"existed_before" doc:"A file was at path before faucet first wrote it (a run replaced or appended to it)."`
	DeletedAt      *time.Time `json:"deleted_at" nullable:"true" doc:"When an admin deleted the file through this API; null while it is there. The entry stays."`
}

// LocalOutputList is a page of GET /v1/local-outputs.
type LocalOutputList struct {
	Outputs    []LocalOutput `json:"outputs"`
	NextCursor *string       `json:"next_cursor" nullable:"true" doc:"Pass as cursor to read the next page; null on the last page."`
}

func toLocalOutput(o *db.LocalOutput) LocalOutput {
	return LocalOutput{
		ID: o.ID, Path: o.Path, SizeBytes: o.SizeBytes, RunID: o.RunID, FirstRunID: o.FirstRunID,
		FirstWrittenAt: o.FirstWrittenAt.UTC(), LastWrittenAt: o.LastWrittenAt.UTC(), ExistedBefore: o.ExistedBefore,
		DeletedAt: utcPtr(o.DeletedAt),
	}
}

// registerOutputs adds the routes of the ledger of written files.
func registerOutputs(g groups, d *Deps) {
	huma.Register(g.v1, huma.Operation{
		OperationID: "listLocalOutputs", Method: http.MethodGet, Path: "/local-outputs",
		Summary: "List the files runs wrote", Tags: []string{"local-outputs"},
		Description: "The ledger of every file a sink of a run of this server created or replaced on the server's disk, " +
			"newest first, deleted ones included (deleted_at set). Filter by the run that wrote a file (first or last) " +
			"or by a path prefix; pass next_cursor as cursor for the next page.",
		Errors:   []int{400, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.listLocalOutputs)

	huma.Register(g.v1, huma.Operation{
		OperationID: "getLocalOutput", Method: http.MethodGet, Path: "/local-outputs/{id}",
		Summary: "Get one file runs wrote", Tags: []string{"local-outputs"},
		Errors:   []int{404, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getLocalOutput)

	huma.Register(g.v1, huma.Operation{
		OperationID: "deleteLocalOutput", Method: http.MethodDelete, Path: "/local-outputs/{id}",
		Summary: "Delete one file runs wrote", Tags: []string{"local-outputs"},
		Description: "Deletes exactly the file of this entry, through the server's file roots, and keeps the entry with " +
			"deleted_at. Never a directory, a symlink or a glob: 409 when the path holds something else than the file " +
			"faucet wrote last (it was replaced since), lies outside the file roots now, or was deleted already. A file " +
			"already gone is marked deleted. Admin only; audited as local_output.delete.",
		Errors:   []int{404, 409, 503},
		Metadata: map[string]any{metaRole: auth.Admin, metaAction: "local_output.delete"},
	}, d.deleteLocalOutput)
}

type listLocalOutputsInput struct {
	RunID      string `query:"run_id" maxLength:"256" doc:"Only files this run wrote, first or last."`
	PathPrefix string `query:"path_prefix" maxLength:"4096" doc:"Only files whose path starts with this."`
	Limit      int    `query:"limit" default:"50" minimum:"1" maximum:"500" doc:"Page size."`
	Cursor     string `query:"cursor" maxLength:"256" doc:"next_cursor of the previous page."`
}

type listLocalOutputsOutput struct {
	Body LocalOutputList
}

func (d *Deps) listLocalOutputs(ctx context.Context, in *listLocalOutputsInput) (*listLocalOutputsOutput, error) {
	page, err := d.Ledger.List(ctx, db.LocalOutputFilter{RunID: optString(in.RunID), PathPrefix: optString(in.PathPrefix), Cursor: in.Cursor, Limit: in.Limit})
	if err != nil {
		return nil, d.outputsError(err)
	}
	out := &listLocalOutputsOutput{Body: LocalOutputList{Outputs: make([]LocalOutput, len(page.Outputs)), NextCursor: page.NextCursor}}
	for i := range page.Outputs {
		out.Body.Outputs[i] = toLocalOutput(&page.Outputs[i])
	}
	return out, nil
}

type localOutputIDInput struct {
	ID string `path:"id" maxLength:"256" doc:"Entry id."`
}

type localOutputOutput struct {
	Body LocalOutput
}

func (d *Deps) getLocalOutput(ctx context.Context, in *localOutputIDInput) (*localOutputOutput, error) {
	o, err := d.Ledger.Get(ctx, in.ID)
	if err != nil {
		return nil, d.outputsError(err)
	}
	return &localOutputOutput{Body: toLocalOutput(o)}, nil
}

func (d *Deps) deleteLocalOutput(ctx context.Context, in *localOutputIDInput) (*localOutputOutput, error) {
	p := principalFrom(ctx)
	o, err := d.Ledger.Delete(ctx, in.ID)
	if err != nil {
		if !errors.Is(err, outputs.ErrNotFound) {
			d.audit(ctx, p, "local_output.delete", nil, nil, "error")
		}
		return nil, d.outputsError(err)
	}
	d.audit(ctx, p, "local_output.delete", &o.RunID, nil, "ok")
	return &localOutputOutput{Body: toLocalOutput(o)}, nil
}

// outputsError maps an error of the ledger to its problem.
func (d *Deps) outputsError(err error) error {
	var pe *sdk.PathError
	switch {
	case errors.Is(err, outputs.ErrNotFound):
		return errNotFound("no local output has this id")
	case errors.Is(err, outputs.ErrDeleted), errors.Is(err, outputs.ErrReplaced):
		return errConflict(err.Error())
	case errors.As(err, &pe):
		return errConflict(err.Error() + "; the file is not deleted")
	}
	return d.serviceError(err)
}
