package pricing

import "strings"

// The pricing markets of Meta's rate card that are regions rather than one country, and the
// market of everything the card does not name.
const (
	marketNorthAmerica = "North America"
	marketAfrica       = "Rest of Africa"
	marketAsiaPacific  = "Rest of Asia Pacific"
	marketCEE          = "Rest of Central & Eastern Europe"
	marketLatAm        = "Rest of Latin America"
	marketMiddleEast   = "Rest of Middle East"
	marketWestEurope   = "Rest of Western Europe"
	marketOther        = "Other"
)

// place is a country (ISO 3166-1 alpha-2), its calling codes, and its pricing market. A calling
// code longer than the country's own (+1 809) marks numbers of a country that shares a code
// (+1) with others and is priced apart from them.
type place struct {
	iso    string
	codes  []string
	market string
}

// places is the one table both MarketOfPhone and MarketOfCountry read, so a country's market is
// the same whichever way the recipient is known. It follows the country lists of Meta's pricing
// page (developers.facebook.com/docs/whatsapp/pricing) as of the 2025-07-01 card; a country it
// does not name is "Other".
var places = [...]place{
	// Markets of one country.
	{"AR", []string{"54"}, "Argentina"}, {"BR", []string{"55"}, "Brazil"}, {"CL", []string{"56"}, "Chile"},
	{"CO", []string{"57"}, "Colombia"}, {"EG", []string{"20"}, "Egypt"}, {"FR", []string{"33"}, "France"},
	{"DE", []string{"49"}, "Germany"}, {"IN", []string{"91"}, "India"}, {"ID", []string{"62"}, "Indonesia"},
	{"IL", []string{"972"}, "Israel"}, {"IT", []string{"39"}, "Italy"}, {"MY", []string{"60"}, "Malaysia"},
	{"MX", []string{"52"}, "Mexico"}, {"NL", []string{"31"}, "Netherlands"}, {"NG", []string{"234"}, "Nigeria"},
	{"PK", []string{"92"}, "Pakistan"}, {"PE", []string{"51"}, "Peru"}, {"RU", []string{"7"}, "Russia"},
	{"SA", []string{"966"}, "Saudi Arabia"}, {"ZA", []string{"27"}, "South Africa"}, {"ES", []string{"34"}, "Spain"},
	{"TR", []string{"90"}, "Turkey"}, {"AE", []string{"971"}, "United Arab Emirates"},
	{"GB", []string{"44"}, "United Kingdom"},
	// Kazakhstan shares +7 with Russia (its numbers are +7 6xx and +7 7xx) but is not priced as
	// Russia: none of the card's markets names it, so it is "Other" (to confirm with the card).
	{"KZ", []string{"76", "77"}, marketOther},

	// North America is the United States and Canada; the rest of +1 is below.
	{"US", []string{"1"}, marketNorthAmerica}, {"CA", []string{"1"}, marketNorthAmerica},

	{"DZ", []string{"213"}, marketAfrica}, {"AO", []string{"244"}, marketAfrica}, {"BJ", []string{"229"}, marketAfrica},
	{"BW", []string{"267"}, marketAfrica}, {"BF", []string{"226"}, marketAfrica}, {"BI", []string{"257"}, marketAfrica},
	{"CM", []string{"237"}, marketAfrica}, {"TD", []string{"235"}, marketAfrica}, {"CG", []string{"242"}, marketAfrica},
	{"CD", []string{"243"}, marketAfrica}, {"DJ", []string{"253"}, marketAfrica}, {"ER", []string{"291"}, marketAfrica},
	{"ET", []string{"251"}, marketAfrica}, {"GA", []string{"241"}, marketAfrica}, {"GM", []string{"220"}, marketAfrica},
	{"GH", []string{"233"}, marketAfrica}, {"GN", []string{"224"}, marketAfrica}, {"GW", []string{"245"}, marketAfrica},
	{"CI", []string{"225"}, marketAfrica}, {"KE", []string{"254"}, marketAfrica}, {"LS", []string{"266"}, marketAfrica},
	{"LR", []string{"231"}, marketAfrica}, {"LY", []string{"218"}, marketAfrica}, {"MG", []string{"261"}, marketAfrica},
	{"MW", []string{"265"}, marketAfrica}, {"ML", []string{"223"}, marketAfrica}, {"MR", []string{"222"}, marketAfrica},
	{"MA", []string{"212"}, marketAfrica}, {"MZ", []string{"258"}, marketAfrica}, {"NA", []string{"264"}, marketAfrica},
	{"NE", []string{"227"}, marketAfrica}, {"RW", []string{"250"}, marketAfrica}, {"SN", []string{"221"}, marketAfrica},
	{"SL", []string{"232"}, marketAfrica}, {"SO", []string{"252"}, marketAfrica}, {"SS", []string{"211"}, marketAfrica},
	{"SD", []string{"249"}, marketAfrica}, {"SZ", []string{"268"}, marketAfrica}, {"TZ", []string{"255"}, marketAfrica},
	{"TG", []string{"228"}, marketAfrica}, {"TN", []string{"216"}, marketAfrica}, {"UG", []string{"256"}, marketAfrica},
	{"ZM", []string{"260"}, marketAfrica},
	// Zimbabwe moved from "Other" to Rest of Africa on 2025-10-01; this table has no dates, so it
	// says where Zimbabwe is now.
	{"ZW", []string{"263"}, marketAfrica},

	{"AF", []string{"93"}, marketAsiaPacific}, {"AU", []string{"61"}, marketAsiaPacific},
	{"BD", []string{"880"}, marketAsiaPacific}, {"KH", []string{"855"}, marketAsiaPacific},
	{"CN", []string{"86"}, marketAsiaPacific}, {"HK", []string{"852"}, marketAsiaPacific},
	{"MO", []string{"853"}, marketAsiaPacific}, {"JP", []string{"81"}, marketAsiaPacific},
	{"KR", []string{"82"}, marketAsiaPacific}, {"LA", []string{"856"}, marketAsiaPacific},
	{"MN", []string{"976"}, marketAsiaPacific}, {"MM", []string{"95"}, marketAsiaPacific},
	{"NP", []string{"977"}, marketAsiaPacific}, {"NZ", []string{"64"}, marketAsiaPacific},
	{"PG", []string{"675"}, marketAsiaPacific}, {"PH", []string{"63"}, marketAsiaPacific},
	{"SG", []string{"65"}, marketAsiaPacific}, {"LK", []string{"94"}, marketAsiaPacific},
	{"TW", []string{"886"}, marketAsiaPacific}, {"TJ", []string{"992"}, marketAsiaPacific},
	{"TH", []string{"66"}, marketAsiaPacific}, {"TM", []string{"993"}, marketAsiaPacific},
	{"UZ", []string{"998"}, marketAsiaPacific}, {"VN", []string{"84"}, marketAsiaPacific},

	// Meta's page lists Greece under Central & Eastern Europe, not Western Europe (to confirm
	// with the card).
	{"AL", []string{"355"}, marketCEE}, {"AM", []string{"374"}, marketCEE}, {"AZ", []string{"994"}, marketCEE},
	{"BY", []string{"375"}, marketCEE}, {"BA", []string{"387"}, marketCEE}, {"BG", []string{"359"}, marketCEE},
	{"HR", []string{"385"}, marketCEE}, {"CY", []string{"357"}, marketCEE}, {"CZ", []string{"420"}, marketCEE},
	{"EE", []string{"372"}, marketCEE}, {"GE", []string{"995"}, marketCEE}, {"GR", []string{"30"}, marketCEE},
	{"HU", []string{"36"}, marketCEE}, {"LV", []string{"371"}, marketCEE}, {"LT", []string{"370"}, marketCEE},
	{"MD", []string{"373"}, marketCEE}, {"ME", []string{"382"}, marketCEE}, {"MK", []string{"389"}, marketCEE},
	{"PL", []string{"48"}, marketCEE}, {"RO", []string{"40"}, marketCEE}, {"RS", []string{"381"}, marketCEE},
	{"SK", []string{"421"}, marketCEE}, {"SI", []string{"386"}, marketCEE}, {"UA", []string{"380"}, marketCEE},

	{"AD", []string{"376"}, marketWestEurope}, {"AT", []string{"43"}, marketWestEurope},
	{"BE", []string{"32"}, marketWestEurope}, {"DK", []string{"45"}, marketWestEurope},
	{"FI", []string{"358"}, marketWestEurope}, {"IS", []string{"354"}, marketWestEurope},
	{"IE", []string{"353"}, marketWestEurope}, {"LU", []string{"352"}, marketWestEurope},
	{"MT", []string{"356"}, marketWestEurope}, {"NO", []string{"47"}, marketWestEurope},
	{"PT", []string{"351"}, marketWestEurope}, {"SE", []string{"46"}, marketWestEurope},
	{"CH", []string{"41"}, marketWestEurope},

	{"BO", []string{"591"}, marketLatAm}, {"CR", []string{"506"}, marketLatAm}, {"CU", []string{"53"}, marketLatAm},
	{"EC", []string{"593"}, marketLatAm}, {"SV", []string{"503"}, marketLatAm}, {"GT", []string{"502"}, marketLatAm},
	{"HT", []string{"509"}, marketLatAm}, {"HN", []string{"504"}, marketLatAm}, {"NI", []string{"505"}, marketLatAm},
	{"PA", []string{"507"}, marketLatAm}, {"PY", []string{"595"}, marketLatAm}, {"UY", []string{"598"}, marketLatAm},
	{"VE", []string{"58"}, marketLatAm}, {"AW", []string{"297"}, marketLatAm},
	// The Caribbean countries of +1 are priced as Latin America, not North America: their numbers
	// are told apart by area code.
	{"DO", []string{"1809", "1829", "1849"}, marketLatAm}, {"PR", []string{"1787", "1939"}, marketLatAm},
	{"JM", []string{"1876", "1658"}, marketLatAm}, {"BS", []string{"1242"}, marketLatAm},
	{"BB", []string{"1246"}, marketLatAm}, {"AI", []string{"1264"}, marketLatAm},
	{"AG", []string{"1268"}, marketLatAm}, {"GD", []string{"1473"}, marketLatAm},
	{"LC", []string{"1758"}, marketLatAm}, {"DM", []string{"1767"}, marketLatAm},
	{"VC", []string{"1784"}, marketLatAm}, {"TT", []string{"1868"}, marketLatAm},
	{"KN", []string{"1869"}, marketLatAm},

	{"BH", []string{"973"}, marketMiddleEast}, {"IQ", []string{"964"}, marketMiddleEast},
	{"JO", []string{"962"}, marketMiddleEast}, {"KW", []string{"965"}, marketMiddleEast},
	{"LB", []string{"961"}, marketMiddleEast}, {"OM", []string{"968"}, marketMiddleEast},
	{"QA", []string{"974"}, marketMiddleEast}, {"SY", []string{"963"}, marketMiddleEast},
	{"YE", []string{"967"}, marketMiddleEast}, {"PS", []string{"970"}, marketMiddleEast},
}

// MarketOfPhone is Meta's pricing market of a phone number in international form (digits only,
// or with a leading "+" and separators: only the digits count), by the longest country calling
// code it starts with: "971…" is the United Arab Emirates, not whatever +97 would be. A number
// of no known code, an empty one or one with no digits is "Other".
func MarketOfPhone(number string) string {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, number)
	market, longest := marketOther, 0
	for _, p := range places {
		for _, code := range p.codes {
			if len(code) > longest && strings.HasPrefix(digits, code) {
				market, longest = p.market, len(code)
			}
		}
	}
	return market
}

// MarketOf is the pricing market of a recipient: by their phone number when Meta shared it, else
// by the country their business-scoped user id starts with ("ID.1234…").
func MarketOf(phone, userID string) string {
	if phone != "" {
		return MarketOfPhone(phone)
	}
	country, _, _ := strings.Cut(userID, ".")
	return MarketOfCountry(country)
}

// MarketOfCountry is the pricing market of an ISO 3166-1 alpha-2 country code (any case): a
// BSUID starts with its country ("ID.1234…"), the market to use when Meta did not share the
// phone number. An unknown code is "Other".
func MarketOfCountry(iso string) string {
	iso = strings.ToUpper(strings.TrimSpace(iso))
	for _, p := range places {
		if p.iso == iso {
			return p.market
		}
	}
	return marketOther
}

// knownMarket reports whether MarketOfPhone or MarketOfCountry can return market: the Meta card
// may price only those, or a row could never be found.
func knownMarket(market string) bool {
	if market == marketOther {
		return true
	}
	for _, p := range places {
		if p.market == market {
			return true
		}
	}
	return false
}
