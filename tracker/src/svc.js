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
 * Opt-in extensions (README.md, "Extensions") are compiled in by build.mjs:
 * ENGAGEMENT, OUTBOUND, DOWNLOADS, NOT_FOUND and VITALS are constants that
 * terser replaces (global_defs), so each build keeps only the code of its
 * extensions; the default build (all false) is the script above, byte for
 * byte. One file per combination, src/svc/static/svc.<names>.js, each at most
 * 2,048 bytes minified; /svc/js/<names> serves them.
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
  // window.addEventListener, called without `this`: Web IDL makes a missing
  // `this` the global object, for which the name is spelled out only once.
  on = addEventListener,
  // --- the extensions' state (unused parameters are dropped by terser) ---
  // The URL of the current page view: the events that describe a page once
  // it is left (engagement, web_vitals) carry it, as on a client-side
  // navigation location.href is already the next page's.
  pageUrl,
  // engagement: engaged milliseconds not yet sent; when the current engaged
  // stretch began (false: the page is hidden or not focused); the deepest
  // point seen, in pixels from the top (scrollY + innerHeight).
  engaged,
  since = 0,
  deepest,
  // vitals: the properties of the one web_vitals event, filled in as the
  // browser reports each metric (CLS is 0 until a shift, where the browser
  // measures shifts at all); the activation time of a prerendered page; the
  // current layout-shift window and its last shift (CLS); whether the event
  // was sent.
  vitals = self.LayoutShift ? { cls: 0 } : {},
  activation = 0,
  shiftWindow,
  shiftPrev,
  vitalsSent = 0,
) => {
  // Sends one event; window.svc and window.svc.track are this function.
  // Without a name it sends a page view of the current URL. `url` (the
  // extensions' leave events only) is the page the event describes.
  const send = (event = "page_view", properties, url = l.href) => {
    // Chrome prerenders pages (speculation rules, the address bar) that the
    // visitor may never see: hold events until the page is activated.
    // prerenderingchange fires once, on activation, at the document.
    if (d.prerendering)
      return d.addEventListener("prerenderingchange", () =>
        // (written twice so that the default build has no `url` at all)
        ENGAGEMENT || VITALS
          ? send(event, properties, url)
          : send(event, properties),
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
      url:
        ENGAGEMENT || VITALS
          ? hashMode
            ? url
            : url.split("#")[0]
          : hashMode
            ? l.href
            : l.href.split("#")[0],
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

  // --- engagement ------------------------------------------------------------
  // Engaged time: while the page is visible and focused. Each scroll, focus,
  // blur and visibility change (and each leave) closes the current stretch,
  // opens the next one while still engaged, and measures how deep the page
  // has been seen: the deepest point, in pixels from the top.
  const measure = (now = Date.now()) => {
    engaged += since && now - since;
    since = !d.hidden && d.hasFocus() && now;
    deepest = Math.max(deepest, scrollY + innerHeight);
  };
  // The current page view is being left (hidden, closed, or a client-side
  // navigation away): send what the extensions measured on it. Engagement:
  // the time engaged since the last engagement event and the deepest scroll,
  // when the page was engaged since (a page hidden and shown again sends
  // again). Vitals: once per page load.
  const leave = () => {
    if (ENGAGEMENT) {
      measure();
      if (engaged)
        send(
          "engagement",
          {
            engaged_ms: engaged,
            // of the page's height now (on a client-side navigation, the
            // next page's, when the site has rendered it already)
            // (+ .5 | 0: rounded, shorter than Math.round)
            scroll_pct: Math.min(
              100,
              ((deepest * 100) / d.documentElement.scrollHeight + 0.5) | 0,
            ),
          },
          pageUrl,
        );
      engaged = 0;
    }
    if (VITALS && !vitalsSent++) send("web_vitals", vitals, pageUrl);
  };

  // Sends a page view when the page key changed. `key` is a parameter only
  // to be a local variable without a declaration; whatever is passed (the
  // popstate event) is overwritten. Without data-hash, `hashMode && l.hash`
  // is `false`: every key ends in "false", which compares just as well.
  const pageview = (key) => {
    key = l.pathname + (hashMode && l.hash);
    if (key != last) {
      // A client-side navigation: the previous page is left.
      if ((ENGAGEMENT || VITALS) && last) leave();
      last = key;
      if (ENGAGEMENT || VITALS) pageUrl = l.href;
      send();
      if (ENGAGEMENT) {
        // Nothing engaged on the new page yet. (A page restored from the
        // back/forward cache goes on where it was: the time engaged before
        // it was hidden has been sent.)
        engaged = deepest = 0;
        measure();
      }
    }
  };

  self.svc = send.track = send;
  pageview();
  // 404: the page is marked as not found (data-404 on the script tag).
  if (NOT_FOUND && "404" in data) send("404");
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
  // (The default build keeps its two calls as they were: EXTENDED is false.)
  (EXTENDED ? on : addEventListener)("popstate", pageview);
  // A page restored from the back/forward cache runs no script again, but
  // the visitor is looking at it anew: that is a page view.
  (EXTENDED ? on : addEventListener)("pageshow", (e) => e.persisted && send());

  // Hidden covers leaving too: a closed tab, a navigation away, a page put in
  // the back/forward cache, the phone's home screen. (pagehide is not needed:
  // every browser the script supports makes the page hidden as it is left.)
  // visibilitychange bubbles from the document to the window.
  if (ENGAGEMENT)
    ["scroll", "focus", "blur", "visibilitychange"].map((type) =>
      on(type, () => (d.hidden ? leave() : measure())),
    );
  else if (VITALS)
    on("visibilitychange", () => d.hidden && leave());

  // --- outbound links and downloads ------------------------------------------
  // One listener for both: clicks on links (with the mouse's main button, or
  // the keyboard). A download (a link to a file whose extension is in the
  // list) is not also an outbound click.
  if (OUTBOUND || DOWNLOADS) {
    // The default file extensions, in a regular expression's syntax (docx?
    // is doc and docx); data-downloads="pdf|zip" replaces them. Any case.
    const files =
      DOWNLOADS &&
      RegExp(
        `\\.(${
          data.downloads ||
          "pdf|docx?|xlsx?|pptx?|csv|zip|rar|7z|gz|dmg|exe|msi|pkg|apk|mp[34]"
        })$`,
        "i",
      );
    const click = (e, a = e.target.closest?.("a")) => {
      // a.host: an http(s) link (mailto:, tel:, javascript:, SVG links and
      // links without href have none).
      if (a?.host)
        DOWNLOADS && files.test(a.pathname)
          ? // The file, without its query: the token of a signed download
            // URL is nobody's business.
            send("download", { url: a.origin + a.pathname })
          : OUTBOUND && a.host != l.host && send("outbound", { url: a.href });
    };
    on("click", click);
  }

  // --- Web Vitals --------------------------------------------------------------
  // The browser's own measurements (PerformanceObserver), in milliseconds from
  // the start of the navigation (of the activation for a prerendered page),
  // CLS without a unit; each is left out where the browser does not measure
  // it.
  if (VITALS) {
    // Whole milliseconds from the start of the navigation, or from the
    // activation of a prerendered page (0 when it happened before).
    const ms = (t) => (t > activation ? (t - activation) | 0 : 0),
      observe = (type, each) =>
        new PerformanceObserver((list) => list.getEntries().map(each)).observe({
          type,
          buffered: true,
          durationThreshold: 16, // "event": every interaction of 16 ms or more
        });
    // The navigation's entry comes first (observers are called in the order
    // they were made): its activationStart is known before the paints.
    observe(
      "navigation",
      // (ms's second argument is evaluated before its body runs)
      (e) => (vitals.ttfb = ms(e.responseStart, (activation = e.activationStart || 0))),
    );
    // paint: first-paint, then first-contentful-paint: the last one is FCP.
    observe("paint", (e) => (vitals.fcp = ms(e.startTime)));
    // The last candidate is the LCP (the browser stops at the first input).
    observe("largest-contentful-paint", (e) => (vitals.lcp = ms(e.startTime)));
    // CLS: the largest session window of shifts not caused by input: shifts
    // less than 1 s apart. (Chrome also ends a window after 5 s: the same
    // but on a page that keeps shifting; that check did not fit in 2 KB.)
    observe("layout-shift", (e) => {
      if (!e.hadRecentInput) {
        shiftWindow =
          e.startTime - shiftPrev < 1e3 ? shiftWindow + e.value : e.value;
        shiftPrev = e.startTime;
        if (shiftWindow > vitals.cls) vitals.cls = shiftWindow;
      }
    });
    // INP: the longest interaction (an interaction's events share its
    // interactionId and its duration). Chrome's INP leaves out one outlier in
    // every 50 interactions: the same below 50 interactions, which nearly
    // every page view has.
    observe(
      "event",
      (e) =>
        e.interactionId &&
        (vitals.inp > e.duration || (vitals.inp = e.duration)),
    );
  }
})(document, location, navigator, history);
