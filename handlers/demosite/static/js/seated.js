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
    pending: null
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
        $('total-live').textContent = state.seats.length + ' seats held, total ' + Shop.money(q.total, cur);
      } else {
        totals.append(row('Total', 'Calculating…', 'total'));
      }
    }
    const ready = state.seats.length > 0 && q !== null;
    const card = $('pay-card');
    if (!card.getAttribute('aria-busy')) {
      card.textContent = q ? 'Pay ' + Shop.money(q.total, cur) + ' by card' : 'Continue to payment';
      card.disabled = !ready;
    }
    const wallet = $('pay-wallet');
    if (!wallet.getAttribute('aria-busy')) wallet.disabled = !ready;
  }

  let timer = 0;
  function requote() {
    clearTimeout(timer);
    state.quote = null;
    render();
    if (!state.seats.length) return;
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
    }, 150);
  }

  // onMessage takes the picker's held set. Anything not from the picker's
  // window and origin is ignored.
  function onMessage(e) {
    const frame = $('picker');
    if (e.origin !== state.origin || e.source !== frame.contentWindow) return;
    const m = e.data;
    if (!m || typeof m !== 'object' || m.type !== 'held' || !Array.isArray(m.seatLabels)) return;
    state.seats = m.seatLabels.filter(function (l) { return typeof l === 'string'; });
    state.token = typeof m.holdToken === 'string' ? m.holdToken : '';
    state.subtotal = Shop.cents(m.subtotal || 0);
    state.pending = null;
    $('pay-error').textContent = '';
    Shop.say(state.seats.length ? 'Seats held for you: ' + state.seats.join(', ') + '.' : 'No seats held.');
    requote();
  }

  async function submit(e) {
    e.preventDefault();
    const form = $('order');
    const btn = e.submitter || $('pay-card');
    const method = btn.dataset.method || 'card';
    Shop.clearError();
    if (!state.seats.length || !state.token) {
      Shop.fail('Pick at least one seat on the seat map.', 'pay-error');
      return;
    }
    for (const f of [form.elements.name, form.elements.email]) {
      if (!f.checkValidity()) {
        f.setAttribute('aria-invalid', 'true');
        f.focus();
        Shop.fail(f.name === 'email' ? 'Please enter a valid e-mail address: your tickets are sent there.' : 'Please enter your name.', 'pay-error');
        return;
      }
      f.removeAttribute('aria-invalid');
    }
    const seats = { seatLabels: state.seats.slice(), seatHoldToken: state.token };
    const body = Object.assign({ eventId: state.ev.id }, seats, Shop.buyer(form));
    const key = JSON.stringify(body);
    Shop.busy(btn, true, 'Reserving your seats…');
    try {
      let reg = state.pending && state.pending.key === key ? state.pending.reg : null;
      if (!reg) {
        reg = await Shop.api('POST', '/register-guest', body);
        state.pending = { key: key, reg: reg };
      }
      if (reg.status === 'confirmed') {
        Shop.confirmed($('shop'), state.ev, reg, body.email);
        return;
      }
      const pay = Object.assign({ eventId: state.ev.id, registrationId: reg.registrationId }, seats, Shop.returnURLs(state.ev.id));
      Shop.busy(btn, true, 'Opening secure checkout…');
      if (method === 'wallet') pay.amount = reg.total;
      else pay.selectedTicketAmount = state.subtotal / 100; // the seats at their prices, before the fee
      await Shop.checkout(method, pay);
    } catch (err) {
      if (err.code !== 'PAYMENT_PROCESSOR_ERROR' && err.status !== 0) state.pending = null;
      Shop.fail(err, 'pay-error');
      Shop.busy(btn, false);
      render();
    }
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
    const src = cfg.apiBase + '/events/' + encodeURIComponent(ev.slug) + '/' + encodeURIComponent(ev.shortId) + '/seatmap?app=storefront';
    state.origin = new URL(src).origin;
    window.addEventListener('message', onMessage);
    const frame = $('picker');
    // Hello on every load of the picker (a reload of the frame included),
    // to its origin only; it answers with the seats it holds.
    frame.addEventListener('load', function () {
      frame.contentWindow.postMessage({ source: 'service-host', type: 'hello' }, state.origin);
    });
    frame.src = src;
    $('order').hidden = false;
    $('order').addEventListener('submit', submit);
    $('order').addEventListener('input', function () { state.pending = null; });
    render();
  }

  main();
})();
