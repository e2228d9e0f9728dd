// Stands in for CloudFront in front of a Lambda@Edge bundle, on loopback: every HTTP request
// becomes a CloudFront request event (the documented shape: Records[0].cf.config and .request
// with clientIp, headers as {name: [{key, value}]}, method, querystring, uri and the body as
// base64 with inputTruncated), the bundle's handler is called with it, and its generated
// response is sent back. When the handler returns the request, it is sent to the origin, as
// CloudFront would. The viewer's address is the X-Test-Client-Ip header (CloudFront knows it
// from the connection); CloudFront-Viewer-* headers are passed on as a CloudFront origin
// request policy would.
//
//   node cloudfront.mjs BUNDLE PORT EVENT_TYPE(viewer-request|origin-request) ORIGIN_URL
//   node cloudfront.mjs BUNDLE --invoke EVENT.json      (prints the handler's result)
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [bundle, portArg, eventType = 'origin-request', origin = ''] = process.argv.slice(2);
const { handler } = await import(pathToFileURL(bundle).href);

if (portArg === '--invoke') {
  const event = JSON.parse(readFileSync(eventType, 'utf8'));
  console.log(JSON.stringify(await handler(event)));
  process.exit(0);
}

const BODY_LIMIT = eventType === 'viewer-request' ? 40 * 1024 : 1024 * 1024;
let sequence = 0;

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks);
  const headers = {};
  let clientIp = req.socket.remoteAddress ?? '';
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const key = req.rawHeaders[i];
    const value = req.rawHeaders[i + 1];
    const name = key.toLowerCase();
    if (name === 'x-test-client-ip') {
      clientIp = value;
      continue;
    }
    if (name === 'connection' || name === 'transfer-encoding') continue;
    (headers[name] ??= []).push({ key, value });
  }
  const [uri, ...rest] = (req.url ?? '/').split('?');
  const truncated = body.length > BODY_LIMIT;
  const event = {
    Records: [
      {
        cf: {
          config: {
            distributionDomainName: 'd111111abcdef8.cloudfront.net',
            distributionId: 'EDFDVBD6EXAMPLE',
            eventType,
            requestId: `svc-test-${++sequence}`,
          },
          request: {
            clientIp,
            headers,
            method: req.method,
            querystring: rest.join('?'),
            uri,
            ...(body.length
              ? {
                  body: {
                    action: 'read-only',
                    data: body.subarray(0, BODY_LIMIT).toString('base64'),
                    encoding: 'base64',
                    inputTruncated: truncated,
                  },
                }
              : {}),
          },
        },
      },
    ],
  };
  try {
    const result = await handler(event);
    if (result && 'uri' in result) {
      // the request goes on to the origin
      const h = new Headers();
      for (const list of Object.values(result.headers)) for (const { key, value } of list) h.append(key, value);
      h.delete('host');
      const answer = await fetch(origin + result.uri + (result.querystring ? `?${result.querystring}` : ''), {
        method: result.method,
        headers: h,
        body: body.length ? body : undefined,
      });
      const out = Buffer.from(await answer.arrayBuffer());
      const hs = {};
      answer.headers.forEach((v, k) => {
        if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding') hs[k] = v;
      });
      res.writeHead(answer.status, { ...hs, 'x-test-cloudfront': 'origin' });
      res.end(out);
      return;
    }
    const out = result.body ? Buffer.from(result.body, result.bodyEncoding === 'base64' ? 'base64' : 'utf8') : Buffer.alloc(0);
    const hs = [];
    for (const list of Object.values(result.headers ?? {})) for (const { key, value } of list) hs.push([key, value]);
    res.writeHead(Number(result.status), result.statusDescription, [...hs, ['content-length', String(out.length)]]);
    res.end(out);
  } catch (e) {
    res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`the Lambda function failed: ${e && e.stack ? e.stack : e}`);
  }
});
server.listen(Number(portArg), '127.0.0.1', () => console.log(`cloudfront stand-in on ${portArg}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
