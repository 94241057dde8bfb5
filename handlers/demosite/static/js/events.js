// The events page: every configured event, read from the storefront API
// (GET /events/:id), as a card linking to its ticket page.
'use strict';

(function () {
  const Shop = window.Shop;

  function card(ev) {
    const d = Shop.dayParts(ev.startsAt);
    const low = Shop.lowest(ev);
    let price = '';
    if (low === 0) price = 'Free entry';
    else if (low !== null) price = 'From ' + Shop.money(low, ev.currency);
    const soldOut = (ev.tickets || []).length > 0 && ev.tickets.every(function (t) { return t.soldOut; });
    let cta = 'Get tickets';
    if (ev.seated) cta = 'Pick seats';
    if (!ev.available) cta = 'Not on sale yet';
    if (soldOut) cta = 'Sold out';
    const href = Shop.eventHref(ev);
    return Shop.el('li', { class: 'card', 'data-event': ev.id },
      Shop.el('div', { class: Shop.art(ev.id) + ' card-art', 'aria-hidden': 'true' },
        Shop.el('div', { class: 'datebadge' }, Shop.el('span', { class: 'm', text: d.month }), Shop.el('span', { class: 'd', text: d.day }))),
      Shop.el('div', { class: 'card-body' },
        Shop.el('h3', {}, Shop.el('a', { href: href, class: 'card-link', text: ev.name })),
        Shop.el('p', { class: 'when' }, Shop.el('time', { datetime: ev.startsAt, text: Shop.when(ev.startsAt) })),
        Shop.el('p', { class: 'tags' },
          Shop.el('span', { class: 'tag', text: ev.seated ? 'Reserved seating' : 'General admission' }),
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
    // Soonest first, as a listing of dates reads.
    results.sort(function (a, b) {
      return (a.ev ? Date.parse(a.ev.startsAt) : Infinity) - (b.ev ? Date.parse(b.ev.startsAt) : Infinity);
    });
    for (const r of results) {
      if (r.ev) cards.push(card(r.ev));
      else failed = r.err;
    }
    list.replaceChildren.apply(list, cards);
    list.removeAttribute('aria-busy');
    if (failed) Shop.fail(cards.length ? 'Some events could not be loaded. ' + Shop.words(failed) : Shop.words(failed));
    Shop.say(cards.length ? cards.length + ' events on sale.' : 'No events are on sale right now.');
    if (!cards.length && !failed) list.append(Shop.el('li', { class: 'muted', text: 'No events are on sale right now. Check back soon.' }));
  }

  main();
})();
