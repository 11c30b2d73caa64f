package i18n

import (
	"slices"
	"strings"
)

// Key names one system message.
type Key string

// The system messages. The string values are stable names, safe to log.
const (
	// OnboardingPrompt answers a non-member of a members-only tenant: send your invite code.
	OnboardingPrompt Key = "onboarding_prompt"
	// Welcome answers a valid invite code, when the new member's name is unknown.
	Welcome Key = "welcome"
	// WelcomeName answers a valid invite code; placeholder {name}, the member's name.
	WelcomeName Key = "welcome_name"
	// InvalidCode answers an invite code that is unknown, already used or expired.
	InvalidCode Key = "invalid_code"
	// RateLimited is the one notice per window when a conversation or sender limit is hit.
	RateLimited Key = "rate_limited"
	// QuotaExceeded is the notice when the tenant's monthly LLM quota is used up.
	QuotaExceeded Key = "quota_exceeded"
	// NotUnderstood asks the user to rephrase (low confidence and no usable reply).
	NotUnderstood Key = "not_understood"
	// ButtonConfirm and ButtonCancel are the titles of the confirm_yes and confirm_no reply
	// buttons; Meta caps a reply button title at 20 characters.
	ButtonConfirm Key = "button_confirm"
	ButtonCancel  Key = "button_cancel"
	// ConfirmPrompt is the body of the confirmation message when the model gave no reply text.
	ConfirmPrompt Key = "confirm_prompt"
	// Cancelled answers confirm_no (or a rejecting word): the pending action is dropped.
	Cancelled Key = "cancelled"
	// Expired answers a confirmation of a pending action older than its 30 minutes.
	Expired Key = "expired"
	// NothingToConfirm answers confirm_yes or confirm_no when no action is pending (a second
	// tap on an already answered button).
	NothingToConfirm Key = "nothing_to_confirm"
	// ConfirmByReply answers a typed yes or no on a number several businesses share that does
	// not reply to the pending action's prompt: it may answer another business there, so it
	// confirms nothing and the action stays pending.
	ConfirmByReply Key = "confirm_by_reply"
	// ChooseTenant asks a member of several businesses on a number they share which one a
	// message is for, above the list of their names; ButtonChoose opens the list (at most 20
	// characters, as Meta caps a list's button).
	ChooseTenant Key = "choose_tenant"
	ButtonChoose Key = "button_choose"
	// BudgetWarning and BudgetExhausted tell the tenant's alert roles that the month's spending
	// reached 80 % and 100 % of its budget; placeholders {business}, {spent} and {budget} (USD).
	BudgetWarning   Key = "budget_warning"
	BudgetExhausted Key = "budget_exhausted"
	// NotAMember stands for the role of a sender who is not a member of the tenant, in the
	// notifications that name them.
	NotAMember Key = "not_a_member"
	// Done is sent after a successful action whose answer carried no reply text.
	Done Key = "done"
	// ActionError is sent when an action failed on its last attempt.
	ActionError Key = "action_error"
	// NotAllowed answers an intent whose roles exclude the sender.
	NotAllowed Key = "not_allowed"
	// UnsupportedMessage answers a message the assistant cannot read (a type Meta could not
	// deliver, or one wapipe does not handle): please send it another way.
	UnsupportedMessage Key = "unsupported_message"
	// MediaUnsupported answers a file the assistant cannot read: a type it does not take, or
	// larger than MEDIA_MAX_BYTES.
	MediaUnsupported Key = "media_unsupported"
	// MediaTooLong answers a file longer than the tenant reads (a long voice note or video, a
	// PDF of many pages, a big image): please send a shorter one, or write it.
	MediaTooLong Key = "media_too_long"
	// MediaResend asks the user to send a file again: Meta no longer has it, it did not match
	// its checksum, or it could not be fetched.
	MediaResend Key = "media_resend"
	// Notification tells a member an intent's notify names that another member's action
	// succeeded; placeholders {intent} (the intent's name) and {sender} (the member's name, else
	// the last digits of their number). The confirmed data follow it, one line a field.
	Notification Key = "notification"
	// Unavailable is sent when the assistant (the LLM) keeps failing for a message.
	Unavailable Key = "unavailable"
	// Ack is the reply of assistant mode ack when the tenant has no ack_text.
	Ack Key = "ack"
	// ContactFallback fills {{contact_name}} in a template when the contact's name is unknown.
	ContactFallback Key = "contact_fallback"
)

// Keys lists every Key, in a fixed order.
func Keys() []Key {
	return []Key{
		OnboardingPrompt, Welcome, WelcomeName, InvalidCode, RateLimited, QuotaExceeded,
		Notification,
		NotUnderstood, ButtonConfirm, ButtonCancel, ConfirmPrompt, Cancelled, Expired,
		NothingToConfirm, ConfirmByReply, ChooseTenant, ButtonChoose, BudgetWarning, BudgetExhausted, NotAMember, Done, ActionError, NotAllowed, UnsupportedMessage, MediaUnsupported, MediaTooLong, MediaResend, Unavailable, Ack, ContactFallback,
	}
}

// Default is the language of the fallback texts.
const Default = "en"

// languages is the catalog's set, in the contract's order.
var languages = []string{"en", "fr", "ar", "es", "pt", "id"}

// Languages returns the supported language codes: en fr ar es pt id.
func Languages() []string { return slices.Clone(languages) }

// Supported reports whether lang is one of Languages (exact, lower-case code).
func Supported(lang string) bool { return slices.Contains(languages, lang) }

// Text returns the message key in lang, English when lang is not supported. args are
// name/value pairs filling the named placeholders: Text("id", WelcomeName, "name", "Agus")
// turns {name} into Agus. Values are inserted as they are, in one pass (a value holding
// "{name}" is not expanded again); a trailing unpaired arg is ignored and a placeholder with
// no value is left as written. An unknown key returns the key's own name.
func Text(lang string, key Key, args ...string) string {
	s, ok := catalog[lang][key]
	if !ok {
		s, ok = catalog[Default][key]
	}
	if !ok {
		return string(key)
	}
	if len(args) < 2 {
		return s
	}
	pairs := make([]string, 0, len(args)&^1)
	for i := 0; i+1 < len(args); i += 2 {
		pairs = append(pairs, "{"+args[i]+"}", args[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// catalog holds the texts by language, then key. The texts are short, polite and written for
// a chat: the business speaks ("we"), the assistant says "I".
var catalog = map[string]map[Key]string{
	"en": {
		OnboardingPrompt:   "Hello! This service is for members only. If you have an invite code, please send it here to join.",
		Welcome:            "Welcome! You are now a member. How can we help you?",
		WelcomeName:        "Welcome, {name}! You are now a member. How can we help you?",
		InvalidCode:        "Sorry, this invite code is not valid or has expired. Please check it or ask for a new one.",
		RateLimited:        "You are sending messages faster than we can answer. Please wait a moment, then try again.",
		QuotaExceeded:      "Sorry, our assistant cannot take more requests right now. Please try again later.",
		NotUnderstood:      "Sorry, I didn't understand. Could you please rephrase?",
		ButtonConfirm:      "Yes, confirm",
		ButtonCancel:       "No, cancel",
		ConfirmPrompt:      "Shall I go ahead?",
		Cancelled:          "OK, cancelled. Nothing was done.",
		Expired:            "This request has expired. Please send it again.",
		NothingToConfirm:   "There is nothing waiting for your confirmation.",
		ConfirmByReply:     "To answer the request above, tap its buttons or reply to it.",
		ChooseTenant:       "You are a member of several businesses on this number. Which one is your message for? Choose it and your message goes to it.",
		ButtonChoose:       "Choose",
		MediaTooLong:       "Sorry, this file is too long for me to read. Please send a shorter one, or write your request.",
		BudgetWarning:      "{business} has used 80% of this month's budget: {spent} of {budget} USD.",
		BudgetExhausted:    "{business} has used this month's whole budget ({spent} of {budget} USD): until next month the assistant answers with a notice only. Messages you send through the API still go.",
		NotAMember:         "not a member",
		Done:               "Done. Thank you!",
		ActionError:        "Sorry, something went wrong and we could not complete your request. Please try again later.",
		NotAllowed:         "Sorry, you are not allowed to make this request.",
		UnsupportedMessage: "Sorry, I can't read this kind of message. Could you send it another way?",
		MediaUnsupported:   "Sorry, I can't read this kind of file. Please send a photo, a voice note, a PDF or a text message instead.",
		MediaResend:        "Sorry, I couldn't get your file. Please send it again.",
		Notification:       "New request from {sender}: {intent}",
		Unavailable:        "Sorry, the assistant is unavailable right now. Please try again in a few minutes.",
		Ack:                "Thanks, we got your message. We will get back to you soon.",
		ContactFallback:    "customer",
	},
	"fr": {
		OnboardingPrompt:   "Bonjour ! Ce service est réservé aux membres. Si vous avez un code d'invitation, envoyez-le ici pour nous rejoindre.",
		Welcome:            "Bienvenue ! Vous êtes maintenant membre. Comment pouvons-nous vous aider ?",
		WelcomeName:        "Bienvenue, {name} ! Vous êtes maintenant membre. Comment pouvons-nous vous aider ?",
		InvalidCode:        "Désolé, ce code d'invitation n'est pas valide ou a expiré. Vérifiez-le ou demandez-en un nouveau.",
		RateLimited:        "Vous envoyez des messages plus vite que nous ne pouvons répondre. Merci de patienter un instant avant de réessayer.",
		QuotaExceeded:      "Désolé, notre assistant ne peut pas traiter plus de demandes pour le moment. Merci de réessayer plus tard.",
		NotUnderstood:      "Désolé, je n'ai pas compris. Pourriez-vous reformuler ?",
		ButtonConfirm:      "Oui, confirmer",
		ButtonCancel:       "Non, annuler",
		ConfirmPrompt:      "Voulez-vous que je continue ?",
		Cancelled:          "D'accord, c'est annulé. Rien n'a été fait.",
		Expired:            "Cette demande a expiré. Merci de l'envoyer à nouveau.",
		NothingToConfirm:   "Aucune demande n'attend votre confirmation.",
		ConfirmByReply:     "Pour répondre à la demande ci-dessus, touchez ses boutons ou répondez-y.",
		ChooseTenant:       "Vous êtes membre de plusieurs entreprises sur ce numéro. À laquelle s’adresse votre message ? Choisissez-la : votre message lui sera transmis.",
		ButtonChoose:       "Choisir",
		MediaTooLong:       "Désolé, ce fichier est trop long pour que je le lise. Envoyez-en un plus court, ou écrivez votre demande.",
		BudgetWarning:      "{business} a utilisé 80 % du budget de ce mois : {spent} sur {budget} USD.",
		BudgetExhausted:    "{business} a utilisé tout le budget de ce mois ({spent} sur {budget} USD) : jusqu'au mois prochain, l'assistant ne répond plus que par un avis. Les messages envoyés par l'API partent toujours.",
		NotAMember:         "non membre",
		Done:               "C'est fait. Merci !",
		ActionError:        "Désolé, un problème est survenu et votre demande n'a pas pu aboutir. Merci de réessayer plus tard.",
		NotAllowed:         "Désolé, vous n'êtes pas autorisé à faire cette demande.",
		UnsupportedMessage: "Désolé, je ne peux pas lire ce type de message. Pourriez-vous l'envoyer autrement ?",
		MediaUnsupported:   "Désolé, je ne peux pas lire ce type de fichier. Envoyez plutôt une photo, un message vocal, un PDF ou un message texte.",
		MediaResend:        "Désolé, je n'ai pas pu récupérer votre fichier. Merci de le renvoyer.",
		Notification:       "Nouvelle demande de {sender} : {intent}",
		Unavailable:        "Désolé, l'assistant n'est pas disponible pour le moment. Merci de réessayer dans quelques minutes.",
		Ack:                "Merci, nous avons bien reçu votre message. Nous vous répondrons rapidement.",
		ContactFallback:    "client",
	},
	"ar": {
		OnboardingPrompt:   "مرحبًا! هذه الخدمة مخصصة للأعضاء فقط. إذا كان لديك رمز دعوة، يرجى إرساله هنا للانضمام.",
		Welcome:            "أهلًا بك! أصبحت الآن عضوًا. كيف يمكننا مساعدتك؟",
		WelcomeName:        "أهلًا بك يا {name}! أصبحت الآن عضوًا. كيف يمكننا مساعدتك؟",
		InvalidCode:        "عذرًا، رمز الدعوة هذا غير صالح أو منتهي الصلاحية. يرجى التحقق منه أو طلب رمز جديد.",
		RateLimited:        "أنت ترسل الرسائل أسرع مما نستطيع الرد عليها. يرجى الانتظار قليلًا ثم المحاولة مرة أخرى.",
		QuotaExceeded:      "عذرًا، لا يستطيع مساعدنا استقبال المزيد من الطلبات حاليًا. يرجى المحاولة لاحقًا.",
		NotUnderstood:      "عذرًا، لم أفهم. هل يمكنك إعادة صياغة رسالتك؟",
		ButtonConfirm:      "نعم، تأكيد",
		ButtonCancel:       "لا، إلغاء",
		ConfirmPrompt:      "هل أتابع؟",
		Cancelled:          "حسنًا، تم الإلغاء. لم يُنفَّذ أي شيء.",
		Expired:            "انتهت صلاحية هذا الطلب. يرجى إرساله مرة أخرى.",
		NothingToConfirm:   "لا يوجد طلب بانتظار تأكيدك.",
		ConfirmByReply:     "للرد على الطلب أعلاه، اضغط أحد أزراره أو رُدّ عليه.",
		ChooseTenant:       "أنت عضو في عدة أنشطة تجارية على هذا الرقم. لأيّها رسالتك؟ اختره وستصله رسالتك.",
		ButtonChoose:       "اختر",
		MediaTooLong:       "عذرًا، هذا الملف أطول من أن أقرأه. أرسل ملفًا أقصر، أو اكتب طلبك.",
		BudgetWarning:      "استخدم {business} ‏80٪ من ميزانية هذا الشهر: {spent} من {budget} دولار أمريكي.",
		BudgetExhausted:    "استخدم {business} ميزانية هذا الشهر كاملة ({spent} من {budget} دولار أمريكي): حتى الشهر القادم لن يرد المساعد إلا بإشعار. الرسائل التي ترسلها عبر الواجهة البرمجية ما زالت تُرسل.",
		NotAMember:         "ليس عضوًا",
		Done:               "تم. شكرًا لك!",
		ActionError:        "عذرًا، حدث خطأ ولم نتمكن من إكمال طلبك. يرجى المحاولة لاحقًا.",
		NotAllowed:         "عذرًا، ليست لديك صلاحية لتقديم هذا الطلب.",
		UnsupportedMessage: "عذرًا، لا يمكنني قراءة هذا النوع من الرسائل. هل يمكنك إرسالها بطريقة أخرى؟",
		MediaUnsupported:   "عذرًا، لا يمكنني قراءة هذا النوع من الملفات. يرجى إرسال صورة أو رسالة صوتية أو ملف بصيغة بي دي إف أو رسالة نصية بدلًا من ذلك.",
		MediaResend:        "عذرًا، لم أتمكن من الحصول على ملفك. يرجى إرساله مرة أخرى.",
		Notification:       "طلب جديد من {sender}: {intent}",
		Unavailable:        "عذرًا، المساعد غير متاح حاليًا. يرجى المحاولة بعد بضع دقائق.",
		Ack:                "شكرًا، لقد استلمنا رسالتك. سنرد عليك قريبًا.",
		ContactFallback:    "عميلنا",
	},
	"es": {
		OnboardingPrompt:   "¡Hola! Este servicio es solo para miembros. Si tienes un código de invitación, envíalo aquí para unirte.",
		Welcome:            "¡Te damos la bienvenida! Ya eres miembro. ¿En qué podemos ayudarte?",
		WelcomeName:        "¡Te damos la bienvenida, {name}! Ya eres miembro. ¿En qué podemos ayudarte?",
		InvalidCode:        "Lo sentimos, este código de invitación no es válido o ha caducado. Revísalo o pide uno nuevo.",
		RateLimited:        "Estás enviando mensajes más rápido de lo que podemos responder. Espera un momento y vuelve a intentarlo.",
		QuotaExceeded:      "Lo sentimos, nuestro asistente no puede atender más solicitudes en este momento. Inténtalo de nuevo más tarde.",
		NotUnderstood:      "Lo siento, no te he entendido. ¿Puedes decirlo de otra forma?",
		ButtonConfirm:      "Sí, confirmar",
		ButtonCancel:       "No, cancelar",
		ConfirmPrompt:      "¿Quieres que continúe?",
		Cancelled:          "De acuerdo, cancelado. No se ha hecho nada.",
		Expired:            "Esta solicitud ha caducado. Por favor, envíala de nuevo.",
		NothingToConfirm:   "No hay nada pendiente de tu confirmación.",
		ConfirmByReply:     "Para responder a la solicitud anterior, toca sus botones o respóndela.",
		ChooseTenant:       "Eres miembro de varios negocios en este número. ¿Para cuál es tu mensaje? Elígelo y tu mensaje le llegará.",
		ButtonChoose:       "Elegir",
		MediaTooLong:       "Lo siento, este archivo es demasiado largo para que lo lea. Envía uno más corto o escribe tu solicitud.",
		BudgetWarning:      "{business} ha usado el 80 % del presupuesto de este mes: {spent} de {budget} USD.",
		BudgetExhausted:    "{business} ha usado todo el presupuesto de este mes ({spent} de {budget} USD): hasta el próximo mes el asistente solo responde con un aviso. Los mensajes que envías por la API siguen saliendo.",
		NotAMember:         "no es miembro",
		Done:               "Hecho. ¡Gracias!",
		ActionError:        "Lo sentimos, algo salió mal y no pudimos completar tu solicitud. Inténtalo de nuevo más tarde.",
		NotAllowed:         "Lo sentimos, no tienes permiso para hacer esta solicitud.",
		UnsupportedMessage: "Lo siento, no puedo leer este tipo de mensaje. ¿Podrías enviarlo de otra forma?",
		MediaUnsupported:   "Lo siento, no puedo leer este tipo de archivo. Envía mejor una foto, una nota de voz, un PDF o un mensaje de texto.",
		MediaResend:        "Lo siento, no pude obtener tu archivo. Por favor, envíalo de nuevo.",
		Notification:       "Nueva solicitud de {sender}: {intent}",
		Unavailable:        "Lo sentimos, el asistente no está disponible en este momento. Inténtalo de nuevo en unos minutos.",
		Ack:                "Gracias, hemos recibido tu mensaje. Te responderemos pronto.",
		ContactFallback:    "cliente",
	},
	"pt": {
		OnboardingPrompt:   "Olá! Este serviço é só para membros. Se você tem um código de convite, envie-o aqui para participar.",
		Welcome:            "Boas-vindas! Agora você é membro. Como podemos ajudar?",
		WelcomeName:        "Boas-vindas, {name}! Agora você é membro. Como podemos ajudar?",
		InvalidCode:        "Desculpe, este código de convite não é válido ou expirou. Verifique-o ou peça um novo.",
		RateLimited:        "Você está enviando mensagens mais rápido do que conseguimos responder. Aguarde um momento e tente novamente.",
		QuotaExceeded:      "Desculpe, nosso assistente não pode atender mais pedidos no momento. Tente novamente mais tarde.",
		NotUnderstood:      "Desculpe, não entendi. Pode dizer de outra forma?",
		ButtonConfirm:      "Sim, confirmar",
		ButtonCancel:       "Não, cancelar",
		ConfirmPrompt:      "Posso continuar?",
		Cancelled:          "Certo, cancelado. Nada foi feito.",
		Expired:            "Este pedido expirou. Por favor, envie-o novamente.",
		NothingToConfirm:   "Não há nada aguardando sua confirmação.",
		ConfirmByReply:     "Para responder ao pedido acima, toque nos botões dele ou responda a ele.",
		ChooseTenant:       "Você é membro de várias empresas neste número. Para qual delas é a sua mensagem? Escolha-a e a sua mensagem será enviada a ela.",
		ButtonChoose:       "Escolher",
		MediaTooLong:       "Desculpe, este arquivo é longo demais para eu ler. Envie um mais curto ou escreva o seu pedido.",
		BudgetWarning:      "{business} usou 80% do orçamento deste mês: {spent} de {budget} USD.",
		BudgetExhausted:    "{business} usou todo o orçamento deste mês ({spent} de {budget} USD): até o próximo mês o assistente responde apenas com um aviso. As mensagens que você envia pela API continuam saindo.",
		NotAMember:         "não é membro",
		Done:               "Pronto. Obrigado!",
		ActionError:        "Desculpe, algo deu errado e não conseguimos concluir seu pedido. Tente novamente mais tarde.",
		NotAllowed:         "Desculpe, você não tem permissão para fazer este pedido.",
		UnsupportedMessage: "Desculpe, não consigo ler este tipo de mensagem. Você pode enviá-la de outra forma?",
		MediaUnsupported:   "Desculpe, não consigo ler este tipo de arquivo. Envie uma foto, uma mensagem de voz, um PDF ou uma mensagem de texto.",
		MediaResend:        "Desculpe, não consegui obter o seu arquivo. Por favor, envie-o novamente.",
		Notification:       "Nova solicitação de {sender}: {intent}",
		Unavailable:        "Desculpe, o assistente não está disponível no momento. Tente novamente em alguns minutos.",
		Ack:                "Obrigado, recebemos sua mensagem. Responderemos em breve.",
		ContactFallback:    "cliente",
	},
	"id": {
		OnboardingPrompt:   "Halo! Layanan ini khusus untuk anggota. Jika Anda punya kode undangan, silakan kirim di sini untuk bergabung.",
		Welcome:            "Selamat datang! Anda sekarang sudah menjadi anggota. Ada yang bisa kami bantu?",
		WelcomeName:        "Selamat datang, {name}! Anda sekarang sudah menjadi anggota. Ada yang bisa kami bantu?",
		InvalidCode:        "Maaf, kode undangan ini tidak valid atau sudah kedaluwarsa. Silakan periksa kembali atau minta kode baru.",
		RateLimited:        "Anda mengirim pesan lebih cepat daripada yang bisa kami balas. Mohon tunggu sebentar, lalu coba lagi.",
		QuotaExceeded:      "Maaf, asisten kami belum dapat menerima permintaan lagi saat ini. Silakan coba lagi nanti.",
		NotUnderstood:      "Maaf, saya tidak mengerti. Bisa dijelaskan dengan kata lain?",
		ButtonConfirm:      "Ya, konfirmasi",
		ButtonCancel:       "Tidak, batalkan",
		ConfirmPrompt:      "Boleh saya lanjutkan?",
		Cancelled:          "Baik, dibatalkan. Tidak ada yang dilakukan.",
		Expired:            "Permintaan ini sudah kedaluwarsa. Silakan kirim lagi.",
		NothingToConfirm:   "Tidak ada permintaan yang menunggu konfirmasi Anda.",
		ConfirmByReply:     "Untuk menjawab permintaan di atas, ketuk tombolnya atau balas pesan itu.",
		ChooseTenant:       "Anda anggota beberapa usaha di nomor ini. Pesan Anda untuk yang mana? Pilih salah satu dan pesan Anda akan diteruskan ke sana.",
		ButtonChoose:       "Pilih",
		MediaTooLong:       "Maaf, berkas ini terlalu panjang untuk saya baca. Kirim yang lebih pendek, atau tulis permintaan Anda.",
		BudgetWarning:      "{business} telah memakai 80% anggaran bulan ini: {spent} dari {budget} USD.",
		BudgetExhausted:    "{business} telah memakai seluruh anggaran bulan ini ({spent} dari {budget} USD): sampai bulan depan asisten hanya menjawab dengan pemberitahuan. Pesan yang Anda kirim lewat API tetap terkirim.",
		NotAMember:         "bukan anggota",
		Done:               "Selesai. Terima kasih!",
		ActionError:        "Maaf, terjadi kesalahan dan permintaan Anda tidak dapat diselesaikan. Silakan coba lagi nanti.",
		NotAllowed:         "Maaf, Anda tidak memiliki izin untuk permintaan ini.",
		UnsupportedMessage: "Maaf, saya tidak bisa membaca jenis pesan ini. Bisakah Anda mengirimnya dengan cara lain?",
		MediaUnsupported:   "Maaf, saya tidak bisa membaca jenis file ini. Silakan kirim foto, pesan suara, PDF, atau pesan teks.",
		MediaResend:        "Maaf, file Anda tidak dapat saya ambil. Silakan kirim ulang.",
		Notification:       "Permintaan baru dari {sender}: {intent}",
		Unavailable:        "Maaf, asisten sedang tidak tersedia. Silakan coba lagi dalam beberapa menit.",
		Ack:                "Terima kasih, pesan Anda sudah kami terima. Kami akan segera membalas.",
		ContactFallback:    "pelanggan",
	},
}
