package api

import (
	"time"

	"github.com/faucet-dev/faucet/db"
)

// CallbackDelivery is the delivery of a run's completion callback, as GET
// /v1/runs/{id} shows it.
type CallbackDelivery struct {
	DeliveryID     string        `json:"delivery_id" doc:"The Faucet-Delivery-Id header (and delivery_id body field) of every attempt: a receiver dedupes on it."`
	State          CallbackState `json:"state"`
	Attempts       int           `json:"attempts" minimum:"0" doc:"Attempts started, the one in flight included."`
	CreatedAt      time.Time     `json:"created_at" doc:"When the run's terminal record was written, and its delivery with it."`
	NextAttemptAt  *time.Time    `json:"next_attempt_at,omitempty" doc:"When a pending delivery is due."`
	LastAttemptAt  *time.Time    `json:"last_attempt_at,omitempty"`
	LastStatusCode *int          `json:"last_status_code,omitempty" doc:"The HTTP status of the last answer, when there was one."`
	LastError      *string       `json:"last_error,omitempty" doc:"Why the last attempt did not deliver."`
	FinishedAt     *time.Time    `json:"finished_at,omitempty" doc:"When it was delivered or failed."`
}

func toCallbackDeliveries(ds []db.CallbackDelivery) []CallbackDelivery {
	out := make([]CallbackDelivery, len(ds))
	for i, d := range ds {
		out[i] = CallbackDelivery{
			DeliveryID: d.DeliveryID, State: CallbackState(d.State), Attempts: d.Attempts, CreatedAt: d.CreatedAt.UTC(),
			NextAttemptAt: utcPtr(d.NextAttemptAt), LastAttemptAt: utcPtr(d.LastAttemptAt), LastStatusCode: d.LastStatusCode,
			LastError: d.LastError, FinishedAt: utcPtr(d.FinishedAt),
		}
	}
	return out
}
