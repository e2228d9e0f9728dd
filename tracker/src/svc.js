/*
 * svc browser script: cookie-free page views and custom events.
 *
 *   <script defer src="https://svc.example.com/svc/js"
 *           data-key="svc_live_..." data-project="svc_proj_acme"></script>
 *
 * This is the readable source. `npm run build` (or `make tracker`) minifies it
 * with terser into src/svc/static/svc.js, which the Python package serves at
 * /svc/js. Budget: 1,024 bytes minified, 600 gzipped; every byte counts, so
 * some constructs below are chosen for their minified size (noted inline).
 *
 * Wire format: each event is one request
 *
 *   POST {endpoint}/analytics?key=<data-key>
 *   Content-Type: text/plain;charset=UTF-8
 *   {"event":"page_view","url":"https://site/path?q","referrer":"https://...",
 *    "projectId":"svc_proj_acme","properties":{...},"screen":1280}
 *
 * sent by navigator.sendBeacon: a string body gets the CORS-safelisted
 * text/plain type, so there is no preflight, and the browser delivers a beacon
 * even while the page unloads. `referrer`, `projectId` and `properties` are
 * left out when empty. No session id: the service derives sessions itself.
 *
 * The script sets no cookie and writes no storage; it reads one flag,
 * localStorage.svc_ignore, the opt-out a site owner sets in their own browser.
 */
((
  d, // document
  l, // location
  n, // navigator
  h, // history
  // The settings are the parameters' defaults: shorter than declarations.
  script = d.currentScript,
  data = script.dataset,
  // data-hash: the fragment is part of the page (hash-routed apps).
  hashMode = "hash" in data,
  // data-endpoint is the base URL of the service, such as
  // "https://stats.example.com" or "https://example.com/svc"; the script
  // appends "/analytics". Default: the origin the script was loaded from.
  endpoint = (data.endpoint || new URL(script.src).origin) +
    "/analytics?key=" +
    data.key,
  // The page key of the last page view: the path, plus the fragment in hash
  // mode. A navigation that keeps it (a query change; a fragment change
  // without data-hash) is not a new page view.
  last,
  // Calls made before the script loaded, queued by the snippet (README).
  queue = self.svc?.q,
) => {
  // Sends one event; window.svc and window.svc.track are this function.
  // Without a name it sends a page view of the current URL.
  const send = (event = "page_view", properties) => {
    // Chrome prerenders pages (speculation rules, the address bar) that the
    // visitor may never see: hold events until the page is activated.
    // prerenderingchange fires once, on activation, at the document.
    if (d.prerendering)
      return d.addEventListener("prerenderingchange", () =>
        send(event, properties),
      );
    // The try is for localStorage, which throws where the browser blocks
    // storage (sandboxed frames, some privacy settings); it comes last, so
    // the other checks have been made when it throws, and we then send.
    try {
      if (
        // Development: localhost*, 127.*, [::1], or no host at all (file:).
        // l.host includes the port, hence a prefix match.
        (/^(localhost|127\.|\[::1\]|$)/.test(l.host) &&
          !("allowLocalhost" in data)) ||
        // Headless browsers, test runners, most scrapers.
        (n.webdriver && !("allowAutomation" in data)) ||
        // The owner's opt-out, read only.
        localStorage.svc_ignore
      )
        return;
    } catch {}
    const body = JSON.stringify({
      event,
      // Without data-hash the fragment is not sent: it is not part of the
      // page, and may hold secrets (#access_token=... after an OAuth login).
      url: hashMode ? l.href : l.href.split("#")[0],
      referrer: d.referrer || undefined, // undefined: left out of the JSON
      projectId: data.project,
      properties,
      screen: innerWidth, // lets the service tell phones, tablets, desktops
    });
    // sendBeacon is missing only where the user disabled it, and returns
    // false when the body or the 64 KiB of in-flight beacons is too large.
    // Either way, a plain fetch (same CORS-safelisted body, no preflight, no
    // cookies cross-origin) still delivers while the page stays open. Not
    // keepalive: that shares the beacon's 64 KiB budget, so it would fail
    // exactly when sendBeacon just did.
    n.sendBeacon?.(endpoint, body) ||
      fetch(endpoint, { method: "POST", body });
  };

  // Sends a page view when the page key changed. `key` is a parameter only
  // to be a local variable without a declaration; whatever is passed (the
  // popstate event) is overwritten. Without data-hash, `hashMode && l.hash`
  // is `false`: every key ends in "false", which compares just as well.
  const pageview = (key) => {
    key = l.pathname + (hashMode && l.hash);
    if (key != last) {
      last = key;
      send();
    }
  };

  self.svc = send.track = send;
  pageview();
  queue?.map((args) => send(...args));

  // Client-side navigations. pushState and replaceState fire no event, so
  // they are wrapped. popstate covers back/forward and, as the HTML standard
  // fires it on every fragment navigation too, hash changes: no hashchange
  // listener is needed.
  ["pushState", "replaceState"].map(
    // map passes three arguments: the fourth parameter is a local variable.
    (method, _, __, original = h[method]) =>
      (h[method] = (...args) => {
        original.apply(h, args);
        pageview();
      }),
  );
  addEventListener("popstate", pageview);
  // A page restored from the back/forward cache runs no script again, but
  // the visitor is looking at it anew: that is a page view.
  addEventListener("pageshow", (e) => e.persisted && send());
})(document, location, navigator, history);
