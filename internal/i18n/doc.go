// Package i18n is the catalog of wapipe's own messages to WhatsApp users (the onboarding
// prompt, welcome, rate-limit and quota notices, confirmation buttons…) in the languages a
// tenant can choose, and the words that confirm or reject a pending action.
//
// Texts are looked up by a typed Key and a language code (Text); a language the catalog does
// not have falls back to English. Placeholders are named ({name}) and filled from name/value
// pairs. IsConfirm and IsReject recognise a whole-message "yes" or "no" in any of the
// languages, after normalisation (see Normalize).
//
// The catalog is a plain Go table rather than golang.org/x/text/message or go-i18n: those
// bring positional printf verbs or text/template, message files and plural rules that these
// short, plural-free messages do not need, and a table keeps every translation of a message
// in view; the tests check that every key exists in every language with the same placeholders.
package i18n
