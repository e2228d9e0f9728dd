// Compiled by `npm run typecheck` (never run): the public types accept what they should and
// refuse what they should. Each @ts-expect-error line must be an error.
import {
  createClient,
  SvcError,
  VERSION,
  type ClientStats,
  type EventOptions,
  type FetchLike,
  type Item,
  type Properties,
  type SvcClient,
} from '../../src/index.js';

const fakeFetch: FetchLike = async () => ({ status: 200, headers: { get: () => null }, text: async () => '{"ok":true}' });

const svc: SvcClient = createClient({
  apiKey: 'svc_live_x',
  projectId: 'svc_proj_acme',
  endpoint: 'https://svc.example/analytics',
  flushInterval: 1000,
  maxBatchSize: 50,
  maxQueueSize: 1000,
  timeout: 5000,
  fetch: fakeFetch,
  onError: (e: SvcError) => {
    const code: string = e.code;
    const n: number = e.count;
    void code;
    void n;
  },
  sessionId: 's1',
});
const version: string = VERSION;
void version;

// @ts-expect-error endpoint is required
createClient({ apiKey: 'k', projectId: 'p' });

svc.track('signup', { plan: 'pro', seats: 3, trial: false, coupon: null, maybe: undefined });
svc.track('signup');
// @ts-expect-error properties are flat
svc.track('signup', { user: { id: 1 } });
// @ts-expect-error names are strings
svc.track(42);

const props: Properties = { items: [{ item_id: 'a', price: 1 }] };
svc.track('custom_with_items', props);

svc.pageView();
svc.pageView('/pricing', { referrer: 'https://google.com/' });
// @ts-expect-error the url is the first argument, not an option
svc.pageView('/pricing', { url: '/x' });

const items: Item[] = [{ item_id: 'sku1', price: 10, quantity: 3 }, { item_name: 'Shirt' }];
svc.purchase('T1', 30, 'EUR', items);
svc.purchase('T1', 30, 'EUR', items, { coupon: 'X', tax: 1, shipping: 2, sessionId: 's' });
// @ts-expect-error an item needs item_id or item_name
svc.purchase('T1', 30, 'EUR', [{ price: 10 }]);
// @ts-expect-error value is a number
svc.purchase('T1', '30', 'EUR', items);

svc.captureException(new Error('boom'), { fatal: true });
svc.captureException('anything thrown');
// @ts-expect-error fatal is a boolean
svc.captureException(new Error('boom'), { fatal: 'yes' });

const ctx: EventOptions = { userAgent: 'UA', ip: '203.0.113.9', timestamp: new Date(), eventId: 'order-1', url: '/x' };
svc.login({ method: 'google' }, ctx);
svc.login();
svc.signUp({ method: 'email' });
svc.search({ search_term: 'shoes' });
// @ts-expect-error search_term is required
svc.search({});
// @ts-expect-error GA4 parameter names: search_term, not searchTerm
svc.search({ searchTerm: 'shoes' });
svc.viewItem({ currency: 'EUR', value: 10, items });
svc.viewItemList({ item_list_id: 'l', item_list_name: 'L', items });
svc.selectItem({ items });
svc.addToCart({ currency: 'EUR', value: 10, items });
// @ts-expect-error items are required
svc.addToCart({ currency: 'EUR', value: 10 });
svc.removeFromCart({ items });
svc.addToWishlist({ items });
svc.beginCheckout({ coupon: 'X', items });
svc.addShippingInfo({ shipping_tier: 'Ground', items });
svc.addPaymentInfo({ payment_type: 'card', items });
svc.refund({ transaction_id: 'T1', value: 5, currency: 'EUR' });
svc.share({ method: 'Twitter', content_type: 'image', item_id: 'i' });
svc.generateLead({ currency: 'EUR', value: 1, lead_source: 'form' });
svc.selectContent({ content_type: 'product', content_id: 'c' });
svc.viewPromotion({ creative_name: 'c', creative_slot: 's', promotion_id: 'p', promotion_name: 'n' });
svc.tutorialBegin();
svc.tutorialComplete({ url: '/done' });
svc.levelUp({ level: 2, character: 'c' });
svc.postScore({ score: 10 });
svc.earnVirtualCurrency({ virtual_currency_name: 'Gems', value: 5 });
svc.spendVirtualCurrency({ value: 5, virtual_currency_name: 'Gems', item_name: 'Boost' });
// @ts-expect-error virtual_currency_name is required
svc.spendVirtualCurrency({ value: 5 });
svc.unlockAchievement({ achievement_id: 'a' });
svc.joinGroup({ group_id: 'g' });

async function lifecycle(): Promise<void> {
  await svc.flush();
  await svc.flush({ timeout: 1000 });
  const s: ClientStats = svc.stats();
  const dropped: number = s.dropped;
  void dropped;
  await svc.shutdown({ timeout: 5000 });
}
void lifecycle;

// Request headers pass as they are (string | null).
declare const headers: { get(name: string): string | null };
svc.pageView('https://acme.example/', {
  referrer: headers.get('referer'),
  userAgent: headers.get('user-agent'),
  ip: headers.get('x-real-ip'),
});
