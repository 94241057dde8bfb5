// Demo Live: what every page of the shop shares. The shop calls ticketd's
// storefront API from the browser with its publishable key; /config.json
// (written by the server) says where ticketd is and which events to sell.
'use strict';

(function () {
  const Shop = {};
  let cfg;

  Shop.config = function () {
    if (!cfg) {
      cfg = fetch('/config.json', { cache: 'no-store' }).then(function (r) {
        if (!r.ok) throw new Error('config ' + r.status);
        return r.json();
      });
    }
    return cfg;
  };

  // ApiError is a failed call: the HTTP status (0 when ticketd could not
  // be reached), the API's code and its message.
  class ApiError extends Error {
    constructor(status, code, message, data) {
      super(message || code || 'request failed');
      this.status = status;
      this.code = code || '';
      this.apiMessage = message || '';
      this.data = data;
    }
  }
  Shop.ApiError = ApiError;

  // api calls /v1/storefront<path> and returns the answer's data, or
  // throws an ApiError. The envelope is {success, data} or
  // {success:false, code, message, data?} (handlers/httpx). opts.timeoutMs
  // aborts the call after that long (then it fails as NETWORK);
  // opts.headers are sent too (a waiting room's bearer token or pass).
  Shop.api = async function (method, path, body, opts) {
    const c = await Shop.config();
    const init = { method: method, headers: Object.assign({}, opts && opts.headers, { 'x-service-key': c.publishableKey }), credentials: 'omit', cache: 'no-store' };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let timer = 0;
    if (opts && opts.timeoutMs !== undefined) {
      const ctl = new AbortController();
      init.signal = ctl.signal;
      timer = setTimeout(function () { ctl.abort(); }, Math.max(0, opts.timeoutMs));
    }
    try {
      let res;
      try {
        res = await fetch(c.apiBase + '/v1/storefront' + path, init);
      } catch (e) {
        throw new ApiError(0, 'NETWORK', '');
      }
      let json = null;
      try {
        json = await res.json();
      } catch (e) {
        if (e && e.name === 'AbortError') throw new ApiError(0, 'NETWORK', '');
        json = null;
      }
      if (res.ok && json && json.success !== false) return json.data;
      const e = json || {};
      throw new ApiError(res.status, e.code, e.message, e.data || json); // serverTotal etc. sit beside code
    } finally {
      clearTimeout(timer);
    }
  };

  // Words a buyer reads for the API's codes; other codes show the API's
  // own message.
  const words = {
    NETWORK: 'We could not reach the ticket service. Check your connection and try again.',
    SEAT_CONFLICT: 'One of your seats was just taken by someone else. Please pick another seat.',
    SEAT_RULE: 'That choice would leave a single empty seat on its own. Please pick seats next to each other.',
    HOLD_EXPIRED: 'Your seats were released because the hold time ran out. Please pick them again.',
    SEAT_NOT_HELD: 'Your seats are no longer held for you. Please pick them again.',
    INVALID_HOLD_TOKEN: 'Your seats are no longer held for you. Please pick them again.',
    SEAT_NOT_PRICED: 'One of the seats you picked is not for sale. Please pick another seat.',
    AMOUNT_MISMATCH: 'The price changed while you were choosing. Please check your order and try again.',
    CART_MISMATCH: 'Your order changed. Please check it and try again.',
    INVALID_BUYER_NAME: 'Please enter your name.',
    INVALID_BUYER_EMAIL: 'Please enter a valid e-mail address: your tickets are sent there.',
    INVALID_BUYER_PHONE: 'Please enter a shorter phone number (at most 32 characters).',
    INVALID_DISCOUNT_CODE: 'That discount code is not valid for these tickets.',
    TICKET_SOLD_OUT: 'Sorry, these tickets just sold out.',
    EVENT_SOLD_OUT: 'Sorry, this event just sold out.',
    TICKET_QUANTITY_EXCEEDS_CAPACITY: 'There are not that many tickets left. Please choose fewer.',
    QUANTITY_EXCEEDS_CAPACITY: 'There are not that many tickets left. Please choose fewer.',
    MAX_PER_ORDER_EXCEEDED: 'That is more tickets than one order can hold. Please choose fewer.',
    BUYER_LIMIT_REACHED: 'You have reached the number of tickets one buyer may get for this event.',
    EVENT_NOT_FOUND: 'We could not find this event.',
    EVENT_NOT_PUBLIC: 'This event is not on sale in this shop.',
    EVENT_NOT_AVAILABLE: 'This event is not on sale yet.',
    REGISTRATION_NOT_PAYABLE: 'This order can no longer be paid. Please start again.',
    NOT_FOUND: 'We could not find this order.',
    ORIGIN_NOT_ALLOWED: 'This shop is not set up to sell these tickets right now.',
    INVALID_KEY: 'This shop is not set up to sell these tickets right now.',
    MISSING_KEY: 'This shop is not set up to sell these tickets right now.',
    RATE_LIMITED: 'Too many attempts in a short time. Please wait a minute and try again.',
    PAYMENT_METHOD_UNAVAILABLE: 'This payment method is not offered here. Please try another one.',
    PAYMENT_PROCESSOR_ERROR: 'The payment service did not answer. Please try again.',
    SERVICE_UNAVAILABLE: 'The ticket service is busy. Please try again in a moment.',
    QUEUE_REQUIRED: 'This event sells through its waiting room: please join the queue first.',
    QUEUE_PASS_INVALID: 'Your place in the queue is for the e-mail address you joined with and the number of tickets you asked for. Please check your order.',
    QUEUE_PASS_EXPIRED: 'Your time to order ran out and your tickets went to the next in line. Please join the queue again.',
    QUEUE_PASS_USED: 'You have already ordered with your place in the queue.',
    QUEUE_SOLD_OUT: 'Sorry, this event is sold out: every ticket is sold or held by a buyer who is paying.',
    QUEUE_NOT_OPEN: 'The queue for this event is not open yet.'
  };

  // words turns an error into a sentence for the buyer.
  Shop.words = function (err) {
    if (typeof err === 'string') return err;
    if (!(err instanceof ApiError)) return 'Something went wrong. Please try again.';
    if (words[err.code]) return words[err.code];
    if (err.status === 429) return words.RATE_LIMITED;
    if (err.status >= 500) return words.SERVICE_UNAVAILABLE;
    let m = err.apiMessage || 'Something went wrong. Please try again.';
    m = m.charAt(0).toUpperCase() + m.slice(1);
    return /[.!?]$/.test(m) ? m : m + '.';
  };

  // fail shows err in words in an alert region (role=alert): #error at
  // the top of the page, or the one named (next to the button pressed),
  // and scrolls it into view.
  Shop.fail = function (err, where) {
    const box = document.getElementById(where || 'error');
    if (!box) return;
    box.textContent = Shop.words(err);
    const r = box.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight) box.scrollIntoView({ block: 'center' });
  };
  Shop.clearError = function () {
    for (const box of document.querySelectorAll('.alert')) box.textContent = '';
  };
  // say shows a neutral message in the page's status region (#status).
  Shop.say = function (msg) {
    const box = document.getElementById('status');
    if (box) box.textContent = msg;
  };

  Shop.param = function (name) {
    return new URLSearchParams(location.search).get(name) || '';
  };

  // cents converts an amount in currency units (the API's numbers) to
  // integer cents, so sums do not drift.
  Shop.cents = function (n) {
    return Math.round(Number(n) * 100);
  };
  const fmt = {};
  Shop.money = function (amount, currency) {
    const cur = currency || 'USD';
    if (!fmt[cur]) fmt[cur] = new Intl.NumberFormat('en-US', { style: 'currency', currency: cur });
    return fmt[cur].format(amount);
  };
  Shop.price = function (amount, currency) {
    return Number(amount) === 0 ? 'Free' : Shop.money(amount, currency);
  };

  const dateFmt = new Intl.DateTimeFormat('en-US', { weekday: 'short', month: 'short', day: 'numeric', year: 'numeric' });
  const timeFmt = new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });
  const monthFmt = new Intl.DateTimeFormat('en-US', { month: 'short' });
  Shop.when = function (iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    return dateFmt.format(d) + ' · ' + timeFmt.format(d);
  };
  // day and time are a date's two halves as Shop.when says them ("Fri,
  // Nov 12, 2027" and "7:00 PM UTC"): a showing's label.
  Shop.day = function (iso) {
    const d = new Date(iso);
    return isNaN(d) ? '' : dateFmt.format(d);
  };
  Shop.time = function (iso) {
    const d = new Date(iso);
    return isNaN(d) ? '' : timeFmt.format(d);
  };
  Shop.dayParts = function (iso) {
    const d = new Date(iso);
    if (isNaN(d)) return { month: '', day: '' };
    return { month: monthFmt.format(d), day: String(d.getDate()) };
  };

  // el builds an element: attributes (class, text, and the rest as
  // attributes; on* are never set) and children. API text only ever goes
  // in as text.
  Shop.el = function (tag, attrs) {
    const e = document.createElement(tag);
    const a = attrs || {};
    for (const k of Object.keys(a)) {
      const v = a[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) continue;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (let i = 2; i < arguments.length; i++) {
      const c = arguments[i];
      if (c === undefined || c === null || c === false) continue;
      e.append(c);
    }
    return e;
  };

  // The page of an event: seated events have the seat picker.
  Shop.eventHref = function (ev) {
    return (ev.seated ? '/seated.html?event=' : '/event.html?event=') + encodeURIComponent(ev.id);
  };

  // art picks one of the poster backgrounds for an event, always the same.
  Shop.art = function (id) {
    let h = 0;
    for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
    return 'art art-' + (h % 5);
  };

  // lowest is the lowest price a buyer sees for ev ("From ..."), 0 when
  // everything is free, null when nothing is priced.
  Shop.lowest = function (ev) {
    const prices = [];
    for (const t of ev.tickets || []) prices.push(Number(t.price));
    if (ev.seatMap) {
      for (const c of ev.seatMap.categories || []) if (c.price !== null && c.price !== undefined) prices.push(Number(c.price));
    }
    if (!prices.length) return null;
    const paid = prices.filter(function (p) { return p > 0; });
    return paid.length ? Math.min.apply(null, paid) : 0;
  };

  // hero fills the event header of a page (#hero) from ev.
  Shop.hero = function (ev) {
    const hero = document.getElementById('hero');
    if (!hero) return;
    hero.className = 'hero-event ' + Shop.art(ev.id);
    const d = Shop.dayParts(ev.startsAt);
    hero.replaceChildren(
      Shop.el('div', { class: 'wrap hero-inner' },
        Shop.el('div', { class: 'datebadge', 'aria-hidden': 'true' },
          Shop.el('span', { class: 'm', text: d.month }), Shop.el('span', { class: 'd', text: d.day })),
        Shop.el('div', {},
          Shop.el('h1', { text: ev.name }),
          Shop.el('p', { class: 'when' }, Shop.el('time', { datetime: ev.startsAt, text: Shop.when(ev.startsAt) }), Shop.showingsNote(ev)),
          Shop.el('p', { class: 'tag', text: Shop.kind(ev) }))));
    document.title = ev.name + ' · Demo Live';
  };

  // showingsNote is " · 3 showings" after the date of an event with
  // several showings (its startsAt is the first one's), else null.
  Shop.showingsNote = function (ev) {
    const n = (ev.showings || []).length;
    return n > 1 ? ' · ' + n + '\u00a0showings' : null; // no break inside "3 showings"
  };

  // kind is how the shop tags an event: its seating, or its waiting room.
  Shop.kind = function (ev) {
    return ev.seated ? 'Reserved seating' : (ev.waitingRoom ? 'Waiting room' : 'General admission');
  };

  // buyer reads the buyer fields of form (name, email, phone).
  Shop.buyer = function (form) {
    const b = { name: form.elements.name.value.trim(), email: form.elements.email.value.trim() };
    const phone = form.elements.phone ? form.elements.phone.value.trim() : '';
    if (phone) b.phone = phone;
    return b;
  };

  // offers says whether ticketd takes payment by method ("card",
  // "wallet") for the event: its detail's paymentMethods, as a host's site
  // should read it (all of them from a ticketd that does not say).
  Shop.offers = function (ev, method) {
    return !ev || !Array.isArray(ev.paymentMethods) || ev.paymentMethods.indexOf(method) >= 0;
  };

  // returnURLs are the hosted payment page's way back to the shop; ticketd
  // fills in {REGISTRATION_ID} and the processor {CHECKOUT_SESSION_ID}.
  Shop.returnURLs = function (eventId) {
    return {
      successUrl: location.origin + '/success.html?registration={REGISTRATION_ID}&session={CHECKOUT_SESSION_ID}',
      cancelUrl: location.origin + '/cancel.html?registration={REGISTRATION_ID}&event=' + encodeURIComponent(eventId)
    };
  };

  // grouped names a registration's tickets by label with their count:
  // "2 × General, VIP".
  Shop.grouped = function (tickets) {
    const n = new Map();
    for (const t of tickets || []) n.set(t.label, (n.get(t.label) || 0) + 1);
    return Array.from(n, function (e) { return e[1] > 1 ? e[1] + ' × ' + e[0] : e[0]; });
  };

  // checkout opens the hosted payment page of a registration (card, or
  // wallet with the fee-inclusive amount) and sends the buyer there. The
  // call is kept in this tab's sessionStorage so that the cancel page can
  // reopen the same registration's payment.
  Shop.checkout = async function (method, pay) {
    const path = method === 'wallet' ? '/wallet/create-payment' : '/card/create-checkout-session';
    const res = await Shop.api('POST', path, pay);
    try {
      sessionStorage.setItem('pay:' + pay.registrationId, JSON.stringify({ path: path, pay: pay }));
    } catch (e) {
      // Private mode: the cancel page then cannot offer to pay again.
    }
    Shop.say('Taking you to the secure payment page…');
    location.assign(res.url);
  };
  Shop.savedCheckout = function (registrationId) {
    try {
      return JSON.parse(sessionStorage.getItem('pay:' + registrationId) || 'null');
    } catch (e) {
      return null;
    }
  };

  // quoteGate tracks whether a quote is on its way, so that a pay button
  // pressed meanwhile can wait for it (event and seated pages): begin()
  // marks one started, settle() ends it and wakes every wait().
  Shop.quoteGate = function () {
    let quoting = false;
    let waiters = [];
    return {
      begin: function () { quoting = true; },
      settle: function () {
        quoting = false;
        const w = waiters;
        waiters = [];
        for (const r of w) r();
      },
      wait: function () {
        if (!quoting) return Promise.resolve();
        return new Promise(function (r) { waiters.push(r); });
      }
    };
  };

  // busy marks a button as working (aria-disabled, with a label saying
  // so) or gives it back its label. It is not disabled: a disabled button
  // loses the focus to <body>, and a keyboard or screen reader user their
  // place; Shop.isBusy guards the handlers instead.
  Shop.busy = function (btn, on, label) {
    if (!btn) return;
    if (on) {
      if (!btn.dataset.label) btn.dataset.label = btn.textContent;
      btn.textContent = label || 'Please wait…';
      btn.setAttribute('aria-disabled', 'true');
      btn.setAttribute('aria-busy', 'true');
    } else {
      if (btn.dataset.label) btn.textContent = btn.dataset.label;
      delete btn.dataset.label;
      btn.removeAttribute('aria-disabled');
      btn.removeAttribute('aria-busy');
    }
  };
  // isBusy: a button of form is working on an order already.
  Shop.isBusy = function (form) {
    return !!form.querySelector('[aria-busy="true"]');
  };

  // The buyer fields the API's codes are about.
  const fieldOf = { INVALID_BUYER_NAME: 'name', INVALID_BUYER_EMAIL: 'email', INVALID_BUYER_PHONE: 'phone' };

  // fieldError marks the field at fault (aria-invalid) and moves the focus
  // there, so the buyer lands where the fix is.
  Shop.fieldError = function (form, name, err) {
    const f = form.elements[name];
    if (!f) return false;
    f.setAttribute('aria-invalid', 'true');
    f.focus();
    Shop.fail(err, 'pay-error');
    return true;
  };

  // checkBuyer checks the required buyer fields before any call.
  Shop.checkBuyer = function (form) {
    for (const f of [form.elements.name, form.elements.email, form.elements.phone]) {
      if (f) f.removeAttribute('aria-invalid');
    }
    for (const f of [form.elements.name, form.elements.email]) {
      if (!f.checkValidity()) {
        Shop.fieldError(form, f.name, f.name === 'email' ? 'Please enter a valid e-mail address: your tickets are sent there.' : 'Please enter your name.');
        return false;
      }
    }
    return true;
  };

  // Codes after which the registration cannot be paid as it is: the next
  // try registers again. After any other failure (a busy or unreachable
  // service, a rate limit) the registration still holds the tickets or
  // seats (a seated one holds them instead of the hold token, which is
  // spent), so the next try pays the same registration.
  const deadRegistration = { REGISTRATION_NOT_PAYABLE: true, CART_MISMATCH: true, NOT_FOUND: true };

  // order registers the buyer (or reuses o.holder.pending, the registration
  // of the same order, when its key is o.key) and opens the hosted payment
  // page, shared by the event and seated pages. o: form, btn, method,
  // key, body (register-guest's), holder ({pending}), tag (kept with the
  // pending registration), payFor(reg) (the
  // checkout body), refresh() (re-quotes after an AMOUNT_MISMATCH),
  // reserving (the button's label meanwhile), ev, shop (the element a
  // confirmation replaces), after() (redraws after a failure), headers
  // (of register-guest: a waiting room's x-queue-pass).
  Shop.order = async function (o) {
    const h = o.holder;
    Shop.busy(o.btn, true, o.reserving);
    try {
      let reg = h.pending && h.pending.key === o.key ? h.pending.reg : null;
      if (!reg) {
        reg = await Shop.api('POST', '/register-guest', o.body, o.headers ? { headers: o.headers } : undefined);
        h.pending = { key: o.key, reg: reg, tag: o.tag || {} };
      }
      if (reg.status === 'confirmed') {
        h.pending = null;
        Shop.confirmed(o.shop, o.ev, reg, o.body.email);
        Shop.say('Your registration is confirmed.');
        return;
      }
      Shop.busy(o.btn, true, 'Opening secure checkout…');
      try {
        await Shop.checkout(o.method, o.payFor(reg));
      } catch (err) {
        if (err.code !== 'AMOUNT_MISMATCH') throw err;
        // The page's figures were stale: quote again, read the
        // registration's own total, and pay the same registration.
        await o.refresh();
        const now = await Shop.api('GET', '/registration/' + encodeURIComponent(reg.registrationId));
        reg = Object.assign({}, reg, { total: now.total, amount: now.amount });
        h.pending = { key: o.key, reg: reg, tag: o.tag || {} };
        await Shop.checkout(o.method, o.payFor(reg));
      }
    } catch (err) {
      if (deadRegistration[err.code] || err.status === 404) h.pending = null;
      Shop.busy(o.btn, false);
      if (!fieldOf[err.code] || !Shop.fieldError(o.form, fieldOf[err.code], err)) Shop.fail(err, 'pay-error');
      o.after();
    }
  };

  // orderRef is the short order reference a buyer reads and quotes: the
  // first ten characters of the order id's random part (after its leading
  // "o"), in capitals, in two groups of five. The id
  // "o72atessijrh77igh2o24foeg.ev_demo_seated" is 72ATE-SSIJR. The random
  // part is base32 (a-z, 2-7): a reference has no 0, 1, 8 or 9. It is how
  // the id begins, so the order is found from it (docs/decisions.md, Order
  // reference). An id of another shape is shown whole.
  Shop.orderRef = function (id) {
    const m = /^o([a-z2-7]{10})[a-z2-7]*\./.exec(id || '');
    return m ? (m[1].slice(0, 5) + '-' + m[1].slice(5)).toUpperCase() : id;
  };

  // orderRefEl is the reference of order id as the pages show it, the
  // full id in its data-order-id; orderIdDetails is the full id folded
  // away under it, for the buyer to give support if asked.
  Shop.orderRefEl = function (id) {
    return Shop.el('span', { class: 'ref', 'data-order-id': id, text: Shop.orderRef(id) });
  };
  Shop.orderIdDetails = function (id) {
    return Shop.el('details', { class: 'order-id fine' },
      Shop.el('summary', { text: 'Full order id' }), Shop.el('p', { class: 'mono', text: id }));
  };

  // confirmed replaces the order form with the confirmation of a free
  // registration (interface.md flow 3a).
  Shop.confirmed = function (host, ev, reg, email) {
    const list = Shop.el('ul', { class: 'tickets-list', 'aria-label': 'Your tickets' });
    for (const label of Shop.grouped(reg.tickets)) list.append(Shop.el('li', { text: label }));
    const done = Shop.el('section', { id: 'done', class: 'panel done', 'data-status': reg.status, tabindex: '-1', 'aria-labelledby': 'done-h' },
      Shop.el('div', { class: 'tick', 'aria-hidden': 'true' }),
      Shop.el('h2', { id: 'done-h', text: 'You’re going to ' + ev.name + '!' }),
      Shop.el('p', { class: 'lead', text: 'Your registration is confirmed.' }),
      Shop.el('p', { text: 'Your tickets are on their way to ' + email + '. Show the QR code from the e-mail at the door.' }),
      (reg.tickets || []).length ? list : null,
      Shop.el('p', { class: 'fine' }, 'Order reference ', Shop.orderRefEl(reg.registrationId)),
      Shop.orderIdDetails(reg.registrationId),
      Shop.el('a', { class: 'btn secondary', href: '/', text: 'Browse more events' }));
    host.replaceChildren(done);
    done.focus();
  };

  window.Shop = Shop;
})();
