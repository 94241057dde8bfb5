package catalog

import (
	"fmt"
	"maps"
	"net"
	"net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"golang.org/x/net/publicsuffix"

	"github.com/ticketd/ticketd/inventory/cidr"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
)

var (
	// rowPattern keeps '-' out of row labels: a seat label is "<row>-<n>".
	rowPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,8}$`)

	hundred = decimal.NewFromInt(100)

	validScopes = map[string]bool{
		ScopeCatalogRead: true, ScopeOrdersWrite: true, ScopeOrdersConfirm: true,
		ScopeOrdersRead: true, ScopeSessionsWrite: true,
	}
	validStatuses = map[string]bool{StatusDraft: true, StatusOnSale: true, StatusCancelled: true}
)

// Validate checks a decoded document on its own and returns the first
// problem as a *ValidationError, nil when there is none.
//
// References that may point at objects applied earlier are not checked: an
// event's channels may name channels absent from the document, since
// catalogstore merges the document by id into what is already applied.
// Checks against what is sold are catalogstore's too.
func Validate(doc *Document) error {
	if doc == nil {
		return &ValidationError{Msg: "the catalog document is empty"}
	}
	v := validator{
		tenants:  seen{}, // ids are unique across the document per kind
		events:   seen{},
		shortIDs: seen{},
		pubKeys:  seen{},
		channels: seen{},
		chKeys:   seen{},
	}
	if ve := checkLen(len(doc.Tenants), MaxTenants, "tenants", "tenants"); ve != nil {
		return ve
	}
	for i := range doc.Tenants {
		if ve := v.tenant(&doc.Tenants[i], fmt.Sprintf("tenants[%d]", i)); ve != nil {
			return ve
		}
	}
	if ve := checkLen(len(doc.Channels), MaxChannels, "channels", "channels"); ve != nil {
		return ve
	}
	for i := range doc.Channels {
		if ve := v.channel(&doc.Channels[i], fmt.Sprintf("channels[%d]", i)); ve != nil {
			return ve
		}
	}
	return nil
}

// ValidateAgainst checks a document that passed Validate against the
// catalog it is merged into (tenants and channels already applied): a
// channel key, or a tenant's publishable key, must not be the key of an
// applied object that the document leaves in place. Keys move freely among
// the objects the document replaces, so one apply may swap two channels'
// keys; the check is on the merged result. It returns the first problem in
// document order as a *ValidationError, nil when there is none.
func ValidateAgainst(doc *Document, tenants []Tenant, channels []StoredChannel) error {
	inDoc := map[string]bool{}
	for _, t := range doc.Tenants {
		inDoc[t.ID] = true
	}
	pkOwner := map[string]string{} // key -> tenant id, of tenants the document leaves alone
	for _, t := range tenants {
		if !inDoc[t.ID] {
			for _, pk := range t.PublishableKeys {
				pkOwner[pk.Key] = t.ID
			}
		}
	}
	for i, t := range doc.Tenants {
		for j, pk := range t.PublishableKeys {
			if other, ok := pkOwner[pk.Key]; ok {
				return fail(fmt.Sprintf("tenants[%d].publishableKeys[%d].key", i, j),
					"%q is already a publishable key of tenant %q; give each key to one tenant", pk.Key, other)
			}
		}
	}
	clear(inDoc)
	for _, c := range doc.Channels {
		inDoc[c.ID] = true
	}
	chOwner := map[string]string{} // key -> channel id, of channels the document leaves alone
	for _, c := range channels {
		if !inDoc[c.ID] {
			chOwner[c.Key] = c.ID
		}
	}
	for i, c := range doc.Channels {
		if other, ok := chOwner[c.Key]; ok {
			return fail(fmt.Sprintf("channels[%d].key", i),
				"%q is already the key of channel %q; give each channel its own key", c.Key, other)
		}
	}
	return nil
}

// seen maps an id to the path where it first appeared.
type seen map[string]string

// add records id at path, refusing a second occurrence.
func (s seen) add(id, path, what string) *ValidationError {
	if first, dup := s[id]; dup {
		return fail(path, "duplicate %s %q (also at %s)", what, id, first)
	}
	s[id] = path
	return nil
}

type validator struct {
	tenants, events, shortIDs, pubKeys, channels, chKeys seen
}

func fail(path, format string, args ...any) *ValidationError {
	return &ValidationError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

func checkID(id, path string) *ValidationError {
	if id == "" {
		return fail(path, "is required")
	}
	// Ids travel in URLs, Redis keys, hash fields and order ids, so they
	// stay short and free of separators like ':'.
	if !keys.ValidID(id) {
		return fail(path, "%q must be 1 to 64 of A-Z a-z 0-9 _ . -", id)
	}
	return nil
}

// checkUniqueID checks the shape of id and that it is new in s.
func checkUniqueID(s seen, id, path, what string) *ValidationError {
	if ve := checkID(id, path); ve != nil {
		return ve
	}
	return s.add(id, path, what)
}

// checkName bounds a name that ends up on tickets and in e-mail headers:
// at most MaxName characters, none a control character (a line break in a
// header or a QR admission label) or a line or paragraph separator.
func checkName(name, path string) *ValidationError {
	if strings.TrimSpace(name) == "" {
		return fail(path, "is required")
	}
	if n := utf8.RuneCountInString(name); n > MaxName {
		return fail(path, "is %d characters; at most %d are allowed", n, MaxName)
	}
	if !utf8.ValidString(name) {
		return fail(path, "is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fail(path, "holds the control character %U", r)
		}
	}
	return nil
}

func checkTime(s, path string) (time.Time, *ValidationError) {
	if s == "" {
		return time.Time{}, fail(path, "is required (an RFC 3339 time such as 2027-07-01T18:00:00Z)")
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fail(path, "%q is not an RFC 3339 time such as 2027-07-01T18:00:00Z", s)
	}
	return t, nil
}

func checkAmount(c money.Cents, path string) *ValidationError {
	if c < 0 {
		return fail(path, "must not be negative")
	}
	if c > MaxAmount {
		return fail(path, "must be at most %s, got %s", MaxAmount, c)
	}
	return nil
}

func checkPercent(d decimal.Decimal, path string) *ValidationError {
	if d.IsNegative() || d.GreaterThan(hundred) {
		return fail(path, "must be between 0 and 100, got %s", d)
	}
	return nil
}

func checkCount(n, least int64, path string) *ValidationError {
	if n < least {
		return fail(path, "must be at least %d, got %d", least, n)
	}
	return nil
}

// checkLen refuses a list longer than limit (limits.go).
func checkLen(n, limit int, path, what string) *ValidationError {
	if n > limit {
		return fail(path, "has %d %s; at most %d are allowed", n, what, limit)
	}
	return nil
}

func (v *validator) tenant(t *Tenant, path string) *ValidationError {
	if ve := checkUniqueID(v.tenants, t.ID, path+".id", "tenant id"); ve != nil {
		return ve
	}
	if ve := checkName(t.Name, path+".name"); ve != nil {
		return ve
	}
	if t.NotifyEmail != "" {
		if a, err := mail.ParseAddress(t.NotifyEmail); err != nil || a.Address != t.NotifyEmail {
			return fail(path+".notifyEmail", "%q is not an e-mail address", t.NotifyEmail)
		}
	}
	if ve := checkLen(len(t.PublishableKeys), MaxPublishableKeys, path+".publishableKeys", "publishable keys"); ve != nil {
		return ve
	}
	for i, pk := range t.PublishableKeys {
		p := fmt.Sprintf("%s.publishableKeys[%d]", path, i)
		if ve := checkUniqueID(v.pubKeys, pk.Key, p+".key", "publishable key"); ve != nil {
			return ve
		}
		if ve := checkLen(len(pk.Domains), MaxKeyDomains, p+".domains", "domains"); ve != nil {
			return ve
		}
		for j, d := range pk.Domains {
			if ve := checkDomain(d, fmt.Sprintf("%s.domains[%d]", p, j)); ve != nil {
				return ve
			}
		}
	}
	if ve := checkLen(len(t.Events), MaxEventsPerTenant, path+".events", "events"); ve != nil {
		return ve
	}
	for i := range t.Events {
		if ve := v.event(t.ID, &t.Events[i], fmt.Sprintf("%s.events[%d]", path, i)); ve != nil {
			return ve
		}
	}
	return nil
}

// checkDomain accepts what an Origin host is matched against: a host name,
// optionally with a leading "*." wildcard over two labels or more, or an
// IP address. Browsers send internationalised hosts in punycode, so an
// entry must be written so too: one in Unicode would never match.
func checkDomain(d, path string) *ValidationError {
	if d == "" || strings.ContainsAny(d, "/ \t@") || strings.Contains(d[1:], "*") || (d[0] == '*' && !strings.HasPrefix(d, "*.")) {
		return fail(path, "%q must be a host name such as shop.example.com or *.example.com, without scheme or path", d)
	}
	for i := 0; i < len(d); i++ {
		if d[i] >= 0x80 {
			return fail(path, "%q is not ASCII: write an internationalised domain in punycode (xn--...), as browsers send it", d)
		}
		if d[i] < 0x20 || d[i] == 0x7f {
			return fail(path, "%q has a control character", d)
		}
	}
	if rest, ok := strings.CutPrefix(d, "*."); ok {
		host := rest
		if h, _, err := net.SplitHostPort(rest); err == nil {
			host = h
		}
		if host = strings.TrimSuffix(host, "."); !strings.Contains(host, ".") {
			return fail(path, "%q is a wildcard over a single label (every site under it): name the site's own domain, such as *.example.com", d)
		}
		// A public suffix (co.uk, github.io, vercel.app) has sites of many
		// owners under it: any of them could then frame the seat picker
		// and call the storefront with this key.
		if suffix, _ := publicsuffix.PublicSuffix(strings.ToLower(host)); suffix == strings.ToLower(host) {
			return fail(path, "%q is a wildcard over the public suffix %s, under which anyone can have a site: name the site's own domain, such as *.shop.%s", d, host, host)
		}
	}
	return nil
}

func (v *validator) event(tenantID string, e *Event, path string) *ValidationError {
	if ve := checkUniqueID(v.events, e.ID, path+".id", "event id"); ve != nil {
		return ve
	}
	if e.TenantID != "" && e.TenantID != tenantID {
		return fail(path+".tenantId", "is %q but the event is listed under tenant %q; leave it out", e.TenantID, tenantID)
	}
	if ve := checkUniqueID(v.shortIDs, e.ShortID, path+".shortId", "event shortId"); ve != nil {
		return ve
	}
	if ve := checkID(e.Slug, path+".slug"); ve != nil {
		return ve
	}
	if ve := checkName(e.Name, path+".name"); ve != nil {
		return ve
	}
	starts, ve := checkTime(e.StartsAt, path+".startsAt")
	if ve != nil {
		return ve
	}
	if !validStatuses[e.Status] {
		return fail(path+".status", "%q must be one of %s, %s, %s", e.Status, StatusDraft, StatusOnSale, StatusCancelled)
	}
	if e.OnSaleAt != "" {
		onSale, ve := checkTime(e.OnSaleAt, path+".onSaleAt")
		if ve != nil {
			return ve
		}
		if !onSale.Before(starts) {
			return fail(path+".onSaleAt", "must be before startsAt (%s)", e.StartsAt)
		}
	}
	if ve := checkLen(len(e.Channels), MaxEventChannels, path+".channels", "channels"); ve != nil {
		return ve
	}
	chans := seen{}
	for i, ch := range e.Channels {
		if ve := checkUniqueID(chans, ch, fmt.Sprintf("%s.channels[%d]", path, i), "channel"); ve != nil {
			return ve
		}
	}
	if e.Capacity != nil {
		if ve := checkCount(*e.Capacity, 0, path+".capacity"); ve != nil {
			return ve
		}
	}
	if e.MaxTicketsPerBuyer != nil {
		if ve := checkCount(*e.MaxTicketsPerBuyer, 1, path+".maxTicketsPerBuyer"); ve != nil {
			return ve
		}
	}
	if len(e.Showings) > 0 && e.SeatMap != nil {
		// Seats are booked once per event: one seat map cannot serve
		// several performances.
		return fail(path+".showings", "an event with a seat map cannot have showings (seats are booked per event, not per showing); make one event per showing")
	}
	if ve := checkLen(len(e.Showings), MaxShowings, path+".showings", "showings"); ve != nil {
		return ve
	}
	showings := seen{}
	for i, sh := range e.Showings {
		p := fmt.Sprintf("%s.showings[%d]", path, i)
		if ve := checkUniqueID(showings, sh.ID, p+".id", "showing id"); ve != nil {
			return ve
		}
		if _, ve := checkTime(sh.StartsAt, p+".startsAt"); ve != nil {
			return ve
		}
		if sh.Capacity != nil {
			if ve := checkCount(*sh.Capacity, 0, p+".capacity"); ve != nil {
				return ve
			}
		}
	}
	if pr := e.Pricing; pr != nil {
		p := path + ".pricing"
		if ve := checkAmount(pr.FeePerTicket, p+".feePerTicket"); ve != nil {
			return ve
		}
		for _, f := range []struct {
			d    decimal.Decimal
			name string
		}{{pr.FeePercent, "feePercent"}, {pr.VATPercent, "vatPercent"}, {pr.RefundProtectionPercent, "refundProtectionPercent"}} {
			if ve := checkPercent(f.d, p+"."+f.name); ve != nil {
				return ve
			}
		}
	}
	if len(e.Tickets) == 0 && e.SeatMap == nil {
		return fail(path+".tickets", "an event needs at least one ticket type or a seat map")
	}
	if ve := checkLen(len(e.Tickets), MaxTickets, path+".tickets", "ticket types"); ve != nil {
		return ve
	}
	tickets := seen{}
	for i := range e.Tickets {
		if ve := ticket(tickets, &e.Tickets[i], fmt.Sprintf("%s.tickets[%d]", path, i)); ve != nil {
			return ve
		}
	}
	if ve := checkLen(len(e.Extras), MaxExtras, path+".extras", "extras"); ve != nil {
		return ve
	}
	extras := seen{}
	for i, x := range e.Extras {
		p := fmt.Sprintf("%s.extras[%d]", path, i)
		if ve := checkUniqueID(extras, x.ID, p+".id", "extra id"); ve != nil {
			return ve
		}
		if ve := checkName(x.Name, p+".name"); ve != nil {
			return ve
		}
		if ve := checkAmount(x.Price, p+".price"); ve != nil {
			return ve
		}
		if x.Capacity != nil {
			if ve := checkCount(*x.Capacity, 0, p+".capacity"); ve != nil {
				return ve
			}
		}
	}
	if ve := checkLen(len(e.DiscountCodes), MaxDiscountCodes, path+".discountCodes", "discount codes"); ve != nil {
		return ve
	}
	codes := seen{}
	for i := range e.DiscountCodes {
		if ve := discount(codes, tickets, &e.DiscountCodes[i], fmt.Sprintf("%s.discountCodes[%d]", path, i)); ve != nil {
			return ve
		}
	}
	if e.SeatMap != nil {
		if ve := seatMap(e.SeatMap, path+".seatMap"); ve != nil {
			return ve
		}
	}
	if ve := orderLimit(e, path); ve != nil {
		return ve
	}
	if e.WaitingRoom != nil {
		return waitingRoom(e, path)
	}
	return nil
}

// waitingRoom checks the event's waitingRoom: opensAt, then salesStartAt
// after it and before the event starts, passTtl and perBuyer within their
// limits when set, a known mode, on a multi-showing event a line per
// showing (showingRooms), on a seated event seat rows alone and no partner
// allocation (seatedRoom), and an allocation for each of its channels and
// none else, leaving the room some stock.
func waitingRoom(e *Event, path string) *ValidationError {
	wr := e.WaitingRoom
	p := path + ".waitingRoom"
	if ve := allocations(e, p); ve != nil {
		return ve
	}
	if ve := showingRooms(e, path, p); ve != nil {
		return ve
	}
	if ve := seatedRoom(e, p); ve != nil {
		return ve
	}
	opens, ve := checkTime(wr.OpensAt, p+".opensAt")
	if ve != nil {
		return ve
	}
	salesStart, ve := checkTime(wr.SalesStartAt, p+".salesStartAt")
	if ve != nil {
		return ve
	}
	if !salesStart.After(opens) {
		return fail(p+".salesStartAt", "must be after opensAt (%s)", wr.OpensAt)
	}
	if starts, _ := time.Parse(time.RFC3339, e.StartsAt); !salesStart.Before(starts) {
		return fail(p+".salesStartAt", "must be before startsAt (%s)", e.StartsAt)
	}
	// A pass given before the event is on sale could not buy: its holder
	// would lapse and go to the back of the line.
	if onSale, err := time.Parse(time.RFC3339, e.OnSaleAt); err == nil && salesStart.Before(onSale) {
		return fail(p+".salesStartAt", "must not be before onSaleAt (%s): the room's first passes could not buy yet", e.OnSaleAt)
	}
	if wr.PassTTL != nil && (*wr.PassTTL < MinRoomPassTTL || *wr.PassTTL > MaxRoomPassTTL) {
		return fail(p+".passTtl", "must be between %d and %d seconds, got %d (omit passTtl for %d)",
			MinRoomPassTTL, MaxRoomPassTTL, *wr.PassTTL, DefaultRoomPassTTL)
	}
	if wr.PerBuyer != nil && (*wr.PerBuyer < 1 || *wr.PerBuyer > MaxRoomPerBuyer) {
		return fail(p+".perBuyer", "must be between 1 and %d, got %d (omit perBuyer for %d)",
			MaxRoomPerBuyer, *wr.PerBuyer, DefaultRoomPerBuyer)
	}
	switch wr.Mode {
	case "", RoomModeFair, RoomModeFIFO:
	default:
		return fail(p+".mode", "%q must be %q or %q", wr.Mode, RoomModeFair, RoomModeFIFO)
	}
	if pw := wr.ProofOfWork; pw != nil {
		lo, hi := int64(DefaultRoomMinBits), int64(DefaultRoomMaxBits)
		for _, b := range []struct {
			name string
			v    *int64
			set  *int64
		}{{"minBits", pw.MinBits, &lo}, {"maxBits", pw.MaxBits, &hi}} {
			if b.v == nil {
				continue
			}
			if *b.v < 1 || *b.v > MaxRoomWorkBits {
				return fail(p+".proofOfWork."+b.name, "must be between 1 and %d bits, got %d", MaxRoomWorkBits, *b.v)
			}
			*b.set = *b.v
		}
		if pw.MinBits != nil && pw.MaxBits == nil {
			hi = max(hi, lo)
		}
		if lo > hi {
			return fail(p+".proofOfWork.maxBits", "must not be below minBits (%d), got %d", lo, hi)
		}
	}
	return nil
}

// orderLimit checks the event's maxPerOrder: 1 to MaxOrderAdmissions, and
// no ticket type's maxPerOrder nor table above it (a table is sold whole:
// above the limit it could never be sold). Without one the event's limit
// is derived to fit them (CompiledEvent.MaxPerOrder).
func orderLimit(e *Event, path string) *ValidationError {
	if e.MaxPerOrder == nil {
		return nil
	}
	limit := *e.MaxPerOrder
	if limit < 1 || limit > MaxOrderAdmissions {
		return fail(path+".maxPerOrder", "must be between 1 and %d, got %d", MaxOrderAdmissions, limit)
	}
	for i, t := range e.Tickets {
		if t.MaxPerOrder > limit {
			return fail(fmt.Sprintf("%s.tickets[%d].maxPerOrder", path, i),
				"%d is above the event's maxPerOrder (%d): an order holds at most that many admissions", t.MaxPerOrder, limit)
		}
	}
	if e.SeatMap != nil {
		for i, t := range e.SeatMap.Tables {
			if int64(t.Seats) > limit {
				return fail(fmt.Sprintf("%s.seatMap.tables[%d].seats", path, i),
					"%d seats are above the event's maxPerOrder (%d): a table is sold whole, so it could never be sold; raise maxPerOrder",
					t.Seats, limit)
			}
		}
	}
	return nil
}

func ticket(ids seen, t *Ticket, path string) *ValidationError {
	if ve := checkUniqueID(ids, t.ID, path+".id", "ticket id"); ve != nil {
		return ve
	}
	if ve := checkName(t.Name, path+".name"); ve != nil {
		return ve
	}
	if ve := checkAmount(t.Price, path+".price"); ve != nil {
		return ve
	}
	if ve := checkCount(t.Capacity, 0, path+".capacity"); ve != nil {
		return ve
	}
	if t.MaxPerOrder < 0 || t.MaxPerOrder > MaxOrderAdmissions { // 0 is "not set" (omitempty)
		return fail(path+".maxPerOrder", "must be between 1 and %d when set, got %d", MaxOrderAdmissions, t.MaxPerOrder)
	}
	return nil
}

// discount checks a code; codes are matched case-insensitively, so they
// must differ in more than case.
func discount(codes, tickets seen, dc *DiscountCode, path string) *ValidationError {
	if ve := checkUniqueID(codes, strings.ToUpper(dc.Code), path+".code", "discount code (case-insensitive)"); ve != nil {
		return ve
	}
	switch {
	case dc.Percent == nil && dc.Amount == nil:
		return fail(path, "needs percent or amount")
	case dc.Percent != nil && dc.Amount != nil:
		return fail(path, "has both percent and amount; give one")
	case dc.Percent != nil:
		if ve := checkPercent(*dc.Percent, path+".percent"); ve != nil {
			return ve
		}
	default:
		if ve := checkAmount(*dc.Amount, path+".amount"); ve != nil {
			return ve
		}
	}
	// Pricing and the order scripts read a max of 0 as "no limit", so 0 is
	// refused rather than silently meaning unlimited.
	if dc.MaxUses != nil && *dc.MaxUses < 1 {
		return fail(path+".maxUses", "must be at least 1, got %d (omit maxUses for unlimited uses)", *dc.MaxUses)
	}
	// Each ticket once: pricing scans the list for every ticket line, and
	// this bounds it by the event's ticket types.
	named := seen{}
	for i, id := range dc.TicketIDs {
		p := fmt.Sprintf("%s.ticketIds[%d]", path, i)
		if _, ok := tickets[id]; !ok {
			return fail(p, "%q is not a ticket of this event", id)
		}
		if ve := named.add(id, p, "ticket"); ve != nil {
			return ve
		}
	}
	return nil
}

func seatMap(sm *SeatMap, path string) *ValidationError {
	if len(sm.Rows)+len(sm.GAAreas)+len(sm.Tables) == 0 {
		return fail(path, "needs at least one row, GA area or table")
	}
	switch sm.SingleSeatRule {
	case "", SeatRuleOff, SeatRuleLenient, SeatRuleStrict:
	default:
		return fail(path+".singleSeatRule", "%q must be %q, %q or %q", sm.SingleSeatRule, SeatRuleOff, SeatRuleLenient, SeatRuleStrict)
	}
	if ve := checkLen(len(sm.Categories), MaxCategories, path+".categories", "categories"); ve != nil {
		return ve
	}
	cats := seen{}
	for i, c := range sm.Categories {
		p := fmt.Sprintf("%s.categories[%d]", path, i)
		if ve := checkUniqueID(cats, c.ID, p+".id", "category id"); ve != nil {
			return ve
		}
		if ve := checkName(c.Name, p+".name"); ve != nil {
			return ve
		}
		if c.Price != nil {
			if ve := checkAmount(*c.Price, p+".price"); ve != nil {
				return ve
			}
		}
	}
	category := func(id, p string) *ValidationError {
		if _, ok := cats[id]; !ok {
			return fail(p, "%q is not a category of this seat map", id)
		}
		return nil
	}
	if ve := checkLen(len(sm.Rows), MaxRows, path+".rows", "rows"); ve != nil {
		return ve
	}
	// seats counts the seats so far: the one that passes MaxEventSeats is named.
	seats := 0
	tooMany := func(p string) *ValidationError {
		return fail(p, "brings the seat map to %d seats (rows and tables); at most %d are allowed in one event", seats, MaxEventSeats)
	}
	rows := map[string]int{}
	rowAt := seen{}
	for i, r := range sm.Rows {
		p := fmt.Sprintf("%s.rows[%d]", path, i)
		if !rowPattern.MatchString(r.Label) {
			return fail(p+".label", "%q must be 1 to 8 of A-Z a-z 0-9", r.Label)
		}
		if ve := rowAt.add(r.Label, p+".label", "row label"); ve != nil {
			return ve
		}
		if r.Seats < 1 || r.Seats > MaxRowSeats {
			return fail(p+".seats", "must be between 1 and %d, got %d", MaxRowSeats, r.Seats)
		}
		if seats += r.Seats; seats > MaxEventSeats {
			return tooMany(p + ".seats")
		}
		if ve := category(r.Category, p+".category"); ve != nil {
			return ve
		}
		rows[r.Label] = r.Seats
	}
	if ve := checkLen(len(sm.GAAreas), MaxGAAreas, path+".gaAreas", "GA areas"); ve != nil {
		return ve
	}
	areas := seen{}
	for i, a := range sm.GAAreas {
		p := fmt.Sprintf("%s.gaAreas[%d]", path, i)
		if ve := checkUniqueID(areas, a.ID, p+".id", "GA area id"); ve != nil {
			return ve
		}
		if ve := checkName(a.Name, p+".name"); ve != nil {
			return ve
		}
		if ve := checkCount(a.Capacity, 1, p+".capacity"); ve != nil {
			return ve
		}
		if ve := category(a.Category, p+".category"); ve != nil {
			return ve
		}
	}
	if ve := checkLen(len(sm.Tables), MaxTables, path+".tables", "tables"); ve != nil {
		return ve
	}
	tables := seen{}
	for i, t := range sm.Tables {
		p := fmt.Sprintf("%s.tables[%d]", path, i)
		if ve := checkUniqueID(tables, t.ID, p+".id", "table id"); ve != nil {
			return ve
		}
		// A table's label is its id; it must not read as a seat label.
		if row, n, ok := strings.Cut(t.ID, "-"); ok {
			if k, err := strconv.Atoi(n); err == nil && k >= 1 && k <= rows[row] && strconv.Itoa(k) == n {
				return fail(p+".id", "%q is also the label of a seat in row %s", t.ID, row)
			}
		}
		if t.Seats < 1 || t.Seats > MaxTableSeats {
			return fail(p+".seats", "must be between 1 and %d, got %d", MaxTableSeats, t.Seats)
		}
		if seats += t.Seats; seats > MaxEventSeats {
			return tooMany(p + ".seats")
		}
		if ve := category(t.Category, p+".category"); ve != nil {
			return ve
		}
	}
	return nil
}

func (v *validator) channel(c *Channel, path string) *ValidationError {
	if ve := checkUniqueID(v.channels, c.ID, path+".id", "channel id"); ve != nil {
		return ve
	}
	if ve := checkName(c.Name, path+".name"); ve != nil {
		return ve
	}
	if ve := checkUniqueID(v.chKeys, c.Key, path+".key", "channel key"); ve != nil {
		return ve
	}
	if len(c.Secret) < minSecretLen {
		// Never echo the secret: messages reach responses and logs.
		return fail(path+".secret", "must be at least %d characters", minSecretLen)
	}
	for i, s := range c.Scopes {
		if !validScopes[s] {
			return fail(fmt.Sprintf("%s.scopes[%d]", path, i), "%q must be one of %s, %s, %s, %s, %s", s,
				ScopeCatalogRead, ScopeOrdersWrite, ScopeOrdersConfirm, ScopeOrdersRead, ScopeSessionsWrite)
		}
	}
	if ve := checkLen(len(c.IPAllowlist), MaxAllowlist, path+".ipAllowlist", "entries"); ve != nil {
		return ve
	}
	if len(c.IPAllowlist) == 0 {
		return fail(path+".ipAllowlist", "needs at least one IP address or CIDR (such as 203.0.113.7 or 203.0.113.0/24)")
	}
	for i, a := range c.IPAllowlist {
		if _, err := cidr.Parse(a); err != nil {
			return fail(fmt.Sprintf("%s.ipAllowlist[%d]", path, i), "%q is not an IP address or CIDR", a)
		}
	}
	rl := c.RateLimits
	for _, f := range []struct {
		n    int64
		name string
	}{{rl.Catalog, "catalog"}, {rl.Status, "status"}, {rl.Checkout, "checkout"}, {rl.Confirm, "confirm"}, {rl.Session, "session"}} {
		if ve := checkCount(f.n, 0, path+".rateLimits."+f.name); ve != nil {
			return ve
		}
	}
	return nil
}

// seatedRoom checks a room on a seated event: the room counts seats, so
// the event sells its seat rows alone (no ticket types, standing areas or
// tables, whose units a pass would not know how to hold), and partners
// hold no seat of it (every allocation 0): a partner's seat holds are not
// counted against its allocation, so an admitted buyer could find the
// seats a pass promised held by a partner.
func seatedRoom(e *Event, p string) *ValidationError {
	sm := e.SeatMap
	if sm == nil {
		return nil
	}
	var also []string
	if len(e.Tickets) > 0 {
		also = append(also, "ticket types")
	}
	if len(sm.GAAreas) > 0 {
		also = append(also, "standing areas (gaAreas)")
	}
	if len(sm.Tables) > 0 {
		also = append(also, "tables")
	}
	if len(also) > 0 {
		return fail(p, "a waiting room on a seated event covers its seat rows alone, and this event also sells %s; sell those on an event of their own, or leave waitingRoom out",
			strings.Join(also, " and "))
	}
	for _, ch := range slices.Sorted(maps.Keys(e.WaitingRoom.Allocations)) {
		if e.WaitingRoom.Allocations[ch] != 0 {
			return fail(p+".allocations."+ch, "a seated event's waiting room sells every seat: partners' seat holds are not counted against an allocation, so give channel %s 0 (or take it out of channels)", ch)
		}
	}
	return nil
}

// showingRooms checks a multi-showing event's room, a line per showing:
// each admits against its showing's capacity, so every showing has one;
// showings share the event's and the ticket types' stock, so together
// they fit within it (two lines could otherwise promise the same units);
// and no partner has an allocation, which the lines would not know of.
func showingRooms(e *Event, path, p string) *ValidationError {
	if len(e.Showings) == 0 {
		return nil
	}
	var sum int64
	for i, sh := range e.Showings {
		if sh.Capacity == nil {
			return fail(fmt.Sprintf("%s.showings[%d].capacity", path, i),
				"is required with a waiting room: each showing has a line of its own, which admits buyers against the showing's capacity")
		}
		sum += *sh.Capacity
	}
	if stock := eventStock(e); sum > stock {
		return fail(p, "the showings' capacities add up to %d, more than the event's %d admissions (its capacity, or its ticket types' together): each showing's line admits buyers against its own capacity, so together they must fit; lower the showings' capacities",
			sum, stock)
	}
	for _, ch := range slices.Sorted(maps.Keys(e.WaitingRoom.Allocations)) {
		if e.WaitingRoom.Allocations[ch] != 0 {
			return fail(p+".allocations."+ch, "a multi-showing event's waiting room sells every showing's stock: give channel %s 0 (or take it out of channels)", ch)
		}
	}
	return nil
}

// allocations checks a room's allocations: partners would otherwise sell
// the stock the room admits buyers to, so every channel of the event has
// one (0 stops it selling the event), each names a channel of the event,
// and together they leave the room at least one admission.
func allocations(e *Event, p string) *ValidationError {
	al := e.WaitingRoom.Allocations
	for _, ch := range e.Channels {
		if _, ok := al[ch]; !ok {
			return fail(p+".allocations", "channel %s sells this event beside its waiting room and needs an allocation: "+
				"the admissions it sells outside the room (give it 0, or take it out of channels, to sell on the storefront alone)", ch)
		}
	}
	var sum int64
	stock := eventStock(e)
	for _, id := range slices.Sorted(maps.Keys(al)) {
		if !slices.Contains(e.Channels, id) {
			return fail(p+".allocations."+id, "%s is not one of the event's channels %v", id, e.Channels)
		}
		if ve := checkCount(al[id], 0, p+".allocations."+id); ve != nil {
			return ve
		}
		if sum += al[id]; sum >= stock { // checked as it grows: no overflow
			return fail(p+".allocations", "the channels' allocations leave the room none of the event's %d admissions", stock)
		}
	}
	return nil
}
