import type { SvcError } from './errors.js';

/** A property value as the service stores it: flat JSON scalars only. */
export type PropertyValue = string | number | boolean | null;

/**
 * An item of a GA4 item list (`items`). One of `item_id` or `item_name` is required by the
 * GA4 helpers; any other flat custom item parameter may be added.
 */
export interface ItemFields {
  item_id?: string;
  item_name?: string;
  affiliation?: string;
  coupon?: string;
  discount?: number;
  index?: number;
  item_brand?: string;
  item_category?: string;
  item_category2?: string;
  item_category3?: string;
  item_category4?: string;
  item_category5?: string;
  item_list_id?: string;
  item_list_name?: string;
  item_variant?: string;
  location_id?: string;
  /** Unit price, a finite number >= 0. */
  price?: number;
  /** A whole number >= 0. */
  quantity?: number;
  promotion_id?: string;
  promotion_name?: string;
  creative_name?: string;
  creative_slot?: string;
  [param: string]: PropertyValue | undefined;
}

/** A GA4 item: `item_id` or `item_name` (or both) plus optional fields. */
export type Item = (ItemFields & { item_id: string }) | (ItemFields & { item_name: string });

/**
 * Custom event properties: string keys to flat values (at most 50 keys). `undefined` values
 * are left out. The one nested value allowed is `items`, an array of flat objects.
 */
export interface Properties {
  [key: string]: PropertyValue | undefined | ReadonlyArray<ItemFields>;
}

/**
 * Per-call context, mostly for server-side senders. `referrer`, `sessionId`, `userAgent` and `ip`
 * also take `null` or `""` for "not known", so request headers can be passed as they are.
 */
export interface EventOptions {
  /** The page the event belongs to: a full URL or a path (<= 2048 chars). In a browser the
   * current `location.href` by default, elsewhere `"/"` (`pageView` requires it). */
  url?: string;
  /** The referring page (cut to 2048 chars). */
  referrer?: string | null;
  /** The session this event belongs to (<= 128 chars); overrides the client's `sessionId`.
   * Without one the service derives the session cookie-free. */
  sessionId?: string | null;
  /** The end user's user agent, when sending on their behalf from a server (cut to 1024 chars;
   * honoured with a secret key only). */
  userAgent?: string | null;
  /** The end user's IP address (IPv4 or IPv6), when sending on their behalf from a server
   * (honoured with a secret key only). */
  ip?: string | null;
  /** When the event happened: a `Date` or milliseconds since the epoch (the service takes up to
   * 7 days in the past). Default: now. */
  timestamp?: Date | number;
  /** Your own idempotency key for this event (<= 128 chars; default: a random UUID). Events sent
   * twice with the same `eventId` are stored once. */
  eventId?: string;
}

/** Options of `pageView`: the URL is its first argument. */
export type PageViewOptions = Omit<EventOptions, 'url'>;

/** Options of `captureException`. */
export interface ExceptionOptions extends EventOptions {
  /** Whether the error crashed the app or request. Default `false`. */
  fatal?: boolean;
}

/** Extra GA4 `purchase` parameters, with the per-call context. */
export interface PurchaseOptions extends EventOptions {
  coupon?: string;
  shipping?: number;
  tax?: number;
  affiliation?: string;
}

// ----- GA4 recommended-event parameters (names as GA4 spells them) -----

/** `currency` (ISO 4217, e.g. "EUR") is required whenever `value` is set. */
export interface EcommerceParams {
  currency?: string;
  value?: number;
  items: ReadonlyArray<Item>;
}
export interface LoginParams { method?: string }
export interface SignUpParams { method?: string }
export interface SearchParams { search_term: string }
export type ViewItemParams = EcommerceParams;
export interface ViewItemListParams { item_list_id?: string; item_list_name?: string; items: ReadonlyArray<Item> }
export interface SelectItemParams { item_list_id?: string; item_list_name?: string; items: ReadonlyArray<Item> }
export type AddToCartParams = EcommerceParams;
export type RemoveFromCartParams = EcommerceParams;
export type AddToWishlistParams = EcommerceParams;
export interface BeginCheckoutParams extends EcommerceParams { coupon?: string }
export interface AddShippingInfoParams extends EcommerceParams { coupon?: string; shipping_tier?: string }
export interface AddPaymentInfoParams extends EcommerceParams { coupon?: string; payment_type?: string }
export interface RefundParams {
  transaction_id: string;
  currency?: string;
  value?: number;
  coupon?: string;
  shipping?: number;
  tax?: number;
  affiliation?: string;
  items?: ReadonlyArray<Item>;
}
export interface ShareParams { method?: string; content_type?: string; item_id?: string }
export interface GenerateLeadParams { currency?: string; value?: number; lead_source?: string }
export interface SelectContentParams { content_type?: string; content_id?: string }
export interface ViewPromotionParams {
  creative_name?: string;
  creative_slot?: string;
  promotion_id?: string;
  promotion_name?: string;
  items?: ReadonlyArray<Item>;
}
export interface LevelUpParams { level?: number; character?: string }
export interface PostScoreParams { score: number; level?: number; character?: string }
export interface EarnVirtualCurrencyParams { virtual_currency_name?: string; value?: number }
export interface SpendVirtualCurrencyParams { value: number; virtual_currency_name: string; item_name?: string }
export interface UnlockAchievementParams { achievement_id: string }
export interface JoinGroupParams { group_id?: string }

// ----- transport -----

/** The part of a `fetch` Response the client reads. */
export interface FetchResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** The request the client makes. */
export interface FetchInit {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  /** An `AbortSignal` (typed loosely so that the library needs no DOM types, and any `fetch`
   * fits `FetchLike`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  signal?: any;
  keepalive?: boolean;
}

/** A `fetch`-compatible function (the global `fetch` fits). */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>;

/** Options of `createClient`. */
export interface ClientOptions {
  /** An API key, `svc_live_...`. Use the project's public key in browsers, the secret key on
   * servers (required to pass `userAgent`/`ip` on behalf of end users). */
  apiKey: string;
  /** The project id, `svc_proj_<name>`. */
  projectId: string;
  /** The ingestion URL, e.g. `https://analytics.example.com/analytics`. */
  endpoint: string;
  /** Milliseconds between automatic flushes of a partial batch (default 2000; 0 disables the
   * timer: events are then sent when a batch is full or on `flush()`). */
  flushInterval?: number;
  /** Events per request, 1-1000 (default 100). A full batch is sent at once. */
  maxBatchSize?: number;
  /** Events kept in memory while waiting to be sent (default 10,000). Past it the oldest
   * events are dropped, counted in `stats().dropped` and reported to `onError`. */
  maxQueueSize?: number;
  /** Milliseconds before a request is abandoned and retried (default 10,000). */
  timeout?: number;
  /** Retries of a batch after a network error, timeout, 429 or 5xx (default 5). */
  maxRetries?: number;
  /** First backoff step in ms (default 500); the n-th retry waits a random time in
   * [0, min(retryMaxDelay, retryBaseDelay * 2^n)] unless the server sent Retry-After. */
  retryBaseDelay?: number;
  /** Upper bound of a backoff step, and the longest Retry-After the client waits for before
   * giving up on the batch, in ms (default 30,000). */
  retryMaxDelay?: number;
  /** The `fetch` to use (default: the global `fetch`). */
  fetch?: FetchLike;
  /** Called for every failure, none of which throws: events the service refused, batches given
   * up, events dropped from a full queue. Default: a `console.warn`. */
  onError?: (error: SvcError) => void;
  /** A session id sent with every event of this client (each call can override it). */
  sessionId?: string;
}

/** Counters of a client. */
export interface ClientStats {
  /** Events waiting in the queue. */
  queued: number;
  /** Events in the request under way. */
  inFlight: number;
  /** Events the service accepted. */
  sent: number;
  /** Events given up: refused by the service, retries exhausted, or sent after shutdown. */
  failed: number;
  /** Oldest events dropped because the queue was full. */
  dropped: number;
  /** Requests retried. */
  retries: number;
}

/** Options of `flush` and `shutdown`. */
export interface FlushOptions {
  /** Milliseconds to wait at most. `flush` resolves then and leaves the rest queued;
   * `shutdown` gives up what is left. Default: no limit for `flush`, 10,000 for `shutdown`. */
  timeout?: number;
}

/** A client of the service. Methods are bound: they can be passed around on their own. */
export interface SvcClient {
  /** Sends a custom event. Throws `TypeError` for an invalid name or properties. */
  track(name: string, properties?: Properties | null, options?: EventOptions): void;
  /** Sends a `page_view`. In a browser the URL and referrer default to the current page's;
   * elsewhere the URL is required. */
  pageView(url?: string, options?: PageViewOptions): void;
  /** Sends the GA4 `purchase` event. */
  purchase(
    transactionId: string,
    value: number,
    currency: string,
    items: ReadonlyArray<Item>,
    options?: PurchaseOptions,
  ): void;
  /** Sends the GA4 `exception` event with `description` ("Name: message"), `fatal` and `stack`. */
  captureException(error: unknown, options?: ExceptionOptions): void;

  login(params?: LoginParams, options?: EventOptions): void;
  signUp(params?: SignUpParams, options?: EventOptions): void;
  search(params: SearchParams, options?: EventOptions): void;
  viewItem(params: ViewItemParams, options?: EventOptions): void;
  viewItemList(params: ViewItemListParams, options?: EventOptions): void;
  selectItem(params: SelectItemParams, options?: EventOptions): void;
  addToCart(params: AddToCartParams, options?: EventOptions): void;
  removeFromCart(params: RemoveFromCartParams, options?: EventOptions): void;
  addToWishlist(params: AddToWishlistParams, options?: EventOptions): void;
  beginCheckout(params: BeginCheckoutParams, options?: EventOptions): void;
  addShippingInfo(params: AddShippingInfoParams, options?: EventOptions): void;
  addPaymentInfo(params: AddPaymentInfoParams, options?: EventOptions): void;
  refund(params: RefundParams, options?: EventOptions): void;
  share(params?: ShareParams, options?: EventOptions): void;
  generateLead(params?: GenerateLeadParams, options?: EventOptions): void;
  selectContent(params?: SelectContentParams, options?: EventOptions): void;
  viewPromotion(params?: ViewPromotionParams, options?: EventOptions): void;
  tutorialBegin(options?: EventOptions): void;
  tutorialComplete(options?: EventOptions): void;
  levelUp(params?: LevelUpParams, options?: EventOptions): void;
  postScore(params: PostScoreParams, options?: EventOptions): void;
  earnVirtualCurrency(params?: EarnVirtualCurrencyParams, options?: EventOptions): void;
  spendVirtualCurrency(params: SpendVirtualCurrencyParams, options?: EventOptions): void;
  unlockAchievement(params: UnlockAchievementParams, options?: EventOptions): void;
  joinGroup(params?: JoinGroupParams, options?: EventOptions): void;

  /** Sends everything queued so far; resolves when it is sent or given up (never rejects). */
  flush(options?: FlushOptions): Promise<void>;
  /** Stops the timer, sends what is queued (within `timeout`, default 10 s) and refuses new
   * events. Resolves, never rejects. */
  shutdown(options?: FlushOptions): Promise<void>;
  /** Counters of this client. */
  stats(): ClientStats;
}
