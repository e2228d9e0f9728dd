// AWS Lambda@Edge (Node.js 20): a CloudFront request event becomes a Request for the handler,
// and its Response a CloudFront generated response. Lambda@Edge has no environment
// variables: the configuration is baked into the bundle by `svcm deploy`.
//
// The visitor: `clientIp`, and the CloudFront-Viewer-Country, -Country-Region and -City headers.
// CloudFront adds those after the viewer-request event, so the template associates the
// function with the origin-request event of /analytics (with an origin request policy that
// includes them; bodies up to 1 MB there, 40 KB at viewer-request). Called at viewer-request
// it works the same without the location, which the origin then finds from the address.
//
// A body CloudFront does not give whole (`inputTruncated`: over 40 KB at viewer-request, over
// 1 MB at origin-request; or no `body` at all, when the association does not include it) is
// not judged here: its signature would need the SHA-256 of the whole body. When its declared
// Content-Length is over the origin's limit, the handler answers 413 (the origin's answer);
// otherwise the request goes on to the origin as the viewer sent it (CloudFront forwards the
// body), without any x-svc-edge-* header: the origin judges it with the same rules and sees
// CloudFront's address (docs/edge.md, "Bodies the function does not see whole").

import type {
  CloudFrontHeaders,
  CloudFrontRequest,
  CloudFrontRequestEvent,
  CloudFrontRequestResult,
  CloudFrontResultResponse,
} from 'aws-lambda';

import { configFrom, createHandler, type Handler } from '../handler';

let handler: Handler | null = null;

// What a generated response may not set (CloudFront's read-only and disallowed headers).
const DROP = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'via', 'upgrade']);

function header(headers: CloudFrontHeaders, name: string): string | null {
  const list = headers[name];
  return list && list.length ? list[0]!.value : null;
}

export function toRequest(cf: CloudFrontRequest, host: string): Request {
  const headers = new Headers();
  for (const [name, list] of Object.entries(cf.headers)) {
    for (const { value } of list) headers.append(name, value);
  }
  const url = `https://${header(cf.headers, 'host') ?? host}${cf.uri}${cf.querystring ? `?${cf.querystring}` : ''}`;
  const init: RequestInit = { method: cf.method, headers };
  if (cf.body && cf.body.data && cf.method !== 'GET' && cf.method !== 'HEAD') {
    init.body = cf.body.encoding === 'base64' ? Buffer.from(cf.body.data, 'base64') : cf.body.data;
  }
  return new Request(url, init);
}

/** The request's Content-Length, NaN when it has none (a chunked body). */
function declaredLength(cf: CloudFrontRequest): number {
  const raw = header(cf.headers, 'content-length');
  return raw !== null && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
}

/** Whether the event holds the request's whole body: a body not truncated, or no body field
 * for a request that declares none (a POST without `includeBody` has no body field at all). */
export function wholeBody(cf: CloudFrontRequest): boolean {
  if (cf.method === 'GET' || cf.method === 'HEAD' || cf.method === 'OPTIONS') return true;
  if (cf.body) return !cf.body.inputTruncated;
  const declared = declaredLength(cf);
  return declared === 0 || (Number.isNaN(declared) && header(cf.headers, 'transfer-encoding') === null);
}

export async function toResult(response: Response): Promise<CloudFrontResultResponse> {
  const headers: CloudFrontHeaders = {};
  response.headers.forEach((value, name) => {
    if (DROP.has(name)) return;
    (headers[name] ??= []).push({ key: name, value });
  });
  const body = Buffer.from(await response.arrayBuffer());
  const out: CloudFrontResultResponse = {
    status: String(response.status),
    statusDescription: response.statusText || undefined,
    headers,
  };
  if (body.length) {
    out.body = body.toString('base64');
    out.bodyEncoding = 'base64';
  }
  return out;
}

export const handler_ = async (event: CloudFrontRequestEvent): Promise<CloudFrontRequestResult> => {
  handler ??= createHandler(configFrom(undefined, SVC_EDGE_CONFIG, 'lambda-edge'));
  const record = event.Records[0]!.cf;
  const cf = record.request;
  if (!wholeBody(cf) && !(declaredLength(cf) > handler.config.maxBodyBytes)) {
    // Not judged here (see above): on to the origin as it came, unsigned. What a client sent
    // under the edge's names goes: the origin would ignore it unsigned, but it is not ours.
    for (const name of Object.keys(cf.headers)) if (name.startsWith('x-svc-edge-')) delete cf.headers[name];
    return cf;
  }
  const visitor = cf.clientIp
    ? {
        ip: cf.clientIp,
        country: header(cf.headers, 'cloudfront-viewer-country'),
        region: header(cf.headers, 'cloudfront-viewer-country-region'),
        city: header(cf.headers, 'cloudfront-viewer-city'),
      }
    : null;
  const response = await handler(toRequest(cf, record.config.distributionDomainName), visitor);
  return toResult(response);
};

export { handler_ as handler };
