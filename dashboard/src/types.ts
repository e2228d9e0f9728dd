// The shapes of the svc API's JSON answers that the dashboard reads.

export interface Project {
  id: string;
  name: string;
  timezone: string;
  domains?: string[];
  /** An account's role on the project (GET /projects with a session). */
  role?: string;
}

export interface Aggregate {
  pageviews: number;
  sessions: number;
  bounceRate: string;
  trafficSources: Record<string, number>;
  visitors: number;
  events: number;
  bounces: number;
  avgSessionDuration: number;
  viewsPerSession: number;
  from: string;
  to: string;
}

export interface MetricsAnswer extends Aggregate {
  timezone: string;
  projectId: string;
  compare?: Aggregate;
  /** The first day of raw events, when the range reaches before it (docs/api.md, Retention). */
  rawDataFrom?: string;
  notes?: string[];
}

export interface Point {
  time: string;
  visitors?: number;
  sessions?: number;
  pageviews?: number;
  events?: number;
  bounceRate?: string | number;
  avgSessionDuration?: number;
  [metric: string]: string | number | undefined;
}

export interface TimeseriesAnswer {
  interval: string;
  points: Point[];
}

export interface BreakdownRow {
  value: string;
  visitors: number;
  sessions?: number;
  pageviews?: number;
  events?: number;
  bounceRate?: string;
  avgSessionDuration?: number;
  /** With `compare`: how each figure changed (percent, or percentage points for shares). */
  change?: Partial<Record<string, number | null>>;
}

export interface BreakdownAnswer {
  by: string;
  rows: BreakdownRow[];
  totalRows: number;
}

export interface RealtimeAnswer {
  visitors: number;
  windowSeconds: number;
  pages: { value: string; visitors: number }[];
  /** Newer servers: the current visitors' sources and countries, visitors per minute. */
  sources?: { value: string; visitors: number }[];
  countries?: { value: string; visitors: number }[];
  minutes?: { time: string; visitors: number }[];
}

export interface GoalsAnswer {
  goals: {
    goal: string;
    visitors: number;
    events: number;
    conversionRate: string | number;
    /** A saved goal's (GET /metrics/goals without `goal`). */
    id?: string;
    name?: string;
    property?: { key: string; value: string };
  }[];
  /** Without `goal`: the project's saved goals were read. */
  saved?: boolean;
}

export interface FunnelAnswer {
  steps: {
    step: string;
    visitors: number;
    conversionRate: string | number;
    dropOff: number | string;
  }[];
  /** Read with `funnel=<id>`: the saved funnel. */
  funnel?: { id: string; name: string };
}

export interface RevenueAnswer {
  currencies: { currency: string; revenue: number; orders: number; averageOrderValue: number }[];
  /** `itemName`: the item_name it was last sent with (null or absent: never, or older servers). */
  topItems: {
    itemId: string;
    itemName?: string | null;
    quantity: number;
    revenue: number;
    currency: string;
  }[];
}

export interface ErrorsAnswer {
  errors: number;
  fatal: number;
  fatalShare: string | number;
  top: { description: string; count: number }[];
  pages: { value: string; count: number }[];
}

export interface PropertyKeysAnswer {
  keys: { key: string; events: number }[];
}

export interface PropertyValuesAnswer {
  key: string;
  values: { value: string; events: number; visitors: number }[];
}

export interface KeyRecord {
  id: string;
  kind: string;
  hint?: string;
  name?: string | null;
  createdAt?: string | null;
  lastUsedAt?: string | null;
  revokedAt?: string | null;
  key?: string;
}
