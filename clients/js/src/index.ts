/**
 * svc: the client library of the svc cookie-free analytics service.
 *
 * ```ts
 * import { createClient } from 'svc';
 * const svc = createClient({ apiKey, projectId: 'svc_proj_acme', endpoint: 'https://svc.example.com/analytics' });
 * svc.track('signup', { plan: 'pro' });
 * await svc.flush();
 * ```
 */
export { createClient, VERSION } from './client.js';
export { SvcError } from './errors.js';
export type { RejectedEvent, SvcErrorCode } from './errors.js';
export type {
  PropertyValue,
  ItemFields,
  Item,
  Properties,
  EventOptions,
  PageViewOptions,
  ExceptionOptions,
  PurchaseOptions,
  EcommerceParams,
  LoginParams,
  SignUpParams,
  SearchParams,
  ViewItemParams,
  ViewItemListParams,
  SelectItemParams,
  AddToCartParams,
  RemoveFromCartParams,
  AddToWishlistParams,
  BeginCheckoutParams,
  AddShippingInfoParams,
  AddPaymentInfoParams,
  RefundParams,
  ShareParams,
  GenerateLeadParams,
  SelectContentParams,
  ViewPromotionParams,
  LevelUpParams,
  PostScoreParams,
  EarnVirtualCurrencyParams,
  SpendVirtualCurrencyParams,
  UnlockAchievementParams,
  JoinGroupParams,
  FetchResponse,
  FetchInit,
  FetchLike,
  ClientOptions,
  ClientStats,
  FlushOptions,
  SvcClient,
} from './types.js';
