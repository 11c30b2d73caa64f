package geminifake

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Intents of the local stack's sample tour-bus tenant that DefaultRules answer.
const (
	IntentCreateBooking = "create_booking"
	IntentCheckSchedule = "check_schedule"
	IntentReportIssue   = "report_issue"
)

// DefaultRules are the base rules for the local stack's sample tour-bus tenant, in English
// and Indonesian, with crude regexp extraction:
//
//   - a message containing "book" (or "pesan") → create_booking with bus, client, date,
//     route and price when found, e.g. "book bus 01 for Pak Agus on 1 March, 15 million" →
//     {bus: "01", client: "Pak Agus", date: "<next 1 March>", price: 15000000}, confidence
//     0.95 and a reply asking to confirm; the required client, date and bus that are not
//     found are listed in missing_fields;
//   - "schedule" or "jadwal" → check_schedule, with the date when found;
//   - "AC mati", "broken" or "rusak" → report_issue with the bus when found.
//
// An intent the request's schema does not offer is answered as general_query, as a real
// model constrained by the schema would. Anything else falls through to the default answer.
func DefaultRules() []Rule {
	return []Rule{
		{Name: IntentCreateBooking, Regexp: `(?i)book|\bpesan`, Respond: respondBooking},
		{Name: IntentCheckSchedule, Regexp: `(?i)schedule|jadwal`, Respond: respondSchedule},
		{Name: IntentReportIssue, Regexp: `(?i)\bac mati\b|broken|rusak`, Respond: respondIssue},
	}
}

var (
	busRE        = regexp.MustCompile(`(?i)\bbus\s+(?:no\.?\s*|nomor\s+)?([0-9]+[a-z]?|[a-z]-?[0-9]+)\b`)
	clientRE     = regexp.MustCompile(`(?i)\b(?:for|untuk)\s+(.+?)\s*(?:\bon\b|\bpada\b|\btanggal\b|\btgl\b|\bfrom\b|\bdari\b|,|\.|;|$)`)
	dayMonthRE   = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(jan(?:uary|uari)?|feb(?:ruary|ruari)?|mar(?:ch|et)?|apr(?:il)?|may|mei|jun(?:e|i)?|jul(?:y|i)?|aug(?:ust)?|agu(?:stus)?|sep(?:t|tember)?|oct(?:ober)?|okt(?:ober)?|nov(?:ember)?|dec(?:ember)?|des(?:ember)?)\b`)
	isoDateRE    = regexp.MustCompile(`\b(\d{4}-\d{2}-\d{2})\b`)
	tomorrowRE   = regexp.MustCompile(`(?i)\b(?:tomorrow|besok)\b`)
	todayRE      = regexp.MustCompile(`(?i)\b(?:today|hari ini)\b`)
	routeRE      = regexp.MustCompile(`(?i)\b(?:from|dari)\s+(.+?)\s+(?:to|ke)\s+(.+?)\s*(?:\bon\b|\bfor\b|\buntuk\b|\bpada\b|,|\.|;|$)`)
	millionRE    = regexp.MustCompile(`(?i)\b(\d+(?:[.,]\d+)?)\s*(?:million|juta|jt)\b`)
	plainPriceRE = regexp.MustCompile(`\b(\d{1,3}(?:[.,]\d{3})+|\d{5,})\b`)
)

// months maps the first three letters of English and Indonesian month names.
var months = map[string]time.Month{
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "mei": time.May, "jun": time.June, "jul": time.July,
	"aug": time.August, "agu": time.August, "sep": time.September, "oct": time.October,
	"okt": time.October, "nov": time.November, "dec": time.December, "des": time.December,
}

func respondBooking(c Call) Answer {
	if !c.Offers(IntentCreateBooking) {
		return defaultAnswer()
	}
	data := map[string]any{}
	if m := busRE.FindStringSubmatch(c.Text); m != nil {
		data["bus"] = m[1]
	}
	if m := clientRE.FindStringSubmatch(c.Text); m != nil && strings.TrimSpace(m[1]) != "" {
		data["client"] = strings.TrimSpace(m[1])
	}
	date, dateOK := findDate(c.Text, c.Now)
	if dateOK {
		data["date"] = date.Format(time.DateOnly)
	}
	if m := routeRE.FindStringSubmatch(c.Text); m != nil {
		data["route"] = strings.TrimSpace(m[1]) + " - " + strings.TrimSpace(m[2])
	}
	price, priceOK := findPrice(c.Text)
	if priceOK {
		data["price"] = price
	}
	var missing []string
	for _, f := range []string{"client", "date", "bus"} {
		if _, ok := data[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return Answer{Intent: IntentCreateBooking, Confidence: 0.85, Data: data, MissingFields: missing,
			Reply: "To record the booking I still need: " + strings.Join(missing, ", ") + "."}
	}
	var b strings.Builder
	b.WriteString("I'll record: booking bus ")
	b.WriteString(data["bus"].(string))
	b.WriteString(" for ")
	b.WriteString(data["client"].(string))
	b.WriteString(" on ")
	b.WriteString(date.Format("2 January"))
	if route, ok := data["route"].(string); ok {
		b.WriteString(", " + route)
	}
	if priceOK {
		b.WriteString(", " + thousands(price))
	}
	b.WriteString(". Correct?")
	return Answer{Intent: IntentCreateBooking, Confidence: 0.95, Data: data, Reply: b.String()}
}

func respondSchedule(c Call) Answer {
	if !c.Offers(IntentCheckSchedule) {
		return defaultAnswer()
	}
	a := Answer{Intent: IntentCheckSchedule, Confidence: 0.9, Data: map[string]any{}, Reply: "Let me check the schedule."}
	if date, ok := findDate(c.Text, c.Now); ok {
		a.Data["date"] = date.Format(time.DateOnly)
		a.Reply = "Let me check the schedule for " + date.Format("2 January") + "."
	}
	return a
}

func respondIssue(c Call) Answer {
	if !c.Offers(IntentReportIssue) {
		return defaultAnswer()
	}
	a := Answer{Intent: IntentReportIssue, Confidence: 0.9, Data: map[string]any{"issue": strings.TrimSpace(c.Text)},
		Reply: "Noted, I'll report the problem."}
	if m := busRE.FindStringSubmatch(c.Text); m != nil {
		a.Data["bus"] = m[1]
		a.Reply = "Noted, I'll report the problem on bus " + m[1] + "."
	}
	return a
}

// findDate finds an ISO date, "today"/"tomorrow", or a day and month (the next such date on or
// after today).
func findDate(text string, now time.Time) (time.Time, bool) {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if m := isoDateRE.FindStringSubmatch(text); m != nil {
		if t, err := time.Parse(time.DateOnly, m[1]); err == nil {
			return t, true
		}
	}
	if m := dayMonthRE.FindStringSubmatch(text); m != nil {
		day, _ := strconv.Atoi(m[1])
		month := months[strings.ToLower(m[2][:3])]
		for _, year := range []int{today.Year(), today.Year() + 1} {
			t := time.Date(year, month, day, 0, 0, 0, 0, time.UTC)
			if t.Day() != day { // no such day, e.g. 31 April
				return time.Time{}, false
			}
			if !t.Before(today) {
				return t, true
			}
		}
	}
	if tomorrowRE.MatchString(text) {
		return today.AddDate(0, 0, 1), true
	}
	if todayRE.MatchString(text) {
		return today, true
	}
	return time.Time{}, false
}

// findPrice reads "15 million", "1,5 juta", "Rp 15.000.000" or "15000000".
func findPrice(text string) (int64, bool) {
	if m := millionRE.FindStringSubmatch(text); m != nil {
		f, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "."), 64)
		if err == nil {
			return int64(math.Round(f * 1e6)), true
		}
	}
	for _, m := range plainPriceRE.FindAllStringSubmatch(text, -1) {
		digits := strings.NewReplacer(".", "", ",", "").Replace(m[1])
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// thousands writes n with comma separators: 15000000 → "15,000,000".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
