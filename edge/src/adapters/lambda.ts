// AWS Lambda@Edge (Node.js 20): a CloudFront request event becomes a Request for the handler,
// and its Response a CloudFront generated response. Lambda@Edge has no environment
// variables: the configuration is baked into the bundle by `svcm deploy`.
//
// The visitor: `clientIp`, and the CloudFront-Viewer-Country, -Country-Region and -City headers.
// CloudFront adds those after the viewer-request event, so the template associates the
// function with the origin-request event of /analytics (with an origin request policy that
// includes them; bodies up to 1 MB there, 40 KB at viewer-request). Called at viewer-request
// it works the same without the location, which the origin then finds from the address.

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
  if (cf.body?.inputTruncated) {
    const declared = Number(header(cf.headers, 'content-length') ?? NaN);
    if (!(declared > handler.config.maxBodyBytes)) {
      // A body CloudFront did not give us whole (over 40 KB at viewer-request): on to the
      // origin as it came, without the visitor's headers (the origin then sees CloudFront).
      for (const name of Object.keys(cf.headers)) if (name.startsWith('x-svc-edge-')) delete cf.headers[name];
      return cf;
    }
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
