// Package graph is the WhatsApp Cloud API (Graph API) client the worker replies with: it sends
// messages (text, reply buttons, lists, templates, or any message body) and marks inbound
// messages as read, POSTing to {base}/{phone-number-id}/messages with the access token. A
// message goes to a phone number (Message.To) or a business-scoped user id (Message.Recipient),
// never a BSUID in "to" and never an empty "to"; RequiresPhone says which messages only a phone
// number may receive.
//
// Failures come back as *Error, classified by Kind from Meta's error.code first and the HTTP
// status second, because Meta reports throttling such as 130429 and 131056 with HTTP 400. Use
// Classify and IsRetryable rather than inspecting status codes. Errors never carry the access
// token or the text of the message being sent.
//
// Package graphfake is a fake of the same API for tests and the local stack.
package graph
