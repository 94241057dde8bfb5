// The success page (interface.md, Recommended flow 5): the hosted payment
// page sends the buyer here; the page reads the registration until it is
// confirmed (or refunded, or expired), backing off, for at most the
// shop's pollLimitMs (25 s). Past that it says the ticket will arrive by
// e-mail (the payment webhook may still be on its way), whatever the
// calls in flight do: a timer ends the wait, and each call is aborted when
// the time left runs out, so a stalled connection cannot keep the buyer
// waiting.
'use strict';

(function () {
  const Shop = window.Shop;
  const $ = function (id) { return document.getElementById(id); };
  const FIRST_MS = 500;
  const MAX_MS = 4000;

  // fact is a row of the facts list: value a text or an element.
  function fact(label, value) {
    if (!value) return null;
    const dd = typeof value === 'string' ? Shop.el('dd', { text: value }) : Shop.el('dd', {}, value);
    return Shop.el('div', {}, Shop.el('dt', { text: label }), dd);
  }

  // showFacts lists rows, and the order's full id folded away below them.
  function showFacts(id, rows) {
    const dl = $('facts');
    dl.replaceChildren.apply(dl, rows.filter(Boolean));
    const old = $('order-id');
    const more = Shop.orderIdDetails(id);
    more.id = 'order-id';
    if (old) old.replaceWith(more);
    else dl.after(more);
  }

  // show sets the page's state: its data-status, icon, heading and words.
  function show(kind, heading, paragraphs) {
    $('result').dataset.status = kind;
    $('result-icon').className = 'icon ' + ({ confirmed: 'ok', pending: 'spin', refund: 'warn', expired: 'warn', timeout: 'info', missing: 'warn' }[kind] || 'info');
    const h = $('result-h');
    const changed = h.textContent !== heading;
    h.textContent = heading;
    $('status').replaceChildren.apply($('status'), paragraphs.map(function (p, i) { return Shop.el('p', { class: i === 0 ? 'lead' : '', text: p }); }));
    if (changed && kind !== 'pending') h.focus();
    document.title = heading + ' · Demo Live';
  }

  // startsAt is when the order's showing starts (a multi-showing event's
  // own startsAt is its first showing's), else when the event does.
  function startsAt(reg, ev) {
    const sh = reg.showingId && (ev.showings || []).find(function (s) { return s.id === reg.showingId; });
    return sh ? sh.startsAt : ev.startsAt;
  }

  function facts(reg, ev) {
    const rows = [
      fact('Event', ev ? ev.name : ''),
      fact('Date', ev ? Shop.when(startsAt(reg, ev)) : ''),
      fact('Order reference', Shop.orderRefEl(reg.registrationId))
    ];
    if (reg.status === 'confirmed') {
      rows.push(fact('Paid', Shop.money(reg.payment.amount, reg.currency)));
      if ((reg.tickets || []).length) rows.push(fact(reg.tickets.length === 1 ? 'Ticket' : 'Tickets', Shop.grouped(reg.tickets).join(', ')));
    } else {
      rows.push(fact('Amount', Shop.money(reg.total, reg.currency)));
    }
    showFacts(reg.registrationId, rows);
  }

  // render shows reg and reports whether its state is final.
  function render(reg, ev) {
    facts(reg, ev);
    switch (reg.status) {
      case 'confirmed':
        show('confirmed', 'You’re all set!', [
          'Your payment is received and your registration is confirmed.',
          'Your tickets are on their way to your inbox. Show the QR code from the e-mail at the door.']);
        return true;
      case 'refund_required':
        show('refund', 'We are refunding your payment', [
          'Your payment arrived, but we could not issue your tickets: the time to pay had run out or the event changed.',
          'The full amount will be refunded to your card. You will receive an e-mail about it.']);
        return true;
      case 'expired':
        show('expired', 'This order has expired', [
          'The time to pay ran out before the payment was completed, so nothing was charged and your tickets went back on sale.']);
        return true;
      default:
        show('pending', 'Confirming your payment…', [
          'Your payment is being confirmed. This usually takes a few seconds; please keep this page open.']);
        return false;
    }
  }

  async function main() {
    const id = Shop.param('registration');
    if (!id || id.indexOf('{') >= 0) {
      show('missing', 'We could not find your order', ['This link does not name an order. If you paid, your tickets will arrive by e-mail.']);
      return;
    }
    const cfg = await Shop.config().catch(function () { return {}; });
    const limit = cfg.pollLimitMs > 0 ? cfg.pollLimitMs : 25000;
    const started = Date.now();
    let done = false;
    function finish() {
      if (done) return;
      done = true;
      $('error').textContent = '';
      show('timeout', 'Thank you for your order', [
        'Your payment is still being confirmed. Your ticket will arrive by e-mail as soon as it is, usually within a few minutes.',
        'You can close this page. If no e-mail arrives within the hour, contact us with your order reference.']);
      // The reference to quote, also when the order could not be read.
      if (!$('facts').children.length) showFacts(id, [fact('Order reference', Shop.orderRefEl(id))]);
    }
    const hard = setTimeout(finish, limit);
    let delay = FIRST_MS;
    let ev = null;
    let last = null;
    while (!done) {
      const left = limit - (Date.now() - started);
      try {
        last = await Shop.api('GET', '/registration/' + encodeURIComponent(id), undefined, { timeoutMs: left });
        if (done) return;
        if (!ev) ev = await Shop.api('GET', '/events/' + encodeURIComponent(last.eventId), undefined, { timeoutMs: limit - (Date.now() - started) }).catch(function () { return null; });
        if (done) return;
        $('error').textContent = '';
        if (render(last, ev)) {
          done = true;
          clearTimeout(hard);
          return;
        }
      } catch (err) {
        if (done) return;
        if (err.status === 404) {
          done = true;
          clearTimeout(hard);
          show('missing', 'We could not find your order', ['If you paid, your tickets will arrive by e-mail. Contact us if they do not.']);
          return;
        }
        // A network failure or a busy service: keep trying until the limit.
        if (!last) Shop.fail(err);
      }
      if (Date.now() - started + delay >= limit) break;
      await new Promise(function (r) { setTimeout(r, delay); });
      delay = Math.min(delay * 1.6, MAX_MS);
    }
    clearTimeout(hard);
    finish();
  }

  main();
})();
