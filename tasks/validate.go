package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/wapipe/wapipe/internal/contact"
)

// Sender is who sent the message of o: as the message names them, else as the task's fields do
// (a task from before the message carried them), read as a webhook's.
func (o Outbound) Sender() contact.Identity {
	if id := o.Message.Identity(); !id.IsZero() {
		return id
	}
	return contact.FromWebhook(o.To, o.UserID, "", o.Message.Username, o.Message.ContactName)
}

// Validate checks an outbound task: its key, its business number, its sender, its message id.
func (o Outbound) Validate() error {
	var errs []error
	if !IsIdempotencyKey(o.IdempotencyKey) {
		errs = append(errs, errors.New("idempotency_key is missing or malformed"))
	}
	if o.PhoneNumberID == "" {
		errs = append(errs, errors.New("phone_number_id is empty"))
	}
	if o.Sender().IsZero() {
		errs = append(errs, errors.New("to and user_id are empty: the task names nobody"))
	}
	if o.Message.ID == "" {
		errs = append(errs, errors.New("message.id is empty"))
	}
	return errors.Join(errs...)
}

// Validate checks a process_send task: its record's key. tenant_id may be empty: the
// single-tenant default's record (its reply held on the record or dead-lettered as the record),
// which the record must then be too.
func (s Send) Validate() error {
	if !IsIdempotencyKey(s.IdempotencyKey) {
		return errors.New("idempotency_key is missing or malformed")
	}
	return nil
}

// MaxBodyBytes caps a task body; Cloud Tasks caps a task at 1 MB.
const MaxBodyBytes = 1 << 20

// ErrBodyTooLarge is a task body over MaxBodyBytes.
var ErrBodyTooLarge = errors.New("task body over 1 MiB")

// DecodeBody decodes a task body, one JSON object and nothing after it, into v. It returns the
// body to keep in a dead letter: as received, cut at MaxBodyBytes when over it (ErrBodyTooLarge).
func DecodeBody(body []byte, v any) ([]byte, error) {
	if len(body) > MaxBodyBytes {
		return body[:MaxBodyBytes], ErrBodyTooLarge
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return body, fmt.Errorf("decode task body: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return body, errors.New("decode task body: data after the JSON object")
	}
	return body, nil
}
