// Package store names wapipe's Firestore collections and holds the record-keeping both services
// share: the expire_at field every document carries for the TTL policy, and document ids derived
// from keys that Firestore could not take as they are.
package store
