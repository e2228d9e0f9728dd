// The GA4 recommended-event helpers: event names, parameter names and their checks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { makeClient } from './helpers.mjs';

const items = [{ item_id: 'SKU_1', item_name: 'Shirt', price: 10, quantity: 2, item_category: 'Apparel' }];

// [helper, arguments, GA4 event name, properties sent]
const calls = [
  ['login', [{ method: 'google' }], 'login', { method: 'google' }],
  ['login', [], 'login', undefined],
  ['signUp', [{ method: 'email' }], 'sign_up', { method: 'email' }],
  ['search', [{ search_term: 't-shirts' }], 'search', { search_term: 't-shirts' }],
  ['viewItem', [{ currency: 'EUR', value: 20, items }], 'view_item', { currency: 'EUR', value: 20, items }],
  ['viewItemList', [{ item_list_id: 'related', item_list_name: 'Related', items }], 'view_item_list', { item_list_id: 'related', item_list_name: 'Related', items }],
  ['selectItem', [{ item_list_id: 'related', items }], 'select_item', { item_list_id: 'related', items }],
  ['addToCart', [{ currency: 'EUR', value: 20, items }], 'add_to_cart', { currency: 'EUR', value: 20, items }],
  ['removeFromCart', [{ currency: 'EUR', value: 10, items }], 'remove_from_cart', { currency: 'EUR', value: 10, items }],
  ['addToWishlist', [{ items }], 'add_to_wishlist', { items }],
  ['beginCheckout', [{ currency: 'EUR', value: 20, coupon: 'X', items }], 'begin_checkout', { currency: 'EUR', value: 20, coupon: 'X', items }],
  ['addShippingInfo', [{ currency: 'EUR', value: 20, shipping_tier: 'Ground', items }], 'add_shipping_info', { currency: 'EUR', value: 20, shipping_tier: 'Ground', items }],
  ['addPaymentInfo', [{ currency: 'EUR', value: 20, payment_type: 'Credit Card', items }], 'add_payment_info', { currency: 'EUR', value: 20, payment_type: 'Credit Card', items }],
  ['refund', [{ transaction_id: 'T1', currency: 'EUR', value: 20 }], 'refund', { transaction_id: 'T1', currency: 'EUR', value: 20 }],
  ['share', [{ method: 'Twitter', content_type: 'image', item_id: 'C_12345' }], 'share', { method: 'Twitter', content_type: 'image', item_id: 'C_12345' }],
  ['generateLead', [{ currency: 'USD', value: 99, lead_source: 'Trade show' }], 'generate_lead', { currency: 'USD', value: 99, lead_source: 'Trade show' }],
  ['selectContent', [{ content_type: 'product', content_id: 'C_12345' }], 'select_content', { content_type: 'product', content_id: 'C_12345' }],
  ['viewPromotion', [{ creative_name: 'Summer Banner', creative_slot: 'featured_app_1', promotion_id: 'P_12345', promotion_name: 'Summer Sale', items }], 'view_promotion', { creative_name: 'Summer Banner', creative_slot: 'featured_app_1', promotion_id: 'P_12345', promotion_name: 'Summer Sale', items }],
  ['tutorialBegin', [], 'tutorial_begin', undefined],
  ['tutorialComplete', [], 'tutorial_complete', undefined],
  ['levelUp', [{ level: 5, character: 'Player 1' }], 'level_up', { level: 5, character: 'Player 1' }],
  ['postScore', [{ score: 10000, level: 5, character: 'Player 1' }], 'post_score', { score: 10000, level: 5, character: 'Player 1' }],
  ['earnVirtualCurrency', [{ virtual_currency_name: 'Gems', value: 5 }], 'earn_virtual_currency', { virtual_currency_name: 'Gems', value: 5 }],
  ['spendVirtualCurrency', [{ value: 5, virtual_currency_name: 'Gems', item_name: 'Starter Boost' }], 'spend_virtual_currency', { value: 5, virtual_currency_name: 'Gems', item_name: 'Starter Boost' }],
  ['unlockAchievement', [{ achievement_id: 'A_12345' }], 'unlock_achievement', { achievement_id: 'A_12345' }],
  ['joinGroup', [{ group_id: 'G_12345' }], 'join_group', { group_id: 'G_12345' }],
];

describe('GA4 helpers', () => {
  for (const [helper, args, event, properties] of calls) {
    test(`${helper}(${args.length ? '{...}' : ''}) sends ${event}`, async () => {
      const { client, fetch } = makeClient();
      client[helper](...args);
      await client.flush();
      const [ev] = fetch.calls[0].events;
      assert.equal(ev.event, event);
      assert.deepEqual(ev.properties, properties);
      await client.shutdown();
    });
  }

  test('every helper of the issue exists', () => {
    const { client } = makeClient();
    const wanted = 'login signUp search viewItem viewItemList selectItem addToCart removeFromCart addToWishlist beginCheckout addShippingInfo addPaymentInfo refund share generateLead selectContent viewPromotion tutorialBegin tutorialComplete levelUp postScore earnVirtualCurrency spendVirtualCurrency unlockAchievement joinGroup'.split(' ');
    for (const name of wanted) assert.equal(typeof client[name], 'function', name);
  });

  test('helpers take per-call options and extra custom parameters', async () => {
    const { client, fetch } = makeClient();
    client.login({ method: 'sso', tenant: 'acme' }, { sessionId: 's1', url: '/login', userAgent: 'UA', ip: '::1' });
    client.tutorialBegin({ url: '/onboarding' });
    await client.flush();
    const [a, b] = fetch.calls[0].events;
    assert.deepEqual(a.properties, { method: 'sso', tenant: 'acme' });
    assert.equal(a.sessionId, 's1');
    assert.equal(a.url, '/login');
    assert.equal(a.userAgent, 'UA');
    assert.equal(a.ip, '::1');
    assert.equal(b.url, '/onboarding');
  });

  test('currencies are upper-cased', async () => {
    const { client, fetch } = makeClient();
    client.addToCart({ currency: 'eur', value: 1, items });
    await client.flush();
    assert.equal(fetch.calls[0].events[0].properties.currency, 'EUR');
  });

  const { client } = makeClient();
  const bad = [
    ['search without search_term', () => client.search({}), /search: search_term is required/],
    ['search without params', () => client.search(), /params must be an object with search_term/],
    ['search with an empty search_term', () => client.search({ search_term: '' }), /search_term must be a non-empty string/],
    ['viewItem without items', () => client.viewItem({ currency: 'EUR', value: 1 }), /items is required/],
    ['addToCart with items that are not an array', () => client.addToCart({ items: {} }), /items must be an array/],
    ['addToCart with a value but no currency', () => client.addToCart({ value: 5, items }), /currency is required when value is set/],
    ['addToCart with a negative price', () => client.addToCart({ items: [{ item_id: 'a', price: -1 }] }), /items\[0\].price must not be negative/],
    ['addToCart with a fractional quantity', () => client.addToCart({ items: [{ item_id: 'a', quantity: 0.5 }] }), /quantity must be a whole number/],
    ['addToCart with an item without id or name', () => client.addToCart({ items: [{ price: 1 }] }), /needs an item_id or an item_name/],
    ['beginCheckout with a NaN value', () => client.beginCheckout({ currency: 'EUR', value: NaN, items }), /value must be a finite number/],
    ['generateLead with a bad currency', () => client.generateLead({ currency: 'euro', value: 1 }), /three-letter ISO 4217/],
    ['refund without transaction_id', () => client.refund({ currency: 'EUR', value: 1 }), /transaction_id is required/],
    ['postScore without score', () => client.postScore({ level: 1 }), /score is required/],
    ['postScore with an infinite score', () => client.postScore({ score: Infinity }), /score must be a finite number/],
    ['spendVirtualCurrency without a currency name', () => client.spendVirtualCurrency({ value: 1 }), /virtual_currency_name is required/],
    ['unlockAchievement without an id', () => client.unlockAchievement({}), /achievement_id is required/],
    ['login with params that are not an object', () => client.login('google'), /params must be a plain object/],
    ['login with a method that is not a string', () => client.login({ method: 1 }), /method must be a non-empty string/],
    ['levelUp with a level that is not a number', () => client.levelUp({ level: '5' }), /level must be a finite number/],
  ];
  for (const [what, fn, re] of bad) {
    test(`throws for ${what}`, () => {
      assert.throws(fn, (e) => e instanceof TypeError && re.test(e.message));
      assert.equal(client.stats().queued, 0);
    });
  }
});
