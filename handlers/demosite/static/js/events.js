// The events page: every configured event, read from the storefront API
// (GET /events/:id), as a card linking to its ticket page.
'use strict';

(function () {
  const Shop = window.Shop;

  function soldOut(ev) {
    return (ev.tickets || []).length > 0 && ev.tickets.every(function (t) { return t.soldOut; });
  }
  function onSale(ev) {
    return ev.available && !soldOut(ev);
  }
  function events(n) {
    return n === 1 ? '1 event' : n + ' events';
  }

  function card(ev) {
    const d = Shop.dayParts(ev.startsAt);
    const low = Shop.lowest(ev);
    let price = '';
    if (low === 0) price = 'Free entry';
    else if (low !== null) price = 'From ' + Shop.money(low, ev.currency);
    let cta = 'Get tickets';
    if (ev.seated) cta = 'Pick seats';
    if (ev.waitingRoom) cta = 'Join the queue';
    if (!ev.available) cta = 'Not on sale yet';
    if (soldOut(ev)) cta = 'Sold out';
    const href = Shop.eventHref(ev);
    return Shop.el('li', { class: 'card', 'data-event': ev.id },
      Shop.el('div', { class: Shop.art(ev.id) + ' card-art', 'aria-hidden': 'true' },
        Shop.el('div', { class: 'datebadge' }, Shop.el('span', { class: 'm', text: d.month }), Shop.el('span', { class: 'd', text: d.day }))),
      Shop.el('div', { class: 'card-body' },
        Shop.el('h3', {}, Shop.el('a', { href: href, class: 'card-link', text: ev.name })),
        Shop.el('p', { class: 'when' }, Shop.el('time', { datetime: ev.startsAt, text: Shop.when(ev.startsAt) }), Shop.showingsNote(ev)),
        Shop.el('p', { class: 'tags' },
          Shop.el('span', { class: 'tag', text: Shop.kind(ev) }),
          price ? Shop.el('span', { class: 'price', text: price }) : null),
        Shop.el('span', { class: 'btn primary small', 'aria-hidden': 'true', text: cta })));
  }

  async function main() {
    const list = document.getElementById('events');
    let cfg;
    try {
      cfg = await Shop.config();
    } catch (e) {
      Shop.fail('The shop could not load its settings. Please reload the page.');
      return;
    }
    const results = await Promise.all(cfg.events.map(function (id) {
      return Shop.api('GET', '/events/' + encodeURIComponent(id)).then(function (ev) { return { ev: ev }; }, function (err) { return { err: err }; });
    }));
    const cards = [];
    let failed = null;
    // Soonest first, as a listing of dates reads; failed loads (and
    // unreadable dates) last. Compared, not subtracted: Infinity minus
    // Infinity is NaN, which leaves the order to the engine.
    const at = function (r) {
      const t = r.ev ? Date.parse(r.ev.startsAt) : NaN;
      return isNaN(t) ? Infinity : t;
    };
    results.sort(function (a, b) {
      const x = at(a);
      const y = at(b);
      return x === y ? 0 : (x < y ? -1 : 1);
    });
    for (const r of results) {
      if (r.ev) cards.push(card(r.ev));
      else failed = r.err;
    }
    list.replaceChildren.apply(list, cards);
    list.removeAttribute('aria-busy');
    if (failed) Shop.fail(cards.length ? 'Some events could not be loaded. ' + Shop.words(failed) : Shop.words(failed));
    const sale = results.filter(function (r) { return r.ev && onSale(r.ev); }).length;
    let said = 'No events are on sale right now.';
    if (cards.length) said = sale === cards.length ? events(sale) + ' on sale.' : events(cards.length) + ', ' + sale + ' on sale now.';
    Shop.say(said);
    if (!cards.length && !failed) list.append(Shop.el('li', { class: 'muted', text: 'No events are on sale right now. Check back soon.' }));
  }

  main();
})();
