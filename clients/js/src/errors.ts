/** An event the service refused, in `SvcError.rejected`. */
export interface RejectedEvent {
  eventId: string;
  event: string;
  error: { code: string; message: string };
}

/** The kinds of failure reported to `onError`. */
export type SvcErrorCode =
  | 'network_error'
  | 'timeout'
  | 'retries_exhausted'
  | 'events_rejected'
  | 'queue_overflow'
  | 'client_closed'
  | 'shutdown_timeout'
  | 'invalid_request'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'forbidden'
  | 'payload_too_large'
  | 'rate_limited'
  | 'quota_exceeded'
  | (string & {});

/** A failure reported to `onError` (never thrown by the client). */
export class SvcError extends Error {
  override readonly name = 'SvcError';
  /** The service's error code (`invalid_api_key`, `quota_exceeded`, ...) or the client's own. */
  readonly code: SvcErrorCode;
  /** The HTTP status, when the service answered. */
  readonly status: number | undefined;
  /** Events affected (lost, or dropped). */
  readonly count: number;
  /** Which events the service refused and why: for `events_rejected`, and for a batch refused
   * as a whole because none of its events was valid. */
  readonly rejected: RejectedEvent[] | undefined;
  /** The underlying error (a network error, the last failure before giving up). */
  readonly cause: unknown;

  constructor(
    code: SvcErrorCode,
    message: string,
    extra: { status?: number; count?: number; rejected?: RejectedEvent[]; cause?: unknown } = {},
  ) {
    super(message);
    this.code = code;
    this.status = extra.status;
    this.count = extra.count ?? 0;
    this.rejected = extra.rejected;
    this.cause = extra.cause;
  }
}

