package assistant

import (
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// IsConfirmTap reports a tap on a confirmation prompt's buttons (ButtonYes or ButtonNo). The
// conversation runner is given it (conversation.Options) rather than knowing the buttons.
func IsConfirmTap(m whatsapp.Message) bool {
	return m.Reply != nil && (m.Reply.ID == ButtonYes || m.Reply.ID == ButtonNo)
}

// IsAnswerWord reports a text that is only a confirming or rejecting word in a language the
// assistant speaks ("yes", "ya", "non"…): the answer to a prompt, typed instead of tapped.
func IsAnswerWord(text string) bool { return i18n.IsConfirm(text) || i18n.IsReject(text) }

// IsQuotaNotice reports the reply that tells a contact the LLM quota is used up.
func IsQuotaNotice(r Reply) bool { return r.Key == i18n.QuotaExceeded }
