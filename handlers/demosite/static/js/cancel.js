// The cancel page: the buyer left the hosted payment page. Nothing was
// charged; the order stays held until its window ends, so the page says
// until when and links back to the event.
'use strict';

(function () {
  const Shop = window.Shop;
  const timeFmt = new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: '2-digit' });

  async function main() {
    const ev = Shop.param('event');
    const back = document.getElementById('back');
    if (ev) back.href = '/event.html?event=' + encodeURIComponent(ev);
    else back.hidden = true;
    const id = Shop.param('registration');
    if (!id || id.indexOf('{') >= 0) return;
    try {
      const reg = await Shop.api('GET', '/registration/' + encodeURIComponent(id));
      if (reg.status === 'awaiting_payment' && reg.expiresAt) {
        Shop.say('You left the payment page, so nothing was charged. Your tickets stay reserved until ' +
          timeFmt.format(new Date(reg.expiresAt)) + ' if you change your mind; after that they go back on sale.');
      } else if (reg.status === 'confirmed') {
        Shop.say('This order is already paid and confirmed: your tickets are on their way to your inbox.');
      }
    } catch (err) {
      // The page's message stands without the hold's end.
    }
  }

  main();
})();
