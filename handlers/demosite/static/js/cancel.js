// The cancel page: the buyer left the hosted payment page. Nothing was
// charged; the registration keeps its tickets until its checkout window
// ends, so the page says until when and offers to pay it again (the
// checkout call the shop made, kept in this tab) or to go back to the
// event.
'use strict';

(function () {
  const Shop = window.Shop;
  const $ = function (id) { return document.getElementById(id); };
  const timeFmt = new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: '2-digit' });

  async function main() {
    const ev = Shop.param('event');
    const back = $('back');
    if (ev) back.href = '/event.html?event=' + encodeURIComponent(ev);
    else back.hidden = true;
    const id = Shop.param('registration');
    if (!id || id.indexOf('{') >= 0) return;
    let reg;
    try {
      reg = await Shop.api('GET', '/registration/' + encodeURIComponent(id));
    } catch (err) {
      return; // the page's message stands without the hold's end
    }
    if (reg.status === 'confirmed') {
      Shop.say('This order is already paid and confirmed: your tickets are on their way to your inbox.');
      return;
    }
    if (reg.status !== 'awaiting_payment' || !reg.expiresAt) return;
    const saved = Shop.savedCheckout(id);
    const until = timeFmt.format(new Date(reg.expiresAt));
    Shop.say('You left the payment page, so nothing was charged. Your tickets stay reserved until ' + until +
      (saved ? ': you can still pay for them.' : '; after that they go back on sale.'));
    if (!saved) return;
    const again = $('again');
    again.hidden = false;
    back.className = 'btn secondary';
    again.addEventListener('click', async function () {
      if (again.getAttribute('aria-busy')) return; // busy is aria-disabled only
      Shop.busy(again, true, 'Opening secure checkout…');
      try {
        await Shop.checkout(saved.path.indexOf('wallet') >= 0 ? 'wallet' : 'card', saved.pay);
      } catch (err) {
        Shop.fail(err);
        Shop.busy(again, false);
      }
    });
  }

  main();
})();
