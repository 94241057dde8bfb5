// ticketd's seat picker (handlers/picker; docs/decisions.md, Seat picker).
// Plain ES2020, no build step, no inline script: the page's data comes from
// its data-picker attribute. It draws the seat map, holds and releases
// seats through /v1/picker/seating/events/{id} with the page's token, polls
// availability so other buyers' holds and sales show within two seconds,
// and tells the host page that said hello which seats the buyer holds.
'use strict';
(() => {
  const root = document.getElementById('picker');
  if (!root || !root.dataset.picker) return;
  const cfg = JSON.parse(root.dataset.picker);
  // Framed, the host's page names the event and says TEST MODE itself:
  // the page's own header and TEST MODE line go (the server marks the page
  // framed already when the browser said so).
  if (window.parent !== window) root.classList.add('framed');

  const SVGNS = 'http://www.w3.org/2000/svg';
  // One poll a second: another buyer's change shows within two seconds.
  // The server counts these on a budget of their own (guard.Poll).
  const POLL_MS = 1000;
  const PITCH = 32; // seat to seat, in map units
  const ROW_H = 36;
  const R = 13; // seat radius
  const SIDE = 36; // room for the row labels
  const TAP = 30; // smallest seat pitch on screen, in CSS pixels
  const EXPIRED_WORDS = 'Your hold ran out, so your seats went back on sale. Pick them again if they are still free.';

  const $ = (id) => document.getElementById(id);
  const ui = {
    live: $('live'), hold: $('hold'), timer: $('timer'), extend: $('extend'),
    best: $('best'), qty: $('best-qty'), cat: $('best-cat'), bestGo: $('best-go'),
    legend: $('legend'), wrap: $('map-wrap'), loading: $('loading'), note: $('note'),
    hint: $('map-hint'), chosen: $('chosen'), chosenLabels: $('chosen-labels'), subtotal: $('subtotal'), subtotalLine: $('subtotal-line'),
    zoomIn: $('zoom-in'), zoomOut: $('zoom-out'), when: $('when'), summaryNote: $('summary-note'),
  };

  const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: cfg.currency || 'USD' });
  const fmt = (cents) => money.format(cents / 100);
  const toCents = (v) => (v === null || v === undefined ? null : Math.round(Number(v) * 100));
  const list = (xs) => (xs.length < 2 ? xs.join('') : xs.slice(0, -1).join(', ') + ' and ' + xs[xs.length - 1]);

  const st = {
    cats: new Map(), // id -> {name, cents|null, idx}
    seats: new Map(), // label -> {el, row, i, cat}
    rows: [], // [[label, ...], ...] in map order
    areaEls: new Map(), tableEls: new Map(),
    held: new Set(), booked: new Set(),
    mine: [], // the labels the buyer holds, as the server listed them
    pending: new Set(), // seats with a hold or release call out: shown busy, state unchanged until the answer
    subtotal: 0, // cents
    token: '', expiresAt: 0, // the hold token and its expiry (local clock, ms)
    skew: 0, // server clock minus ours, when they differ by more than 2 s
    gen: 0, inflight: 0, // polls started before a change are not applied
    wrote: 0, // when the buyer's last hold or release was answered (local clock, ms)
    host: '', // the origin of the host page that said hello
    pass: '', // the waiting room's pass the host handed over (its hello), for the first hold token
    said: '', // the last message (say), which the summary repeats on a phone
    queued: false, // the host sells through a waiting room (its hello): a hold holds the pass's seats at most
    covers: 0, // the seats the pass covers, when the host's hello says (its quantity): best-available's count and cap
    recover: false, // the host's pass made a hold token this page may not know (its hello)
    zoom: 1, userZoom: false, fit: 1, w: 0, h: 0, svg: null,
    stage: null, // the stage bar: its x and width in map units, and its label (placeStage)
    warned: false, expiring: false, focus: '',
    onSale: false, // set by start, and by tick when the on-sale time passes
    hint: '', // the map's hint once seats are on sale
  };

  // ---- the API ----

  class ApiError extends Error {
    constructor(code, message, data, retryAfter, status, env) {
      super(message || code);
      this.code = code;
      this.data = data || {};
      this.retryAfter = retryAfter;
      this.status = status || 0;
      this.env = env || {}; // the whole answer: its top-level fields (maxPerOrder)
    }
  }

  async function api(method, path, body) {
    const opt = { method, headers: { 'x-picker-token': cfg.token }, cache: 'no-store', credentials: 'omit' };
    // An event with a waiting room: the calls that make a hold token burn
    // the buyer's pass (the token then carries it); a retry with it is
    // answered the same token.
    if (st.pass && (path === '/hold-token' || path === '/best-available')) opt.headers['x-queue-pass'] = st.pass;
    if (body !== undefined) {
      opt.headers['content-type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(cfg.api + path, opt);
    } catch (e) {
      throw new ApiError('NETWORK', '');
    }
    const date = Date.parse(res.headers.get('date') || '');
    if (!Number.isNaN(date)) {
      const skew = date - Date.now();
      st.skew = Math.abs(skew) > 2000 ? skew : 0;
    }
    let env = null;
    try {
      env = await res.json();
    } catch (e) {
      env = null;
    }
    if (res.ok && env && env.success) return env.data;
    throw new ApiError((env && env.code) || 'HTTP_' + res.status, env && env.message, env && env.data,
      Number(res.headers.get('retry-after')) || 0, res.status, env);
  }

  // words turns a refusal into what the buyer reads: never a code.
  function words(e) {
    switch (e.code) {
      case 'SEAT_CONFLICT': {
        const c = e.data.conflicts || [];
        if (!c.length) return 'Those seats were just taken by someone else. Please pick again.';
        return 'Sorry, seat ' + list(c) + (c.length > 1 ? ' were' : ' was') + ' just taken by someone else. Please pick another seat.';
      }
      case 'SEAT_RULE':
        // The server names the seat that would be left alone, in words.
        return e.message ? e.message[0].toUpperCase() + e.message.slice(1) + '.' :
          'That choice would leave a single seat on its own. Please pick seats next to each other.';
      case 'HOLD_EXPIRED':
        return EXPIRED_WORDS;
      case 'RATE_LIMITED':
        return 'That was a lot at once. Please wait a few seconds and try again.';
      case 'EVENT_NOT_AVAILABLE':
        return onSaleWords();
      case 'EVENT_NOT_PUBLIC': case 'EVENT_NOT_FOUND': case 'NOT_SEATED':
        return 'Seats for this event are not on sale here any more.';
      case 'MISSING_KEY': case 'INVALID_KEY':
        return 'This page has been open for a long time. Please reload it to keep choosing seats.';
      case 'SEAT_NOT_PRICED':
        return 'That seat is not for sale.';
      case 'MAX_PER_ORDER_EXCEEDED':
        if (st.queued) return queueLimitWords(st.covers || Number(e.env.maxPerOrder) || 0);
        return 'You have as many seats as one order can hold. Let go of a seat to pick another one.';
      case 'HOLD_LIMIT_REACHED':
        return 'Too many seat holds and unpaid orders are open from your connection for this event. ' +
          'Finish or cancel one of them, or wait a few minutes for an old hold to end, then try again.';
      case 'SEAT_NOT_FOUND':
        return 'That seat is no longer on the map. Please reload the page.';
      case 'QUEUE_REQUIRED':
        return 'Seats for this event are sold through a queue. Please wait for your turn on the shop\u2019s page.';
      case 'QUEUE_PASS_EXPIRED':
        return 'Your time to pick seats ran out, so your place went to the next in line. You can join the queue again on the shop\u2019s page.';
      case 'QUEUE_PASS_USED':
        return 'Your place in the queue has been used for an order already.';
      case 'QUEUE_PASS_INVALID':
        return 'Your place in the queue is not valid for this event. Please reload the shop\u2019s page.';
      case 'NETWORK': case 'SERVICE_UNAVAILABLE': case 'NOT_READY':
        return 'We cannot reach the box office right now. Please try again in a moment.';
      default:
        return 'Something went wrong. Please try again.';
    }
  }

  // queueLimitWords says why a hold beyond what the buyer's place in the
  // queue covers (n seats; 0 not known) was refused, and what to do.
  function queueLimitWords(n) {
    const have = st.mine.length;
    if (!n) return 'You have as many seats as your place in the queue covers. Let go of a seat to pick another one.';
    const covers = 'Your place in the queue covers ' + seatCount(n);
    if (!have) return covers + ', so you can hold ' + (n === 1 ? '1 seat.' : 'up to ' + n + ' at once.');
    if (have < n) return covers + ' and you have ' + have + ': you can add ' + (n - have) + ' more.';
    return covers + ' and you have ' + (n === 1 ? 'it' : 'them all') + '. Let go of a seat to pick another one.';
  }

  const seatCount = (n) => n + (n === 1 ? ' seat' : ' seats');

  // bestCount offers best-available counts of 1 to the most the buyer may
  // hold: the seats their place in the queue covers (the host's hello
  // says), else the page's 10. Its default is that many, or 2.
  const BEST_MAX = ui.qty.options.length;
  const BEST_DEFAULT = ui.qty.value;
  function bestCount(n) {
    const most = n > 0 && n < BEST_MAX ? n : BEST_MAX;
    const opts = [];
    for (let i = 1; i <= most; i++) opts.push(new Option(String(i), String(i)));
    ui.qty.replaceChildren(...opts);
    ui.qty.value = n > 0 ? String(most) : BEST_DEFAULT;
  }

  // saleOpen reports whether the on-sale time has passed by the server's
  // clock; a page opened before it opens by itself when it does.
  function saleOpen() {
    if (!cfg.onSaleAt) return true;
    const t = Date.parse(cfg.onSaleAt);
    return Number.isNaN(t) || t <= now();
  }

  function onSaleWords() {
    const d = new Date(cfg.onSaleAt || '');
    if (Number.isNaN(d.getTime())) return 'Seats are not on sale yet.';
    return 'Seats go on sale on ' + new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'short' }).format(d) +
      '. You can look at the map until then.';
  }

  // say puts a sentence in the live region, which screen readers read
  // out. The same sentence twice gets an invisible mark, so it is a change
  // and read again.
  function say(text, kind) {
    if (ui.live.textContent === text) text += '\u200b';
    ui.live.className = 'live live-' + (kind || 'info');
    ui.live.textContent = text;
    ui.summaryNote.className = 'summary-note live-' + (kind || 'info');
    st.said = text.replace('\u200b', '');
    echoNote();
  }

  // echoNote fills the summary's copy of the last message, with the hold's
  // time left before it while seats are held.
  function echoNote() {
    ui.summaryNote.textContent = (st.mine.length ? 'Held ' + ui.timer.textContent + (st.said ? ' · ' : '') : '') + st.said;
  }

  // ---- the held set and the host page ----

  const now = () => Date.now() + st.skew;
  const remaining = () => st.expiresAt - now();

  function setExpiry(iso) {
    const t = Date.parse(iso);
    if (Number.isNaN(t)) return;
    st.expiresAt = t;
    // Warn once when the time left drops under two minutes; a hold that
    // is short from the start is not warned about.
    st.warned = remaining() <= 150000;
  }

  function recount() {
    st.subtotal = st.mine.reduce((sum, l) => {
      const s = st.seats.get(l);
      return sum + ((s && s.cat.cents) || 0);
    }, 0);
  }

  // post tells the host page the whole held set, to the origin that said
  // hello only (never "*"), and nothing before a hello.
  function post() {
    if (!st.host) return;
    window.parent.postMessage({
      type: 'held', seatLabels: st.mine.slice(), holdToken: st.token || '', subtotal: st.subtotal / 100,
    }, st.host);
  }

  // postHeight tells the host page how tall the picker is, in CSS pixels,
  // so that it can size the frame to fit (no empty space below the
  // summary, no scrolling inside the frame): after the hello, then on
  // every change of height. The same origin rule as post.
  let sentHeight = 0;
  function postHeight() {
    if (!st.host) return;
    const h = Math.ceil(root.getBoundingClientRect().bottom + window.scrollY);
    if (h === sentHeight) return;
    sentHeight = h;
    window.parent.postMessage({ type: 'height', height: h }, st.host);
  }
  if (window.ResizeObserver) new ResizeObserver(postHeight).observe(root);

  function hostAllowed(host) {
    return cfg.domains.some((d) => {
      if (d.startsWith('*.')) {
        const suffix = d.slice(1); // ".example.com"
        return host.length > suffix.length && host.endsWith(suffix);
      }
      return host === d;
    });
  }

  window.addEventListener('message', (e) => {
    if (window.parent === window || e.source !== window.parent) return;
    const d = e.data;
    if (!d || typeof d !== 'object' || d.source !== 'service-host' || d.type !== 'hello') return;
    let u;
    try {
      u = new URL(e.origin);
    } catch (err) {
      return;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return;
    const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
    if (!hostAllowed(host)) return;
    st.host = e.origin;
    st.pass = typeof d.pass === 'string' && d.pass.length <= 512 ? d.pass : ''; // each hello says the pass now
    // the host's pass already made this buyer's hold token, which this
    // page does not know (its storage gone): found again once the map is up
    st.recover = d.recover === true;
    if (st.recover && root.classList.contains('ready')) enqueue(recoverToken);
    st.queued = d.queued === true;
    // the seats the pass covers: best-available asks for that many at most
    const q = st.queued && Number.isInteger(d.quantity) && d.quantity > 0 ? d.quantity : 0;
    if (q !== st.covers) bestCount(q);
    st.covers = q;
    post();
    sentHeight = 0;
    postHeight();
  });

  // The hold token is kept in sessionStorage, per event (cfg.api names
  // it), so a reload picks the hold up again (restore); sessionStorage is
  // per tab, so two tabs stay two buyers. Storage may be refused (a
  // sandbox, privacy settings): then a reload forgets, as before.
  const TOKEN_KEY = 'ticketd-hold:' + cfg.api;
  function store() {
    try {
      if (st.token) sessionStorage.setItem(TOKEN_KEY, st.token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) {
      // no storage: nothing to keep
    }
  }
  function stored() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch (e) {
      return '';
    }
  }

  // changed shows a new held set and tells the host.
  function changed() {
    st.gen++;
    store();
    paint();
    summary();
    post();
  }

  function applyHold(d) {
    d.seatLabels.forEach((l) => { const s = st.seats.get(l); if (s) s.el.classList.remove('flag'); });
    st.token = d.holdToken;
    setExpiry(d.expiresAt);
    st.mine = d.seatLabels.slice();
    st.mine.forEach((l) => st.held.add(l));
    st.subtotal = toCents(d.subtotal);
    st.expiring = false;
    st.wrote = Date.now();
    changed();
  }

  function expire(text) {
    st.mine = [];
    st.token = '';
    st.expiresAt = 0;
    st.subtotal = 0;
    changed();
    say(text || EXPIRED_WORDS, 'warn');
  }

  // ---- calls, one at a time ----

  let chain = Promise.resolve();
  function enqueue(fn) {
    chain = chain.then(async () => {
      st.inflight++;
      st.gen++;
      try {
        await fn();
      } catch (e) {
        report(e);
      } finally {
        st.inflight--;
        schedulePoll(0);
      }
    });
    return chain;
  }

  function report(e) {
    if (e.code === 'HOLD_EXPIRED') {
      if (st.mine.length) expire();
      else {
        st.token = '';
        store();
      }
      return;
    }
    if (e.code === 'SEAT_RULE' && e.data.seatLabel) flag(e.data.seatLabel);
    // The seats someone else took show taken at once, before the next poll.
    if (e.code === 'SEAT_CONFLICT') {
      (e.data.conflicts || []).forEach((l) => st.held.add(l));
      paint();
    }
    say(words(e), 'warn');
  }

  function flag(label) {
    const s = st.seats.get(label);
    if (!s) return;
    s.el.classList.add('flag');
    setTimeout(() => s.el.classList.remove('flag'), 4000);
  }

  async function ensureToken() {
    if (st.token && remaining() > 1000) return;
    const d = await api('POST', '/hold-token');
    st.token = d.holdToken;
    setExpiry(d.expiresAt);
    store();
  }

  // withToken runs a call that names the hold token; a token that timed
  // out while it held nothing is replaced once, silently.
  async function withToken(call) {
    await ensureToken();
    try {
      return await call();
    } catch (e) {
      if (e.code !== 'HOLD_EXPIRED' || st.mine.length) throw e;
      st.token = '';
      await ensureToken();
      return call();
    }
  }

  async function hold(labels) {
    labels.forEach((l) => st.pending.add(l));
    paint();
    const call = () => withToken(() => api('POST', '/hold', { holdToken: st.token, seatLabels: labels }));
    let added = '';
    try {
      let d;
      try {
        d = await call();
      } catch (e) {
        // A gap of two seats cannot be filled one seat at a time: each
        // click alone would leave the other seat alone. When the seat the
        // rule names is the free one right next to the clicked seat, hold
        // both in one call, once.
        added = e.code === 'SEAT_RULE' && labels.length === 1 ? mate(labels[0], e.data.seatLabel) : '';
        if (!added) throw e;
        labels = order([labels[0], added]);
        st.pending.add(added);
        paint();
        d = await call();
      }
      applyHold(d);
      say((labels.length > 1 ? 'Seats ' : 'Seat ') + list(labels) + (labels.length > 1 ? ' are' : ' is') + ' yours while the timer runs. ' +
        (added ? 'We added seat ' + added + ' so that no seat is left on its own. ' : '') + seatsWords() + '.');
    } finally {
      labels.forEach((l) => st.pending.delete(l));
      paint();
    }
  }

  // mate returns other when label and other are together the whole run of
  // free seats they sit in (a gap of two between taken seats, or at a
  // row's end), else ''. A seat named in a wider gap is not added: the
  // buyer picks again.
  function mate(label, other) {
    const a = st.seats.get(label), b = st.seats.get(other || '');
    if (!a || !b || a.row !== b.row || Math.abs(a.i - b.i) !== 1 || stateOf(other) !== 'free' || st.pending.has(other)) return '';
    const row = st.rows[a.row];
    const lo = Math.min(a.i, b.i), hi = Math.max(a.i, b.i);
    const open = (i) => i >= 0 && i < row.length && stateOf(row[i]) === 'free' && !st.pending.has(row[i]);
    return open(lo - 1) || open(hi + 1) ? '' : other;
  }

  // order sorts seat labels as the map shows them: by row, then number.
  function order(labels) {
    return labels.slice().sort((x, y) => {
      const a = st.seats.get(x), b = st.seats.get(y);
      return a.row - b.row || a.i - b.i;
    });
  }

  async function release(labels) {
    labels.forEach((l) => st.pending.add(l));
    paint();
    try {
      const d = await api('POST', '/release', { holdToken: st.token, seatLabels: labels });
      (d.released || []).forEach((l) => st.held.delete(l));
      st.mine = st.mine.filter((l) => !labels.includes(l));
      st.wrote = Date.now();
      recount();
      changed();
      say('Seat ' + list(labels) + ' let go. ' + seatsWords() + '.');
    } finally {
      labels.forEach((l) => st.pending.delete(l));
      paint();
    }
  }

  async function bestAvailable(q, cat) {
    const body = { quantity: q };
    if (cat) body.category = cat;
    if (st.token && remaining() > 1000) body.holdToken = st.token;
    const before = new Set(st.mine);
    let d;
    try {
      d = await api('POST', '/best-available', body);
    } catch (e) {
      if (e.code === 'HOLD_EXPIRED' && body.holdToken) {
        if (st.mine.length) expire();
        st.token = '';
        delete body.holdToken;
        d = await api('POST', '/best-available', body);
      } else if (e.code === 'SEAT_CONFLICT') {
        const c = st.cats.get(cat);
        say('There are no ' + q + ' seats together left' + (c ? ' in ' + c.name : '') +
          '. Try fewer seats or another price.', 'warn');
        return;
      } else {
        throw e;
      }
    }
    applyHold(d);
    const got = d.seatLabels.filter((l) => !before.has(l));
    say('We found ' + (got.length === 1 ? 'seat ' : got.length + ' seats together: ') + list(got) +
      '. They are yours while the timer runs. ' + seatsWords() + '.');
    if (got.length) {
      const s = st.seats.get(got[0]);
      if (s) s.el.scrollIntoView({ block: 'nearest', inline: 'center' });
    }
  }

  async function extend() {
    if (!st.token || !st.mine.length) return;
    const before = st.expiresAt;
    const d = await api('POST', '/hold/' + encodeURIComponent(st.token) + '/extend');
    setExpiry(d.expiresAt);
    if (st.expiresAt - before < 500) {
      say('Your hold cannot be extended any further. Please finish your booking before the timer runs out.', 'warn');
    } else {
      say('Done: your seats are now held for ' + clock(remaining()) + '.');
    }
    tick();
  }

  function seatsWords() {
    if (!st.mine.length) return 'You have no seats now';
    return 'You have ' + seatCount(st.mine.length) + ', ' + fmt(st.subtotal);
  }

  function toggle(label) {
    const s = st.seats.get(label);
    if (!s) return;
    if (!st.onSale) {
      say(onSaleWords());
      return;
    }
    if (st.pending.has(label)) return;
    const state = stateOf(label);
    if (state === 'mine') enqueue(() => release([label]));
    else if (state === 'free') enqueue(() => hold([label]));
    else if (state === 'held') say('Seat ' + label + ' is held by someone else right now. It may come free again in a few minutes.');
    else if (state === 'not-for-sale') say('Seat ' + label + ' is not for sale.');
    else say('Seat ' + label + ' is sold.');
  }

  // ---- availability ----

  let pollTimer = 0;
  let polling = false;
  function schedulePoll(ms) {
    clearTimeout(pollTimer);
    pollTimer = setTimeout(poll, ms);
  }

  async function poll() {
    // A hidden tab does not poll (its buyer sees nothing); it reads at
    // once when shown again (visibilitychange, in start).
    if (polling || document.hidden) return;
    polling = true;
    const gen = st.gen;
    const began = Date.now();
    let next = POLL_MS;
    try {
      const d = await api('GET', '/availability');
      // The server shares one read among polls for half a second; one
      // asked for just after the buyer's own change may predate it (on
      // another node), so it cannot tell that a seat of theirs was lost.
      if (gen === st.gen && !st.inflight) applyAvailability(d, began - st.wrote > 1000);
      else next = 100; // a change came in between: read again
      if (ui.live.dataset.offline) {
        delete ui.live.dataset.offline;
        say('Connected again.');
      }
    } catch (e) {
      next = e.retryAfter ? e.retryAfter * 1000 : 3000;
      if (e.code === 'MISSING_KEY' || e.code === 'INVALID_KEY') next = 60000;
      // A refused poll is the page's doing, not the buyer's: it just
      // reads again later, without a word.
      if (e.code !== 'RATE_LIMITED' && !ui.live.dataset.offline) {
        ui.live.dataset.offline = '1';
        say(words(e), 'warn');
      }
    } finally {
      polling = false;
      schedulePoll(next);
    }
  }

  function applyAvailability(d, sure = true) {
    st.held = new Set(d.held || []);
    st.booked = new Set(d.booked || []);
    if (!sure) st.mine.forEach((l) => { if (!st.booked.has(l)) st.held.add(l); });
    // Seats of mine the server no longer holds for me: sold (paid for) or
    // gone with a hold that timed out.
    const lost = st.mine.filter((l) => !st.booked.has(l) && !st.held.has(l));
    const kept = st.mine.filter((l) => st.held.has(l) && !st.booked.has(l));
    if (kept.length !== st.mine.length) {
      st.mine = kept;
      recount();
      changed();
      if (lost.length) say(kept.length ? 'Your hold on seat ' + list(lost) + ' ended.' : EXPIRED_WORDS, 'warn');
    }
    paintAreas(d.areas || {}, d.tables || {});
    paint();
  }

  // ---- the timer ----

  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  }

  function tick() {
    if (!st.onSale && saleOpen()) opened();
    ui.hold.classList.toggle('holding', st.mine.length > 0);
    if (!st.mine.length) {
      echoNote();
      if (st.token && remaining() <= 0) {
        st.token = '';
        store();
      }
      return;
    }
    const left = remaining();
    ui.timer.textContent = clock(left);
    echoNote();
    ui.hold.classList.toggle('hold-low', left <= 120000);
    if (left <= 120000 && !st.warned) {
      st.warned = true;
      say('Less than two minutes left on your hold. Press Extend for more time.', 'warn');
    }
    if (left <= 0 && !st.expiring) {
      st.expiring = true;
      enqueue(async () => {
        if (st.mine.length && remaining() <= 0) expire();
        st.expiring = false;
      });
    }
  }

  // ---- drawing ----

  function el(name, attrs, parent) {
    const n = document.createElementNS(SVGNS, name);
    for (const k in attrs) n.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(n);
    return n;
  }

  function text(parent, x, y, cls, s) {
    const t = el('text', { x, y, class: cls }, parent);
    t.textContent = s;
    return t;
  }

  function priceWords(c) {
    return c.cents === null ? 'not for sale' : fmt(c.cents);
  }

  function build(config) {
    config.categories.forEach((c, idx) => st.cats.set(c.id, { name: c.name, cents: toCents(c.price), idx: idx % 8 }));
    const none = { name: '', cents: null, idx: 0 };

    // Legend and the best-available choice of price.
    ui.legend.textContent = '';
    st.cats.forEach((c, id) => {
      const li = document.createElement('li');
      const key = el('svg', { viewBox: '-14 -14 28 28', class: 'key cat-' + c.idx, 'aria-hidden': 'true' }, li);
      el('circle', { r: 11, class: c.cents === null ? 'key-unpriced' : 'key-cat' }, key);
      // Not for sale has the seat's own mark: a dashed ring with a bar.
      if (c.cents === null) el('path', { d: 'M-5 0 L5 0', class: 'key-bar' }, key);
      const name = document.createElement('span');
      name.className = 'legend-name';
      name.textContent = c.name;
      const price = document.createElement('span');
      price.className = 'legend-price';
      price.textContent = priceWords(c);
      li.append(name, price);
      ui.legend.appendChild(li);
      if (c.cents !== null) {
        const o = document.createElement('option');
        o.value = id;
        o.textContent = c.name + ' \u00b7 ' + fmt(c.cents);
        ui.cat.appendChild(o);
      }
    });

    if (config.singleSeatRule === 'lenient' || config.singleSeatRule === 'strict') {
      st.hint = 'Tap a seat to hold it. Please leave no single seat on its own' +
        (config.singleSeatRule === 'strict' ? ', not even at the end of a row.' : ' between others.');
      if (st.onSale) ui.hint.textContent = st.hint;
    }

    // The state keys of the legend take the first price's colour.
    const firstPriced = [...st.cats.values()].find((c) => c.cents !== null);
    if (firstPriced) {
      document.querySelectorAll('.key-state').forEach((k) => k.classList.replace('cat-0', 'cat-' + firstPriced.idx));
    }

    const rows = config.rows || [];
    const extras = (config.gaAreas || []).length + (config.tables || []).length;
    const maxSeats = Math.max(8, ...rows.map((r) => r.seats));
    const w = SIDE * 2 + maxSeats * PITCH + 16;
    const cols = Math.max(1, Math.floor((w - 16) / 168));
    const top = 64;
    const rowsEnd = top + rows.length * ROW_H;
    const extrasTop = rowsEnd + 28;
    const h = extras ? extrasTop + 40 + Math.ceil(extras / cols) * 112 : rowsEnd + 12;
    st.w = w;
    st.h = h;

    const svg = el('svg', { viewBox: '0 0 ' + w + ' ' + h, class: 'map', role: 'group', 'aria-label': 'Seat map' });
    const sw = Math.min(w * 0.6, 360);
    el('rect', { x: w / 2 - sw / 2, y: 8, width: sw, height: 28, rx: 6, class: 'stage' }, svg);
    st.stage = { x: w / 2 - sw / 2, w: sw, label: text(svg, w / 2, 27, 'stage-text', 'STAGE') };

    rows.forEach((r, ri) => {
      const cat = st.cats.get(r.category) || none;
      const y = top + ri * ROW_H + ROW_H / 2;
      const x0 = SIDE + 8 + ((maxSeats - r.seats) * PITCH) / 2 + PITCH / 2;
      const g = el('g', { class: 'row', role: 'group', 'aria-label': 'Row ' + r.label }, svg);
      text(g, x0 - PITCH / 2 - 14, y + 4, 'row-label', r.label).setAttribute('aria-hidden', 'true');
      text(g, x0 + (r.seats - 1) * PITCH + PITCH / 2 + 14, y + 4, 'row-label', r.label).setAttribute('aria-hidden', 'true');
      const labels = [];
      for (let n = 1; n <= r.seats; n++) {
        const label = r.label + '-' + n;
        const s = el('g', {
          class: 'seat cat-' + cat.idx, 'data-seat-label': label, 'data-state': 'free', role: 'button',
          tabindex: '-1', 'aria-pressed': 'false', transform: 'translate(' + (x0 + (n - 1) * PITCH) + ' ' + y + ')',
        }, g);
        el('circle', { r: R + 4, class: 'ring' }, s);
        el('circle', { r: R, class: 'seat-bg' }, s);
        text(s, 0, 4, 'seat-num', String(n)).setAttribute('aria-hidden', 'true');
        el('path', { d: 'M-5.5 0 L-1.5 4.5 L6 -5', class: 'mark mark-mine' }, s);
        el('path', { d: 'M-5 -5 L5 5 M5 -5 L-5 5', class: 'mark mark-booked' }, s);
        el('path', { d: 'M-5.5 0 L5.5 0', class: 'mark mark-not-for-sale' }, s);
        st.seats.set(label, { el: s, row: ri, i: n - 1, cat });
        labels.push(label);
      }
      st.rows.push(labels);
    });

    if (extras) {
      const x0 = (w - (Math.min(cols, extras) * 168 - 12)) / 2;
      text(svg, w / 2, extrasTop + 12, 'extras-title', 'Standing areas and tables');
      let k = 0;
      const cell = (g) => {
        const x = x0 + (k % cols) * 168;
        const y = extrasTop + 28 + Math.floor(k / cols) * 112;
        k++;
        g.setAttribute('transform', 'translate(' + x + ' ' + y + ')');
      };
      (config.gaAreas || []).forEach((a) => {
        const cat = st.cats.get(a.category) || none;
        const g = el('g', { class: 'area cat-' + cat.idx, role: 'img' }, svg);
        cell(g);
        el('rect', { width: 156, height: 96, rx: 12, class: 'area-bg' }, g);
        text(g, 78, 36, 'area-name', a.name);
        text(g, 78, 56, 'area-price', priceWords(cat));
        const left = text(g, 78, 78, 'area-left', a.capacity + ' left');
        st.areaEls.set(a.id, { g, left, name: a.name, cat });
        g.setAttribute('aria-label', a.name + ', standing, ' + priceWords(cat) + ', ' + a.capacity + ' left');
      });
      (config.tables || []).forEach((t) => {
        const cat = st.cats.get(t.category) || none;
        const g = el('g', { class: 'table cat-' + cat.idx, role: 'img' }, svg);
        cell(g);
        const n = Math.min(t.seats, 12);
        for (let i = 0; i < n; i++) {
          const a = (2 * Math.PI * i) / n - Math.PI / 2;
          el('circle', { cx: 78 + 34 * Math.cos(a), cy: 44 + 34 * Math.sin(a), r: 7, class: 'chair' }, g);
        }
        el('circle', { cx: 78, cy: 44, r: 24, class: 'table-top' }, g);
        text(g, 78, 48, 'table-name', t.id);
        const price = t.price === null ? 'not for sale' : fmt(toCents(t.price));
        const state = text(g, 78, 98, 'table-state', t.seats + ' seats \u00b7 ' + price);
        st.tableEls.set(t.id, { g, state, id: t.id, seats: t.seats, price });
        g.setAttribute('aria-label', 'Table ' + t.id + ', ' + t.seats + ' seats, ' + price);
      });
      ui.note.hidden = false;
    }

    ui.loading.remove();
    ui.wrap.appendChild(svg);
    st.svg = svg;
    // The map opens at its start: on a phone, where it is wider than the
    // screen, the row labels and each row's first seats show (not the
    // middle, cut off at both edges), and the first seat takes the focus
    // of the keyboard.
    const first = st.rows.length && st.rows[0].length ? st.rows[0][0] : '';
    if (first) rove(first);
    fitZoom();
    ui.wrap.scrollLeft = 0;

    ui.wrap.addEventListener('scroll', placeStage, { passive: true });

    svg.addEventListener('click', (e) => {
      const g = e.target.closest && e.target.closest('.seat');
      if (g) toggle(g.dataset.seatLabel);
    });
    svg.addEventListener('keydown', onKey);
    svg.addEventListener('focusin', (e) => {
      const g = e.target.closest && e.target.closest('.seat');
      if (g) rove(g.dataset.seatLabel);
    });
  }

  function stateOf(label) {
    const s = st.seats.get(label);
    if (s.cat.cents === null) return 'not-for-sale';
    if (st.booked.has(label)) return 'booked';
    if (st.mine.includes(label)) return 'mine';
    if (st.held.has(label)) return 'held';
    return 'free';
  }

  const STATE_WORDS = { free: 'available', mine: 'held by you', held: 'held by someone else', booked: 'sold', 'not-for-sale': 'not for sale' };

  function paint() {
    st.seats.forEach((s, label) => {
      const state = stateOf(label);
      const words = state === 'not-for-sale' ? STATE_WORDS[state] : fmt(s.cat.cents) + ', ' + STATE_WORDS[state];
      const aria = 'Seat ' + label + ', ' + s.cat.name + ', ' + words;
      const pending = st.pending.has(label);
      if (s.state !== state || s.aria !== aria || s.pendingShown !== pending) {
        s.el.setAttribute('data-state', state);
        s.el.setAttribute('aria-pressed', state === 'mine' ? 'true' : 'false');
        s.el.setAttribute('aria-label', aria);
        if (state !== 'free' && state !== 'mine') s.el.setAttribute('aria-disabled', 'true');
        else s.el.removeAttribute('aria-disabled');
        s.el.classList.toggle('pending', pending);
        s.el.setAttribute('aria-busy', pending ? 'true' : 'false');
        s.state = state;
        s.aria = aria;
        s.pendingShown = pending;
      }
    });
  }

  function paintAreas(areas, tables) {
    st.areaEls.forEach((a, id) => {
      const left = areas[id];
      if (left === undefined) return;
      const s = left > 0 ? left + ' left' : 'Sold out';
      a.left.textContent = s;
      a.g.classList.toggle('soldout', left <= 0);
      a.g.setAttribute('aria-label', a.name + ', standing, ' + priceWords(a.cat) + ', ' + s.toLowerCase());
    });
    st.tableEls.forEach((t, id) => {
      const free = tables[id];
      if (free === undefined) return;
      t.state.textContent = free ? t.seats + ' seats \u00b7 ' + t.price : 'Taken';
      t.g.classList.toggle('soldout', !free);
      t.g.setAttribute('aria-label', 'Table ' + t.id + ', ' + t.seats + ' seats, ' + (free ? t.price : 'taken'));
    });
  }

  function summary() {
    const n = st.mine.length;
    ui.chosen.textContent = n ? seatCount(n) : 'No seats chosen yet';
    ui.chosenLabels.textContent = n ? st.mine.join(', ') : '';
    ui.subtotal.textContent = n ? fmt(st.subtotal) : '';
    ui.subtotalLine.hidden = !n;
    root.classList.toggle('has-seats', n > 0);
    tick();
  }

  // ---- keyboard: one seat in the tab order, arrows move between seats ----

  function rove(label) {
    if (st.focus === label) return;
    const prev = st.seats.get(st.focus);
    if (prev) prev.el.setAttribute('tabindex', '-1');
    const s = st.seats.get(label);
    s.el.setAttribute('tabindex', '0');
    st.focus = label;
  }

  function focusSeat(label) {
    rove(label);
    st.seats.get(label).el.focus();
  }

  function onKey(e) {
    const g = e.target.closest && e.target.closest('.seat');
    if (!g) return;
    const s = st.seats.get(g.dataset.seatLabel);
    const row = st.rows[s.row];
    let to = '';
    switch (e.key) {
      case 'Enter': case ' ': case 'Spacebar':
        e.preventDefault();
        if (!e.repeat) toggle(g.dataset.seatLabel);
        return;
      case 'ArrowLeft': to = row[Math.max(0, s.i - 1)]; break;
      case 'ArrowRight': to = row[Math.min(row.length - 1, s.i + 1)]; break;
      case 'Home': to = row[0]; break;
      case 'End': to = row[row.length - 1]; break;
      case 'ArrowUp': case 'ArrowDown': {
        const r = s.row + (e.key === 'ArrowUp' ? -1 : 1);
        if (r < 0 || r >= st.rows.length) return;
        // The seat of the next row nearest on screen.
        const x = s.el.getCTM().e;
        let best = '', dist = Infinity;
        st.rows[r].forEach((l) => {
          const d = Math.abs(st.seats.get(l).el.getCTM().e - x);
          if (d < dist) { dist = d; best = l; }
        });
        to = best;
        break;
      }
      default:
        return;
    }
    e.preventDefault();
    if (to) focusSeat(to);
  }

  // ---- zoom: the map fits the width, never below a tappable seat size ----

  function applyZoom() {
    if (!st.svg) return;
    st.svg.setAttribute('width', Math.round(st.w * st.zoom));
    st.svg.setAttribute('height', Math.round(st.h * st.zoom));
    ui.zoomOut.disabled = st.zoom <= Math.min(st.fit, 1) + 0.001;
    ui.wrap.parentElement.classList.toggle('overflows', st.w * st.zoom > ui.wrap.clientWidth + 1);
    ui.zoomIn.disabled = st.zoom >= 2.5 - 0.001;
    placeStage();
  }

  // placeStage keeps the stage's label in the part of the stage bar in
  // view: on a phone the map is wider than the screen and opens at its
  // start, where a label at the bar's middle would show cut off, or not at
  // all, until the buyer swipes.
  function placeStage() {
    const s = st.stage;
    if (!s || !st.svg) return;
    const left = (ui.wrap.getBoundingClientRect().left - st.svg.getBoundingClientRect().left) / st.zoom;
    const from = Math.max(s.x, left);
    const to = Math.min(s.x + s.w, left + ui.wrap.clientWidth / st.zoom);
    const half = 36; // half the label's width and a margin, in map units
    s.label.setAttribute('x', String(Math.min(Math.max((from + to) / 2, s.x + half), s.x + s.w - half)));
  }

  function fitZoom() {
    st.fit = Math.max(0.2, (ui.wrap.clientWidth - 2) / st.w);
    if (!st.userZoom) st.zoom = Math.min(1.3, Math.max(st.fit, TAP / PITCH));
    applyZoom();
  }

  function zoomBy(f) {
    const cx = (ui.wrap.scrollLeft + ui.wrap.clientWidth / 2) / (st.w * st.zoom);
    st.zoom = Math.min(2.5, Math.max(Math.min(st.fit, 1), st.zoom * f));
    st.userZoom = true;
    applyZoom();
    ui.wrap.scrollLeft = cx * st.w * st.zoom - ui.wrap.clientWidth / 2;
  }

  // ---- start ----

  function closed() {
    say(onSaleWords());
    ui.bestGo.disabled = true;
    ui.hint.textContent = 'Seats are not on sale yet.';
  }

  function opened() {
    st.onSale = true;
    ui.bestGo.disabled = false;
    ui.hint.textContent = st.hint;
    say('Seats are on sale now. Pick seats on the map, or let us find the best ones.');
  }

  function start() {
    if (ui.when) {
      const d = new Date(ui.when.getAttribute('datetime'));
      if (!Number.isNaN(d.getTime())) {
        ui.when.textContent = new Intl.DateTimeFormat(undefined, {
          weekday: 'long', day: 'numeric', month: 'long', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short',
        }).format(d);
      }
    }
    st.hint = ui.hint.textContent;
    st.onSale = saleOpen();
    if (!st.onSale) closed();
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) schedulePoll(0);
    });
    ui.extend.addEventListener('click', () => enqueue(extend));
    ui.best.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!st.onSale) {
        say(onSaleWords());
        return;
      }
      ui.bestGo.disabled = true;
      enqueue(() => bestAvailable(Number(ui.qty.value), ui.cat.value)).then(() => { ui.bestGo.disabled = false; });
    });
    ui.zoomIn.addEventListener('click', () => zoomBy(1.25));
    ui.zoomOut.addEventListener('click', () => zoomBy(0.8));
    window.addEventListener('resize', fitZoom);
    setInterval(tick, 250);
    summary();
    load();
  }

  // restore picks up the hold of tok: the one this tab's page had before a
  // reload (stored), or the one a waiting room's pass found (recoverToken).
  // Its seats show as the buyer's again, with their timer, and the host
  // hears of them (after its hello). A token gone or refused is forgotten;
  // any other failure leaves it stored for the next load.
  async function restore(tok) {
    if (!tok || st.token) return;
    try {
      const d = await api('GET', '/hold/' + encodeURIComponent(tok));
      if (d.seatLabels.length) {
        applyHold(d);
        say('Welcome back. ' + seatsWords() + ', held while the timer runs.');
      } else {
        st.token = d.holdToken;
        setExpiry(d.expiresAt);
      }
    } catch (e) {
      if (e.code === 'HOLD_EXPIRED' || e.code === 'INVALID_HOLD_TOKEN') store();
    }
  }

  // recoverToken finds the hold token the host's pass made, when this page
  // lost it: hold-token with the same pass answers that token (it makes
  // none), and its seats are the buyer's again.
  async function recoverToken() {
    if (st.token || !st.pass) return;
    let d;
    try {
      d = await api('POST', '/hold-token');
    } catch (e) {
      return; // nothing to find (the hold ran out): the buyer's next pick says why
    }
    await restore(d.holdToken);
  }

  async function load() {
    try {
      const [config, avail] = await Promise.all([api('GET', '/config'), api('GET', '/availability')]);
      if (!st.svg) build(config);
      applyAvailability(avail);
      await restore(stored());
      if (st.recover) await recoverToken();
      root.classList.add('ready');
      schedulePoll(POLL_MS);
    } catch (e) {
      ui.loading.textContent = words(e);
      // A token refused or an event gone will not mend by trying again:
      // only a reload (a new page, a new token) can.
      if (e.status === 401 || e.status === 403 || e.status === 404) {
        if (!/reload/i.test(ui.loading.textContent)) ui.loading.textContent += ' Please reload the page to try again.';
        return;
      }
      setTimeout(load, e.retryAfter ? e.retryAfter * 1000 : 3000);
    }
  }

  start();
})();
