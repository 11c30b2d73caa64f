package fanout

import (
	"context"
	"log/slog"

	"github.com/wapipe/wapipe/internal/whatsapp"
)

// EventMetaValueError is the event of the line logged for each of Meta's value.errors: an
// error about a whole change (for instance 131051, or 131000 when Meta itself failed), which
// no message or status carries, so it would otherwise pass unseen. The alert policies count it
// (terraform/monitoring.tf).
const EventMetaValueError = "meta_value_error"

// logValueErrors logs every change's value.errors at ERROR with Meta's code and title, the
// change's field, the business number and the WABA. Meta's message and error_data are left
// out: they may quote what the contact sent.
func logValueErrors(ctx context.Context, logger *slog.Logger, p *whatsapp.Payload) {
	for _, e := range p.Entry {
		for _, c := range e.Changes {
			for _, me := range c.Value.Errors {
				logger.ErrorContext(ctx, "Meta reported an error in a webhook change", "event", EventMetaValueError,
					"field", c.Field, "waba_id", e.ID, "phone_number_id", c.Value.Metadata.PhoneNumberID,
					"meta_error_code", me.Code, "meta_error_title", me.Title)
			}
		}
	}
}
