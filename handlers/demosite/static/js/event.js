// The ticket page of a general-admission event: tickets with quantity
// pickers (hidden ones behind an access code), extras, a discount code and
// refund protection, a live quote, the buyer's details, then register-guest
// and, for a paid order, the hosted payment page (interface.md,
// Recommended flow 1 to 3). On a multi-showing event the buyer first
// chooses a showing (a radio group; ?showing= keeps the choice across a
// reload), which the quote and register-guest send as showingId, and
// whose line of the waiting room, if the event has one, the page shows.
'use strict';

(function () {
  const Shop = window.Shop;
  const $ = function (id) { return document.getElementById(id); };
  const MAX = 10; // the most of one ticket type the page offers

  const state = {
    ev: null,
    qty: {}, // ticket id -> quantity
    extras: {}, // extra id -> quantity
    access: '', // an access code that unlocked a ticket
    discount: '', // the discount code applied
    quote: null,
    seq: 0, // the newest quote asked for; older answers are dropped
    pending: null, // {key, reg}: the registration of the cart and buyer last registered
    room: null, // the waiting room (room.js), for an event that has one
    pass: '', // the room's pass while the buyer is admitted: x-queue-pass
    passQty: 0, // the tickets the pass covers
    passShowing: '', // the showing the pass buys, on a multi-showing event
    showing: '' // the showing chosen, on a multi-showing event
  };

  function showingOf(id) {
    return (state.ev.showings || []).find(function (sh) { return sh.id === id; }) || null;
  }

  // needShowing says the event has showings and none is chosen yet.
  function needShowing() {
    return (state.ev.showings || []).length > 0 && !state.showing;
  }

  function ticketMax(t) {
    let max = Math.min(MAX, Number(t.maxPerOrder) || MAX);
    if (t.remaining !== undefined && t.remaining !== null) max = Math.min(max, Number(t.remaining));
    if (state.passQty) max = Math.min(max, state.passQty);
    const sh = showingOf(state.showing);
    if (sh && sh.remaining !== undefined && sh.remaining !== null) max = Math.min(max, Number(sh.remaining));
    return Math.max(0, max);
  }

  // stepper is a quantity picker: a number field between − and + buttons.
  function stepper(kind, item, max, value) {
    const id = 'q-' + kind + '-' + item.id;
    const noun = kind === 'ticket' ? item.name + ' ticket' : item.name;
    const input = Shop.el('input', { id: id, type: 'number', inputmode: 'numeric', min: 0, max: max, value: value, class: 'qty',
      'data-kind': kind, 'data-id': item.id, 'aria-label': 'Number of ' + (kind === 'ticket' ? item.name + ' tickets' : item.name), disabled: max === 0 });
    const minus = Shop.el('button', { type: 'button', class: 'step minus', 'data-for': id, 'data-step': '-1', 'aria-label': 'Remove one ' + noun, disabled: max === 0, text: '−' });
    const plus = Shop.el('button', { type: 'button', class: 'step plus', 'data-for': id, 'data-step': '1', 'aria-label': 'Add one ' + noun, disabled: max === 0, text: '+' });
    return Shop.el('div', { class: 'stepper', role: 'group', 'aria-label': 'Quantity: ' + item.name }, minus, input, plus);
  }

  function note(t) {
    if (t.soldOut) return Shop.el('span', { class: 'note bad', text: 'Sold out' });
    if (t.remaining !== undefined && t.remaining !== null && t.remaining <= 20) return Shop.el('span', { class: 'note warn', text: 'Only ' + t.remaining + ' left' });
    if (t.hidden) return Shop.el('span', { class: 'note ok', text: 'Unlocked with your code' });
    return null;
  }

  function renderTickets() {
    const ev = state.ev;
    const list = $('tickets');
    list.replaceChildren();
    for (const t of ev.tickets) {
      const max = t.soldOut ? 0 : ticketMax(t);
      if (state.qty[t.id] > max) state.qty[t.id] = max;
      list.append(Shop.el('li', { class: 'item' + (t.hidden ? ' unlocked' : ''), 'data-ticket': t.id },
        Shop.el('div', { class: 'item-info' },
          Shop.el('span', { class: 'item-name', text: t.name }),
          Shop.el('span', { class: 'item-price', text: Shop.price(t.price, ev.currency) }),
          note(t)),
        stepper('ticket', t, max, state.qty[t.id] || 0)));
    }
    if (!ev.tickets.length) list.append(Shop.el('li', { class: 'muted', text: 'No tickets are on sale for this event.' }));
  }

  // renderShowings shows the showing choice of a multi-showing event: a
  // radio per showing, named by its date and time (and what it has left
  // when little), a sold-out one not to be chosen.
  function renderShowings() {
    const list = state.ev.showings || [];
    $('showings-panel').hidden = list.length === 0;
    if (!list.length) return;
    const box = $('showings');
    box.replaceChildren();
    for (const sh of list) {
      const left = sh.remaining;
      const known = left !== undefined && left !== null;
      const out = known && left <= 0;
      let note = null;
      if (out) note = Shop.el('span', { class: 'note bad', text: 'Sold out' });
      else if (known && left <= 20) note = Shop.el('span', { class: 'note warn', text: left + ' left' });
      const input = Shop.el('input', { type: 'radio', name: 'showing', value: sh.id, id: 'showing-' + sh.id,
        checked: state.showing === sh.id, disabled: out && state.showing !== sh.id });
      // The spaces keep the label's words apart for a screen reader; the
      // flex layout does not draw them.
      box.append(Shop.el('label', { class: 'showing', for: 'showing-' + sh.id, 'data-showing': sh.id }, input, ' ',
        Shop.el('span', { class: 'showing-text' },
          Shop.el('span', { class: 'showing-day', text: Shop.day(sh.startsAt) }), ' ',
          Shop.el('span', { class: 'showing-time', text: Shop.time(sh.startsAt) })), ' ', note));
    }
    $('showings-hint').textContent = state.ev.waitingRoom
      ? 'Each showing has its own queue: choose one, then join its queue below.'
      : 'Your tickets are for the showing you choose.';
    showShowing();
  }

  // showShowing names the chosen showing in the order summary.
  function showShowing() {
    const box = $('order-showing');
    const sh = showingOf(state.showing);
    box.hidden = !(state.ev.showings || []).length;
    if (!sh) {
      box.textContent = 'Choose a showing first.';
      return;
    }
    box.replaceChildren('Showing: ', Shop.el('strong', {}, Shop.el('time', { datetime: sh.startsAt, text: Shop.when(sh.startsAt) })));
  }

  // choose makes showing id the one the page sells (and, with a waiting
  // room, whose line it shows); the URL keeps it for a reload.
  function choose(id) {
    if (state.showing === id || !showingOf(id)) return;
    state.showing = id;
    state.pending = null;
    try {
      const u = new URL(location.href);
      u.searchParams.set('showing', id);
      history.replaceState(history.state, '', u.href);
    } catch (e) {
      // no history: a reload finds the choice from the room's place, if any
    }
    showShowing();
    renderTickets();
    if (state.room) state.room.use(showingOf(id));
    requote();
  }

  // focusShowings takes the buyer to the showing choice.
  function focusShowings() {
    const r = $('showings').querySelector('input:checked') || $('showings').querySelector('input:not(:disabled)');
    if (r) r.focus();
  }

  // initialShowing is the showing the page opens on: the URL's, else the
  // one whose line this tab has a place in, else the only one.
  function initialShowing(ev) {
    const list = ev.showings || [];
    if (!list.length) return '';
    const want = Shop.param('showing');
    if (list.some(function (sh) { return sh.id === want; })) return want;
    const placed = ev.waitingRoom && window.Room ? window.Room.placed(ev) : '';
    if (placed) return placed;
    return list.length === 1 ? list[0].id : '';
  }

  function renderExtras() {
    const ev = state.ev;
    const xs = ev.extras || [];
    $('extras-panel').hidden = xs.length === 0;
    const list = $('extras');
    list.replaceChildren();
    for (const x of xs) {
      let max = MAX;
      if (x.remaining !== undefined && x.remaining !== null) max = Math.min(max, Number(x.remaining));
      list.append(Shop.el('li', { class: 'item', 'data-extra': x.id },
        Shop.el('div', { class: 'item-info' },
          Shop.el('span', { class: 'item-name', text: x.name }),
          Shop.el('span', { class: 'item-price', text: Shop.price(x.price, ev.currency) }),
          max === 0 ? Shop.el('span', { class: 'note bad', text: 'Sold out' }) : null),
        stepper('extra', x, Math.max(0, max), state.extras[x.id] || 0)));
    }
  }

  function selected() {
    return Object.keys(state.qty).filter(function (id) { return state.qty[id] > 0; });
  }

  // cart is the cart fields of the quote, register-guest and (in part) the
  // card checkout: one ticket type as selectedTicketId and quantity (as
  // interface.md shows it), several as tickets.
  function cart() {
    const b = { eventId: state.ev.id };
    // An admitted buyer buys the showing their pass is of.
    const showing = state.pass && state.passShowing ? state.passShowing : state.showing;
    if (showing) b.showingId = showing;
    const ids = selected();
    if (ids.length === 1) {
      b.selectedTicketId = ids[0];
      b.quantity = state.qty[ids[0]];
    } else if (ids.length > 1) {
      b.tickets = ids.map(function (id) { return { ticketId: id, quantity: state.qty[id] }; });
    }
    const xs = Object.keys(state.extras).filter(function (id) { return state.extras[id] > 0; });
    if (xs.length) b.extras = xs.map(function (id) { return { extraId: id, quantity: state.extras[id] }; });
    if (state.discount) b.discountCode = state.discount;
    if (state.access) b.accessCode = state.access;
    if ($('refund').checked && !$('refund-row').hidden) b.refundProtectionOptIn = true;
    return b;
  }

  // admissions is the tickets' subtotal in cents (unit price times
  // quantity): the card checkout's selectedTicketAmount.
  function admissions() {
    let sum = 0;
    for (const t of state.ev.tickets) sum += Shop.cents(t.price) * (state.qty[t.id] || 0);
    return sum;
  }

  function row(label, value, cls) {
    return Shop.el('div', { class: cls || '' }, Shop.el('dt', { text: label }), Shop.el('dd', { text: value }));
  }

  // freeEvent says whether nothing the event sells costs anything: every
  // ticket (and extra) it lists is priced 0.
  function freeEvent(ev) {
    const zero = function (x) { return Shop.cents(x.price) === 0; };
    return ev.tickets.length > 0 && ev.tickets.every(zero) && (ev.extras || []).every(zero);
  }

  function renderSummary() {
    const ev = state.ev;
    const cur = ev.currency;
    const ids = selected();
    const lines = $('lines');
    lines.replaceChildren();
    for (const t of ev.tickets) {
      const n = state.qty[t.id] || 0;
      if (n > 0) lines.append(Shop.el('li', {}, Shop.el('span', { text: n + ' × ' + t.name }), Shop.el('span', { text: Shop.price(Shop.cents(t.price) * n / 100, cur) })));
    }
    for (const x of ev.extras || []) {
      const n = state.extras[x.id] || 0;
      if (n > 0) lines.append(Shop.el('li', {}, Shop.el('span', { text: n + ' × ' + x.name }), Shop.el('span', { text: Shop.money(Shop.cents(x.price) * n / 100, cur) })));
    }
    $('empty').hidden = ids.length > 0;
    const totals = $('totals');
    totals.replaceChildren();
    const q = state.quote;
    // Free: the quote's total is 0 or, before a quote, nothing on sale
    // costs anything (a free event shows no payment choices at all).
    const free = q ? Shop.cents(q.total) === 0 : freeEvent(ev);
    if (ids.length && q) {
      // The quote's subtotal is the tickets'; extras are added after the
      // discount (pricing: total = subtotal - discount + extras + fee + VAT).
      if (!free) totals.append(row('Tickets', Shop.money(q.subtotal, cur)));
      const extras = (q.extras || []).reduce(function (sum, x) { return sum + Shop.cents(x.amount); }, 0);
      if (extras) totals.append(row('Extras', Shop.money(extras / 100, cur)));
      if (Shop.cents(q.discount)) totals.append(row('Discount' + (state.discount ? ' (' + state.discount + ')' : ''), '−' + Shop.money(q.discount, cur), 'discount'));
      if (Shop.cents(q.fee)) totals.append(row('Service fee', Shop.money(q.fee, cur)));
      if (Shop.cents(q.vat)) totals.append(row('VAT', Shop.money(q.vat, cur)));
      if (q.refundProtection && Shop.cents(q.refundProtection.amount)) totals.append(row('Refund protection', Shop.money(q.refundProtection.amount, cur)));
      totals.append(row('Total', Shop.price(q.total, cur), 'total'));
      $('total-live').textContent = 'Total ' + Shop.price(q.total, cur);
    } else if (ids.length) {
      totals.append(row('Total', needShowing() ? 'Choose a showing first' : 'Calculating…', 'total'));
    }
    // Pay stays enabled while a quote is on its way: pressing it waits
    // for the quote (a disabled button would swallow the click).
    const ready = ids.length > 0;
    const card = $('pay-card');
    const wallet = $('pay-wallet');
    if (!card.getAttribute('aria-busy')) {
      card.textContent = free ? 'Get free tickets' : (q ? 'Pay ' + Shop.money(q.total, cur) + ' by card' : 'Continue to payment');
      card.disabled = !ready;
    }
    state.summaryTotal = ids.length && q ? Shop.price(q.total, cur) : '';
    bar();
    // A free order has nothing to pay and nothing to discount; a method
    // ticketd does not take here is not offered.
    wallet.hidden = !!free || !Shop.offers(ev, 'wallet');
    card.hidden = !free && !Shop.offers(ev, 'card');
    $('secure').hidden = !!free;
    $('discount-box').hidden = !!free && !state.discount;
    if (!wallet.getAttribute('aria-busy')) wallet.disabled = !ready;
  }

  // bar shows the total at the bottom of a phone's screen while the
  // summary (and its pay button) is out of view. It hides while the buyer
  // types in a field (with the keyboard up it would cover the field), and
  // while it shows the page keeps focused elements clear of it
  // (scroll-padding-bottom, site.css html.with-bar).
  let summaryVisible = true;
  let editing = false;
  function bar() {
    $('bar-total').textContent = state.summaryTotal || '';
    $('bar').hidden = summaryVisible || editing || !state.summaryTotal || $('order').hidden;
    document.documentElement.classList.toggle('with-bar', !$('bar').hidden);
  }
  function isField(el) {
    return !!el && el.matches('input:not([type="checkbox"]):not([type="radio"]), textarea, select');
  }
  function watchSummary() {
    const form = $('order');
    form.addEventListener('focusin', function (e) {
      editing = isField(e.target);
      bar();
    });
    form.addEventListener('focusout', function (e) {
      if (!isField(e.relatedTarget)) editing = false;
      bar();
    });
    $('bar-go').addEventListener('click', function (e) {
      e.preventDefault();
      document.querySelector('.summary').scrollIntoView({ behavior: 'smooth', block: 'start' });
      // The heading, not the pay button, which may be waiting for a quote.
      $('summary-h').focus({ preventScroll: true });
    });
    if (!('IntersectionObserver' in window)) return;
    new IntersectionObserver(function (entries) {
      summaryVisible = entries[0].isIntersecting;
      bar();
    }).observe(document.querySelector('.summary'));
  }

  let timer = 0;
  const gate = Shop.quoteGate();
  const settle = gate.settle;
  // quoted resolves once no quote is on its way.
  const quoted = gate.wait;

  // requote asks for a quote of the cart (debounced), which the summary
  // shows; a quote refused (a code not valid, too many tickets) says why.
  function requote() {
    clearTimeout(timer);
    state.quote = null;
    renderSummary();
    if (!selected().length || needShowing()) {
      settle();
      return;
    }
    gate.begin();
    timer = setTimeout(async function () {
      const seq = ++state.seq;
      try {
        const q = await Shop.api('POST', '/quote', cart());
        if (seq !== state.seq) return;
        state.quote = q;
        $('pay-error').textContent = '';
        if (state.discount) $('discount-note').textContent = state.discount + ' applied' + (Shop.cents(q.discount) ? ': you save ' + Shop.money(q.discount, state.ev.currency) + '.' : '.');
      } catch (err) {
        if (seq !== state.seq) return;
        if (err.code === 'INVALID_DISCOUNT_CODE' && state.discount) {
          // Drop the code and price the cart without it.
          $('discount-note').textContent = '';
          state.discount = '';
          Shop.fail(err, 'pay-error');
          requote();
          return;
        }
        Shop.fail(err, 'pay-error');
      }
      renderSummary();
      settle();
    }, 250);
  }

  function setQty(input, n) {
    const max = Number(input.max);
    n = Math.max(0, Math.min(max, Math.floor(Number(n) || 0)));
    input.value = String(n);
    (input.dataset.kind === 'ticket' ? state.qty : state.extras)[input.dataset.id] = n;
    requote();
  }

  async function load(access) {
    const ref = Shop.param('event');
    if (!ref) throw new Shop.ApiError(404, 'EVENT_NOT_FOUND', '');
    let path = '/events/' + encodeURIComponent(ref);
    if (access) path += '?accessCode=' + encodeURIComponent(access);
    return Shop.api('GET', path);
  }

  async function unlock() {
    const code = $('access-code').value.trim();
    const btn = $('access-apply');
    if (btn.getAttribute('aria-busy')) return; // busy is aria-disabled only
    if (!code) {
      Shop.fail('Enter the access code you were given.', 'error');
      return;
    }
    Shop.busy(btn, true, 'Checking…');
    try {
      const before = state.ev.tickets.length;
      const ev = await load(code);
      if (ev.tickets.length <= before) {
        Shop.fail('That access code does not unlock any tickets for this event.', 'error');
        return;
      }
      state.ev = ev;
      state.access = code;
      Shop.clearError();
      renderTickets();
      const names = ev.tickets.filter(function (t) { return t.hidden; }).map(function (t) { return t.name; });
      Shop.say('Code accepted: ' + names.join(', ') + ' tickets unlocked.');
      $('access').open = false;
      requote();
    } catch (err) {
      Shop.fail(err, 'error');
    } finally {
      Shop.busy(btn, false);
    }
  }

  async function submit(e) {
    e.preventDefault();
    const form = $('order');
    if (Shop.isBusy(form)) return;
    const btn = e.submitter || $('pay-card');
    const method = btn.dataset.method || 'card';
    Shop.clearError();
    if (needShowing()) {
      Shop.fail('Choose a showing first.', 'pay-error');
      focusShowings();
      return;
    }
    if (!selected().length) {
      Shop.fail('Choose at least one ticket.', 'pay-error');
      return;
    }
    if (!Shop.checkBuyer(form)) return;
    // A quantity changed just before the click: pay for what the buyer
    // now sees quoted.
    Shop.busy(btn, true, 'Reserving your tickets…');
    await quoted();
    if (!state.quote) {
      requote();
      await quoted();
    }
    Shop.busy(btn, false);
    if (!state.quote) return; // the quote was refused: pay-error says why
    const body = Object.assign(cart(), Shop.buyer(form));
    await Shop.order({
      form: form, btn: btn, method: method, key: JSON.stringify(body), body: body, holder: state,
      reserving: 'Reserving your tickets…', ev: state.ev, shop: $('shop'),
      payFor: function (reg) {
        const pay = Object.assign({ eventId: state.ev.id, registrationId: reg.registrationId }, Shop.returnURLs(state.ev.id));
        if (body.selectedTicketId) {
          pay.selectedTicketId = body.selectedTicketId;
          pay.quantity = body.quantity;
        }
        if (method === 'wallet') pay.amount = reg.total;
        else pay.selectedTicketAmount = admissions() / 100;
        return pay;
      },
      refresh: async function () {
        // Prices changed: read them again, then the quote.
        state.ev = await load(state.access);
        renderTickets();
        requote();
        await quoted();
      },
      headers: state.pass ? { 'x-queue-pass': state.pass } : undefined,
      after: function () {
        renderSummary();
        if (state.room) state.room.poll(); // a refused pass: the room says why
      }
    });
  }

  function wire() {
    const form = $('order');
    form.addEventListener('click', function (e) {
      const b = e.target.closest('button.step');
      if (!b) return;
      const input = $(b.dataset.for);
      setQty(input, Number(input.value) + Number(b.dataset.step));
    });
    form.addEventListener('change', function (e) {
      if (e.target.classList.contains('qty')) setQty(e.target, e.target.value);
      if (e.target.id === 'refund') requote();
    });
    // Any change of the order or the buyer needs a new registration.
    form.addEventListener('input', function () { state.pending = null; });
    $('access-apply').addEventListener('click', unlock);
    $('access-code').addEventListener('keydown', function (e) {
      if (e.key === 'Enter') { e.preventDefault(); unlock(); }
    });
    const applyDiscount = function () {
      state.discount = $('discount').value.trim().toUpperCase();
      $('discount-note').textContent = '';
      if (state.discount && !selected().length) $('discount-note').textContent = 'Choose your tickets first; the code is applied to them.';
      requote();
    };
    $('discount-apply').addEventListener('click', applyDiscount);
    $('discount').addEventListener('keydown', function (e) {
      if (e.key === 'Enter') { e.preventDefault(); applyDiscount(); }
    });
    form.addEventListener('submit', submit);
  }

  async function main() {
    let ev;
    try {
      ev = await load('');
    } catch (err) {
      $('hero').querySelector('h1').textContent = 'Event not available';
      Shop.fail(err);
      return;
    }
    if (ev.seated) {
      location.replace(Shop.eventHref(ev));
      return;
    }
    state.ev = ev;
    state.showing = initialShowing(ev);
    Shop.hero(ev);
    renderShowings();
    $('showings').addEventListener('change', function (e) {
      if (e.target.name === 'showing') choose(e.target.value);
    });
    renderTickets();
    renderExtras();
    if (ev.refundProtection) {
      $('refund-pct').textContent = ev.refundProtection.percent;
      $('refund-row').hidden = false;
    }
    if (!ev.available) Shop.fail(Shop.words(new Shop.ApiError(400, 'EVENT_NOT_AVAILABLE', '')));
    wire();
    watchSummary();
    renderSummary();
    if (ev.waitingRoom && window.Room) {
      // Tickets are bought through the queue: the order form shows once
      // the buyer is admitted, for the e-mail they joined with.
      state.room = window.Room.start(ev, { admitted: admitted, closed: closed, choose: focusShowings }, showingOf(state.showing));
      return;
    }
    $('order').hidden = false;
  }

  // admitted shows the order form for a buyer the waiting room let in:
  // their e-mail (the pass is bound to it) and tickets filled in, at most
  // those the pass covers.
  function admitted(p) {
    const first = !state.pass;
    state.pass = p.pass;
    state.passShowing = p.showingId || '';
    if (!first && state.passQty === p.quantity) return;
    state.passQty = p.quantity;
    const email = $('email');
    email.value = p.email;
    email.readOnly = true;
    $('email-hint').textContent = 'Your place in the queue is for this address: we send your tickets to it.';
    const open = state.ev.tickets.filter(function (t) { return !t.soldOut && ticketMax(t) > 0; });
    if (open.length === 1 && !selected().length) state.qty[open[0].id] = Math.min(p.quantity, ticketMax(open[0]));
    renderTickets();
    requote();
    $('order').hidden = false;
  }

  function closed() {
    if (!state.pass && $('order').hidden) return;
    state.pass = '';
    state.passQty = 0;
    state.passShowing = '';
    state.pending = null;
    $('email').readOnly = false;
    $('order').hidden = true;
    renderSummary();
  }

  main();
})();
