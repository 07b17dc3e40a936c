package provider

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/ratelab/ratelab/strategies"
)

// Describe summarises how an attempt failed, for a result record: the HTTP
// status (0 when no response arrived), an error type and a message. For an
// APIError they are the provider's own; otherwise the type is one of
// "connection_error", "incomplete_stream", "invalid_response", "canceled" or
// "error". A refusal for a spent quota (strategies.Quota) is typed by its
// code when it has one ("enforced_spend_limit_reached",
// "insufficient_quota"), since its type may be the rate limit's. Describe of
// a successful outcome returns zero values.
func Describe(o strategies.Outcome) (status int, typ, message string) {
	if o.Kind == strategies.Success {
		return 0, "", ""
	}
	status = o.Status
	var apiErr *APIError
	switch {
	case errors.As(o.Err, &apiErr):
		typ, message = apiErr.Type, apiErr.Message
		if o.Kind == strategies.Quota && apiErr.Code != "" {
			typ = apiErr.Code
		}
		if typ == "" {
			typ = "http_" + strconv.Itoa(apiErr.Status)
		}
		if message == "" {
			message = http.StatusText(apiErr.Status)
		}
		return status, typ, message
	case o.Kind == strategies.Canceled:
		typ = "canceled"
	case errors.Is(o.Err, ErrIncompleteStream):
		typ = "incomplete_stream"
	case errors.Is(o.Err, ErrInvalidResponse):
		typ = "invalid_response"
	case o.Status == 0:
		typ = "connection_error"
	default:
		typ = "error"
	}
	if o.Err != nil {
		message = o.Err.Error()
	} else if o.Status != 0 {
		message = http.StatusText(o.Status)
	}
	return status, typ, message
}
