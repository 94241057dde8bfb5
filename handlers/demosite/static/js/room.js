// The waiting room of an event page (an event whose detail has
// waitingRoom; issue 20): the buyer joins with an e-mail and a number of
// tickets, waits (position, a progress bar, the estimated wait and the
// odds of getting tickets), and once admitted buys with the pass the room
// gives, which event.js sends as x-queue-pass on register-guest.
//
// On a multi-showing event each showing has its own line: the page
// (event.js) has the buyer choose a showing, and the room joins, shows and
// keeps the place of that showing's line (use switches lines).
//
// The place (queueId, pollToken, e-mail) is kept in the tab's
// sessionStorage (room:<event>, room:<event>:<showing> for a showing's
// line), so a reload keeps it; the device id, made once, in
// localStorage (a second join from the device answers the same place).
// Status is long-polled while the buyer waits or the event is sold out
// (status?wait=&known=: ticketd answers when the buyer's state is not
// the one shown, the places ahead halve, the on-sale starts, or after
// WAIT_S), so a sell-out
// or the buyer's turn shows within a fraction of a second; a hidden tab
// does not poll and reads at once when shown again. What changes is said
// in a polite live region; nothing needs motion to be understood.
'use strict';

(function () {
  const Shop = window.Shop;
  const $ = function (id) { return document.getElementById(id); };
  const WAIT_S = 15; // a long-poll's longest wait
  const AGAIN_MS = 250; // between a long-poll's answer and the next
  const NEAR_MS = 2000; // the pass's expiry, near
  const FAR_MS = 5000; // after a failed read
  const IDLE_MS = 10000; // admitted, or the service busy
  const SAY_EVERY_MS = 20000; // position changes are said at most this often
  // The chance of tickets when none is free now: a buyer who does not
  // order in time, or leaves, gives them back (waiting and sold out).
  const IF_RETURNS = 'Only if tickets come back';

  function storage(kind) {
    try {
      const s = window[kind];
      s.getItem('x');
      return s;
    } catch (e) {
      return null; // private mode: the place lasts as long as the page
    }
  }

  // device is this browser's id, made once.
  function device() {
    const ls = storage('localStorage');
    let id = ls ? ls.getItem('shop:device') : '';
    if (!id) {
      const b = new Uint8Array(12);
      crypto.getRandomValues(b);
      id = 'dev_' + Array.from(b, function (x) { return x.toString(16).padStart(2, '0'); }).join('');
      if (ls) ls.setItem('shop:device', id);
    }
    return id;
  }

  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const m = Math.floor(s / 60);
    return m + ':' + String(s % 60).padStart(2, '0');
  }

  // wait says a wait in words.
  function wait(seconds) {
    if (seconds === undefined || seconds === null) return 'Working it out…';
    if (seconds < 60) return 'Less than a minute';
    const m = Math.round(seconds / 60);
    if (m < 60) return 'About ' + m + (m === 1 ? ' minute' : ' minutes');
    const h = Math.round(m / 6) / 10;
    return 'About ' + h + (h === 1 ? ' hour' : ' hours');
  }

  // solve finds a nonce such that SHA-256(challenge ":" nonce) starts
  // with c.bits zero bits: the room's proof of work (a challenge is for one
  // e-mail address, so a bot pays for each place it takes). 12 bits is
  // about 4,000 hashes, a fraction of a second.
  async function solve(c) {
    const enc = new TextEncoder();
    const full = Math.floor(c.bits / 8);
    const rest = c.bits % 8;
    for (let n = 0; ; n++) {
      const h = new Uint8Array(await crypto.subtle.digest('SHA-256', enc.encode(c.challenge + ':' + n)));
      let ok = true;
      for (let i = 0; i < full && ok; i++) ok = h[i] === 0;
      if (ok && rest > 0) ok = (h[full] >> (8 - rest)) === 0;
      if (ok) return String(n);
    }
  }

  // unit is what the room counts: seats on a seated event, else tickets
  // (start sets it); Units is its plural with a capital.
  let unit = ['ticket', 'tickets'];
  function Units() {
    return unit[1][0].toUpperCase() + unit[1].slice(1);
  }
  function tickets(n) {
    return n + ' ' + unit[n === 1 ? 0 : 1];
  }

  const timeFmt = new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: '2-digit', second: '2-digit' });

  // keyOf is the sessionStorage key of the place in ev's line, or in its
  // showing showingId's.
  function keyOf(ev, showingId) {
    return 'room:' + ev.id + (showingId ? ':' + showingId : '');
  }

  // placed is the first of ev's showings this tab has a place in the line
  // of, '' when none: the showing a reload comes back to.
  function placed(ev) {
    const ss = storage('sessionStorage');
    if (!ss) return '';
    for (const sh of ev.showings || []) {
      if (ss.getItem(keyOf(ev, sh.id))) return sh.id;
    }
    return '';
  }

  // markup is the room's panel, built here for every page that has a room
  // (an empty <section id="room">): the join form, the place, the live
  // region. Fixed text alone: nothing a buyer or the service sent.
  function markup() {
    return '<h2 id="room-h" tabindex="-1">Waiting room</h2>' +
      '<p id="room-intro" class="room-intro"></p>' +
      '<p id="room-showing" class="room-showing" hidden></p>' +
      '<form id="room-join" novalidate hidden>' +
      '<p id="room-msg" class="room-msg" hidden></p>' +
      '<div class="field"><label for="room-email">E-mail</label><input id="room-email" name="email" type="email" autocomplete="email" required maxlength="200" aria-describedby="room-email-hint">' +
      '<p id="room-email-hint" class="hint">Your place in the queue is for this address: you buy your ' + unit[1] + ' with it.</p></div>' +
      '<div class="field"><label for="room-qty">' + Units() + '</label><select id="room-qty" name="quantity" class="select"></select></div>' +
      '<div id="room-error" class="alert" role="alert"></div>' +
      '<div class="actions"><button type="submit" id="room-go" class="btn primary">Join the queue</button></div>' +
      '</form>' +
      '<div id="room-place" class="room-place" hidden>' +
      '<h3 id="room-headline" class="room-headline" tabindex="-1"></h3>' +
      '<p id="room-detail" class="room-detail"></p>' +
      '<div id="room-progress" class="meter" role="progressbar" aria-labelledby="room-progress-label" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0"><div class="meter-fill" id="room-fill"></div></div>' +
      '<p id="room-progress-label" class="hint"></p>' +
      '<dl id="room-facts" class="room-facts"></dl>' +
      '<p id="room-note" class="hint"></p>' +
      '<div id="room-actions" class="actions row"><button type="button" id="room-leave" class="btn secondary small">Leave the queue</button></div>' +
      '</div>' +
      '<div id="room-live" class="visually-hidden" aria-live="polite"></div>';
  }

  // start runs the room of ev on the page. hooks.admitted({email,
  // quantity, pass}) is called on each status that admits the buyer (the
  // page shows its order form), hooks.closed() when the buyer may not
  // order (waiting, sold out, left, pass used or expired). On a seated
  // event the pass is used by the buyer's first hold, not the order:
  // hooks.used({email, quantity}), when given, is asked on a status whose
  // pass made a hold token that still holds the seats (seatsHeld), and
  // true keeps the order form; once the seats are registered the place is
  // used as on any event. On a multi-showing event (ev.showings) the
  // admitted hook's argument also has showingId, the showing the pass
  // buys; hooks.choose() is called when the buyer tries to join with no
  // showing chosen (the page moves focus to its showing choice), and
  // showing ({id, startsAt}, or null for none yet) is the line to show
  // first. It returns {poll, use}: poll reads the status now (after a
  // refused registration, say); use(showing) shows the line of another
  // showing (null: none chosen).
  function start(ev, hooks, showing) {
    const room = ev.waitingRoom;
    const multi = (ev.showings || []).length > 0;
    if (ev.seated) unit = ['seat', 'seats'];
    $('room').innerHTML = markup();
    const ss = storage('sessionStorage');
    let key = keyOf(ev, '');
    const st = { place: null, last: null, timer: 0, polling: false, said: '', saidAt: 0, saidPos: 0, holding: false, showing: null, warnedPass: '', warned: Infinity };
    const t0 = Date.parse(room.salesStartAt);

    function save() {
      if (!ss) return;
      if (st.place) ss.setItem(key, JSON.stringify(st.place));
      else ss.removeItem(key);
    }
    function load() {
      try {
        return ss ? JSON.parse(ss.getItem(key) || 'null') : null;
      } catch (e) {
        return null;
      }
    }

    // showingLine says which showing's line the room shows, or asks for
    // one.
    function showingLine() {
      const box = $('room-showing');
      box.hidden = !multi;
      if (!multi) return;
      const sh = st.showing;
      if (!sh) {
        box.textContent = 'Choose a showing above: each showing has its own queue.';
        return;
      }
      box.replaceChildren(st.place ? 'Your place is in the queue for ' : 'You are joining the queue for ',
        Shop.el('strong', {}, Shop.el('time', { datetime: sh.startsAt, text: Shop.when(sh.startsAt) })), '.');
    }

    // The intro: when sales start and how the order is decided.
    const per = Number(room.perBuyer) || 1;
    const order = room.mode === 'fair'
      ? 'Everyone who joins before then gets a place drawn at random when sales start, so there is no need to rush; later arrivals queue in order of arrival.'
      : 'Places are given in order of arrival.';
    function intro() {
      $('room-intro').textContent = Units() + ' for this event are sold through a queue. ' +
        (Date.now() < t0 ? 'Sales start ' + Shop.when(room.salesStartAt) + '. ' + order : 'Sales started ' + Shop.when(room.salesStartAt) + ': join to get your place in line.') +
        ' You can ask for up to ' + tickets(per) + (multi ? ' for each showing.' : '.');
    }
    intro();
    const sel = $('room-qty');
    sel.replaceChildren();
    for (let i = 1; i <= per; i++) sel.append(Shop.el('option', { value: i, text: String(i) }));
    $('room').hidden = false;

    function say(msg) {
      if (!msg || msg === st.said) return;
      st.said = msg;
      st.saidAt = Date.now();
      $('room-live').textContent = msg;
    }

    function fact(label, value, name) {
      return Shop.el('div', { 'data-fact': name }, Shop.el('dt', { text: label }), Shop.el('dd', { text: value }));
    }

    function meter(pct, text) {
      const bar = $('room-progress');
      bar.setAttribute('aria-valuenow', String(pct));
      bar.setAttribute('aria-valuetext', text);
      $('room-fill').style.width = pct + '%';
      $('room-progress-label').textContent = text;
    }

    // showJoin shows the join form, with message (why it shows again)
    // above it.
    function showJoin(message) {
      $('room').dataset.state = 'join';
      $('room-place').hidden = true;
      $('room-join').hidden = false;
      $('room-intro').hidden = false;
      intro();
      $('room-msg').textContent = message || '';
      $('room-msg').hidden = !message;
      showingLine();
    }

    function drop() {
      st.place = null;
      st.last = null;
      clearTimeout(st.timer);
      save();
      hooks.closed();
    }

    // render shows a status (join's or status's data).
    function render(d) {
      const prev = st.last;
      st.last = d;
      const box = $('room');
      box.dataset.state = d.state;
      $('room-join').hidden = true;
      $('room-intro').hidden = true;
      $('room-place').hidden = false;
      $('room-actions').hidden = false;
      $('room-progress').hidden = false;
      const facts = $('room-facts');
      const changed = !prev || prev.state !== d.state;
      switch (d.state) {
        case 'waiting': {
          hooks.closed();
          const early = Date.now() < t0;
          const p = st.place;
          if (early) {
            p.firstAhead = null;
          } else if (p.firstAhead === null || p.firstAhead === undefined || d.ahead > p.firstAhead) {
            p.firstAhead = d.ahead;
          }
          save();
          // Odds 0 after T0: every ticket left is set aside for buyers let
          // in before this place (at the head of the line), or the places
          // ahead ask for all of them. It gets tickets only if some come
          // back (a buyer does not order in time, or leaves), so no chance
          // or wait can be given; why is said in words.
          const waitsForReturns = !early && d.odds === 0;
          const why = d.ahead === 0 ? 'Every ticket left is set aside for buyers let in before you'
            : 'Every ticket left is set aside for buyers let in before you or asked for by the buyers ahead of you';
          $('room-headline').textContent = early ? 'You’re in the queue' : (d.ahead === 0 ? 'You’re next in line' : 'You’re number ' + d.position + ' in line');
          facts.replaceChildren(
            fact('Your place', early && room.mode === 'fair' ? d.position + ' (for now)' : String(d.position), 'position'),
            fact('Ahead of you', String(d.ahead), 'ahead'),
            fact('Estimated wait', waitsForReturns ? 'Until tickets come back' : wait(d.etaSeconds), 'eta'),
            fact('Chance of tickets', waitsForReturns ? IF_RETURNS : d.odds + '%', 'odds'),
            fact('You asked for', tickets(d.quantity), 'quantity'));
          let pct = 0;
          let text;
          if (early) {
            text = 'Waiting for sales to start';
          } else {
            // 5% on joining, 95% at the head of the line, 100% let in.
            const first = p.firstAhead;
            pct = first > 0 ? Math.round(5 + 90 * (first - d.ahead) / first) : 95;
            text = d.ahead === 0 ? 'At the front of the line' : d.ahead + ' ahead of you: ' + pct + '% of the way to the front';
          }
          meter(pct, text);
          $('room-note').textContent = waitsForReturns
            ? why + '. If a buyer does not order in time, or leaves the queue, tickets come back and the queue moves on: keep this page open. Reloading keeps your place.'
            : 'Keep this page open: the queue moves on by itself. Reloading keeps your place.';
          detail();
          const moved = d.position !== st.saidPos && Date.now() - st.saidAt >= SAY_EVERY_MS;
          if (changed || moved || (prev && prev.early !== early)) {
            st.saidPos = d.position;
            say(early ? 'You are in the queue. Sales start at ' + timeFmt.format(new Date(t0)) + '.'
              : waitsForReturns ? 'You are number ' + d.position + ' in line. ' + why + ': you get tickets only if some come back.'
                : 'You are number ' + d.position + ' in line. Estimated wait: ' + wait(d.etaSeconds).toLowerCase() + '. Chance of tickets: ' + d.odds + '%.');
          }
          d.early = early;
          break;
        }
        case 'admitted':
          meter(100, 'You’re through the queue');
          st.holding = d.passUsed && d.seatsHeld && !!hooks.used && hooks.used({ email: st.place.email, quantity: d.quantity });
          if (st.holding) {
            $('room-headline').textContent = 'You’re in!';
            $('room-detail').textContent = 'Your place in the queue holds your seats: pick them and order below before the seat hold runs out.';
            facts.replaceChildren(fact('Your seats', 'Up to ' + d.quantity, 'quantity'));
            $('room-note').textContent = '';
            $('room-actions').hidden = true;
            if (changed) say('You’re in! Pick up to ' + tickets(d.quantity) + ' and order below.');
            break;
          }
          if (d.passUsed) {
            $('room-headline').textContent = 'You’ve placed your order';
            $('room-detail').textContent = 'Your place in the queue was used for your order. Once it is paid, your tickets arrive by e-mail.';
            facts.replaceChildren();
            $('room-note').textContent = '';
            $('room-progress-label').textContent = '';
            $('room-progress').hidden = true;
            $('room-actions').hidden = true;
            hooks.closed();
            if (changed) say('You have placed your order with your place in the queue.');
            break;
          }
          $('room-headline').textContent = 'You’re in!';
          d.expiresAt = Math.max(Date.now(), Date.parse(d.passExpiresAt));
          facts.replaceChildren(
            fact('Your ' + unit[1], tickets(d.quantity), 'quantity'),
            fact('Time left to order', clock(d.expiresAt - Date.now()), 'left'));
          $('room-note').textContent = 'If the time runs out, your ' + unit[1] + ' go to the next in line.';
          detail();
          hooks.admitted({ email: st.place.email, quantity: d.quantity, pass: d.pass, showingId: st.showing ? st.showing.id : '' });
          if (changed) say('You’re in! Your ' + tickets(d.quantity) + (d.quantity === 1 ? ' is' : ' are') + ' set aside for you for ' + Math.max(1, Math.round((d.expiresAt - Date.now()) / 60000)) + ' minutes. The order form is below.');
          break;
        case 'sold_out':
          hooks.closed();
          $('room-headline').textContent = 'Sold out';
          $('room-detail').textContent = 'Every ticket is sold or held by a buyer who is paying. If a buyer does not pay in time, their tickets come back and the queue moves on: keep this page open to keep your place.';
          // Odds 0 here say nothing is free now; the detail says tickets
          // come back when a buyer does not pay, so the fact says so too.
          facts.replaceChildren(fact('Your place', String(d.position), 'position'), fact('Chance of tickets', IF_RETURNS, 'odds'));
          meter(0, 'Sold out');
          $('room-note').textContent = '';
          if (changed) say('Sold out. Every ticket is sold or held by a buyer who is paying. Keep this page open: if tickets come back, the queue moves on.');
          break;
        case 'expired':
          drop();
          showJoin('Your time to order ran out, so your ' + unit[1] + ' went to the next in line. You can join the queue again.');
          say('Your time to order ran out. You can join the queue again.');
          break;
        default: // left
          drop();
          showJoin('You are no longer in the queue. You can join again.');
          say('You left the queue.');
      }
    }

    // detail is the line under the headline that counts down: to the
    // on-sale, or the pass's time left.
    function detail() {
      const d = st.last;
      if (!d) return;
      if (d.state === 'waiting') {
        const left = t0 - Date.now();
        $('room-detail').textContent = left > 0
          ? 'Sales start in ' + clock(left) + '. ' + (room.mode === 'fair' ? 'Then the order of everyone in the queue is drawn, and buyers are let in as tickets are left.' : 'Then buyers are let in, in order, as tickets are left.')
          : 'Buyers are let in as tickets are left. When it is your turn, the order form appears here.';
      } else if (d.state === 'admitted' && !d.passUsed) {
        const left = d.expiresAt - Date.now();
        // The time left is the fact below, counting down: said once.
        $('room-detail').textContent = left > 0
          ? 'Your ' + tickets(d.quantity) + (d.quantity === 1 ? ' is' : ' are') + ' set aside for you: order below before the time runs out.'
          : 'Your time to order is up.';
        const dd = document.querySelector('#room-facts [data-fact="left"] dd');
        if (dd) dd.textContent = clock(left);
        // The countdown itself is silent (a screen reader would read it
        // every second): the last minute and the last 15 seconds are said.
        // st.warned is the last said, for this pass (a status answer
        // replaces d); a pass given with less than a warning's time left,
        // or within 15 s of it, starts past it, so "You're in" is not
        // talked over.
        if (st.warnedPass !== d.passExpiresAt) {
          st.warnedPass = d.passExpiresAt;
          st.warned = left <= 30000 ? 15000 : left <= 75000 ? 60000 : Infinity;
        }
        for (const [at, words] of [[15000, '15 seconds'], [60000, 'One minute']]) {
          if (left > 0 && left <= at && at < st.warned) {
            st.warned = at;
            say(words + ' left to order your ' + tickets(d.quantity) + '.');
            break;
          }
        }
      }
    }

    function schedule(ms) {
      clearTimeout(st.timer);
      st.timer = setTimeout(poll, ms);
    }

    // holds says whether a status answered d is worth a long-poll.
    function holds(d) {
      return d.state === 'waiting' || d.state === 'sold_out';
    }

    function next(d) {
      if (holds(d)) return AGAIN_MS; // the next long-poll
      if (d.state === 'admitted' && !d.passUsed) return Math.min(IDLE_MS, Math.max(NEAR_MS, d.expiresAt - Date.now() + 500));
      if (st.holding) return IDLE_MS; // the seats' hold may lapse: then the place does
      return 0; // nothing more to wait for
    }

    async function poll() {
      clearTimeout(st.timer);
      if (!st.place || st.polling || document.hidden) return;
      st.polling = true;
      const place = st.place;
      let ms = FAR_MS;
      // The first read after a reload or a join answers at once.
      const wait = st.last && holds(st.last) ? WAIT_S : 0;
      try {
        // known: the state this page shows, so an answer lost with its
        // connection (or given by another server) is answered at once.
        const q = wait ? '?wait=' + wait + '&known=' + encodeURIComponent(st.last.state) : '';
        const d = await Shop.api('GET', '/queue/' + encodeURIComponent(ev.id) + '/status' + q, undefined,
          { headers: { Authorization: 'Bearer ' + place.pollToken }, timeoutMs: (wait + 10) * 1000 });
        if (st.place !== place) return;
        $('room-error').textContent = '';
        render(d);
        ms = next(d);
      } catch (err) {
        if (st.place !== place) return;
        if (err.status === 401 || err.status === 404) {
          drop();
          showJoin('We could not find your place in the queue. Please join again: the same e-mail address gets the same place.');
          return;
        }
        // Busy or offline: keep the place and try again.
        $('room-note').textContent = 'We could not reach the ticket service; trying again…';
        ms = err.status === 429 ? IDLE_MS : FAR_MS;
      } finally {
        st.polling = false;
        // The buyer switched lines while this read was on its way: read
        // the new line's place now.
        if (st.place !== place && st.place) schedule(0);
      }
      if (ms > 0) schedule(ms);
    }

    async function join(e) {
      e.preventDefault();
      const btn = $('room-go');
      if (Shop.isBusy($('room-join'))) return;
      const email = $('room-email');
      email.removeAttribute('aria-invalid');
      $('room-error').textContent = '';
      if (!email.checkValidity() || !email.value.trim()) {
        email.setAttribute('aria-invalid', 'true');
        email.focus();
        Shop.fail('Please enter a valid e-mail address: your place in the queue is for it.', 'room-error');
        return;
      }
      if (multi && !st.showing) {
        Shop.fail('Choose a showing first: each showing has its own queue.', 'room-error');
        if (hooks.choose) hooks.choose();
        return;
      }
      Shop.busy(btn, true, 'Joining…');
      const body = { email: email.value.trim(), quantity: Number(sel.value) || 1, device: device() };
      const line = st.showing;
      const lineKey = key;
      if (line) body.showingId = line.id;
      try {
        if (room.proofOfWork) {
          const c = await Shop.api('POST', '/queue/' + encodeURIComponent(ev.id) + '/challenge', { email: body.email });
          if (c.required) body.work = { challenge: c.challenge, nonce: await solve(c) };
        }
        const d = await Shop.api('POST', '/queue/' + encodeURIComponent(ev.id) + '/join', body);
        const place = { queueId: d.queueId, pollToken: d.pollToken, email: body.email };
        if (st.showing !== line) {
          // The buyer chose another showing meanwhile: keep the place for
          // when they come back to this one.
          if (ss) ss.setItem(lineKey, JSON.stringify(place));
          return;
        }
        st.place = place;
        save();
        showingLine();
        st.last = null;
        render(d);
        $('room-headline').focus();
        const ms = next(d);
        if (ms > 0) schedule(ms);
      } catch (err) {
        if (err.code === 'QUEUE_SOLD_OUT') {
          $('room').dataset.state = 'sold_out';
          Shop.fail(err, 'room-error');
        } else if (err.code === 'QUEUE_NOT_OPEN' && err.data && err.data.opensAt) {
          Shop.fail('The queue opens at ' + Shop.when(err.data.opensAt) + '. Please come back then.', 'room-error');
        } else if (err.code === 'INVALID_BUYER_EMAIL') {
          email.setAttribute('aria-invalid', 'true');
          email.focus();
          Shop.fail(err, 'room-error');
        } else {
          Shop.fail(err, 'room-error');
        }
      } finally {
        Shop.busy(btn, false);
      }
    }

    async function leave() {
      const place = st.place;
      if (!place) return;
      const btn = $('room-leave');
      if (Shop.isBusy($('room-actions'))) return;
      const placeKey = key;
      Shop.busy(btn, true, 'Leaving…');
      try {
        const d = await Shop.api('POST', '/queue/' + encodeURIComponent(ev.id) + '/leave', undefined, { headers: { Authorization: 'Bearer ' + place.pollToken } });
        if (st.place !== place) {
          // The buyer chose another showing meanwhile: forget the place
          // left in its line (if it was left), show the new one's.
          if (ss && (!d || !d.state || d.state === 'left')) ss.removeItem(placeKey);
          return;
        }
        if (d && d.state && d.state !== 'left') {
          // kept (it bought, or its seats are held): the status says how
          poll();
          return;
        }
        drop();
        showJoin('You left the queue. You can join again.');
        $('room-email').value = place.email;
        say('You left the queue. Your place went to the next in line.');
        $('room-h').focus();
      } catch (err) {
        Shop.fail(err, 'room-error');
      } finally {
        Shop.busy(btn, false);
      }
    }

    $('room').dataset.mode = room.mode;
    $('room-join').addEventListener('submit', join);
    $('room-leave').addEventListener('click', leave);
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden && st.place) poll();
    });
    setInterval(function () {
      if (document.hidden || !st.last) return;
      detail();
      // The on-sale came: read the place now rather than at the next poll.
      if (st.last.state === 'waiting' && st.last.early && Date.now() >= t0 && !st.polling) poll();
    }, 1000);

    // use shows the line of showing sh (the event's own line on an event
    // without showings): its place kept in this tab, or the join form.
    function use(sh) {
      const switched = st.started;
      if (switched && (st.showing && st.showing.id) === (sh && sh.id)) return;
      st.started = true;
      clearTimeout(st.timer);
      st.showing = multi ? sh || null : null;
      key = keyOf(ev, st.showing ? st.showing.id : '');
      st.place = multi && !st.showing ? null : load();
      st.last = null;
      st.holding = false;
      st.said = ''; // the new line's news is said even if the old's was the same
      st.saidPos = 0;
      $('room-error').textContent = '';
      // A pass of another line buys nothing here. (Not on the first line
      // shown: a seated page keeps its pass across a reload.)
      if (switched) hooks.closed();
      if (st.place) {
        if (switched) $('room').dataset.state = 'finding';
        $('room-join').hidden = true;
        $('room-intro').hidden = true;
        $('room-place').hidden = false;
        $('room-facts').replaceChildren();
        $('room-detail').textContent = '';
        $('room-headline').textContent = 'Finding your place in the queue…';
        $('room-email').value = st.place.email || '';
        showingLine();
        poll();
      } else {
        showJoin();
      }
    }
    use(showing || null);
    return { poll: poll, use: use };
  }

  window.Room = { start: start, placed: placed };
})();
