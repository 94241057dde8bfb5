// The seated flow: ticketd's seat picker in an iframe. The page says hello
// to it when it loads (to the picker's origin only), takes its "held"
// messages (from that origin only) as the buyer's seats, quotes them, and
// registers them with their hold token before the hosted payment page
// (interface.md, Seat picker).
'use strict';

(function () {
  const Shop = window.Shop;
  const $ = function (id) { return document.getElementById(id); };

  const state = {
    ev: null,
    origin: '', // the picker's origin
    seats: [], // held seat labels, as the picker last said
    token: '', // their hold token
    subtotal: 0, // in cents, as the picker said
    quote: null,
    seq: 0,
    // {key, reg, tag: {token, seats}}: the registration of the seats last
    // registered. It holds them instead of the hold token (spent), so a
    // failed checkout is retried for it, never by registering again.
    pending: null,
    // An event with a waiting room: the room (room.js), and the pass it
    // gave, which the picker's first hold burns (handed over in the hello).
    room: null,
    pass: '',
    quantity: 0, // the seats the pass covers (what the buyer joined the queue for)
    holding: false, // the room says the pass made the buyer's hold token
    shown: false // the picker and the order form are on the page
  };

  function row(label, value, cls) {
    return Shop.el('div', { class: cls || '' }, Shop.el('dt', { text: label }), Shop.el('dd', { text: value }));
  }

  function render() {
    const cur = state.ev.currency;
    const list = $('seats');
    list.replaceChildren.apply(list, state.seats.map(function (l) { return Shop.el('li', { class: 'chip', 'data-seat': l, text: 'Seat ' + l }); }));
    $('empty').hidden = state.seats.length > 0;
    const totals = $('totals');
    totals.replaceChildren();
    const q = state.quote;
    if (state.seats.length) {
      totals.append(row(state.seats.length === 1 ? '1 seat' : state.seats.length + ' seats', Shop.money(state.subtotal / 100, cur), 'subtotal'));
      if (q) {
        if (Shop.cents(q.fee)) totals.append(row('Service fee', Shop.money(q.fee, cur)));
        if (Shop.cents(q.vat)) totals.append(row('VAT', Shop.money(q.vat, cur)));
        totals.append(row('Total', Shop.money(q.total, cur), 'total'));
      } else {
        totals.append(row('Total', 'Calculating…', 'total'));
      }
    }
    // Pay stays enabled while a quote is on its way: pressing it waits
    // for the quote (a disabled button would swallow the click).
    const ready = state.seats.length > 0;
    const card = $('pay-card');
    if (!card.getAttribute('aria-busy')) {
      card.textContent = q ? 'Pay ' + Shop.money(q.total, cur) + ' by card' : 'Continue to payment';
      card.disabled = !ready;
    }
    const wallet = $('pay-wallet');
    if (!wallet.getAttribute('aria-busy')) wallet.disabled = !ready;
    // Only the methods ticketd takes here are offered.
    card.hidden = !Shop.offers(state.ev, 'card');
    wallet.hidden = !Shop.offers(state.ev, 'wallet');
  }

  // announce says the order's total with fees once it is quoted, in the
  // page's live region (#status). Which seats were held or let go, and
  // their prices, the picker says in its own live region at the same
  // moment: said twice, with the subtotal there and the total here, the
  // two sentences talked over each other with two different amounts.
  function announce() {
    if (!state.seats.length || !state.quote) return;
    Shop.say('Your order total, with fees: ' + Shop.money(state.quote.total, state.ev.currency) + '.');
  }

  let timer = 0;
  const gate = Shop.quoteGate();
  const settle = gate.settle;
  // quoted resolves once no quote is on its way.
  const quoted = gate.wait;
  function requote() {
    clearTimeout(timer);
    state.quote = null;
    render();
    if (!state.seats.length) {
      settle();
      announce();
      return;
    }
    gate.begin();
    timer = setTimeout(async function () {
      const seq = ++state.seq;
      try {
        const q = await Shop.api('POST', '/quote', { eventId: state.ev.id, seatLabels: state.seats });
        if (seq !== state.seq) return;
        state.quote = q;
        $('pay-error').textContent = '';
      } catch (err) {
        if (seq !== state.seq) return;
        Shop.fail(err, 'pay-error');
      }
      render();
      announce();
      settle();
    }, 150);
  }

  function same(a, b) {
    return a.length === b.length && a.every(function (l) { return b.includes(l); });
  }

  // onMessage takes the picker's held set, and its height: the frame is
  // sized to the picker, so the page scrolls, never the frame, and no
  // empty space is left below the picker. Anything not from the picker's
  // window and origin is ignored.
  function onMessage(e) {
    const frame = $('picker');
    if (e.origin !== state.origin || e.source !== frame.contentWindow) return;
    const m = e.data;
    if (!m || typeof m !== 'object') return;
    if (m.type === 'height') {
      if (Number.isFinite(m.height) && m.height > 0) frame.style.height = Math.min(Math.ceil(m.height), 100000) + 'px';
      return;
    }
    if (m.type !== 'held' || !Array.isArray(m.seatLabels)) return;
    const seats = m.seatLabels.filter(function (l) { return typeof l === 'string'; });
    const token = typeof m.holdToken === 'string' ? m.holdToken : '';
    const p = state.pending;
    // The same set again (the answer to a hello), or, once registered,
    // seats gone from the hold to the registration: they are still the
    // buyer's, and the registration the one to pay.
    if (same(seats, state.seats) && token === state.token) return;
    if (p && token === p.tag.token && seats.every(function (l) { return p.tag.seats.includes(l); })) return;
    // a new hold token of an event with a room: the buyer's first hold
    // used the pass, which the room now says
    if (state.room && token && token !== state.token) state.room.poll();
    state.seats = seats;
    state.token = token;
    state.subtotal = Shop.cents(m.subtotal || 0);
    state.pending = null;
    $('pay-error').textContent = '';
    requote();
  }

  async function submit(e) {
    e.preventDefault();
    const form = $('order');
    if (Shop.isBusy(form)) return;
    const btn = e.submitter || $('pay-card');
    const method = btn.dataset.method || 'card';
    Shop.clearError();
    if (!state.seats.length || !state.token) {
      Shop.fail('Pick at least one seat on the seat map.', 'pay-error');
      return;
    }
    if (!Shop.checkBuyer(form)) return;
    Shop.busy(btn, true, 'Reserving your seats…');
    await quoted();
    if (!state.quote) {
      requote();
      await quoted();
    }
    Shop.busy(btn, false);
    if (!state.quote) return; // the quote was refused: pay-error says why
    const seats = { seatLabels: state.seats.slice(), seatHoldToken: state.token };
    const body = Object.assign({ eventId: state.ev.id }, seats, Shop.buyer(form));
    // The seats and their token name the registration: the buyer's
    // details go with it, as first registered.
    const key = JSON.stringify(seats);
    await Shop.order({
      tag: { token: seats.seatHoldToken, seats: seats.seatLabels },
      form: form, btn: btn, method: method, key: key, body: body, holder: state,
      reserving: 'Reserving your seats…', ev: state.ev, shop: $('shop'),
      payFor: function (reg) {
        const pay = Object.assign({ eventId: state.ev.id, registrationId: reg.registrationId }, seats, Shop.returnURLs(state.ev.id));
        if (method === 'wallet') pay.amount = reg.total;
        else pay.selectedTicketAmount = state.subtotal / 100; // the seats at their prices, before the fee
        return pay;
      },
      refresh: function () {
        requote();
        return quoted();
      },
      after: render
    });
  }

  async function main() {
    const ref = Shop.param('event');
    let ev, cfg;
    try {
      cfg = await Shop.config();
      if (!ref) throw new Shop.ApiError(404, 'EVENT_NOT_FOUND', '');
      ev = await Shop.api('GET', '/events/' + encodeURIComponent(ref));
    } catch (err) {
      $('hero').querySelector('h1').textContent = 'Event not available';
      Shop.fail(err);
      return;
    }
    if (!ev.seated) {
      location.replace(Shop.eventHref(ev));
      return;
    }
    state.ev = ev;
    Shop.hero(ev);
    state.src = cfg.apiBase + '/events/' + encodeURIComponent(ev.slug) + '/' + encodeURIComponent(ev.shortId) + '/seatmap?app=storefront';
    state.origin = new URL(state.src).origin;
    window.addEventListener('message', onMessage);
    $('order').addEventListener('submit', submit);
    if (ev.waitingRoom && window.Room) {
      // Seats are picked through the queue: the picker shows once the
      // buyer is let in, with the pass for its first hold.
      state.room = window.Room.start(ev, { admitted: admitted, closed: closed, used: used });
      return;
    }
    show();
  }

  // hello tells the picker who its host is (to its origin only), with the
  // waiting room's pass when there is one and the seats it covers
  // (quantity); it answers with the seats it holds.
  function hello() {
    const m = { source: 'service-host', type: 'hello' };
    if (state.room) m.queued = true; // seats are held through the queue
    if (state.pass) m.pass = state.pass;
    // the seats the pass covers: the picker's best-available asks for that many at most
    if (state.room && state.quantity > 0) m.quantity = state.quantity;
    if (state.pass && state.holding) m.recover = true; // the pass made the hold token already
    $('picker').contentWindow.postMessage(m, state.origin);
  }

  // show puts the picker and the order form on the page, once.
  function show() {
    $('order').hidden = false;
    if (state.shown) return;
    state.shown = true;
    const frame = $('picker');
    // Hello on every load of the picker (a reload of the frame included).
    frame.addEventListener('load', hello);
    frame.src = state.src;
    render();
  }

  // joined fills in the e-mail the buyer joined the queue with: the pass,
  // and so the seats, are for that address.
  function joined(email) {
    const input = $('email');
    input.value = email;
    input.readOnly = true;
    $('email-hint').textContent = 'Your place in the queue is for this address: we send your tickets to it.';
  }

  // The pass is kept in the tab's sessionStorage: once used, the room no
  // longer shows it, and a picker that lost its hold token (a reload with
  // its storage gone) finds it again with the same pass (a retry of
  // hold-token answers the pass's token).
  function passKey() {
    return 'seatpass:' + state.ev.id;
  }
  function keepPass(pass) {
    state.pass = pass;
    try {
      if (pass) sessionStorage.setItem(passKey(), pass);
      else sessionStorage.removeItem(passKey());
    } catch (e) {
      // storage refused: the pass lasts as long as the page
    }
  }
  function keptPass() {
    try {
      return sessionStorage.getItem(passKey()) || '';
    } catch (e) {
      return state.pass;
    }
  }

  // admitted: the room let the buyer in with a pass, which the picker's
  // first hold uses (a new pass, after a lapsed one, reaches it too).
  function admitted(p) {
    const fresh = p.pass !== state.pass || p.quantity !== state.quantity;
    keepPass(p.pass);
    state.quantity = p.quantity;
    joined(p.email);
    if (state.shown && fresh) hello();
    show();
  }

  // used: the pass made the buyer's hold token, which holds their seats:
  // the picker keeps them, and the pass (kept) finds the token again.
  function used(p) {
    if (!state.pass) state.pass = keptPass();
    state.quantity = p.quantity;
    state.holding = true;
    joined(p.email);
    show();
    return true;
  }

  function closed() {
    keepPass('');
    state.holding = false;
    $('email').readOnly = false;
    $('email-hint').textContent = 'We send your tickets to this address.';
    $('order').hidden = true;
  }

  main();
})();
