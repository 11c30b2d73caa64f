// Package events applies what Meta's events other than an ordinary message do to wapipe's
// records, one entry point per event, for the worker to call:
//
//   - ApplyMessage, for a message of the conversation path whose kind is not an ordinary
//     message: a revoke erases the stored message, an edit changes it, a user_changed_number
//     notice moves the contact's memberships and open conversations to the new number. Its
//     Outcome says whether the message is answered like any other, not at all, or with the
//     localized "please send it another way".
//   - Apply, for a change of another subscribed field: user_preferences, smb_message_echoes,
//     account_update, the template updates and calls. None of them is answered.
//
// The assistant's side of a revoke or an edit (the history, the pending action) is decided by
// assistant.Engine.Turn from the same message, with the conversation's state.
package events
